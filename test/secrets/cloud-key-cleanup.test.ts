import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ManualClock } from '../../packages/core/src/lib/clock.ts';
import { cleanupPending, leasedKeyDelay } from '../../packages/core/src/secrets/engines/cloud/cleanup.ts';
import { isLeasePk } from '../../packages/core/src/secrets/leases/lease-manager.ts';
import { MountStorage } from '../../packages/core/src/secrets/mounts/mount-storage.ts';
import type { Change } from '../../packages/core/src/storage/store.ts';
import { type CloudEngine, startCloudEngine } from '../support/cloud-engine.ts';

/**
 * Service-account keys are recorded ahead of their creation; the clean-up job deletes those no lease holds
 * once the request is surely over. Failures are injected at the lease write (the store), at the naming of
 * the record (the store) and in Google's answer (the emulator).
 */

let engine: CloudEngine;
afterEach(() => engine?.close());

const viewerOnly = `resource "//cloudresourcemanager.googleapis.com/projects/proj-1" { roles = ["roles/viewer"] }`;

/**
 * The emulator keeps the test's clock, so keys' `validAfterTime` and the engine's records agree; the clock then
 * moves on a minute, so the keys made at set-up (the root's, a static account's own) predate every request.
 */
async function start(kind: 'roleset' | 'static account') {
  let clock: ManualClock | undefined;
  engine = await startCloudEngine({ now: () => clock?.now() ?? Date.now() });
  clock = engine.h.clock;
  if (kind === 'roleset') {
    const written = await engine.call('POST', '/v1/cloud/roleset/keys', {
      project: 'proj-1',
      bindings: viewerOnly,
      secret_type: 'service_account_key',
    });
    expect(written.status).toBe(204);
    const email: string = (await engine.call('GET', '/v1/cloud/roleset/keys')).body.data.service_account_email;
    engine.h.clock.advance(60);
    return { email, path: 'roleset/keys/key', alias: 'key/keys' };
  }
  const { email } = engine.google.seedServiceAccount('proj-1', 'existing-app');
  const written = await engine.call('POST', '/v1/cloud/static-account/app', {
    service_account_email: email,
    secret_type: 'service_account_key',
  });
  expect(written.status).toBe(204);
  engine.h.clock.advance(60);
  return { email, path: 'static-account/app/key', alias: 'static-account/app/key' };
}

const keyIds = (email: string) =>
  engine.google
    .keys(email)
    .map((key) => key.id)
    .sort();
const sorted = (ids: string[]) => [...ids].sort();

/** A leased key: its lease id and its key id, checked against what the emulator holds. */
async function issue(path: string) {
  const reply = await engine.call('POST', `/v1/cloud/${path}`);
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  expect(reply.body.lease_id).toMatch(new RegExp(`^cloud/${path}/\\w+$`));
  const file = JSON.parse(Buffer.from(reply.body.data.private_key_data, 'base64').toString());
  return { leaseId: reply.body.lease_id as string, keyId: file.private_key_id as string };
}

/** The clean-up records of the mount. */
async function pending() {
  const mount = await engine.h.core.mounts.resolve('cloud/');
  const storage = new MountStorage(engine.h.core.store, engine.h.core.keyring, mount?.uuid ?? '');
  return storage.items('wal/');
}

const refused = () => new Error('simulated: the table refused the write');

/** The table refuses to record leases. */
function refuseLeases() {
  const store = engine.h.core.store;
  const transact = store.transact.bind(store);
  return vi.spyOn(store, 'transact').mockImplementation(async (items) => {
    if (items.some((write) => 'put' in write && isLeasePk(write.put.pk))) throw refused();
    return transact(items);
  });
}

/** The table refuses to name a key's clean-up record. */
function refuseNaming() {
  const store = engine.h.core.store;
  const update = store.update.bind(store) as (...args: unknown[]) => Promise<unknown>;
  return vi.spyOn(store, 'update').mockImplementation((async (...args: unknown[]) => {
    const change = args[1] as Change | undefined;
    if (change?.set?.keyName !== undefined) throw refused();
    return update(...args);
  }) as typeof store.update);
}

/** A request while a failure is injected. */
async function during(injected: { mockRestore(): void }, request: () => ReturnType<CloudEngine['call']>) {
  try {
    return await request();
  } finally {
    injected.mockRestore();
  }
}

