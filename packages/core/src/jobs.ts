import type { Core } from './core.ts';
import { epochSeconds } from './lib/clock.ts';
import { sweepScheduler } from './scheduler/sweep.ts';
import { type LeaseItem, leaseQueue } from './secrets/leases/lease-manager.ts';
import { finishDisabledMounts } from './secrets/mounts/disable-mount.ts';
import { dueKey } from './storage/due.ts';
import type { Item } from './storage/store.ts';

/**
 * Scheduled work as plain functions over the table. In AWS an EventBridge rule and the table's stream
 * call them; locally `packages/local` calls the same functions from timers and a stream poller. In AWS each
 * engine's job sweeps its own leases (`sweepLeases` with one backend) and does its engine's scheduled work
 * (`rotation-job.ts`); the sweep job does the tokens.
 */

/** Everything that has fallen due in this process's reach: `sweepTokens` and `sweepLeases` (what `npm start` runs). */
export async function sweepExpired(core: Core, limit = 500): Promise<{ tokens: number; leases: number; failed: number }> {
  const tokens = await sweepTokens(core, limit);
  const leases = await sweepLeases(core, limit);
  return { tokens: tokens.tokens, leases: leases.leases, failed: tokens.failed + leases.failed };
}

/** Revokes the expired tokens (with their children; their leases go to their engines' queues), then the scheduler's. */
export async function sweepTokens(core: Core, limit = 500): Promise<{ tokens: number; failed: number }> {
  const result = { tokens: 0, failed: 0 };
  for (const item of await dueOn(core, 'expiry', limit)) {
    if (item.sk !== 'token') continue;
    try {
      await core.tokens.revoke(item.pk.slice('token#'.length));
      result.tokens++;
    } catch (error) {
      result.failed++;
      core.log.error('sweeping a token failed', { error: String(error) });
    }
  }
  // The scheduler service's expired ACL tokens and events live in the same table.
  await sweepScheduler(core);
  return result;
}

/**
 * Revokes the due leases of every engine this process bundles, each from its engine's queue (expired, handed off
 * by a function without the backend, or retried after a failure, with backoff: see LeaseManager), then finishes
 * disabling that engine's mounts whose leases are all gone.
 */
export async function sweepLeases(core: Core, limit = 500): Promise<{ leases: number; failed: number }> {
  const result = { leases: 0, failed: 0 };
  for (const [type, backend] of core.backends) {
    if (!backend.leases) continue;
    for (const item of await dueOn(core, leaseQueue(type), limit)) {
      try {
        await core.leases.revoke(item.sk);
        result.leases++;
      } catch (error) {
        result.failed++;
        core.log.error('sweeping a lease failed', { leaseId: item.sk, error: String(error) });
      }
    }
  }
  await finishDisabledMounts(core);
  return result;
}

const dueOn = (core: Core, queue: string, limit: number) =>
  core.store
    .query({
      IndexName: 'due',
      KeyConditionExpression: 'duePk = :queue AND dueSk <= :now',
      ExpressionAttributeValues: { ':queue': queue, ':now': dueKey(epochSeconds(core.clock), '~') },
      Limit: limit,
    })
    .then((items) => items.slice(0, limit));

/** A change on the table, as the stream reports it, without the Lambda event's types. */
export interface TableChange {
  eventName: 'INSERT' | 'MODIFY' | 'REMOVE';
  oldImage?: Item;
  /** True when DynamoDB's TTL deleted the item (the stream's service principal). */
  byTtl: boolean;
}

/**
 * The TTL backstop: if DynamoDB's TTL deleted a lease or token before the sweep reached it, put it back
 * marked as due and revoke it the normal way, so the backend's revoke hook still runs.
 */
export async function onTableChange(core: Core, changes: TableChange[]): Promise<void> {
  for (const change of changes) {
    const old = change.oldImage;
    if (change.eventName !== 'REMOVE' || !change.byTtl || !old) continue;
    const isLease = old.pk === 'leases';
    const isToken = old.pk.startsWith('token#') && old.sk === 'token';
    if (!isLease && !isToken) continue;
    core.log.info('TTL deleted an item before the sweep; revoking it now', { kind: isLease ? 'lease' : 'token' });
    if (isLease) {
      // A failed revocation stays recorded on the restored lease and is retried by the sweep.
      if (await core.leases.restore(old as LeaseItem)) await core.leases.revoke(old.sk).catch(() => undefined);
      continue;
    }
    const { expiresAt: _expiresAt, ...restored } = old;
    await core.store.put({ Item: { ...restored, duePk: 'expiry', dueSk: dueKey(epochSeconds(core.clock), `token#${old.pk.slice(6)}`) } });
    await core.tokens.revoke(old.pk.slice('token#'.length));
  }
}
