import { exportSPKI, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SchedulerService, startSchedulerInMemory } from '../support/scheduler-harness.ts';

/**
 * `POST /v1/acl/logout` (as Consul's): the caller's token is deleted when a login made it, so the console's sign-out
 * revokes what it created; any other token (a bootstrap or management-made one) is refused and kept.
 */
describe('POST /v1/acl/logout', () => {
  let h: SchedulerService;
  let root: string;
  let privateKey: CryptoKey;
  const now = () => Math.floor(h.clock.now() / 1000);
  const loginToken = async (user: string) => {
    const jwt = await new SignJWT({ sub: user })
      .setProtectedHeader({ alg: 'EdDSA' })
      .setIssuedAt(now())
      .setExpirationTime(now() + 300)
      .sign(privateKey);
    const out = await h.call('POST', '/v1/acl/login', { body: { AuthMethodName: 'pem', LoginToken: jwt } });
    expect(out.status).toBe(200);
    return out.body as { SecretID: string; AccessorID: string };
  };

  beforeAll(async () => {
    h = await startSchedulerInMemory();
    root = await h.bootstrap();
    const pair = await generateKeyPair('EdDSA', { extractable: true });
    privateKey = pair.privateKey;
    const mgmt = (method: string, path: string, body: unknown) => h.call(method, path, { token: root, body });
    await mgmt('POST', '/v1/acl/policy/jobs', { Rules: 'namespace "default" { policy = "read" }' });
    await mgmt('POST', '/v1/acl/auth-method', {
      Name: 'pem',
      Type: 'JWT',
      MaxTokenTTL: '30m',
      Config: { JWTValidationPubKeys: [await exportSPKI(pair.publicKey)], ClaimMappings: { sub: 'user' } },
    });
    await mgmt('POST', '/v1/acl/binding-rule', { AuthMethod: 'pem', BindType: 'policy', BindName: 'jobs' });
  });
  afterAll(async () => {
    await h.close();
  });

  it("deletes a login's token: it no longer works, its accessor is gone, and a second logout is refused", async () => {
    const token = await loginToken('ada');
    expect((await h.call('GET', '/v1/acl/token/self', { token: token.SecretID })).status).toBe(200);
    const out = await h.call('POST', '/v1/acl/logout', { token: token.SecretID });
    expect(out.status).toBe(200);
    expect((await h.call('GET', '/v1/acl/token/self', { token: token.SecretID })).status).toBe(403);
    const read = await h.call('GET', `/v1/acl/token/${token.AccessorID}`, { token: root });
    expect(read.status).toBe(404);
    expect((await h.call('POST', '/v1/acl/logout', { token: token.SecretID })).status).toBe(403);
  });

  it('refuses a token no login made, and keeps it', async () => {
    const made = await h.call('POST', '/v1/acl/token', {
      token: root,
      body: { Name: 'ci', Type: 'client', Policies: ['jobs'] },
    });
    const secret = (made.body as { SecretID: string }).SecretID;
    const refused = await h.call('POST', '/v1/acl/logout', { token: secret });
    expect(refused.status).toBe(403);
    expect(refused.text).toContain('only a token made by a login can log out');
    expect((await h.call('GET', '/v1/acl/token/self', { token: secret })).status).toBe(200);
    expect((await h.call('POST', '/v1/acl/logout', { token: root })).status).toBe(403);
    expect((await h.call('GET', '/v1/acl/token/self', { token: root })).status).toBe(200);
    expect((await h.call('POST', '/v1/acl/logout')).status).toBe(403);
  });

  it('does not show how a token was made in any token view', async () => {
    const token = await loginToken('grace');
    const self = await h.call('GET', '/v1/acl/token/self', { token: token.SecretID });
    expect(self.body).not.toHaveProperty('LoginMethod');
    expect(self.body).not.toHaveProperty('SecretHash');
    const list = await h.call('GET', '/v1/acl/tokens', { token: root });
    expect(JSON.stringify(list.body)).not.toContain('LoginMethod');
  });
});
