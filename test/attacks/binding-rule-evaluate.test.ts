/**
 * Attack class: the binding-rule dry run (`POST /v1/acl/binding-rules/evaluate`) as a way around login.
 *
 * Attackers: anonymous, a client token (even one holding a policy an operator named "management"), and a token
 * minted by a JWT login.
 * They try: to call the dry run (learning which claims would give management, or the rules' selectors), and, as
 * management, to make the dry run mint a token or change anything by claims that would bind management or roles.
 * They must never reach: an answer without a management token (403, as every other ACL read of binding rules), or
 * any write: the table holds exactly the same items before and after every dry run (no token, no event, no index).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { type CryptoKey, exportJWK, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SchedulerHarness, startScheduler } from '../support/scheduler-harness.ts';

describe('attack: the binding-rule dry run without management, or as a way to mint', () => {
  let h: SchedulerHarness;
  let management = '';
  let client = '';
  let loggedIn = '';
  let server: Server;
  let privateKey: CryptoKey;
  const mgmt = (method: string, path: string, body?: unknown) =>
    h.call(method, path, { token: management, ...(body === undefined ? {} : { body }) });
  const evaluate = (token: string | undefined, Claims: unknown) =>
    h.call('POST', '/v1/acl/binding-rules/evaluate', {
      ...(token ? { token } : {}),
      body: { AuthMethodName: 'corp', Claims },
    });
  /** Every item of the table, as DynamoDB holds it, in key order. */
  const tableItems = async (): Promise<string[]> => {
    const items: string[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const page = await h.client.send(
        new ScanCommand({
          TableName: h.tableName,
          ConsistentRead: true,
          ...(start ? { ExclusiveStartKey: start as never } : {}),
        }),
      );
      for (const item of page.Items ?? []) items.push(JSON.stringify(item, Object.keys(item).sort()));
      start = page.LastEvaluatedKey;
    } while (start);
    return items.sort();
  };

  beforeAll(async () => {
    h = await startScheduler();
    management = await h.bootstrap();
    const rsa = await generateKeyPair('RS256', { extractable: true });
    privateKey = rsa.privateKey;
    const jwk = { ...(await exportJWK(rsa.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
    server = createServer((_request, response) => {
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify({ keys: [jwk] }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    expect(
      (await mgmt('POST', '/v1/acl/policy/management', { Rules: 'namespace "*" { policy = "write" }' })).status,
    ).toBe(200);
    expect(
      (await mgmt('POST', '/v1/acl/policy/jobs', { Rules: 'namespace "default" { policy = "read" }' })).status,
    ).toBe(200);
    expect((await mgmt('POST', '/v1/acl/role', { Name: 'eng', Policies: [{ Name: 'jobs' }] })).status).toBe(200);
    const token = await mgmt('POST', '/v1/acl/token', {
      Name: 'narrow',
      Type: 'client',
      Policies: ['jobs', 'management'],
    });
    client = token.body.SecretID;
    const method = await mgmt('POST', '/v1/acl/auth-method', {
      Name: 'corp',
      Type: 'JWT',
      MaxTokenTTL: '1h',
      Config: {
        JWKSURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks`,
        BoundAudiences: ['nomad'],
        ClaimMappings: { sub: 'user' },
        ListClaimMappings: { groups: 'groups' },
      },
    });
    expect(method.status).toBe(200);
    expect(
      (
        await mgmt('POST', '/v1/acl/binding-rule', {
          AuthMethod: 'corp',
          Selector: '"eng" in list.groups',
          BindType: 'role',
          BindName: 'eng',
        })
      ).status,
    ).toBe(200);
    expect(
      (
        await mgmt('POST', '/v1/acl/binding-rule', {
          AuthMethod: 'corp',
          Selector: 'value.user == "root"',
          BindType: 'management',
        })
      ).status,
    ).toBe(200);
    const now = Math.floor(h.clock.now() / 1000);
    const jwt = await new SignJWT({ sub: 'ada', groups: ['eng'] })
      .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
      .setAudience('nomad')
      .setIssuedAt(now)
      .setExpirationTime(now + 300)
      .sign(privateKey);
    const login = await h.call('POST', '/v1/acl/login', { body: { AuthMethodName: 'corp', LoginToken: jwt } });
    expect(login.status).toBe(200);
    loggedIn = login.body.SecretID;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await h.close();
  });

  it('refuses anyone but management: anonymous, a client token, a login token (403, no answer of the rules)', async () => {
    for (const token of [undefined, client, loggedIn]) {
      const out = await evaluate(token, { sub: 'root', groups: ['eng'] });
      expect(out.status).toBe(403);
      expect(out.text).toBe('Permission denied');
      expect(out.text).not.toContain('Management');
    }
    // An unknown token is refused too, before the body is looked at.
    expect((await evaluate('00000000-0000-4000-8000-000000000000', { sub: 'root' })).status).toBe(403);
  });

  it('mints nothing and writes nothing, even for claims that would bind management or roles', async () => {
    const tokensBefore = (await mgmt('GET', '/v1/acl/tokens')).body.length;
    const before = await tableItems();
    const root = await evaluate(management, { sub: 'root', groups: ['eng'] });
    expect(root.status).toBe(200);
    expect(root.body.Management).toBe(true);
    expect(root.body).not.toHaveProperty('SecretID');
    const roles = await evaluate(management, { sub: 'ada', groups: ['eng'] });
    expect(roles.body.Roles.map((role: { Name: string }) => role.Name)).toEqual(['eng']);
    expect(JSON.stringify(roles.body)).not.toMatch(/SecretID|AccessorID/);
    for (const claims of [{ sub: 'nobody' }, { sub: { nested: true } }, 'x']) await evaluate(management, claims);
    expect(await tableItems()).toEqual(before);
    expect((await mgmt('GET', '/v1/acl/tokens')).body).toHaveLength(tokensBefore);
  });
});
