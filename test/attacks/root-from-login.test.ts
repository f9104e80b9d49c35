/**
 * Attack class: root from a login (issue 23 §2). Only root makes root.
 *
 * Attackers: a role writer (a token allowed only create/update on `auth/jwt/role/*`, or on `auth/token/roles/*`
 * and `auth/token/create/*`), a narrow token (a token with one ordinary policy), a sudo token that is not root.
 * They try: every spelling of `root` in a role's policies then a login with a real signed JWT, a token role that
 * allows root then `auth/token/create/:role`, `auth/token/create` with `policies: ["root"]` spelt every way.
 * They must never reach: a token carrying the root policy, or a login token that never expires.
 *
 * Bulletins replayed: CVE-2025-5999 / HCSEC-2025-13 (Vault: policy names that differ from `root` only by
 * whitespace or case granted root; fixed by sanitising names, trim + lower case + dedupe, wherever stored or
 * compared) and Vault's standing rules "auth methods cannot create root tokens" and "root tokens may not be
 * created without parent token being root".
 */
import { type CryptoKey, exportSPKI, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MountStorage } from '../../packages/core/src/secrets/mounts/mount-storage.ts';
import { tokenStoreMount } from '../../packages/core/src/secrets/mounts/mount-table.ts';
import type { NewToken } from '../../packages/core/src/secrets/tokens/token-store.ts';
import { type CallResult, type SecretsHarness, startSecrets } from '../support/secrets-harness.ts';

/** Spellings of root an attacker tries: whitespace (Go's `unicode.IsSpace` set, U+0085 and U+3000 included), case, repeats. */
const rootSpellings: unknown[] = [
  ['root'],
  [' root'],
  ['ROOT'],
  ['root', 'root'],
  ['Root\u0085'],
  ['\u3000root\t'],
  ['reader', ' ROOT '],
  'reader, root',
  ' Root ',
];

const errorOf = (reply: CallResult) => (reply.body?.errors ?? []).join('; ');

