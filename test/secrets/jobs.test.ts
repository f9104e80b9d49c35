import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sweepExpired } from '../../packages/core/src/entry-points/expiry-sweeps.ts';
import type { LeaseItem } from '../../packages/core/src/secrets/leases/lease-manager.ts';
import { leaseKey, leasePk, maxRevocationAttempts } from '../../packages/core/src/secrets/leases/lease-manager.ts';
import { shardKey } from '../../packages/core/src/storage/due.ts';
import { onTableChange } from '../../packages/core/src/entry-points/table-changes.ts';
import { mountRecording, recordingBackend, upstreamOf } from '../support/recording-backend.ts';
import { type SecretsService, startSecretsInMemory } from '../support/secrets-harness.ts';

let h: SecretsService;
beforeEach(async () => {
  h = await startSecretsInMemory({ extraBackends: [recordingBackend] });
  await mountRecording(h, 'rec', { roles: { app: { ttl: 60 }, long: { ttl: '1h' } } });
});
afterEach(() => h.close());

const asRoot = (body?: unknown) => ({ token: h.rootToken, ...(body === undefined ? {} : { body }) });

async function issue(role = 'app', token = h.rootToken) {
  const reply = await h.call('GET', `/v1/rec/creds/${role}`, { token });
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return reply.body as { lease_id: string; lease_duration: number; data: { username: string } };
}

const lookup = (leaseId: string) => h.call('PUT', '/v1/sys/leases/lookup', asRoot({ lease_id: leaseId }));
const storedLease = (leaseId: string) => h.core.store.get<LeaseItem>(leasePk(leaseId), leaseId);
const failRevocations = (fail: boolean) => h.call('POST', '/v1/rec/config', asRoot({ fail_revoke: fail }));

async function childToken(ttl: number | string): Promise<string> {
  const name = `reader-${randomUUID().slice(0, 8)}`;
  await h.call(
    'PUT',
    `/v1/sys/policies/acl/${name}`,
    asRoot({ policy: 'path "rec/creds/*" { capabilities = ["read"] }' }),
  );
  const created = await h.call('POST', '/v1/auth/token/create', asRoot({ policies: [name], ttl }));
  expect(created.status).toBe(200);
  return created.body.auth.client_token as string;
}

