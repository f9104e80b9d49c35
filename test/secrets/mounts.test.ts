import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createCore } from '../../packages/core/src/composition/secrets-core.ts';
import { createSecretsApp } from '../../packages/core/src/http/secrets-app.ts';
import { silentLogger } from '../../packages/core/src/lib/log.ts';
import { allSecretsFamilies, backendsOf } from '../../packages/core/src/secrets/families.ts';
import type { MountEntry } from '../../packages/core/src/secrets/mounts/mount-table.ts';
import { fileKeySource } from '../../packages/core/src/storage/keyring.ts';
import { mountRecording, nullAuthBackend, recordingBackend, upstreamOf } from '../support/recording-backend.ts';
import { type SecretsService, startSecretsInMemory } from '../support/secrets-harness.ts';

let h: SecretsService;
let keyDir: string;
beforeEach(async () => {
  keyDir = mkdtempSync(path.join(tmpdir(), 'keyhaven-mounts-'));
  h = await startSecretsInMemory({
    extraBackends: [recordingBackend, nullAuthBackend],
    keySource: fileKeySource(path.join(keyDir, 'key')),
  });
});
afterEach(async () => {
  await h.close();
  rmSync(keyDir, { recursive: true, force: true });
});

const asRoot = (body?: unknown) => ({ token: h.rootToken, ...(body === undefined ? {} : { body }) });
const storedMount = async (path: string) => (await h.core.store.get('mounts', path))?.entry as MountEntry | undefined;
const mountItems = (uuid: string) => h.core.store.list(`mount#${uuid}`);

async function tokenWith(policy: string): Promise<string> {
  const name = `policy-${randomUUID().slice(0, 8)}`;
  expect((await h.call('PUT', `/v1/sys/policies/acl/${name}`, asRoot({ policy }))).status).toBe(204);
  const created = await h.call('POST', '/v1/auth/token/create', asRoot({ policies: [name] }));
  return created.body.auth.client_token as string;
}

