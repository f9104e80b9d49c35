import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type CryptoKey, exportJWK, exportSPKI, generateKeyPair, type JWTPayload, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SchedulerService, startSchedulerInMemory } from '../support/scheduler-harness.ts';

describe('POST /v1/acl/login with JWTs', () => {
  let h: SchedulerService;
  let root: string;
  let server: Server;
  let privateKey: CryptoKey;
  let stranger: CryptoKey;
  let pem: string;
  let edKey: CryptoKey;
  const mgmt = (method: string, path: string, body?: unknown) =>
    h.call(method, path, { token: root, ...(body === undefined ? {} : { body }) });
  const now = () => Math.floor(h.clock.now() / 1000);
  const sign = (claims: JWTPayload, key: CryptoKey = privateKey, alg = 'RS256', kid = 'k1') =>
    new SignJWT(claims)
      .setProtectedHeader({ alg, kid })
      .setIssuer('https://issuer.example')
      .setAudience('nomad')
      .setIssuedAt(now())
      .setExpirationTime(now() + 300)
      .sign(key);
  const login = (LoginToken: string, AuthMethodName = 'corp') =>
    h.call('POST', '/v1/acl/login', { body: { AuthMethodName, LoginToken } });

  beforeAll(async () => {
    h = await startSchedulerInMemory();
    root = await h.bootstrap();
    const rsa = await generateKeyPair('RS256', { extractable: true });
    privateKey = rsa.privateKey;
    stranger = (await generateKeyPair('RS256')).privateKey;
    const ed = await generateKeyPair('EdDSA', { extractable: true });
    edKey = ed.privateKey;
    pem = await exportSPKI(ed.publicKey);
    const jwk = { ...(await exportJWK(rsa.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
    server = createServer((_request, response) => {
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify({ keys: [jwk] }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const jwksUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks`;
    await mgmt('POST', '/v1/acl/policy/jobs', { Rules: 'namespace "default" { policy = "read" }' });
    await mgmt('POST', '/v1/acl/policy/nodes', { Rules: 'node { policy = "read" }' });
    await mgmt('POST', '/v1/acl/role', { Name: 'team-eng', Policies: [{ Name: 'jobs' }] });
    await mgmt('POST', '/v1/acl/role', { Name: 'team-ops', Policies: [{ Name: 'nodes' }] });
    const method = await mgmt('POST', '/v1/acl/auth-method', {
      Name: 'corp',
      Type: 'JWT',
      TokenLocality: 'global',
      MaxTokenTTL: '2h',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: Nomad's interpolation syntax, not a JS template
      TokenNameFormat: '${auth_method_name}-${value.user}',
      Config: {
        JWKSURL: jwksUrl,
        BoundAudiences: ['nomad'],
        BoundIssuer: ['https://issuer.example'],
        ClaimMappings: { sub: 'user', 'project-id': 'project' },
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
          BindName: 'team-eng',
        })
      ).status,
    ).toBe(200);
    expect(
      (
        await mgmt('POST', '/v1/acl/binding-rule', {
          AuthMethod: 'corp',
          Selector: '"ops" in list.groups',
          BindType: 'role',
          BindName: 'team-ops',
        })
      ).status,
    ).toBe(200);
    await mgmt('POST', '/v1/acl/binding-rule', {
      AuthMethod: 'corp',
      Selector: 'value.project == "p1"',
      BindType: 'policy',
      BindName: 'nodes',
    });
    await mgmt('POST', '/v1/acl/binding-rule', {
      AuthMethod: 'corp',
      Selector: 'value.user == "root"',
      BindType: 'management',
    });
    await mgmt('POST', '/v1/acl/auth-method', {
      Name: 'pem',
      Type: 'JWT',
      MaxTokenTTL: '30m',
      Config: { JWTValidationPubKeys: [pem], ClaimMappings: { sub: 'user' } },
    });
    await mgmt('POST', '/v1/acl/binding-rule', { AuthMethod: 'pem', BindType: 'policy', BindName: 'jobs' });
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await h.close();
  });

  it('mints a token with the matched roles and policies, named by the format, living MaxTokenTTL', async () => {
    const out = await login(await sign({ sub: 'ada', groups: ['eng', 'ops', 'sales'], 'project-id': 'p1' }));
    expect(out.status).toBe(200);
    expect(out.body).toMatchObject({
      Name: 'corp-ada',
      Type: 'client',
      Global: true,
      Policies: ['nodes'],
      ExpirationTTL: '2h0m0s',
    });
    expect(out.body.Roles.map((role: { Name: string }) => role.Name).sort()).toEqual(['team-eng', 'team-ops']);
    expect(Date.parse(out.body.ExpirationTime)).toBe(h.clock.now() + 2 * 3600 * 1000);
    const self = await h.call('GET', '/v1/acl/token/self', { token: out.body.SecretID });
    expect(self.body.AccessorID).toBe(out.body.AccessorID);
    const roles = await h.call('GET', '/v1/acl/roles', { token: out.body.SecretID });
    expect(roles.body).toHaveLength(2);
  });

  it('mints a management token when a management rule matches', async () => {
    const out = await login(await sign({ sub: 'root', groups: [] }));
    expect(out.body).toMatchObject({ Type: 'management', Policies: [], Roles: [] });
    expect((await h.call('GET', '/v1/acl/tokens', { token: out.body.SecretID })).status).toBe(200);
  });

  it('answers 400 when nothing binds and 401 for an invalid JWT', async () => {
    const none = await login(await sign({ sub: 'bob', groups: ['sales'], 'project-id': 'p2' }));
    expect(none).toMatchObject({ status: 400, text: 'no role or policy bindings matched' });
    expect((await login(await sign({ sub: 'ada', groups: ['eng'] }, stranger))).status).toBe(401);
    expect((await login('not.a.jwt')).status).toBe(401);
    const wrongAudience = await new SignJWT({ sub: 'ada', groups: ['eng'] })
      .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
      .setIssuer('https://issuer.example')
      .setAudience('other')
      .setExpirationTime(now() + 300)
      .sign(privateKey);
    expect((await login(wrongAudience)).status).toBe(401);
    const expired = await sign({ sub: 'ada', groups: ['eng'] });
    h.clock.advance(600);
    expect((await login(expired)).status).toBe(401);
    expect((await login(await sign({ sub: 'ada', groups: ['eng'] }), 'nope')).status).toBe(400);
    expect((await h.call('POST', '/v1/acl/login', { body: { AuthMethodName: 'corp' } })).status).toBe(400);
  });

  it('refuses a bind name that uses a list claim, as Nomad does (list claims are for selectors only)', async () => {
    const rule = await mgmt('POST', '/v1/acl/binding-rule', {
      AuthMethod: 'pem',
      BindType: 'role',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: Nomad's interpolation syntax, not a JS template
      BindName: 'team-${list.groups}',
    });
    expect(rule.status).toBe(400);
    expect(rule.text).toMatch(/list\.groups/);
  });

  it('validates with JWTValidationPubKeys', async () => {
    const token = await new SignJWT({ sub: 'eve' })
      .setProtectedHeader({ alg: 'EdDSA' })
      .setExpirationTime(now() + 60)
      .sign(edKey);
    const out = await login(token, 'pem');
    expect(out.status).toBe(200);
    expect(out.body).toMatchObject({ Name: 'JWT-pem', Policies: ['jobs'], Global: false, ExpirationTTL: '30m0s' });
  });

  it("checks times as Nomad's validator does: one of exp, nbf, iat is required, and the leeways are the method's", async () => {
    const timeless = await new SignJWT({ sub: 'eve' }).setProtectedHeader({ alg: 'EdDSA' }).sign(edKey);
    const refused = await login(timeless, 'pem');
    expect(refused.status).toBe(401);
    expect(refused.text).toContain('no issue time, notbefore, or expiration time');
    // Expired 5 minutes ago: past the default leeways (150 s + 60 s of skew), inside a method's 10 minutes.
    const stale = await new SignJWT({ sub: 'eve' })
      .setProtectedHeader({ alg: 'EdDSA' })
      .setExpirationTime(now() - 300)
      .sign(edKey);
    expect((await login(stale, 'pem')).status).toBe(401);
    const lenient = await mgmt('POST', '/v1/acl/auth-method', {
      Name: 'lenient',
      Type: 'JWT',
      MaxTokenTTL: '30m',
      Config: {
        JWTValidationPubKeys: [pem],
        ExpirationLeeway: '10m',
        BoundIssuer: ['https://a.example', 'https://b.example'],
      },
    });
    expect(lenient.status).toBe(200);
    await mgmt('POST', '/v1/acl/binding-rule', { AuthMethod: 'lenient', BindType: 'policy', BindName: 'jobs' });
    const fromB = await new SignJWT({ sub: 'eve' })
      .setProtectedHeader({ alg: 'EdDSA' })
      .setIssuer('https://b.example')
      .setExpirationTime(now() - 300)
      .sign(edKey);
    expect((await login(fromB, 'lenient')).status).toBe(200);
    const fromC = await new SignJWT({ sub: 'eve' })
      .setProtectedHeader({ alg: 'EdDSA' })
      .setIssuer('https://c.example')
      .setExpirationTime(now() + 60)
      .sign(edKey);
    const wrongIssuer = await login(fromC, 'lenient');
    expect(wrongIssuer.status).toBe(401);
    expect(wrongIssuer.text).toContain('invalid issuer (iss) claim');
  });
});
