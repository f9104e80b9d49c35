/**
 * Attacker: a table writer who kept a copy of the keyring's item from before `sys/init` (it is written when the first
 * process starts, so under `npm start` it exists for a moment unstamped). After the service is in use they put that
 * copy back and delete the init marker: the table then looks fresh (a keyring item that verifies, no stamp, no
 * marker), and anonymous `PUT /v1/sys/init` answers a new root token.
 * They must never reach: anything the earlier initialisation made — its secrets, mounts, policies, tokens — with that
 * root token, in this process or any other. Each initialisation chooses an epoch (kept in the keyring's item) that the
 * MAC of every token, policy, mount, audit device and engine item binds (`ItemKind.epoch`), so whatever an earlier
 * initialisation signed never verifies after a re-initialisation, as Vault's re-init makes new barrier keys; the old
 * root token stops working too, so the takeover cannot pass unnoticed. A process started before the (genuine)
 * initialisation reads the epoch before its first request after it.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { initMarkerPk, initMarkerSk } from '../../packages/core/src/secrets/sys/init.ts';
import { keyringPk, keyringSk } from '../../packages/core/src/storage/keyring-item.ts';
import { MemoryStore } from '../../packages/core/src/storage/memory-store.ts';
import type { Item } from '../../packages/core/src/storage/store.ts';
import { serviceProcess } from '../support/replay-process.ts';

/** A process of the secrets service over the shared table: its own core (and keyring cache), one key file. */
const process_ = (store: MemoryStore, keyFile: string) =>
  serviceProcess('secrets', store, keyFile, Date.UTC(2100, 0, 1));

describe('attack: re-initialisation by replaying the keyring item from before sys/init', () => {
  const store = new MemoryStore();
  const keyFile = path.join(mkdtempSync(path.join(tmpdir(), 'keyhaven-reinit-')), 'keyring.key');
  let first: Awaited<ReturnType<typeof process_>>;
  let early: Awaited<ReturnType<typeof process_>>;
  let preInit: Item;
  let root: string;

  beforeAll(async () => {
    first = await process_(store, keyFile);
    // A second process, started (and so holding the keyring) before the initialisation.
    early = await process_(store, keyFile);
    preInit = (await store.get(keyringPk, keyringSk)) as Item;
    const init = await first.call('PUT', '/v1/sys/init', undefined, {});
    expect(init.status).toBe(200);
    root = init.body.root_token;
    expect((await first.call('POST', '/v1/sys/mounts/secret', root, { type: 'kv' })).status).toBe(204);
    expect((await first.call('POST', '/v1/secret/app', root, { password: 'kept-by-the-first-init' })).status).toBe(204);
    const policy = 'path "secret/*" { capabilities = ["read"] }';
    expect((await first.call('POST', '/v1/sys/policies/acl/reader', root, { policy })).status).toBe(204);
  });

  it('a process started before the initialisation takes its epoch: the root token works there at once', async () => {
    const read = await early.call('GET', '/v1/secret/app', root);
    expect(read.status).toBe(200);
    expect(read.body.data.password).toBe('kept-by-the-first-init');
  });

  it('the replayed keyring item and a deleted marker give a root token that reaches nothing of the first initialisation', async () => {
    await store.put(preInit);
    await store.delete({ pk: initMarkerPk, sk: initMarkerSk });
    const again = await first.call('PUT', '/v1/sys/init', undefined, {});
    expect(again.status).toBe(200);
    const stolen = again.body.root_token as string;

    // In the process that re-initialised, in one started before, and in a fresh one: nothing of the first.
    const fresh = await process_(store, keyFile);
    for (const service of [first, fresh]) {
      const secret = await service.call('GET', '/v1/secret/app', stolen);
      expect(secret.status).not.toBe(200);
      expect(JSON.stringify(secret.body)).not.toContain('kept-by-the-first-init');
      const mounts = await service.call('GET', '/v1/sys/mounts', stolen);
      expect(mounts.status).toBe(200);
      expect(Object.keys(mounts.body.data)).not.toContain('secret/');
      const policies = await service.call('LIST', '/v1/sys/policies/acl', stolen);
      expect(policies.body.data.keys).not.toContain('reader');
      // The first initialisation's root token no longer verifies: the takeover shows.
      expect((await service.call('GET', '/v1/auth/token/lookup-self', root)).status).toBe(403);
    }
    // The old mount item still holds its path (it is refused, not gone), so the path cannot be mounted over it again;
    // a new mount elsewhere is a new partition, where nothing of the old one opens.
    const remount = await fresh.call('POST', '/v1/sys/mounts/secret', stolen, { type: 'kv' });
    expect(remount.status).toBe(400);
    expect(JSON.stringify(remount.body)).not.toContain('kept-by-the-first-init');
    expect((await fresh.call('POST', '/v1/sys/mounts/other', stolen, { type: 'kv' })).status).toBe(204);
    expect((await fresh.call('GET', '/v1/other/app', stolen)).status).toBe(404);
  });
});
