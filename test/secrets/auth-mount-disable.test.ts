import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type CryptoKey, exportSPKI, generateKeyPair, SignJWT } from 'jose';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createCore } from '../../packages/core/src/composition/secrets-core.ts';
import { createSecretsApp } from '../../packages/core/src/http/secrets-app.ts';
import { sweepExpired } from '../../packages/core/src/entry-points/expiry-sweeps.ts';
import { silentLogger } from '../../packages/core/src/lib/log.ts';
import { tokenBackend } from '../../packages/core/src/secrets/auth/token/token-backend.ts';
import type { MountEntry } from '../../packages/core/src/secrets/mounts/mount-table.ts';
import { systemBackend } from '../../packages/core/src/secrets/sys/system-backend.ts';
import { fileKeySource } from '../../packages/core/src/storage/keyring.ts';
import { type CallResult, type SecretsService, startSecretsInMemory } from '../support/secrets-harness.ts';

/**
 * Disabling an auth method revokes every token it issued, as in Vault: service tokens (with their children and
 * leases) are revoked and leave nothing in the table, batch tokens are refused. Logins go through a real `jwt`
 * mount configured with a local key.
 */
let h: SecretsService;
let keyDir: string;
let privateKey: CryptoKey;
let publicPem: string;

const invalidToken = { errors: ['permission denied: invalid or expired token'] };
const asRoot = (body?: unknown) => ({ token: h.rootToken, ...(body === undefined ? {} : { body }) });
const storedMount = async (mountPath: string) =>
  (await h.core.store.get('mounts', mountPath))?.entry as MountEntry | undefined;
/** Every item the table holds for a service token: the token and its refs, its accessor, its place in the mount's index. */
async function tokenItems(token: string, accessor: string, mountUuid: string): Promise<unknown[]> {
  const hash = h.core.keyring.hash(token);
  const index = (await h.core.store.list(`issued#${mountUuid}`)).filter((item) => item.tokenHash === hash);
  return [
    ...(await h.core.store.list(`token#${hash}`)),
    ...(await h.core.store.list(`accessor#${accessor}`)),
    ...index,
  ];
}

async function enableJwt(mount: string): Promise<void> {
  const steps: Array<[string, unknown]> = [
    [`/v1/sys/auth/${mount}`, { type: 'jwt' }],
    [`/v1/auth/${mount}/config`, { jwt_validation_pubkeys: [publicPem], bound_issuer: 'https://ci.example' }],
    [
      `/v1/auth/${mount}/role/ci`,
      { role_type: 'jwt', user_claim: 'sub', bound_audiences: ['keyhaven'], token_policies: ['app'], token_ttl: '1h' },
    ],
    [
      `/v1/auth/${mount}/role/ci-batch`,
      {
        role_type: 'jwt',
        user_claim: 'sub',
        bound_audiences: ['keyhaven'],
        token_policies: ['app'],
        token_type: 'batch',
      },
    ],
  ];
  for (const [url, body] of steps) {
    const reply = await h.call('POST', url, asRoot(body));
    expect(reply.status, `${url}: ${JSON.stringify(reply.body)}`).toBe(204);
  }
}

async function login(mount: string, role = 'ci'): Promise<CallResult> {
  const now = Math.floor(h.clock.now() / 1000);
  const jwt = await new SignJWT({ iss: 'https://ci.example', aud: 'keyhaven', sub: 'builder' })
    .setProtectedHeader({ alg: 'RS256' })
    .setIssuedAt(now)
    .setExpirationTime(now + 300)
    .sign(privateKey);
  return h.call('POST', `/v1/auth/${mount}/login`, { body: { role, jwt } });
}

async function loggedIn(mount: string, role = 'ci'): Promise<{ token: string; accessor: string }> {
  const reply = await login(mount, role);
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return { token: reply.body.auth.client_token, accessor: reply.body.auth.accessor };
}

const lookupSelf = (token: string) => h.call('GET', '/v1/auth/token/lookup-self', { token });
const readApp = (token: string) => h.call('GET', '/v1/secret/app', { token });

beforeAll(async () => {
  const pair = await generateKeyPair('RS256', { extractable: true });
  privateKey = pair.privateKey;
  publicPem = await exportSPKI(pair.publicKey);
});

