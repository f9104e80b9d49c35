/**
 * Attack class: a management token from a client token (the scheduler's root; issue 23 §2, Nomad semantics).
 * Only management makes management.
 *
 * Attackers: a narrow token (a client token whose policies grant it namespace and node rights, including a policy
 * an operator happened to name "management"), and a user logging in through a JWT auth method.
 * They try: a binding rule with BindType "management", a token of Type "management" (new, or their own token
 * updated), a role or policy named "management", a second bootstrap, and a login whose claims name "management"
 * through a policy binding's interpolated BindName.
 * They must never reach: a token of Type "management" (or anything a management token can do: listing tokens).
 * Nomad's rule: every ACL write (tokens, policies, roles, auth methods, binding rules) needs a management token;
 * a login gets management only from a binding rule of BindType "management", which only management can write.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type CryptoKey, exportJWK, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SchedulerHarness, startScheduler } from '../support/scheduler-harness.ts';

describe('attack: a management token from a client token or a login (scheduler ACLs)', () => {
  let h: SchedulerHarness;
  let management = '';
  let client = '';
  let clientAccessor = '';
  let server: Server;
  let privateKey: CryptoKey;
  const mgmt = (method: string, path: string, body?: unknown) =>
    h.call(method, path, { token: management, ...(body === undefined ? {} : { body }) });
  const asClient = (method: string, path: string, body?: unknown) =>
    h.call(method, path, { token: client, ...(body === undefined ? {} : { body }) });
  const now = () => Math.floor(h.clock.now() / 1000);
  const login = async (claims: Record<string, unknown>) => {
    const LoginToken = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
      .setIssuer('https://issuer.example')
      .setAudience('nomad')
      .setIssuedAt(now())
      .setExpirationTime(now() + 300)
      .sign(privateKey);
    return h.call('POST', '/v1/acl/login', { body: { AuthMethodName: 'corp', LoginToken } });
  };
  /** Every management token in the table, by accessor: the effect an escalation would leave. */
  const managementTokens = async (): Promise<string[]> =>
    ((await mgmt('GET', '/v1/acl/tokens')).body as { AccessorID: string; Type: string }[])
      .filter((token) => token.Type === 'management')
      .map((token) => token.AccessorID);
  const bindingRules = async () => (await mgmt('GET', '/v1/acl/binding-rules')).body as { BindType: string }[];

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
    // An operator's policy that happens to be called "management": a name, never a token type.
    expect(
      (
        await mgmt('POST', '/v1/acl/policy/management', {
          Rules: 'namespace "*" { policy = "write" }\nnode { policy = "write" }',
        })
      ).status,
    ).toBe(200);
    expect(
      (await mgmt('POST', '/v1/acl/policy/jobs', { Rules: 'namespace "default" { policy = "read" }' })).status,
    ).toBe(200);
    const token = await mgmt('POST', '/v1/acl/token', {
      Name: 'narrow',
      Type: 'client',
      Policies: ['jobs', 'management'],
    });
    expect(token.status).toBe(200);
    client = token.body.SecretID;
    clientAccessor = token.body.AccessorID;
    const method = await mgmt('POST', '/v1/acl/auth-method', {
      Name: 'corp',
      Type: 'JWT',
      TokenLocality: 'local',
      MaxTokenTTL: '1h',
      Config: {
        JWKSURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks`,
        BoundAudiences: ['nomad'],
        BoundIssuer: ['https://issuer.example'],
        ClaimMappings: { sub: 'user', team: 'team' },
      },
    });
    expect(method.status).toBe(200);
    expect(
      (
        await mgmt('POST', '/v1/acl/binding-rule', {
          AuthMethod: 'corp',
          Selector: 'value.team != ""',
          BindType: 'policy',
          // biome-ignore lint/suspicious/noTemplateCurlyInString: Nomad's interpolation syntax, not a JS template
          BindName: '${value.team}',
        })
      ).status,
    ).toBe(200);
    expect(
      (
        await mgmt('POST', '/v1/acl/binding-rule', {
          AuthMethod: 'corp',
          Selector: 'value.user == "ops-admin"',
          BindType: 'management',
        })
      ).status,
    ).toBe(200);
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await h.close();
  });

  it('a client token cannot write a management binding rule, nor any ACL object (403, nothing changed)', async () => {
    const before = { tokens: await managementTokens(), rules: await bindingRules() };
    const attempts: [string, string, unknown][] = [
      [
        'POST',
        '/v1/acl/binding-rule',
        { AuthMethod: 'corp', Selector: 'value.user == "mallory"', BindType: 'management' },
      ],
      ['POST', '/v1/acl/binding-rule', { AuthMethod: 'corp', BindType: 'management' }],
      [
        'POST',
        '/v1/acl/auth-method',
        { Name: 'evil', Type: 'JWT', MaxTokenTTL: '1h', Config: { JWKSURL: 'http://127.0.0.1:1/jwks' } },
      ],
      ['POST', '/v1/acl/role', { Name: 'escalate', Policies: [{ Name: 'management' }] }],
      ['POST', '/v1/acl/policy/jobs', { Rules: 'namespace "*" { policy = "write" }' }],
      ['POST', '/v1/acl/token', { Name: 'mine', Type: 'management' }],
      ['POST', '/v1/acl/token', { Name: 'mine', Type: 'client', Policies: ['management'] }],
      ['POST', `/v1/acl/token/${clientAccessor}`, { AccessorID: clientAccessor, Name: 'narrow', Type: 'management' }],
      [
        'PUT',
        `/v1/acl/token/${clientAccessor}`,
        { AccessorID: clientAccessor, Name: 'narrow', Type: 'management', Policies: [] },
      ],
    ];
    for (const [method, path, body] of attempts) {
      const reply = await asClient(method, path, body);
      expect(reply.status, `${method} ${path}`).toBe(403);
    }
    expect(await managementTokens()).toEqual(before.tokens);
    expect(await bindingRules()).toEqual(before.rules);
    const self = await asClient('GET', '/v1/acl/token/self');
    expect(self.body).toMatchObject({ Type: 'client', Policies: ['jobs', 'management'] });
    // Holding a policy named "management" grants what its rules say, not management: the token list stays closed.
    expect((await asClient('GET', '/v1/acl/tokens')).status).toBe(403);
  });

  it('a second bootstrap gives nobody a management token', async () => {
    const before = await managementTokens();
    for (const token of [undefined, client]) {
      const reply = await h.call('POST', '/v1/acl/bootstrap', token ? { token } : {});
      expect(reply.status).toBe(400);
      expect(reply.text).toContain('ACL bootstrap already done');
    }
    expect(await managementTokens()).toEqual(before);
  });

  it('a login whose claims name "management" through a policy binding gets a client token holding that policy name', async () => {
    const before = await managementTokens();
    const reply = await login({ sub: 'mallory', team: 'management' });
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ Type: 'client', Policies: ['management'] });
    expect(reply.body.ExpirationTime).toBeTruthy();
    expect((await h.call('GET', '/v1/acl/tokens', { token: reply.body.SecretID })).status).toBe(403);
    expect(
      (
        await h.call('POST', '/v1/acl/binding-rule', {
          token: reply.body.SecretID,
          body: { AuthMethod: 'corp', BindType: 'management' },
        })
      ).status,
    ).toBe(403);
    expect(await managementTokens()).toEqual(before);
  });

  it('only the binding rule a management token wrote makes a login management', async () => {
    const reply = await login({ sub: 'ops-admin', team: 'jobs' });
    expect(reply.status, reply.text).toBe(200);
    expect(reply.body.Type).toBe('management');
    expect(await managementTokens()).toContain(reply.body.AccessorID);
  });
});