describe('sweepExpired', () => {
  it('revokes a lease through its hook once the clock passes its expiry, and only then', async () => {
    const issued = await issue();
    const kept = await issue('long');
    h.clock.advance(59);
    expect(await sweepExpired(h.core)).toEqual({ tokens: 0, leases: 0, failed: 0 });
    expect(await upstreamOf(h.core, issued.lease_id)).toBeUndefined();

    h.clock.advance(1);
    expect(await sweepExpired(h.core)).toEqual({ tokens: 0, leases: 1, failed: 0 });
    expect(await upstreamOf(h.core, issued.lease_id)).toMatchObject({
      username: issued.data.username,
      attempts: 1,
      revoked: 1,
    });
    expect((await lookup(issued.lease_id)).status).toBe(404);
    expect(await storedLease(issued.lease_id)).toBeUndefined();
    expect((await lookup(kept.lease_id)).status).toBe(200);

    expect(await sweepExpired(h.core)).toEqual({ tokens: 0, leases: 0, failed: 0 });
    expect((await upstreamOf(h.core, issued.lease_id))?.revoked).toBe(1);
  });

  it('follows renewals: a renewed lease is swept at its new expiry', async () => {
    const issued = await issue();
    h.clock.advance(30);
    expect(
      (await h.call('PUT', '/v1/sys/leases/renew', asRoot({ lease_id: issued.lease_id, increment: 300 }))).status,
    ).toBe(200);
    h.clock.advance(60);
    expect((await sweepExpired(h.core)).leases).toBe(0);
    expect((await lookup(issued.lease_id)).body.data.ttl).toBe(240);
    h.clock.advance(240);
    expect((await sweepExpired(h.core)).leases).toBe(1);
    expect(await upstreamOf(h.core, issued.lease_id)).toMatchObject({ attempts: 1, revoked: 1 });
  });

  it('works through a backlog in batches of the limit', async () => {
    const leases = [await issue(), await issue(), await issue()];
    h.clock.advance(61);
    expect(await sweepExpired(h.core, 2)).toEqual({ tokens: 0, leases: 2, failed: 0 });
    expect(await sweepExpired(h.core, 2)).toEqual({ tokens: 0, leases: 1, failed: 0 });
    for (const lease of leases) expect(await upstreamOf(h.core, lease.lease_id)).toMatchObject({ revoked: 1 });
  });

  it('runs each hook once when sweeps overlap, as overlapping scheduled runs or two processes do', async () => {
    const leases = await Promise.all([1, 2, 3, 4, 5].map(() => issue()));
    h.clock.advance(60);
    const results = await Promise.all([sweepExpired(h.core), sweepExpired(h.core), sweepExpired(h.core)]);
    expect(results.reduce((sum, result) => sum + result.failed, 0)).toBe(0);
    for (const lease of leases) {
      expect(await upstreamOf(h.core, lease.lease_id)).toMatchObject({ attempts: 1, revoked: 1 });
      expect((await lookup(lease.lease_id)).status).toBe(404);
    }
  });

  it('retries a failing revocation with backoff and leaves it irrevocable after the last attempt, never dropped', async () => {
    const issued = await issue();
    await failRevocations(true);
    h.clock.advance(60);
    expect(await sweepExpired(h.core)).toEqual({ tokens: 0, leases: 0, failed: 1 });
    expect((await lookup(issued.lease_id)).body.data).toMatchObject({ revocation_attempts: 1, irrevocable: false });

    // Backoff: the next attempts fall due 10 s, 20 s, 40 s, 80 s after each failure; nothing is tried early.
    for (const [attempt, wait] of [
      [2, 10],
      [3, 20],
      [4, 40],
      [5, 80],
      [6, 160],
    ] as const) {
      h.clock.advance(wait - 1);
      expect((await sweepExpired(h.core)).failed).toBe(0);
      expect((await upstreamOf(h.core, issued.lease_id))?.attempts).toBe(attempt - 1);
      h.clock.advance(1);
      expect(await sweepExpired(h.core)).toEqual({ tokens: 0, leases: 0, failed: 1 });
      expect((await upstreamOf(h.core, issued.lease_id))?.attempts).toBe(attempt);
    }
    expect(maxRevocationAttempts).toBe(6);

    const found = await lookup(issued.lease_id);
    expect(found.status).toBe(200);
    expect(found.body.data).toMatchObject({
      id: issued.lease_id,
      irrevocable: true,
      renewable: false,
      ttl: 0,
      revocation_attempts: 6,
      last_revocation_error: `upstream refused to delete ${issued.data.username}`,
    });
    const item = await storedLease(issued.lease_id);
    expect(item).toMatchObject({ irrevocable: true, revocationAttempts: 6 });
    // Out of the queue and out of reach of DynamoDB's TTL: it stays until someone deals with it.
    expect(item?.dueSk).toBeUndefined();
    expect(item?.expiresAt).toBeUndefined();

    h.clock.advance(86_400 * 30);
    expect(await sweepExpired(h.core)).toEqual({ tokens: 0, leases: 0, failed: 0 });
    expect((await upstreamOf(h.core, issued.lease_id))?.attempts).toBe(6);
    expect((await lookup(issued.lease_id)).status).toBe(200);

    // Once the upstream is back, asking again finishes the job: at once, or through the sweep with sync=false.
    await failRevocations(false);
    expect(
      (await h.call('PUT', '/v1/sys/leases/revoke', asRoot({ lease_id: issued.lease_id, sync: false }))).status,
    ).toBe(204);
    expect(await sweepExpired(h.core)).toEqual({ tokens: 0, leases: 1, failed: 0 });
    expect(await upstreamOf(h.core, issued.lease_id)).toMatchObject({ attempts: 7, revoked: 1 });
    expect((await lookup(issued.lease_id)).status).toBe(404);
  });

  it('revokes an irrevocable lease on an explicit request once the upstream is back', async () => {
    const issued = await issue();
    await failRevocations(true);
    h.clock.advance(60);
    for (const wait of [0, 10, 20, 40, 80, 160]) {
      h.clock.advance(wait);
      expect((await sweepExpired(h.core)).failed).toBe(1);
    }
    expect((await lookup(issued.lease_id)).body.data.irrevocable).toBe(true);
    const stillFailing = await h.call('PUT', '/v1/sys/leases/revoke', asRoot({ lease_id: issued.lease_id }));
    expect(stillFailing.status).toBe(502);
    expect((await lookup(issued.lease_id)).body.data).toMatchObject({ irrevocable: true, revocation_attempts: 7 });

    await failRevocations(false);
    expect((await h.call('PUT', '/v1/sys/leases/revoke', asRoot({ lease_id: issued.lease_id }))).status).toBe(204);
    expect(await upstreamOf(h.core, issued.lease_id)).toMatchObject({ attempts: 8, revoked: 1 });
    expect((await lookup(issued.lease_id)).status).toBe(404);
  });

  it('recovers on a retry when the upstream comes back', async () => {
    const issued = await issue();
    await failRevocations(true);
    h.clock.advance(60);
    expect((await sweepExpired(h.core)).failed).toBe(1);
    await failRevocations(false);
    h.clock.advance(10);
    expect(await sweepExpired(h.core)).toEqual({ tokens: 0, leases: 1, failed: 0 });
    expect(await upstreamOf(h.core, issued.lease_id)).toMatchObject({ attempts: 2, revoked: 1 });
    expect((await lookup(issued.lease_id)).status).toBe(404);
  });

  it('revokes an expired token and the leases it owns', async () => {
    const token = await childToken(120);
    const owned = await issue('long', token);
    h.clock.advance(119);
    expect(await sweepExpired(h.core)).toEqual({ tokens: 0, leases: 0, failed: 0 });
    h.clock.advance(1);
    expect(await sweepExpired(h.core)).toEqual({ tokens: 1, leases: 0, failed: 0 });
    expect(await upstreamOf(h.core, owned.lease_id)).toMatchObject({ attempts: 1, revoked: 1 });
    expect((await lookup(owned.lease_id)).status).toBe(404);
    expect((await h.call('GET', '/v1/auth/token/lookup-self', { token })).status).toBe(403);
    expect(await h.core.store.get(`token#${h.core.keyring.hash(token)}`, 'token')).toBeUndefined();
  });
});