describe('sys/mounts', () => {
  it('lists the built-in and default mounts', async () => {
    const listed = await h.call('GET', '/v1/sys/mounts', asRoot());
    expect(listed.status).toBe(200);
    expect(Object.keys(listed.body.data).sort()).toEqual(['identity/', 'secret/', 'sys/']);
    expect(listed.body.data['secret/']).toMatchObject({
      type: 'kv',
      config: { default_lease_ttl: 0, max_lease_ttl: 0 },
    });
    expect(listed.body.data['sys/']).toMatchObject({ type: 'system' });
  });

  it('enables a mount with a description and lease TTLs, reads it, tunes it and disables it', async () => {
    const enabled = await h.call(
      'POST',
      '/v1/sys/mounts/team/app',
      asRoot({
        type: 'kv',
        description: 'team secrets',
        config: { default_lease_ttl: '1h', max_lease_ttl: 86400 },
      }),
    );
    expect(enabled.status).toBe(204);
    const stored = await storedMount('team/app/');
    expect(stored).toMatchObject({
      path: 'team/app/',
      type: 'kv',
      description: 'team secrets',
      config: { defaultLeaseTtl: 3600, maxLeaseTtl: 86400 },
    });

    const listed = await h.call('GET', '/v1/sys/mounts', asRoot());
    expect(listed.body.data['team/app/']).toMatchObject({
      type: 'kv',
      description: 'team secrets',
      uuid: stored?.uuid,
      accessor: stored?.accessor,
      config: { default_lease_ttl: 3600, max_lease_ttl: 86400 },
    });
    const read = await h.call('GET', '/v1/sys/mounts/team/app', asRoot());
    expect(read.status).toBe(200);
    expect(read.body.data).toMatchObject({
      type: 'kv',
      description: 'team secrets',
      config: { default_lease_ttl: 3600, max_lease_ttl: 86400 },
    });
    expect(read.body.data.accessor).toMatch(/^kv_/);

    expect((await h.call('POST', '/v1/team/app/db', asRoot({ password: 'pw' }))).status).toBe(204);

    const tune = await h.call('GET', '/v1/sys/mounts/team/app/tune', asRoot());
    expect(tune.status).toBe(200);
    expect(tune.body.data).toMatchObject({
      description: 'team secrets',
      default_lease_ttl: 3600,
      max_lease_ttl: 86400,
      default_lease_ttl_string: '1h0m0s',
      max_lease_ttl_string: '24h0m0s',
    });
    const tuned = await h.call(
      'POST',
      '/v1/sys/mounts/team/app/tune',
      asRoot({ default_lease_ttl: '2h', description: 'renamed' }),
    );
    expect(tuned.status).toBe(204);
    expect(await storedMount('team/app/')).toMatchObject({
      description: 'renamed',
      config: { defaultLeaseTtl: 7200, maxLeaseTtl: 86400 },
    });
    expect((await h.call('GET', '/v1/sys/mounts/team/app/tune', asRoot())).body.data).toMatchObject({
      description: 'renamed',
      default_lease_ttl: 7200,
    });

    const disabled = await h.call('DELETE', '/v1/sys/mounts/team/app', asRoot());
    expect(disabled.status).toBe(204);
    expect(await storedMount('team/app/')).toBeUndefined();
    expect(Object.keys((await h.call('GET', '/v1/sys/mounts', asRoot())).body.data)).not.toContain('team/app/');
    expect((await h.call('GET', '/v1/team/app/db', asRoot())).status).toBe(404);
    expect((await h.call('GET', '/v1/sys/mounts/team/app', asRoot())).status).toBe(404);
    expect((await h.call('DELETE', '/v1/sys/mounts/team/app', asRoot())).status).toBe(204);
  });

  it('shows the system TTLs in tune for a mount that sets none', async () => {
    const tune = await h.call('GET', '/v1/sys/mounts/secret/tune', asRoot());
    expect(tune.body.data).toMatchObject({
      default_lease_ttl: 2764800,
      max_lease_ttl: 2764800,
      default_lease_ttl_string: '768h0m0s',
      max_lease_ttl_string: '768h0m0s',
    });
  });

  it("shows a mount's options and plugin versions where Vault does, at the top level too", async () => {
    expect((await h.call('POST', '/v1/sys/mounts/kv2', asRoot({ type: 'kv-v2' }))).status).toBe(204);
    const tune = await h.call('GET', '/v1/sys/mounts/kv2/tune', asRoot());
    expect(tune.status).toBe(200);
    expect(tune.body.data.options).toEqual({ version: '2' });
    // What the MariaDB key-management plugin reads before it starts: `options.version` at the top level.
    expect(tune.body.options).toEqual({ version: '2' });
    expect(tune.body.force_no_cache).toBe(false);
    expect(Object.hasOwn(tune.body.data, 'token_type')).toBe(false);
    // A mount without options shows none in its tune, as Vault leaves the field out.
    expect(Object.hasOwn((await h.call('GET', '/v1/sys/mounts/secret/tune', asRoot())).body.data, 'options')).toBe(
      false,
    );

    const read = await h.call('GET', '/v1/sys/mounts/kv2', asRoot());
    for (const body of [read.body.data, read.body])
      expect(body).toMatchObject({
        type: 'kv',
        options: { version: '2' },
        plugin_version: '',
        running_plugin_version: expect.stringMatching(/^v\d+\.\d+\.\d+\+builtin\.keyhaven$/),
        running_sha256: '',
        external_entropy_access: false,
        local: false,
        seal_wrap: false,
      });
    const listed = await h.call('GET', '/v1/sys/mounts', asRoot());
    expect(listed.body['kv2/']).toEqual(read.body.data);
    expect(listed.body.data['secret/'].options).toBeNull();

    const auth = await h.call('GET', '/v1/sys/auth', asRoot());
    expect(auth.body['token/'].config.token_type).toBe('default-service');
    expect(auth.body.data['token/'].running_plugin_version).toBe(read.body.data.running_plugin_version);
    const authTune = await h.call('GET', '/v1/sys/auth/token/tune', asRoot());
    expect(authTune.body).toMatchObject({ token_type: 'default-service', data: { token_type: 'default-service' } });
  });

  it('refuses a tune or an enable whose TTLs do not fit, naming the field', async () => {
    await h.call('POST', '/v1/sys/mounts/kv2', asRoot({ type: 'kv', config: { max_lease_ttl: '1h' } }));
    const tooLong = await h.call('POST', '/v1/sys/mounts/kv2/tune', asRoot({ default_lease_ttl: '2h' }));
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.errors).toEqual(['default_lease_ttl must not be greater than max_lease_ttl']);
    const negative = await h.call('POST', '/v1/sys/mounts/kv2/tune', asRoot({ max_lease_ttl: '-1h' }));
    expect(negative.status).toBe(400);
    expect(negative.body.errors[0]).toContain('max_lease_ttl');
    expect(await storedMount('kv2/')).toMatchObject({ config: { defaultLeaseTtl: 0, maxLeaseTtl: 3600 } });

    const overSystem = await h.call(
      'POST',
      '/v1/sys/mounts/kv3',
      asRoot({ type: 'kv', config: { max_lease_ttl: '1000h' } }),
    );
    expect(overSystem.status).toBe(400);
    expect(overSystem.body.errors[0]).toContain('max_lease_ttl');
    const defaultOverSystem = await h.call(
      'POST',
      '/v1/sys/mounts/kv3',
      asRoot({ type: 'kv', config: { default_lease_ttl: 1e300 } }),
    );
    expect(defaultOverSystem.status).toBe(400);
    expect(defaultOverSystem.body.errors[0]).toContain('default_lease_ttl');
    const garbage = await h.call(
      'POST',
      '/v1/sys/mounts/kv3',
      asRoot({ type: 'kv', config: { default_lease_ttl: 'soon' } }),
    );
    expect(garbage.status).toBe(400);
    expect(garbage.body.errors[0]).toContain('config.default_lease_ttl');
    expect(await storedMount('kv3/')).toBeUndefined();
    expect((await h.call('GET', '/v1/sys/mounts/nothing/tune', asRoot())).status).toBe(404);
  });

  it('refuses endpoint options (operator configuration, even from root) and a bad retry_base_ms, at enable and at tune', async () => {
    const bad = await h.call(
      'POST',
      '/v1/sys/mounts/gcp-bad',
      asRoot({ type: 'cloud', options: { iam_endpoint: 'http://127.0.0.1:9/iam' } }),
    );
    expect(bad.status).toBe(400);
    expect(bad.body.errors[0]).toMatch(/options\.iam_endpoint.*operator configuration.*KEYHAVEN_GOOGLE_IAM_URL/);
    const ftp = await h.call(
      'POST',
      '/v1/sys/mounts/gcp-bad',
      asRoot({ type: 'cloud', options: { token_endpoint: 'ftp://x/token' } }),
    );
    expect(ftp.body.errors[0]).toMatch(/options\.token_endpoint.*operator configuration/);
    const retry = await h.call(
      'POST',
      '/v1/sys/mounts/gcp-bad',
      asRoot({ type: 'cloud', options: { retry_base_ms: '-5' } }),
    );
    expect(retry.body.errors[0]).toMatch(/options\.retry_base_ms/);
    expect(await storedMount('gcp-bad/')).toBeUndefined();
    const good = await h.call(
      'POST',
      '/v1/sys/mounts/gcp-good',
      asRoot({ type: 'cloud', options: { retry_base_ms: '5' } }),
    );
    expect(good.status).toBe(204);
    const tune = await h.call(
      'POST',
      '/v1/sys/mounts/gcp-good/tune',
      asRoot({ options: { sts_endpoint: 'https://sts.example' } }),
    );
    expect(tune.status).toBe(400);
    expect(tune.body.errors[0]).toMatch(/options\.sts_endpoint.*operator configuration/);
    expect((await storedMount('gcp-good/'))?.options).toEqual({ retry_base_ms: '5' });
  });

  it('refuses unknown types by name, a missing type and bad paths', async () => {
    const unknown = await h.call('POST', '/v1/sys/mounts/x', asRoot({ type: 'nosuch' }));
    expect(unknown.status).toBe(400);
    expect(unknown.body.errors[0]).toContain('"nosuch"');
    const missing = await h.call('POST', '/v1/sys/mounts/x', asRoot({ description: 'no type' }));
    expect(missing.status).toBe(400);
    expect(missing.body.errors[0]).toContain('type');
    const badPath = await h.call('POST', '/v1/sys/mounts/a b', asRoot({ type: 'kv' }));
    expect(badPath.status).toBe(400);
    expect((await h.call('POST', '/v1/sys/mounts/bad*name', asRoot({ type: 'kv' }))).status).toBe(400);
    expect(Object.keys((await h.call('GET', '/v1/sys/mounts', asRoot())).body.data).sort()).toEqual([
      'identity/',
      'secret/',
      'sys/',
    ]);
  });

  it('refuses overlapping and reserved paths, and the built-in types', async () => {
    await h.call('POST', '/v1/sys/mounts/team', asRoot({ type: 'kv' }));
    for (const path of ['team', 'team/sub', 'secret/inner']) {
      const clash = await h.call('POST', `/v1/sys/mounts/${path}`, asRoot({ type: 'kv' }));
      expect(clash.status, path).toBe(400);
      expect(clash.body.errors[0]).toMatch(/^path is already in use at (team|secret)\/$/);
    }
    await h.call('POST', '/v1/sys/mounts/deep/inner', asRoot({ type: 'kv' }));
    expect((await h.call('POST', '/v1/sys/mounts/deep', asRoot({ type: 'kv' }))).body.errors).toEqual([
      'path is already in use at deep/inner/',
    ]);

    for (const path of ['sys', 'sys/extra', 'auth/token', 'auth/mine']) {
      const reserved = await h.call('POST', `/v1/sys/mounts/${path}`, asRoot({ type: 'kv' }));
      expect(reserved.status, path).toBe(400);
      expect(reserved.body.errors[0]).toContain('reserved');
    }
    // A second copy of the system backend or the token store would be `sys/` or `auth/token/` under another name.
    const system = await h.call('POST', '/v1/sys/mounts/sys2', asRoot({ type: 'system' }));
    expect(system.status).toBe(400);
    expect(system.body.errors[0]).toContain('"system"');
    expect(await storedMount('sys2/')).toBeUndefined();
  });

  it('refuses to disable or tune the built-in mounts', async () => {
    const disable = await h.call('DELETE', '/v1/sys/mounts/sys', asRoot());
    expect(disable.status).toBe(400);
    expect(disable.body.errors).toEqual(['cannot disable the built-in mount sys/']);
    expect((await h.call('POST', '/v1/sys/mounts/sys/tune', asRoot({ default_lease_ttl: 60 }))).status).toBe(400);
    expect((await h.call('GET', '/v1/sys/mounts', asRoot())).body.data['sys/']).toBeDefined();
  });

  it('needs the right policy', async () => {
    const reader = await tokenWith('path "sys/mounts" { capabilities = ["read"] }');
    expect((await h.call('GET', '/v1/sys/mounts', { token: reader })).status).toBe(200);
    expect((await h.call('POST', '/v1/sys/mounts/x', { token: reader, body: { type: 'kv' } })).status).toBe(403);
    expect((await h.call('DELETE', '/v1/sys/mounts/secret', { token: reader })).status).toBe(403);
    expect(await storedMount('secret/')).toBeDefined();
  });

  it('keeps separate data for one backend mounted at two paths', async () => {
    await h.call('POST', '/v1/sys/mounts/kv-a', asRoot({ type: 'kv' }));
    await h.call('POST', '/v1/sys/mounts/kv-b', asRoot({ type: 'kv' }));
    await h.call('POST', '/v1/kv-a/app', asRoot({ owner: 'a' }));
    await h.call('POST', '/v1/kv-b/app', asRoot({ owner: 'b' }));
    await h.call('POST', '/v1/kv-b/only-b', asRoot({ owner: 'b' }));
    expect((await h.call('GET', '/v1/kv-a/app', asRoot())).body.data).toEqual({ owner: 'a' });
    expect((await h.call('GET', '/v1/kv-b/app', asRoot())).body.data).toEqual({ owner: 'b' });
    expect((await h.call('GET', '/v1/kv-a/only-b', asRoot())).status).toBe(404);
    expect((await h.call('LIST', '/v1/kv-a/', asRoot())).body.data.keys).toEqual(['app']);

    const b = await storedMount('kv-b/');
    expect((await h.call('DELETE', '/v1/sys/mounts/kv-a', asRoot())).status).toBe(204);
    expect((await h.call('GET', '/v1/kv-b/app', asRoot())).body.data).toEqual({ owner: 'b' });
    expect((await mountItems(b!.uuid)).map((item) => item.sk)).toEqual(['app', 'only-b']);
  });

  it('disabling revokes the mount’s leases through the hook and wipes its storage', async () => {
    await mountRecording(h, 'rec', { roles: { app: { ttl: '1h' } } });
    await mountRecording(h, 'rec-other', { roles: { app: { ttl: '1h' } } });
    const leases = [
      (await h.call('GET', '/v1/rec/creds/app', asRoot())).body.lease_id as string,
      (await h.call('GET', '/v1/rec/creds/app', asRoot())).body.lease_id as string,
    ];
    const other = (await h.call('GET', '/v1/rec-other/creds/app', asRoot())).body.lease_id as string;
    const entry = await storedMount('rec/');
    expect((await mountItems(entry!.uuid)).length).toBeGreaterThan(0);

    expect((await h.call('DELETE', '/v1/sys/mounts/rec', asRoot())).status).toBe(204);
    for (const leaseId of leases) {
      expect(await upstreamOf(h.core, leaseId)).toMatchObject({ attempts: 1, revoked: 1 });
      expect((await h.call('PUT', '/v1/sys/leases/lookup', asRoot({ lease_id: leaseId }))).status).toBe(404);
    }
    expect(await mountItems(entry!.uuid)).toEqual([]);
    expect(await upstreamOf(h.core, other)).toBeUndefined();
    expect((await h.call('PUT', '/v1/sys/leases/lookup', asRoot({ lease_id: other }))).status).toBe(200);

    // Mounted again at the same path, it starts empty.
    await h.call('POST', '/v1/sys/mounts/rec', asRoot({ type: 'recording' }));
    expect((await h.call('GET', '/v1/rec/creds/app', asRoot())).status).toBe(404);
  });

  it('refuses to disable a mount while one of its leases cannot be revoked', async () => {
    await mountRecording(h, 'rec', { roles: { app: { ttl: '1h' } } });
    const leaseId = (await h.call('GET', '/v1/rec/creds/app', asRoot())).body.lease_id as string;
    await h.call('POST', '/v1/rec/config', asRoot({ fail_revoke: true }));
    const entry = await storedMount('rec/');

    const refused = await h.call('DELETE', '/v1/sys/mounts/rec', asRoot());
    expect(refused.status).toBe(502);
    expect(refused.body.errors[0]).toContain('could not be revoked');
    expect(await storedMount('rec/')).toEqual(entry);
    expect((await h.call('GET', '/v1/rec/creds/app', asRoot())).status).toBe(200);
    expect((await h.call('PUT', '/v1/sys/leases/lookup', asRoot({ lease_id: leaseId }))).body.data).toMatchObject({
      revocation_attempts: 1,
    });

    await h.call('POST', '/v1/rec/config', asRoot({ fail_revoke: false }));
    expect((await h.call('DELETE', '/v1/sys/mounts/rec', asRoot())).status).toBe(204);
    expect(await upstreamOf(h.core, leaseId)).toMatchObject({ attempts: 2, revoked: 1 });
    expect(await mountItems(entry!.uuid)).toEqual([]);
  });
});

