import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type CryptoKey, exportJWK, generateKeyPair, type JWTPayload, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SchedulerService, startSchedulerInMemory } from '../support/scheduler-harness.ts';

/**
 * `POST /v1/acl/binding-rules/evaluate` answers what a login with the same claims gets: for each set of claims the
 * dry run's roles, policies and management (or its LoginError) equal the token a real login with a signed JWT
 * carrying those claims is minted (or the login's 400).
 */
describe('POST /v1/acl/binding-rules/evaluate', () => {
  let h: SchedulerService;
  let root: string;
  let server: Server;
  let privateKey: CryptoKey;
  const mgmt = (method: string, path: string, body?: unknown) =>
    h.call(method, path, { token: root, ...(body === undefined ? {} : { body }) });
  const now = () => Math.floor(h.clock.now() / 1000);
  const sign = (claims: JWTPayload) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
      .setIssuer('https://issuer.example')
      .setAudience('nomad')
      .setIssuedAt(now())
      .setExpirationTime(now() + 300)
      .sign(privateKey);
  const evaluate = (Claims: unknown, AuthMethodName = 'corp') =>
    mgmt('POST', '/v1/acl/binding-rules/evaluate', { AuthMethodName, Claims });
  const login = async (claims: JWTPayload) =>
    h.call('POST', '/v1/acl/login', { body: { AuthMethodName: 'corp', LoginToken: await sign(claims) } });
  const ruleIds: Record<string, string> = {};

  beforeAll(async () => {
    h = await startSchedulerInMemory();
    root = await h.bootstrap();
    const rsa = await generateKeyPair('RS256', { extractable: true });
    privateKey = rsa.privateKey;
    const jwk = { ...(await exportJWK(rsa.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
    server = createServer((_request, response) => {
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify({ keys: [jwk] }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    await mgmt('POST', '/v1/acl/policy/jobs', { Rules: 'namespace "default" { policy = "read" }' });
    await mgmt('POST', '/v1/acl/policy/nodes', { Rules: 'node { policy = "read" }' });
    await mgmt('POST', '/v1/acl/policy/team-db', { Rules: 'node { policy = "write" }' });
    await mgmt('POST', '/v1/acl/role', { Name: 'team-eng', Policies: [{ Name: 'jobs' }] });
    await mgmt('POST', '/v1/acl/role', { Name: 'team-ops', Policies: [{ Name: 'nodes' }] });
    const method = await mgmt('POST', '/v1/acl/auth-method', {
      Name: 'corp',
      Type: 'JWT',
      MaxTokenTTL: '1h',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: Nomad's interpolation syntax, not a JS template
      TokenNameFormat: '${auth_method_name}-${value.user}',
      Config: {
        JWKSURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks`,
        BoundAudiences: ['nomad'],
        BoundIssuer: ['https://issuer.example'],
        ClaimMappings: { sub: 'user', team: 'team' },
        ListClaimMappings: { groups: 'groups' },
      },
    });
    expect(method.status).toBe(200);
    const rule = async (key: string, body: Record<string, string>) => {
      const created = await mgmt('POST', '/v1/acl/binding-rule', { AuthMethod: 'corp', ...body });
      expect(created.status).toBe(200);
      ruleIds[key] = created.body.ID;
    };
    await rule('eng', {
      Selector: '"eng" in list.groups and value.user != "mallory"',
      BindType: 'role',
      BindName: 'team-eng',
    });
    await rule('ops', {
      Selector: '"ops" in list.groups or value.team == "ops"',
      BindType: 'role',
      BindName: 'team-ops',
    });
    // biome-ignore lint/suspicious/noTemplateCurlyInString: Nomad's interpolation syntax, not a JS template
    await rule('team', { Selector: 'value.team is not empty', BindType: 'policy', BindName: 'team-${value.team}' });
    await rule('ghost', { Selector: '"eng" in list.groups', BindType: 'role', BindName: 'no-such-role' });
    await rule('root', { Selector: 'value.user == "root"', BindType: 'management' });
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await h.close();
  });

  const claimSets: JWTPayload[] = [
    { sub: 'ada', groups: ['eng', 'sales'], team: 'db' },
    { sub: 'bob', groups: ['ops'] },
    { sub: 'carol', groups: ['sales'], team: 'ops' },
    { sub: 'mallory', groups: ['eng'] },
    { sub: 'root', groups: [] },
    { sub: 'dave', groups: ['eng'], team: 'Bad Name!' },
  ];

  it.each(claimSets.map((claims) => [claims.sub, claims]))(
    'for %s, answers what a real login with a JWT of those claims gets',
    async (_sub, claims) => {
      const dry = await evaluate(claims);
      expect(dry.status).toBe(200);
      const real = await login(claims);
      if (real.status === 200) {
        expect(dry.body.LoginError).toBeUndefined();
        expect(dry.body.Management).toBe(real.body.Type === 'management');
        expect([...dry.body.Policies].sort()).toEqual([...real.body.Policies].sort());
        expect(dry.body.Roles.map((role: { Name: string }) => role.Name).sort()).toEqual(
          real.body.Roles.map((role: { Name: string }) => role.Name).sort(),
        );
        expect(dry.body.TokenName).toBe(real.body.Name);
      } else {
        expect(real.status).toBe(400);
        expect(dry.body.LoginError).toBe(real.text);
      }
    },
  );

  it('explains each rule: matched or not, each top-level term, the interpolated bind name', async () => {
    const out = await evaluate({ sub: 'ada', groups: ['eng', 'sales'], team: 'DB' });
    expect(out.status).toBe(200);
    expect(out.body.Variables).toEqual({ value: { user: 'ada', team: 'DB' }, list: { groups: ['eng', 'sales'] } });
    const byId = Object.fromEntries(out.body.Rules.map((rule: { ID: string }) => [rule.ID, rule]));
    expect(byId[ruleIds.eng as string]).toMatchObject({
      Matched: true,
      Combine: 'and',
      Terms: [
        { Text: '"eng" in list.groups', Matched: true },
        { Text: 'value.user != "mallory"', Matched: true },
      ],
      BindType: 'role',
      BindName: 'team-eng',
    });
    expect(byId[ruleIds.ops as string]).toMatchObject({
      Matched: false,
      Combine: 'or',
      Terms: [
        { Text: '"ops" in list.groups', Matched: false },
        { Text: 'value.team == "ops"', Matched: false },
      ],
    });
    // The bind name is interpolated as the login does it: claim values lower-cased.
    expect(byId[ruleIds.team as string]).toMatchObject({ Matched: true, BindType: 'policy', BindName: 'team-db' });
    expect(byId[ruleIds.ghost as string]).toMatchObject({ Matched: true, RoleMissing: true, BindName: 'no-such-role' });
    expect(byId[ruleIds.root as string]).toMatchObject({
      Matched: false,
      Terms: [{ Text: 'value.user == "root"', Matched: false }],
      BindType: 'management',
    });
    expect(out.body).toMatchObject({
      Management: false,
      Policies: ['team-db'],
      Roles: [{ Name: 'team-eng' }],
      TokenName: 'corp-ada',
    });
  });

  it('names a term that cannot be evaluated (a claim the login lacks) and the failing term of a mixed selector', async () => {
    const created = await mgmt('POST', '/v1/acl/binding-rule', {
      AuthMethod: 'corp',
      Selector: 'list.missing.0 == "x" and value.user == "erin"',
      BindType: 'policy',
      BindName: 'jobs',
    });
    expect(created.status).toBe(200);
    const out = await evaluate({ sub: 'erin', groups: [] });
    const rule = out.body.Rules.find((each: { ID: string }) => each.ID === created.body.ID);
    expect(rule.Matched).toBe(false);
    expect(rule.Terms[0]).toMatchObject({ Text: 'list.missing.0 == "x"', Matched: false });
    expect(rule.Terms[1]).toMatchObject({ Text: 'value.user == "erin"', Matched: true });
    expect((await mgmt('DELETE', `/v1/acl/binding-rule/${created.body.ID}`)).status).toBe(200);
  });

  it('answers 400 naming bad input', async () => {
    expect(await mgmt('POST', '/v1/acl/binding-rules/evaluate', { Claims: {} })).toMatchObject({
      status: 400,
      text: 'AuthMethodName is missing',
    });
    expect(await mgmt('POST', '/v1/acl/binding-rules/evaluate', { AuthMethodName: 'corp' })).toMatchObject({
      status: 400,
      text: 'Claims is missing',
    });
    expect(await evaluate(['sub'])).toMatchObject({ status: 400, text: 'Claims must be a JSON object' });
    expect(await evaluate('ada')).toMatchObject({ status: 400, text: 'Claims must be a JSON object' });
    expect(await evaluate({ sub: 'ada' }, 'nope')).toMatchObject({ status: 400, text: 'auth method nope not found' });
    // A value mapping of a claim that is an object: the login refuses it the same way.
    const bad = await evaluate({ sub: { first: 'ada' } });
    expect(bad).toMatchObject({ status: 400, text: "error converting claim 'sub' to string" });
    expect((await login({ sub: { first: 'ada' } as never })).text).toBe(bad.text);
    expect(
      (
        await h.call('POST', '/v1/acl/binding-rules/evaluate', {
          token: root,
          body: 'not json',
          headers: { 'content-type': 'application/json' },
        })
      ).status,
    ).toBe(400);
  });
});