describe('cloud service-account keys: nothing leaked, nothing lost', () => {
  it.each(['roleset', 'static account'] as const)(
    'a %s key whose lease failed to be written is deleted by the job; a leased one stays until revoked',
    async (kind) => {
      const { email, path, alias } = await start(kind);
      const before = keyIds(email);
      const failed = await during(refuseLeases(), () => engine.call('POST', `/v1/cloud/${path}`));
      expect(failed).toEqual({
        status: 500,
        body: { errors: [expect.stringMatching(/^internal error \(request [\w-]+\)$/)] },
      });
      const orphans = keyIds(email).filter((id) => !before.includes(id));
      expect(orphans).toHaveLength(1);
      const held = await issue(alias);
      expect(keyIds(email)).toEqual(sorted([...before, ...orphans, held.keyId]));
      expect(await pending()).toHaveLength(2);

      // Not while the requests may still be running.
      engine.h.clock.advance(leasedKeyDelay - 1);
      expect(await cleanupPending(engine.h.core)).toEqual({ settled: 0, failed: 0, rotated: 0 });
      expect(keyIds(email)).toEqual(sorted([...before, ...orphans, held.keyId]));

      engine.h.clock.advance(1);
      const calls = engine.google.calls.length;
      expect(await cleanupPending(engine.h.core)).toEqual({ settled: 2, failed: 0, rotated: 0 });
      expect(keyIds(email)).toEqual(sorted([...before, held.keyId]));
      expect(await pending()).toEqual([]);
      expect(engine.google.calls.slice(calls).filter((call) => call === 'serviceAccounts.keys.delete')).toHaveLength(1);

      const lookup = await engine.call('PUT', '/v1/sys/leases/lookup', { lease_id: held.leaseId });
      expect(lookup.status).toBe(200);
      expect(lookup.body.data).toMatchObject({ id: held.leaseId, renewable: true });
      expect((await engine.call('PUT', '/v1/sys/leases/revoke', { lease_id: held.leaseId })).status).toBe(204);
      expect(keyIds(email)).toEqual(before);
      expect((await engine.call('PUT', '/v1/sys/leases/lookup', { lease_id: held.leaseId })).status).toBe(404);
    },
  );

  it.each([
    [
      "Google's answer is lost",
      502,
      () => engine.google.failNext('serviceAccounts.keys.create', { status: 500, afterApply: true }),
    ],
    ['the record cannot be named', 500, undefined],
  ] as const)(
    'a key whose name never reached its record (%s) is found by its time and deleted; held and older keys stay',
    async (_cause, status, inject) => {
      const { email, path } = await start('static account');
      const own = keyIds(email);
      expect(own).toHaveLength(1);
      const held = await issue(path);
      inject?.();
      const failed = inject
        ? await engine.call('POST', `/v1/cloud/${path}`)
        : await during(refuseNaming(), () => engine.call('POST', `/v1/cloud/${path}`));
      expect(failed.status).toBe(status);
      expect(failed.body.errors).toHaveLength(1);
      const orphans = keyIds(email).filter((id) => !own.includes(id) && id !== held.keyId);
      expect(orphans).toHaveLength(1);
      expect((await pending()).map((record) => record.keyName === undefined).sort()).toEqual([false, true]);

      engine.h.clock.advance(leasedKeyDelay);
      expect(await cleanupPending(engine.h.core)).toEqual({ settled: 2, failed: 0, rotated: 0 });
      expect(keyIds(email)).toEqual(sorted([...own, held.keyId]));
      expect(await pending()).toEqual([]);

      expect((await engine.call('PUT', '/v1/sys/leases/revoke', { lease_id: held.leaseId })).status).toBe(204);
      expect(keyIds(email)).toEqual(own);
    },
  );

  it('the job deletes nothing more once keys were revoked or are still leased', async () => {
    const { email, path } = await start('roleset');
    const first = await issue(path);
    const second = await issue(path);
    expect((await engine.call('PUT', '/v1/sys/leases/revoke', { lease_id: first.leaseId })).status).toBe(204);
    expect(keyIds(email)).toEqual([second.keyId]);
    engine.h.clock.advance(leasedKeyDelay);
    expect(await cleanupPending(engine.h.core)).toEqual({ settled: 2, failed: 0, rotated: 0 });
    expect(keyIds(email)).toEqual([second.keyId]);
    expect((await engine.call('PUT', '/v1/sys/leases/lookup', { lease_id: second.leaseId })).status).toBe(200);
  });
});