describe('sys/auth', () => {
  it('lists, enables, reads, tunes and disables auth methods', async () => {
    const before = await h.call('GET', '/v1/sys/auth', asRoot());
    expect(before.status).toBe(200);
    expect(Object.keys(before.body.data)).toEqual(['token/']);
    expect(before.body.data['token/']).toMatchObject({ type: 'token' });

    const enabled = await h.call(
      'POST',
      '/v1/sys/auth/people',
      asRoot({ type: 'null-auth', description: 'humans', config: { default_lease_ttl: '8h' } }),
    );
    expect(enabled.status).toBe(204);
    expect(await storedMount('auth/people/')).toMatchObject({
      table: 'auth',
      type: 'null-auth',
      description: 'humans',
      config: { defaultLeaseTtl: 28800 },
    });
    const listed = await h.call('GET', '/v1/sys/auth', asRoot());
    expect(Object.keys(listed.body.data).sort()).toEqual(['people/', 'token/']);
    expect(listed.body.data['people/'].accessor).toMatch(/^auth_null-auth_/);
    expect(Object.keys((await h.call('GET', '/v1/sys/mounts', asRoot())).body.data)).not.toContain('auth/people/');
    expect((await h.call('GET', '/v1/sys/auth/people', asRoot())).body.data).toMatchObject({
      type: 'null-auth',
      description: 'humans',
    });

    const login = await h.call('POST', '/v1/auth/people/login', { body: {} });
    expect(login.status).toBe(200);
    expect(login.body.auth.lease_duration).toBe(28800);

    expect((await h.call('POST', '/v1/sys/auth/people/tune', asRoot({ default_lease_ttl: '1h' }))).status).toBe(204);
    expect((await h.call('GET', '/v1/sys/auth/people/tune', asRoot())).body.data).toMatchObject({
      default_lease_ttl: 3600,
    });
    expect((await h.call('POST', '/v1/auth/people/login', { body: {} })).body.auth.lease_duration).toBe(3600);

    expect((await h.call('DELETE', '/v1/sys/auth/people', asRoot())).status).toBe(204);
    expect(await storedMount('auth/people/')).toBeUndefined();
    expect(Object.keys((await h.call('GET', '/v1/sys/auth', asRoot())).body.data)).toEqual(['token/']);
    expect((await h.call('POST', '/v1/auth/people/login', { body: {} })).status).toBe(404);
  });

  it('refuses unknown types, secrets engines, overlaps and the token store’s path', async () => {
    const unknown = await h.call('POST', '/v1/sys/auth/x', asRoot({ type: 'ldap-ish' }));
    expect(unknown.status).toBe(400);
    expect(unknown.body.errors[0]).toContain('"ldap-ish"');
    const engine = await h.call('POST', '/v1/sys/auth/x', asRoot({ type: 'kv' }));
    expect(engine.status).toBe(400);
    expect(engine.body.errors[0]).toContain('"kv"');

    for (const path of ['token', 'token/sub']) {
      const taken = await h.call('POST', `/v1/sys/auth/${path}`, asRoot({ type: 'null-auth' }));
      expect(taken.status, path).toBe(400);
      expect(taken.body.errors).toEqual(['path is already in use at auth/token/']);
    }
    const secondTokenStore = await h.call('POST', '/v1/sys/auth/token2', asRoot({ type: 'token' }));
    expect(secondTokenStore.status).toBe(400);
    expect(secondTokenStore.body.errors[0]).toContain('"token"');

    await h.call('POST', '/v1/sys/auth/people', asRoot({ type: 'null-auth' }));
    expect((await h.call('POST', '/v1/sys/auth/people/admins', asRoot({ type: 'null-auth' }))).body.errors).toEqual([
      'path is already in use at auth/people/',
    ]);
    const builtin = await h.call('DELETE', '/v1/sys/auth/token', asRoot());
    expect(builtin.status).toBe(400);
    expect(Object.keys((await h.call('GET', '/v1/sys/auth', asRoot())).body.data).sort()).toEqual([
      'people/',
      'token/',
    ]);
  });
});