beforeEach(async () => {
  keyDir = mkdtempSync(path.join(tmpdir(), 'keyhaven-auth-disable-'));
  h = await startSecretsInMemory({ keySource: fileKeySource(path.join(keyDir, 'key')) });
  const policy = 'path "secret/*" { capabilities = ["read"] }\npath "auth/token/create" { capabilities = ["update"] }';
  expect((await h.call('PUT', '/v1/sys/policies/acl/app', asRoot({ policy }))).status).toBe(204);
  expect((await h.call('POST', '/v1/secret/app', asRoot({ password: 'pw' }))).status).toBe(204);
  expect((await h.call('POST', '/v1/secret/leased', asRoot({ value: 'v', ttl: '1h' }))).status).toBe(204);
  await enableJwt('jwt');
  await enableJwt('jwt2');
});
afterEach(async () => {
  await h.close();
  rmSync(keyDir, { recursive: true, force: true });
});

describe('disabling an auth method', () => {
  it('revokes the service tokens it issued with their children and leases, refuses its batch tokens, and spares the rest', async () => {
    const service = await loggedIn('jwt');
    const batch = await loggedIn('jwt', 'ci-batch');
    expect(batch.token).toMatch(/^hvb\./);
    const child = await h.call('POST', '/v1/auth/token/create', { token: service.token, body: { ttl: '30m' } });
    expect(child.status, JSON.stringify(child.body)).toBe(200);
    const leased = await h.call('GET', '/v1/secret/leased', { token: service.token });
    expect(leased.status).toBe(200);
    const leaseId = leased.body.lease_id as string;
    const elsewhere = await loggedIn('jwt2');
    const fromTokenStore = (await h.call('POST', '/v1/auth/token/create', asRoot({ policies: ['app'] }))).body.auth
      .client_token as string;
    const uuid = (await storedMount('auth/jwt/'))?.uuid as string;

    for (const token of [service.token, batch.token, child.body.auth.client_token])
      expect((await readApp(token)).status).toBe(200);
    expect((await lookupSelf(service.token)).body.data).toMatchObject({
      path: 'auth/jwt/login',
      display_name: 'jwt-builder',
    });
    expect(await tokenItems(service.token, service.accessor, uuid)).not.toEqual([]);

    const disabled = await h.call('DELETE', '/v1/sys/auth/jwt', asRoot());
    expect(disabled.status, JSON.stringify(disabled.body)).toBe(204);

    for (const token of [service.token, batch.token, child.body.auth.client_token]) {
      expect(await lookupSelf(token)).toEqual({ status: 403, body: invalidToken });
      expect(await readApp(token)).toEqual({ status: 403, body: invalidToken });
    }
    expect(await tokenItems(service.token, service.accessor, uuid)).toEqual([]);
    expect(await h.core.store.list(`issued#${uuid}`)).toEqual([]);
    expect(await h.call('PUT', '/v1/sys/leases/lookup', asRoot({ lease_id: leaseId }))).toEqual({
      status: 404,
      body: { errors: ['lease not found'] },
    });
    expect(await storedMount('auth/jwt/')).toBeUndefined();
    expect(await h.core.store.list(`mount#${uuid}`)).toEqual([]);
    expect(Object.keys((await h.call('GET', '/v1/sys/auth', asRoot())).body.data).sort()).toEqual(['jwt2/', 'token/']);
    expect((await login('jwt')).status).toBe(404);

    // Tokens from another auth method and from the token store are untouched.
    expect((await lookupSelf(elsewhere.token)).body.data).toMatchObject({ path: 'auth/jwt2/login' });
    expect((await readApp(elsewhere.token)).body.data).toEqual({ password: 'pw' });
    expect((await readApp(fromTokenStore)).status).toBe(200);

    // A new mount at the same path issues tokens afresh; the old ones stay refused.
    await enableJwt('jwt');
    expect((await readApp((await loggedIn('jwt')).token)).status).toBe(200);
    expect((await readApp((await loggedIn('jwt', 'ci-batch')).token)).status).toBe(200);
    expect((await lookupSelf(service.token)).status).toBe(403);
    expect((await readApp(batch.token)).status).toBe(403);
  });

  it('is finished by the sweep when the process dies after marking the mount', async () => {
    const service = await loggedIn('jwt');
    const batch = await loggedIn('jwt', 'ci-batch');
    const entry = (await h.core.mounts.find('auth', 'jwt')) as MountEntry;
    // The first step of a disable, and then nothing: the process died.
    await h.core.mounts.markDisabling(entry);

    expect(Object.keys((await h.call('GET', '/v1/sys/auth', asRoot())).body.data).sort()).toEqual(['jwt2/', 'token/']);
    expect((await login('jwt')).status).toBe(404);
    expect(await readApp(batch.token)).toEqual({ status: 403, body: invalidToken });
    // The path stays taken until the sweep has finished with it.
    const reused = await h.call('POST', '/v1/sys/auth/jwt', asRoot({ type: 'jwt' }));
    expect(reused).toEqual({ status: 400, body: { errors: ['path is already in use at auth/jwt/'] } });

    await sweepExpired(h.core);
    expect(await lookupSelf(service.token)).toEqual({ status: 403, body: invalidToken });
    expect(await tokenItems(service.token, service.accessor, entry.uuid)).toEqual([]);
    expect(await storedMount('auth/jwt/')).toBeUndefined();
    expect(await h.core.store.list(`mount#${entry.uuid}`)).toEqual([]);
    expect((await h.call('POST', '/v1/sys/auth/jwt', asRoot({ type: 'jwt' }))).status).toBe(204);
  });

  it('revokes the tokens at once where the backend is not bundled, refuses a login racing it, and leaves the rest to the sweep', async () => {
    const service = await loggedIn('jwt');
    const uuid = (await storedMount('auth/jwt/'))?.uuid as string;
    // In AWS the system function serves `sys/*` without the auth methods' backends.
    const systemCore = await createCore({
      store: h.core.store,
      keySource: fileKeySource(path.join(keyDir, 'key')),
      backends: [systemBackend, tokenBackend],
      clock: h.clock,
      log: silentLogger,
    });
    const systemApp = createSecretsApp({ core: async () => systemCore, clientIp: () => '127.0.0.1' });
    const disabled = await systemApp.request('/v1/sys/auth/jwt', {
      method: 'DELETE',
      headers: { 'X-Secrets-Token': h.rootToken },
    });
    expect(disabled.status).toBe(204);

    expect(await lookupSelf(service.token)).toEqual({ status: 403, body: invalidToken });
    expect(await tokenItems(service.token, service.accessor, uuid)).toEqual([]);
    expect(await storedMount('auth/jwt/')).toMatchObject({ uuid, disabling: true });
    // This process still routes the mount from its cache for a few seconds. A service token's write checks the
    // mount, so the login is refused; a batch token is not written: it is refused wherever the disable is known.
    expect(await login('jwt', 'ci')).toEqual({
      status: 400,
      body: { errors: ['cannot create the token: its auth method was disabled'] },
    });
    expect(await h.core.store.list(`issued#${uuid}`)).toEqual([]);
    const batch = await loggedIn('jwt', 'ci-batch');
    const lookupThere = async (token: string) =>
      (await systemApp.request('/v1/auth/token/lookup-self', { headers: { 'X-Secrets-Token': token } })).status;
    expect(await lookupThere(batch.token)).toBe(403);
    h.clock.advance(6);
    expect(await lookupSelf(batch.token)).toEqual({ status: 403, body: invalidToken });

    await sweepExpired(h.core);
    expect(await storedMount('auth/jwt/')).toBeUndefined();
    expect(await h.core.store.list(`mount#${uuid}`)).toEqual([]);
  });
});

