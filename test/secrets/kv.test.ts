import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { MountEntry } from '../../packages/core/src/secrets/mounts/mount-table.ts';
import { type SecretsHarness, startSecrets } from '../support/secrets-harness.ts';

let h: SecretsHarness;
beforeEach(async () => {
  h = await startSecrets();
});
afterEach(() => h.close());

const asRoot = (body?: unknown) => ({ token: h.rootToken, ...(body === undefined ? {} : { body }) });

async function secretMount(): Promise<MountEntry> {
  return (await h.core.store.get('mounts', 'secret/'))?.entry as MountEntry;
}

async function rawTable(): Promise<Record<string, unknown>[]> {
  return h.core.store.scan();
}

describe('kv', () => {
  it('writes, reads, overwrites and deletes a secret', async () => {
    const written = await h.call(
      'POST',
      '/v1/secret/app/db',
      asRoot({ username: 'app', password: 'hunter2', port: 5432, tags: ['a'] }),
    );
    expect(written.status).toBe(204);
    const read = await h.call('GET', '/v1/secret/app/db', asRoot());
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({
      lease_id: '',
      renewable: false,
      lease_duration: 0,
      warnings: null,
      wrap_info: null,
    });
    expect(read.body.data).toEqual({ username: 'app', password: 'hunter2', port: 5432, tags: ['a'] });

    expect((await h.call('PUT', '/v1/secret/app/db', asRoot({ password: 'changed' }))).status).toBe(204);
    expect((await h.call('GET', '/v1/secret/app/db', asRoot())).body.data).toEqual({ password: 'changed' });

    expect((await h.call('DELETE', '/v1/secret/app/db', asRoot())).status).toBe(204);
    const gone = await h.call('GET', '/v1/secret/app/db', asRoot());
    expect(gone.status).toBe(404);
    expect(gone.body).toEqual({ errors: [] });
    const mount = await secretMount();
    expect(await h.core.store.get(`mount#${mount.uuid}`, 'app/db')).toBeUndefined();
    expect((await h.call('DELETE', '/v1/secret/app/db', asRoot())).status).toBe(204);
  });

  it('keeps body fields named like the URL capture or the list switch as data', async () => {
    const secret = { path: '/srv/app', list: 'a,b', password: 'pw' };
    expect((await h.call('POST', '/v1/secret/app/paths', asRoot(secret))).status).toBe(204);
    expect((await h.call('GET', '/v1/secret/app/paths', asRoot())).body.data).toEqual(secret);
  });

  it('answers 404 for a secret that was never written and for the mount itself', async () => {
    expect((await h.call('GET', '/v1/secret/nothing', asRoot())).status).toBe(404);
    expect((await h.call('GET', '/v1/secret', asRoot())).status).toBe(404);
    expect((await h.call('GET', '/v1/secret/', asRoot())).status).toBe(404);
  });

  it('lists one level at a time, deeper levels as dir/', async () => {
    for (const path of ['top', 'app/db', 'app/api/key', 'app/api/cert', 'other/x']) {
      expect((await h.call('POST', `/v1/secret/${path}`, asRoot({ value: path }))).status).toBe(204);
    }
    const root = await h.call('LIST', '/v1/secret/', asRoot());
    expect(root.status).toBe(200);
    expect(root.body.data).toEqual({ keys: ['app/', 'other/', 'top'] });
    expect((await h.call('LIST', '/v1/secret', asRoot())).body.data.keys).toEqual(['app/', 'other/', 'top']);
    expect((await h.call('LIST', '/v1/secret/app', asRoot())).body.data.keys).toEqual(['api/', 'db']);
    expect((await h.call('GET', '/v1/secret/app/?list=true', asRoot())).body.data.keys).toEqual(['api/', 'db']);
    expect((await h.call('LIST', '/v1/secret/app/api/', asRoot())).body.data.keys).toEqual(['cert', 'key']);
    // A prefix of a name is not a folder.
    expect((await h.call('LIST', '/v1/secret/ap', asRoot())).status).toBe(404);
    const empty = await h.call('LIST', '/v1/secret/nothing/', asRoot());
    expect(empty.status).toBe(404);
    expect(empty.body).toEqual({ errors: [] });

    await h.call('DELETE', '/v1/secret/app/db', asRoot());
    expect((await h.call('LIST', '/v1/secret/app', asRoot())).body.data.keys).toEqual(['api/']);
  });

  it('refuses a write without data or without a path, and a bad ttl, naming it', async () => {
    const noData = await h.call('POST', '/v1/secret/app', asRoot({}));
    expect(noData.status).toBe(400);
    expect(noData.body.errors).toEqual(['no data provided']);
    const noPath = await h.call('POST', '/v1/secret/', asRoot({ a: 1 }));
    expect(noPath.status).toBe(400);
    const badTtl = await h.call('POST', '/v1/secret/app', asRoot({ value: 1, ttl: 'soon' }));
    expect(badTtl.status).toBe(400);
    expect(badTtl.body.errors[0]).toContain('"ttl"');
    const negativeTtl = await h.call('POST', '/v1/secret/app', asRoot({ value: 1, ttl: -30 }));
    expect(negativeTtl.status).toBe(400);
    expect(negativeTtl.body.errors[0]).toContain('"ttl"');
    const malformed = await h.call('POST', '/v1/secret/app', asRoot('{"value":'));
    expect(malformed.status).toBe(400);
    expect((await h.call('GET', '/v1/secret/app', asRoot())).status).toBe(404);
  });

  it('keeps secrets sealed at rest: the plaintext appears nowhere in the table', async () => {
    const password = `pw-${randomUUID()}`;
    const fieldName = `field-${randomUUID()}`;
    expect((await h.call('POST', '/v1/secret/app/db', asRoot({ [fieldName]: password }))).status).toBe(204);

    const mount = await secretMount();
    const item = await h.core.store.get(`mount#${mount.uuid}`, 'app/db');
    expect(item?.value).toEqual({ sealed: expect.stringMatching(/^v1:[A-Za-z0-9_-]+$/) });
    const everything = JSON.stringify(await rawTable());
    expect(everything).not.toContain(password);
    expect(everything).not.toContain(fieldName);
    expect((await h.call('GET', '/v1/secret/app/db', asRoot())).body.data).toEqual({ [fieldName]: password });
  });

  it('binds a sealed secret to its path: moved elsewhere in the table, it does not open', async () => {
    await h.call('POST', '/v1/secret/a', asRoot({ value: 'for a' }));
    await h.call('POST', '/v1/secret/b', asRoot({ value: 'for b' }));
    const mount = await secretMount();
    const sealedA = (await h.core.store.get(`mount#${mount.uuid}`, 'a'))?.value as { sealed: string };
    expect(() => h.core.keyring.open(sealedA.sealed, `mount#${mount.uuid}|b`)).toThrow('does not open');
    expect(h.core.keyring.open(sealedA.sealed, `mount#${mount.uuid}|a`)).toBe('{"value":"for a"}');
  });

  it('gives a renewable lease on reading a secret written with a ttl', async () => {
    expect((await h.call('POST', '/v1/secret/leased', asRoot({ password: 'pw', ttl: '30m' }))).status).toBe(204);
    const read = await h.call('GET', '/v1/secret/leased', asRoot());
    expect(read.status).toBe(200);
    expect(read.body.lease_id).toMatch(/^secret\/leased\/[A-Za-z0-9]{24}$/);
    expect(read.body).toMatchObject({ renewable: true, lease_duration: 1800, data: { password: 'pw', ttl: '30m' } });
    const lease = await h.call('PUT', '/v1/sys/leases/lookup', asRoot({ lease_id: read.body.lease_id }));
    expect(lease.status).toBe(200);
    expect(lease.body.data).toMatchObject({ id: read.body.lease_id, ttl: 1800, renewable: true });

    // A ttl in seconds works too, and is capped by the mount's max.
    await h.call('POST', '/v1/sys/mounts/secret/tune', asRoot({ max_lease_ttl: '1h' }));
    await h.call('POST', '/v1/secret/long', asRoot({ password: 'pw', ttl: 86400 }));
    const capped = await h.call('GET', '/v1/secret/long', asRoot());
    expect(capped.body.lease_duration).toBe(3600);
    expect(capped.body.warnings).toEqual([
      'TTL of "86400s" exceeded the effective max_ttl of "3600s"; TTL value is capped accordingly',
    ]);
  });

  it('follows policies: read-only callers cannot write, list or delete', async () => {
    await h.call('POST', '/v1/secret/app/db', asRoot({ password: 'pw' }));
    await h.call(
      'PUT',
      '/v1/sys/policies/acl/app-reader',
      asRoot({ policy: 'path "secret/app/*" { capabilities = ["read"] }' }),
    );
    const token = (await h.call('POST', '/v1/auth/token/create', asRoot({ policies: ['app-reader'] }))).body.auth
      .client_token as string;
    expect((await h.call('GET', '/v1/secret/app/db', { token })).body.data).toEqual({ password: 'pw' });
    expect((await h.call('POST', '/v1/secret/app/db', { token, body: { password: 'mine' } })).status).toBe(403);
    expect((await h.call('DELETE', '/v1/secret/app/db', { token })).status).toBe(403);
    expect((await h.call('LIST', '/v1/secret/app', { token })).status).toBe(403);
    expect((await h.call('GET', '/v1/secret/top', { token })).status).toBe(403);
    expect((await h.call('GET', '/v1/secret/app/db', asRoot())).body.data).toEqual({ password: 'pw' });
  });

  it('reads with a service token in one round trip (token and secret together), and shows nothing the policy denies', async () => {
    await h.call('POST', '/v1/secret/app/db', asRoot({ password: 'pw' }));
    await h.call('POST', '/v1/secret/top', asRoot({ password: 'top' }));
    await h.call(
      'PUT',
      '/v1/sys/policies/acl/app-reader',
      asRoot({ policy: 'path "secret/app/*" { capabilities = ["read"] }' }),
    );
    const token = (await h.call('POST', '/v1/auth/token/create', asRoot({ policies: ['app-reader'] }))).body.auth
      .client_token as string;
    const sent: string[] = [];
    h.client.middlewareStack.add(
      (next, context) => async (args) => {
        sent.push(String(context.commandName));
        return next(args);
      },
      { step: 'initialize', name: 'kvTestCommands' },
    );
    expect((await h.call('GET', '/v1/secret/app/db', { token })).body.data).toEqual({ password: 'pw' });
    sent.length = 0;
    expect((await h.call('GET', '/v1/secret/app/db', { token })).body.data).toEqual({ password: 'pw' });
    expect(sent).toEqual(['BatchGetItemCommand']);
    // A batch token made by another token dies with it: its parent's item is read in the same round trip.
    const batch = (await h.call('POST', '/v1/auth/token/create', asRoot({ policies: ['app-reader'], type: 'batch' })))
      .body.auth.client_token;
    sent.length = 0;
    expect((await h.call('GET', '/v1/secret/app/db', { token: batch })).body.data).toEqual({ password: 'pw' });
    expect(sent).toEqual(['BatchGetItemCommand']);

    const denied = await h.call('GET', '/v1/secret/top', { token });
    expect(denied).toEqual({ status: 403, body: { errors: ['permission denied'] } });
    expect((await h.call('GET', '/v1/secret/app/none', { token })).status).toBe(404);
    await h.call('POST', '/v1/auth/token/revoke', asRoot({ token }));
    expect((await h.call('GET', '/v1/secret/app/db', { token })).status).toBe(403);
  });
});