describe('sys/auth needs sudo', () => {
  it('refuses a token with update but no sudo on sys/auth/*, and lets one with sudo enable and disable', async () => {
    const policy = (name: string, caps: string) =>
      h.call(
        'PUT',
        `/v1/sys/policies/acl/${name}`,
        asRoot({ policy: `path "sys/auth/*" { capabilities = [${caps}] }` }),
      );
    expect((await policy('auth-writer', '"create", "update", "delete"')).status).toBe(204);
    expect((await policy('auth-admin', '"create", "update", "delete", "sudo"')).status).toBe(204);
    const tokenWith = async (name: string) =>
      (await h.call('POST', '/v1/auth/token/create', asRoot({ policies: [name] }))).body.auth.client_token as string;
    const writer = await tokenWith('auth-writer');
    const admin = await tokenWith('auth-admin');
    const refused = await h.call('POST', '/v1/sys/auth/staff', { token: writer, body: { type: 'null-auth' } });
    expect(refused.status).toBe(403);
    expect((await h.call('GET', '/v1/sys/auth', asRoot())).body.data['staff/']).toBeUndefined();
    expect((await h.call('POST', '/v1/sys/auth/staff', { token: admin, body: { type: 'null-auth' } })).status).toBe(
      204,
    );
    expect((await h.call('DELETE', '/v1/sys/auth/staff', { token: writer })).status).toBe(403);
    expect((await h.call('DELETE', '/v1/sys/auth/staff', { token: admin })).status).toBe(204);
  });
});

describe('the mount table across processes', () => {
  it('another process routes a new mount, and stops routing a disabled one, within its cache time', async () => {
    const other = await createCore({
      store: h.core.store,
      keySource: fileKeySource(path.join(keyDir, 'key')),
      backends: [...backendsOf(allSecretsFamilies), recordingBackend, nullAuthBackend],
      clock: h.clock,
      log: silentLogger,
    });
    const app = createSecretsApp({ core: async () => other, clientIp: () => '127.0.0.1' });
    const readThere = async (url: string) =>
      (await app.request(url, { headers: { 'X-Secrets-Token': h.rootToken } })).status;
    expect(await readThere('/v1/sys/mounts')).toBe(200);
    expect(await readThere('/v1/team/app')).toBe(404);

    await h.call('POST', '/v1/sys/mounts/team', asRoot({ type: 'kv' }));
    await h.call('POST', '/v1/team/app', asRoot({ value: 1 }));
    h.clock.advance(6);
    expect(await readThere('/v1/team/app')).toBe(200);

    await h.call('DELETE', '/v1/sys/mounts/team', asRoot());
    h.clock.advance(6);
    expect(await readThere('/v1/team/app')).toBe(404);
  });
});