describe('sys/leases/revoke-prefix under auth/', () => {
  it('revokes the tokens an auth method issued under the prefix and keeps the method', async () => {
    const first = await loggedIn('jwt');
    const second = await loggedIn('jwt');
    const elsewhere = await loggedIn('jwt2');
    const uuid = (await storedMount('auth/jwt/'))?.uuid as string;

    expect((await h.call('PUT', '/v1/sys/leases/revoke-prefix/auth/jwt/', asRoot())).status).toBe(204);
    for (const { token, accessor } of [first, second]) {
      expect(await lookupSelf(token)).toEqual({ status: 403, body: invalidToken });
      expect(await tokenItems(token, accessor, uuid)).toEqual([]);
    }
    expect((await lookupSelf(elsewhere.token)).status).toBe(200);
    expect(await storedMount('auth/jwt/')).toMatchObject({ uuid });
    const again = await loggedIn('jwt');
    expect((await readApp(again.token)).status).toBe(200);

    // A prefix inside a mount: the login path.
    expect((await h.call('PUT', '/v1/sys/leases/revoke-prefix/auth/jwt2/login', asRoot())).status).toBe(204);
    expect(await lookupSelf(elsewhere.token)).toEqual({ status: 403, body: invalidToken });
    expect((await lookupSelf(again.token)).status).toBe(200);
  });
});