describe('attack: root from a login (CVE-2025-5999 / HCSEC-2025-13; auth methods cannot create root tokens)', () => {
  let h: SecretsHarness;
  let privateKey: CryptoKey;
  let roleWriter = '';
  let tokenRoleWriter = '';
  let narrow = '';
  let sudoNotRoot = '';
  const root = (method: string, path: string, body?: unknown) =>
    h.call(method, path, { token: h.rootToken, ...(body === undefined ? {} : { body }) });
  const as = (token: string, method: string, path: string, body?: unknown) =>
    h.call(method, path, { token, ...(body === undefined ? {} : { body }) });
  const now = () => Math.floor(h.clock.now() / 1000);
  const jwt = (sub: string) =>
    new SignJWT({ sub, aud: 'api' })
      .setProtectedHeader({ alg: 'RS256' })
      .setIssuedAt(now())
      .setExpirationTime(now() + 300)
      .sign(privateKey);
  const login = async (role: string) =>
    h.call('POST', '/v1/auth/jwt/login', { body: { role, jwt: await jwt('alice') } });
  const accessors = async (): Promise<string[]> => (await root('LIST', '/v1/auth/token/accessors')).body.data.keys;
  const jwtRole = (policies: unknown) => ({
    role_type: 'jwt',
    user_claim: 'sub',
    bound_audiences: 'api',
    token_policies: policies,
  });
  const jwtMountStorage = async () => {
    const mount = await h.core.mounts.resolve('auth/jwt/');
    if (!mount) throw new Error('auth/jwt/ is not mounted');
    return new MountStorage(h.core.store, h.core.keyring, mount.uuid);
  };
  const tokenFor = async (policies: string[]) =>
    (await root('POST', '/v1/auth/token/create', { policies })).body.auth.client_token as string;

  beforeAll(async () => {
    h = await startSecrets();
    const keys = await generateKeyPair('RS256', { extractable: true });
    privateKey = keys.privateKey;
    expect((await root('POST', '/v1/sys/auth/jwt', { type: 'jwt' })).status).toBe(204);
    expect(
      (await root('POST', '/v1/auth/jwt/config', { jwt_validation_pubkeys: [await exportSPKI(keys.publicKey)] }))
        .status,
    ).toBe(204);
    const policies: Record<string, string> = {
      reader: 'path "secret/*" { capabilities = ["read"] }',
      'role-writer': 'path "auth/jwt/role/*" { capabilities = ["create", "update"] }',
      'token-role-writer':
        'path "auth/token/roles/*" { capabilities = ["create", "update"] }\npath "auth/token/create/*" { capabilities = ["update"] }',
      creator: 'path "auth/token/create" { capabilities = ["update"] }',
      'sudo-creator':
        'path "auth/token/create" { capabilities = ["update", "sudo"] }\npath "auth/token/create-orphan" { capabilities = ["update", "sudo"] }',
    };
    for (const [name, policy] of Object.entries(policies))
      expect((await root('POST', `/v1/sys/policies/acl/${name}`, { policy })).status).toBe(204);
    roleWriter = await tokenFor(['role-writer']);
    tokenRoleWriter = await tokenFor(['token-role-writer']);
    narrow = await tokenFor(['reader', 'creator']);
    sudoNotRoot = await tokenFor(['sudo-creator']);
  });
  afterAll(() => h.close());

  describe('role writer on auth/jwt/role/*', () => {
    it.each(rootSpellings.map((policies) => [policies]))(
      'cannot write a role granting %j: 400, nothing stored, no login, no token',
      async (policies) => {
        const before = await accessors();
        const name = `esc-${Math.random().toString(36).slice(2, 8)}`;
        const write = await as(roleWriter, 'POST', `/v1/auth/jwt/role/${name}`, jwtRole(policies));
        expect(write.status).toBe(400);
        expect(errorOf(write)).toContain('auth methods cannot create root tokens');
        expect((await root('GET', `/v1/auth/jwt/role/${name}`)).status).toBe(404);
        expect(await (await jwtMountStorage()).getAuthenticated(`role/${name}`)).toBeUndefined();
        const attempt = await login(name);
        expect(attempt.status).toBe(400);
        expect(attempt.body.auth).toBeUndefined();
        expect(await accessors()).toEqual(before);
      },
    );

    it('cannot turn an existing role into a root role with an update', async () => {
      expect((await as(roleWriter, 'POST', '/v1/auth/jwt/role/dev', jwtRole(['reader']))).status).toBe(204);
      const update = await as(roleWriter, 'POST', '/v1/auth/jwt/role/dev', { token_policies: [' rOOt'] });
      expect(update.status).toBe(400);
      expect(errorOf(update)).toContain('auth methods cannot create root tokens');
      expect((await root('GET', '/v1/auth/jwt/role/dev')).body.data.token_policies).toEqual(['reader']);
      const deprecated = await as(roleWriter, 'POST', '/v1/auth/jwt/role/dev', { policies: 'ROOT' });
      expect(deprecated.status).toBe(400);
      expect(errorOf(deprecated)).toContain('auth methods cannot create root tokens');
    });

    it('stores policy names sanitised (Go TrimSpace + ToLower, deduplicated) and the login gets exactly them, with an expiry', async () => {
      const write = await as(
        roleWriter,
        'POST',
        '/v1/auth/jwt/role/clean',
        jwtRole(['Reader ', 'READER', '\u0085reader', ' Default', '']),
      );
      expect(write.status).toBe(204);
      expect((await root('GET', '/v1/auth/jwt/role/clean')).body.data.token_policies).toEqual(['reader', 'default']);
      expect(await (await jwtMountStorage()).getAuthenticated('role/clean')).toMatchObject({
        token_policies: ['reader', 'default'],
      });
      const reply = await login('clean');
      expect(reply.status).toBe(200);
      expect(reply.body.auth.policies).toEqual(['default', 'reader']);
      const self = await as(reply.body.auth.client_token, 'GET', '/v1/auth/token/lookup-self');
      expect(self.body.data.policies).toEqual(['default', 'reader']);
      expect(self.body.data.expire_time).not.toBeNull();
      expect(self.body.data.ttl).toBeGreaterThan(0);
    });

    it('a name Go does not trim (U+FEFF) is never root: refused as root, or kept as a different, ungranted name', async () => {
      // Vault (Go's TrimSpace) keeps "\ufeffroot" as its own name; a list field trimmed with JavaScript's set makes it
      // "root" first, which the role write refuses. Either way the login must not be root.
      const write = await as(roleWriter, 'POST', '/v1/auth/jwt/role/bom', jwtRole(['\ufeffroot']));
      if (write.status === 400) {
        expect(errorOf(write)).toContain('auth methods cannot create root tokens');
        return;
      }
      expect(write.status).toBe(204);
      const reply = await login('bom');
      expect(reply.status).toBe(200);
      expect(reply.body.auth.policies).not.toContain('root');
      const token = reply.body.auth.client_token;
      expect((await as(token, 'LIST', '/v1/sys/policies/acl')).status).toBe(403);
      expect(
        (await as(token, 'POST', '/v1/sys/policies/acl/mine', { policy: 'path "*" { capabilities = ["sudo"] }' }))
          .status,
      ).toBe(403);
      expect((await as(token, 'GET', '/v1/auth/token/lookup-self')).body.data.expire_time).not.toBeNull();
    });

    it("a root role stored before the fix is refused at login with Vault's message, and mints nothing", async () => {
      const storage = await jwtMountStorage();
      const stored = await storage.getAuthenticated<Record<string, unknown>>('role/clean');
      await storage.putAuthenticated('role/legacy', { ...stored, token_policies: [' Root'] });
      const before = await accessors();
      const reply = await login('legacy');
      expect(reply.status).toBe(400);
      expect(errorOf(reply)).toBe('auth methods cannot create root tokens');
      expect(reply.body.auth).toBeUndefined();
      expect(await accessors()).toEqual(before);
    });

    it('the token store itself refuses root to an auth method, whatever calls it (the single entry point)', async () => {
      const mount = await h.core.mounts.resolve('auth/jwt/');
      const request = (policies: string[], extra: Partial<NewToken>): NewToken => ({
        policies,
        noDefaultPolicy: false,
        displayName: 'jwt-alice',
        meta: {},
        ttl: 0,
        explicitMaxTtl: 0,
        period: 0,
        numUses: 0,
        renewable: true,
        type: 'service',
        path: 'auth/jwt/login',
        entityId: '',
        boundCidrs: [],
        parent: undefined,
        mountDefaultTtl: 3600,
        mountMaxTtl: 3600,
        ...extra,
      });
      const issuer = { path: 'auth/jwt/', uuid: mount?.uuid ?? '' };
      for (const policies of [['root'], [' ROOT'], ['reader', 'root\u2003']]) {
        await expect(h.core.tokens.create(request(policies, { issuer }))).rejects.toThrow(
          'auth methods cannot create root tokens',
        );
        await expect(h.core.tokens.create(request(policies, { issuer, type: 'batch' }))).rejects.toThrow(
          'auth methods cannot create root tokens',
        );
        // Through the token store, but with no root behind it: no creator, or a narrow one.
        await expect(h.core.tokens.create(request(policies, { issuer: tokenStoreMount }))).rejects.toThrow(
          'root tokens may not be created without parent token being root',
        );
        const narrowEntry = await h.core.tokens.lookup(narrow);
        await expect(
          h.core.tokens.create(
            request(policies, { issuer: tokenStoreMount, ...(narrowEntry ? { creator: narrowEntry } : {}) }),
          ),
        ).rejects.toThrow('root tokens may not be created without parent token being root');
      }
    });
  });

  describe('role writer on auth/token/roles/* and auth/token/create/*', () => {
    it('a token role allowing root (any spelling) is stored sanitised, and creating from it never gives root', async () => {
      const before = await accessors();
      const write = await as(tokenRoleWriter, 'POST', '/v1/auth/token/roles/esc', {
        allowed_policies: [' Root ', 'ROOT', 'reader'],
        orphan: true,
      });
      expect(write.status).toBe(204);
      expect((await root('GET', '/v1/auth/token/roles/esc')).body.data.allowed_policies).toEqual(['reader', 'root']);
      const tokenStorage = new MountStorage(h.core.store, h.core.keyring, tokenStoreMount.uuid);
      const stored = (await tokenStorage.getAuthenticated('role/esc')) ?? (await tokenStorage.get('role/esc'));
      expect(stored).toMatchObject({ allowed_policies: ['reader', 'root'] });
      for (const policies of [['root'], [' rOOT'], undefined]) {
        const create = await as(tokenRoleWriter, 'POST', '/v1/auth/token/create/esc', policies ? { policies } : {});
        expect(create.status).toBe(400);
        expect(errorOf(create)).toContain('root tokens may not be created without parent token being root');
      }
      expect(await accessors()).toEqual(before);
    });

    it('a token role without allowed policies gives a role writer nothing it does not hold', async () => {
      expect(
        (await as(tokenRoleWriter, 'POST', '/v1/auth/token/roles/open', { orphan: true, token_period: '1h' })).status,
      ).toBe(204);
      const create = await as(tokenRoleWriter, 'POST', '/v1/auth/token/create/open', { policies: ['ROOT'] });
      expect(create.status).toBe(400);
      expect(create.body.auth).toBeUndefined();
    });
  });

  describe('narrow and sudo tokens on auth/token/create', () => {
    it.each([[['root']], [[' Root ']], [['ROOT', 'root']], [['reader', 'root\u0085']]])(
      'a narrow token asking for %j gets 400 and no token',
      async (policies) => {
        const before = await accessors();
        for (const path of ['/v1/auth/token/create', '/v1/auth/token/create-orphan']) {
          const reply = await as(narrow, 'POST', path, { policies });
          expect(reply.status).toBe(path.endsWith('orphan') ? 403 : 400);
          expect(reply.body.auth).toBeUndefined();
        }
        expect(await accessors()).toEqual(before);
      },
    );

    it("a sudo token that is not root asking for root (any spelling) gets Vault's 400", async () => {
      for (const policies of [['root'], [' ROOT'], ['reader', 'Root']]) {
        for (const path of ['/v1/auth/token/create', '/v1/auth/token/create-orphan']) {
          const reply = await as(sudoNotRoot, 'POST', path, { policies });
          expect(reply.status).toBe(400);
          expect(errorOf(reply)).toBe('root tokens may not be created without parent token being root');
        }
      }
    });

    it('root may still make root, and names given by root are stored sanitised', async () => {
      const child = await root('POST', '/v1/auth/token/create', { policies: [' ROOT '], ttl: '1h' });
      expect(child.status).toBe(200);
      expect(child.body.auth.policies).toEqual(['root']);
      const mixed = await root('POST', '/v1/auth/token/create', {
        policies: [' Reader ', 'READER', 'reader\u0085', '', 'default'],
      });
      expect(mixed.body.auth.policies).toEqual(['default', 'reader']);
      const entry = await h.core.tokens.lookup(mixed.body.auth.client_token);
      expect(entry?.policies).toEqual(['default', 'reader']);
      expect((await as(mixed.body.auth.client_token, 'GET', '/v1/secret/anything')).status).not.toBe(403);
    });
  });

  describe('policy names on sys/policies/acl and sys/policy', () => {
    it('are stored and looked up under one sanitised name; root cannot be written in any case', async () => {
      expect(
        (await root('PUT', '/v1/sys/policy/OPS', { rules: 'path "secret/ops/*" { capabilities = ["read"] }' })).status,
      ).toBe(204);
      const read = await root('GET', '/v1/sys/policies/acl/ops');
      expect(read.status).toBe(200);
      expect(read.body.data.name).toBe('ops');
      expect((await root('GET', '/v1/sys/policies/acl/Ops')).body.data.name).toBe('ops');
      const names: string[] = (await root('LIST', '/v1/sys/policies/acl')).body.data.keys;
      expect(names).toContain('ops');
      expect(names).not.toContain('OPS');
      expect((await h.core.policies.get('OPS'))?.name).toBe('ops');
      for (const name of ['root', 'ROOT', 'Root']) {
        for (const path of [`/v1/sys/policies/acl/${name}`, `/v1/sys/policy/${name}`]) {
          const document = 'path "*" { capabilities = ["read"] }';
          const reply = await root('PUT', path, path.includes('/acl/') ? { policy: document } : { rules: document });
          expect(reply.status).toBe(400);
          expect(errorOf(reply)).toContain('cannot update the root policy');
        }
      }
      // A token whose policy is spelt differently is granted that policy (compared sanitised).
      const token = await tokenFor([' Ops']);
      expect((await root('POST', '/v1/secret/ops/db', { password: 'pw' })).status).toBe(204);
      expect((await as(token, 'GET', '/v1/secret/ops/db')).status).toBe(200);
    });
  });
});