describe('leases written before sharding (pk "leases", the bare engine queue)', () => {
  async function unsharded(leaseId: string): Promise<LeaseItem> {
    const item = await storedLease(leaseId);
    expect(item).toBeDefined();
    await h.core.store.delete(leaseKey(leaseId));
    const bareQueue = item!.queue.replace(/#\d+$/, '');
    const old = { ...item!, pk: 'leases', queue: bareQueue, duePk: bareQueue };
    await h.core.store.put(old);
    return old;
  }

  it('are moved to their shard and revoked through the hook when the sweep finds them due', async () => {
    const issued = await issue();
    await unsharded(issued.lease_id);
    h.clock.advance(60);
    expect(await sweepExpired(h.core)).toEqual({ tokens: 0, leases: 1, failed: 0 });
    expect(await upstreamOf(h.core, issued.lease_id)).toMatchObject({ attempts: 1, revoked: 1 });
    expect(await h.core.store.get('leases', issued.lease_id)).toBeUndefined();
    expect(await storedLease(issued.lease_id)).toBeUndefined();
    expect(await sweepExpired(h.core)).toEqual({ tokens: 0, leases: 0, failed: 0 });
  });

  it('are put back in their shard by the TTL backstop and revoked', async () => {
    const issued = await issue();
    const old = await unsharded(issued.lease_id);
    await h.core.store.delete({ pk: 'leases', sk: issued.lease_id });
    h.clock.advance(3600 + 60);
    await onTableChange(h.core, [{ eventName: 'REMOVE', oldImage: old, byTtl: true }]);
    expect(await upstreamOf(h.core, issued.lease_id)).toMatchObject({ attempts: 1, revoked: 1 });
    expect(await storedLease(issued.lease_id)).toBeUndefined();
    expect(
      await h.core.store.get(leasePk(issued.lease_id).replace('leases', 'revoked-leases'), issued.lease_id),
    ).toBeDefined();
  });
});

describe('onTableChange: the TTL backstop', () => {
  async function deletedByTtl(leaseId: string): Promise<LeaseItem> {
    const item = await storedLease(leaseId);
    expect(item).toBeDefined();
    await h.core.store.delete(leaseKey(leaseId));
    return item!;
  }

  it('revokes through the hook a lease that DynamoDB TTL deleted before the sweep', async () => {
    const issued = await issue();
    h.clock.advance(3600 + 60);
    const oldImage = await deletedByTtl(issued.lease_id);
    await onTableChange(h.core, [{ eventName: 'REMOVE', oldImage, byTtl: true }]);
    expect(await upstreamOf(h.core, issued.lease_id)).toMatchObject({
      username: issued.data.username,
      attempts: 1,
      revoked: 1,
    });
    expect(await storedLease(issued.lease_id)).toBeUndefined();
    expect(
      await h.core.store.get(`token#${h.core.keyring.hash(h.rootToken)}`, `lease#${issued.lease_id}`),
    ).toBeUndefined();
  });

  it('runs the hook once when the stream delivers the same removal again (a retried batch)', async () => {
    const issued = await issue();
    h.clock.advance(3600 + 60);
    const oldImage = await deletedByTtl(issued.lease_id);
    const change = { eventName: 'REMOVE' as const, oldImage, byTtl: true };
    await onTableChange(h.core, [change]);
    await onTableChange(h.core, [change, change]);
    expect(await upstreamOf(h.core, issued.lease_id)).toMatchObject({ attempts: 1, revoked: 1 });
    expect(await storedLease(issued.lease_id)).toBeUndefined();
    expect((await lookup(issued.lease_id)).status).toBe(404);
    // What tells the replay apart is itself short-lived: DynamoDB's TTL removes it after two days.
    const tombstone = await h.core.store.get(shardKey('revoked-leases', issued.lease_id), issued.lease_id);
    expect(tombstone?.expiresAt).toBe(Math.floor(h.clock.now() / 1000) + 2 * 86_400);
    expect(await sweepExpired(h.core)).toEqual({ tokens: 0, leases: 0, failed: 0 });
  });

  it('restores the lease when its hook fails, so the retries and lookup still see it', async () => {
    const issued = await issue();
    await failRevocations(true);
    h.clock.advance(3600 + 60);
    const oldImage = await deletedByTtl(issued.lease_id);
    await onTableChange(h.core, [{ eventName: 'REMOVE', oldImage, byTtl: true }]);
    const found = await lookup(issued.lease_id);
    expect(found.status).toBe(200);
    expect(found.body.data).toMatchObject({ revocation_attempts: 1, irrevocable: false });
    expect((await storedLease(issued.lease_id))?.expiresAt).toBeUndefined();

    await failRevocations(false);
    h.clock.advance(10);
    expect(await sweepExpired(h.core)).toEqual({ tokens: 0, leases: 1, failed: 0 });
    expect(await upstreamOf(h.core, issued.lease_id)).toMatchObject({ attempts: 2, revoked: 1 });
  });

  it('ignores removals that are not TTL deletions, and inserts and modifications', async () => {
    const issued = await issue();
    const oldImage = await deletedByTtl(issued.lease_id);
    await onTableChange(h.core, [
      { eventName: 'REMOVE', oldImage, byTtl: false },
      { eventName: 'MODIFY', oldImage, byTtl: false },
      { eventName: 'INSERT', byTtl: false },
      { eventName: 'REMOVE', oldImage: { pk: 'mount#x', sk: 'y' }, byTtl: true },
    ]);
    expect(await upstreamOf(h.core, issued.lease_id)).toBeUndefined();
    expect(await storedLease(issued.lease_id)).toBeUndefined();
  });

  it('finishes the revocation of a token that TTL deleted, with its leases', async () => {
    const token = await childToken(60);
    const owned = await issue('long', token);
    h.clock.advance(3600 + 60);
    const hash = h.core.keyring.hash(token);
    const oldImage = await h.core.store.get(`token#${hash}`, 'token');
    expect(oldImage).toBeDefined();
    await h.core.store.delete({ pk: `token#${hash}`, sk: 'token' });
    await onTableChange(h.core, [{ eventName: 'REMOVE', oldImage: oldImage!, byTtl: true }]);
    expect(await upstreamOf(h.core, owned.lease_id)).toMatchObject({ attempts: 1, revoked: 1 });
    expect((await lookup(owned.lease_id)).status).toBe(404);
    expect(await h.core.store.get(`token#${hash}`, 'token')).toBeUndefined();
    expect(await h.core.store.list(`token#${hash}`)).toEqual([]);
  });
});
