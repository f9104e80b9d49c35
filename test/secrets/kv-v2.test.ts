import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { MountEntry } from '../../packages/core/src/secrets/mounts/mount-table.ts';
import { type SecretsService, startSecretsInMemory } from '../support/secrets-harness.ts';

let h: SecretsService;
beforeEach(async () => {
  h = await startSecretsInMemory();
  expect((await h.call('POST', '/v1/sys/mounts/kv2', asRoot({ type: 'kv', options: { version: '2' } }))).status).toBe(
    204,
  );
});
afterEach(() => h.close());

const asRoot = (body?: unknown) => ({ token: h.rootToken, ...(body === undefined ? {} : { body }) });
const put = (path: string, data: Record<string, unknown>, options?: Record<string, unknown>) =>
  h.call('POST', `/v1/kv2/data/${path}`, asRoot({ data, ...(options ? { options } : {}) }));
const get = (path: string) => h.call('GET', `/v1/kv2/${path}`, asRoot());

describe('kv version 2', () => {
  it('keeps versions: each write answers its version, a read takes the latest or ?version=', async () => {
    const first = await put('app/db', { password: 'one' });
    expect(first.status).toBe(200);
    expect(first.body.data).toEqual({
      created_time: expect.stringMatching(/^2100-01-01T/),
      custom_metadata: null,
      deletion_time: '',
      destroyed: false,
      version: 1,
    });
    h.clock.advance(1);
    expect((await put('app/db', { password: 'two', port: 1 })).body.data.version).toBe(2);

    const latest = await get('data/app/db');
    expect(latest.status).toBe(200);
    expect(latest.body.data).toEqual({
      data: { password: 'two', port: 1 },
      metadata: {
        created_time: expect.any(String),
        custom_metadata: null,
        deletion_time: '',
        destroyed: false,
        version: 2,
      },
    });
    expect((await get('data/app/db?version=1')).body.data.data).toEqual({ password: 'one' });
    expect((await get('data/app/db?version=3')).status).toBe(404);
    expect((await get('data/nothing')).status).toBe(404);
  });

  it('seals each version in the table', async () => {
    await put('app/db', { password: 'visible-if-not-sealed' });
    const mount = (await h.core.store.get('mounts', 'kv2/'))?.entry as MountEntry;
    const items = (await h.core.store.scan()).filter((item) => item.pk === `mount#${mount.uuid}`);
    expect(items.map((item) => item.sk).sort()).toEqual(['kv2/meta/app/db', 'kv2/upgraded', 'kv2/version/app/db/1']);
    expect(JSON.stringify(items)).not.toContain('visible-if-not-sealed');
  });

  it('checks and sets: cas 0 only creates, cas N only follows version N, cas_required demands it', async () => {
    expect((await put('c', { v: 1 }, { cas: 0 })).status).toBe(200);
    const again = await put('c', { v: 2 }, { cas: 0 });
    expect(again).toMatchObject({
      status: 400,
      body: { errors: ['check-and-set parameter did not match the current version'] },
    });
    expect((await put('c', { v: 2 }, { cas: 1 })).body.data.version).toBe(2);
    expect((await put('c', { v: 3 }, { cas: 1 })).status).toBe(400);

    expect((await h.call('POST', '/v1/kv2/metadata/c', asRoot({ cas_required: true }))).status).toBe(204);
    expect(await put('c', { v: 3 })).toMatchObject({
      status: 400,
      body: { errors: ['check-and-set parameter required for this call'] },
    });
    expect((await put('c', { v: 3 }, { cas: 2 })).status).toBe(200);

    expect((await h.call('POST', '/v1/kv2/config', asRoot({ cas_required: true }))).status).toBe(204);
    expect((await put('other', { v: 1 })).status).toBe(400);
  });

  it('soft-deletes, undeletes and destroys versions; a deleted version answers 404 with its metadata', async () => {
    await put('s', { v: 1 });
    await put('s', { v: 2 });
    expect((await h.call('DELETE', '/v1/kv2/data/s', asRoot())).status).toBe(204);
    const deleted = await get('data/s');
    expect(deleted.status).toBe(404);
    expect(deleted.body.data).toEqual({
      data: null,
      metadata: expect.objectContaining({
        version: 2,
        destroyed: false,
        deletion_time: expect.stringMatching(/^2100/),
      }),
    });
    expect((await get('data/s?version=1')).body.data.data).toEqual({ v: 1 });

    expect((await h.call('POST', '/v1/kv2/undelete/s', asRoot({ versions: [2] }))).status).toBe(204);
    expect((await get('data/s')).body.data.data).toEqual({ v: 2 });

    expect((await h.call('POST', '/v1/kv2/delete/s', asRoot({ versions: [1] }))).status).toBe(204);
    expect((await get('data/s?version=1')).status).toBe(404);
    expect((await h.call('PUT', '/v1/kv2/destroy/s', asRoot({ versions: [1] }))).status).toBe(204);
    const destroyed = await get('data/s?version=1');
    expect(destroyed.body.data.metadata).toMatchObject({ destroyed: true, version: 1 });
    expect((await h.call('POST', '/v1/kv2/undelete/s', asRoot({ versions: [1] }))).status).toBe(204);
    expect((await get('data/s?version=1')).status).toBe(404);

    expect(await h.call('POST', '/v1/kv2/delete/s', asRoot({}))).toMatchObject({
      status: 400,
      body: { errors: ['no version number provided'] },
    });
  });

  it('reads, writes, lists and deletes metadata; max_versions trims the oldest', async () => {
    for (let n = 1; n <= 4; n++) await put('m/a', { n });
    await put('m/b/deep', { x: 1 });
    expect(
      (
        await h.call(
          'POST',
          '/v1/kv2/metadata/m/a',
          asRoot({ max_versions: 2, delete_version_after: '1h', custom_metadata: { owner: 'ops' } }),
        )
      ).status,
    ).toBe(204);
    await put('m/a', { n: 5 });
    const metadata = await get('metadata/m/a');
    expect(metadata.body.data).toMatchObject({
      cas_required: false,
      current_version: 5,
      oldest_version: 4,
      max_versions: 2,
      delete_version_after: '1h0m0s',
      custom_metadata: { owner: 'ops' },
    });
    expect(Object.keys(metadata.body.data.versions)).toEqual(['4', '5']);
    expect(metadata.body.data.versions['5'].deletion_time).toMatch(/^2100-01-01T01:/);
    expect((await get('data/m/a?version=3')).status).toBe(404);

    h.clock.advance(3601);
    expect((await get('data/m/a')).status).toBe(404);

    const listed = await h.call('LIST', '/v1/kv2/metadata/m', asRoot());
    expect(listed.body.data.keys).toEqual(['a', 'b/']);
    expect((await h.call('GET', '/v1/kv2/metadata/?list=true', asRoot())).body.data.keys).toEqual(['m/']);

    expect((await h.call('DELETE', '/v1/kv2/metadata/m/a', asRoot())).status).toBe(204);
    expect((await get('metadata/m/a')).status).toBe(404);
    expect((await get('data/m/a?version=4')).status).toBe(404);
  });

  it('patches the current version as a JSON merge patch into a new version, and refuses what Vault refuses', async () => {
    await put('p', { keep: 1, change: 'a', drop: true, nested: { a: 1, b: 2 } });
    const patched = await h.call('PATCH', '/v1/kv2/data/p', {
      ...asRoot({ data: { change: 'b', drop: null, nested: { b: null, c: 3 } } }),
      headers: { 'Content-Type': 'application/merge-patch+json' },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.data.version).toBe(2);
    expect((await get('data/p')).body.data.data).toEqual({ keep: 1, change: 'b', nested: { a: 1, c: 3 } });
    expect((await h.call('PATCH', '/v1/kv2/data/p', asRoot({ data: { x: 1 }, options: { cas: 1 } }))).status).toBe(400);
    expect((await h.call('PATCH', '/v1/kv2/data/missing', asRoot({ data: { x: 1 } }))).status).toBe(404);
    expect((await h.call('PATCH', '/v1/kv2/metadata/p', asRoot({ custom_metadata: { team: 'a' } }))).status).toBe(204);
    expect((await get('metadata/p')).body.data).toMatchObject({ custom_metadata: { team: 'a' }, current_version: 2 });
    expect((await h.call('PATCH', '/v1/secret/p', asRoot({ x: 1 }))).status).toBe(405);

    await h.call(
      'PUT',
      '/v1/sys/policies/acl/updater',
      asRoot({ policy: 'path "kv2/data/p" { capabilities = ["update", "read"] }' }),
    );
    const token = (await h.call('POST', '/v1/auth/token/create', asRoot({ policies: ['updater'] }))).body.auth
      .client_token;
    expect((await h.call('PATCH', '/v1/kv2/data/p', { token, body: { data: { x: 1 } } })).status).toBe(403);
  });

  it('shows subkeys to a depth, and the mount config', async () => {
    await put('sub', { a: 1, b: { c: { d: 2 } }, e: [1] });
    expect((await get('subkeys/sub')).body.data).toMatchObject({
      subkeys: { a: null, b: { c: { d: null } }, e: null },
      metadata: { version: 1 },
    });
    expect((await get('subkeys/sub?depth=1')).body.data.subkeys).toEqual({ a: null, b: null, e: null });
    expect((await get('config')).body.data).toEqual({
      cas_required: false,
      delete_version_after: '0s',
      max_versions: 0,
    });
    expect((await h.call('POST', '/v1/kv2/config', asRoot({ max_versions: 3, delete_version_after: 60 }))).status).toBe(
      204,
    );
    expect((await get('config')).body.data).toEqual({
      cas_required: false,
      delete_version_after: '1m0s',
      max_versions: 3,
    });
  });

  it('refuses bad input naming the field, and the version 1 paths', async () => {
    expect((await h.call('POST', '/v1/kv2/data/x', asRoot({ data: 'nope' }))).body.errors[0]).toContain('"data"');
    expect((await h.call('POST', '/v1/kv2/data/x', asRoot({ password: 'p' }))).body).toEqual({
      errors: ['no data provided'],
    });
    expect((await h.call('POST', '/v1/kv2/metadata/x', asRoot({ max_versions: -1 }))).body.errors[0]).toContain(
      '"max_versions"',
    );
    expect((await h.call('POST', '/v1/kv2/x', asRoot({ v: 1 }))).status).toBe(404);
    expect((await h.call('GET', '/v1/kv2/x', asRoot())).status).toBe(404);
  });

  it('follows policies on data/ and metadata/ paths', async () => {
    await put('team/a', { v: 1 });
    await h.call(
      'PUT',
      '/v1/sys/policies/acl/reader',
      asRoot({ policy: 'path "kv2/data/team/*" { capabilities = ["read"] }' }),
    );
    const token = (await h.call('POST', '/v1/auth/token/create', asRoot({ policies: ['reader'] }))).body.auth
      .client_token;
    expect((await h.call('GET', '/v1/kv2/data/team/a', { token })).status).toBe(200);
    expect((await h.call('GET', '/v1/kv2/metadata/team/a', { token })).status).toBe(403);
    expect((await h.call('POST', '/v1/kv2/data/team/a', { token, body: { data: { v: 2 } } })).status).toBe(403);
    const ui = await h.call('GET', '/v1/sys/internal/ui/mounts/kv2/team/a', { token });
    expect(ui.status).toBe(200);
    expect(ui.body.data).toMatchObject({ path: 'kv2/', type: 'kv', options: { version: '2' } });
    expect((await h.call('GET', '/v1/sys/internal/ui/mounts/secret/x', { token })).status).toBe(403);
    expect((await h.call('GET', '/v1/sys/internal/ui/mounts/secret/x')).status).toBe(403);
  });
});

describe('kv versions on sys/mounts', () => {
  it('enables kv-v2 as kv with version 2, and upgrades a version 1 mount in place by tune', async () => {
    expect((await h.call('POST', '/v1/sys/mounts/other', asRoot({ type: 'kv-v2' }))).status).toBe(204);
    expect((await h.call('GET', '/v1/sys/mounts/other', asRoot())).body.data).toMatchObject({
      type: 'kv',
      options: { version: '2' },
    });

    expect((await h.call('POST', '/v1/secret/app/db', asRoot({ password: 'p', ttl: '1h' }))).status).toBe(204);
    expect((await h.call('POST', '/v1/sys/mounts/secret/tune', asRoot({ options: { version: 2 } }))).status).toBe(204);
    expect((await h.call('GET', '/v1/sys/mounts/secret', asRoot())).body.data.options).toEqual({ version: '2' });
    const upgraded = await h.call('GET', '/v1/secret/data/app/db', asRoot());
    expect(upgraded.status).toBe(200);
    expect(upgraded.body.data).toMatchObject({ data: { password: 'p', ttl: '1h' }, metadata: { version: 1 } });
    expect(upgraded.body.lease_id).toBe('');
    expect((await h.call('GET', '/v1/secret/app/db', asRoot())).status).toBe(404);

    const down = await h.call('POST', '/v1/sys/mounts/secret/tune', asRoot({ options: { version: '1' } }));
    expect(down).toMatchObject({ status: 400, body: { errors: ['cannot downgrade mount from version 2'] } });
    expect((await h.call('POST', '/v1/sys/mounts/bad', asRoot({ type: 'kv', options: { version: '3' } }))).status).toBe(
      400,
    );
  });

  it('serves version 1 under paths named like version 2 ones on a version 1 mount', async () => {
    expect((await h.call('POST', '/v1/secret/data/x', asRoot({ any: 'thing' }))).status).toBe(204);
    expect((await h.call('GET', '/v1/secret/data/x', asRoot())).body.data).toEqual({ any: 'thing' });
    expect((await h.call('LIST', '/v1/secret/data', asRoot())).body.data.keys).toEqual(['x']);
    expect((await h.call('DELETE', '/v1/secret/data/x', asRoot())).status).toBe(204);
  });
});
