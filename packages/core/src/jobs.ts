import type { Core } from './core.ts';
import { epochSeconds } from './lib/clock.ts';
import { sweepScheduler } from './scheduler/sweep.ts';
import type { LeaseItem } from './secrets/leases/lease-manager.ts';
import { finishDisabledMounts } from './secrets/mounts/disable-mount.ts';
import { dueKey } from './storage/due.ts';
import type { Item } from './storage/store.ts';

/**
 * Scheduled work as plain functions over the table. In AWS an EventBridge rule and the table's stream
 * call them; locally `packages/local` calls the same functions from timers and a stream poller. The engines'
 * own scheduled work (rotation, clean-up) is in `rotation-job.ts`, so the sweep's bundle does without it.
 */

/**
 * Revokes every token and lease whose time has come, and finishes disabling the mounts whose leases are all
 * gone. Failures stay queued with backoff (see LeaseManager).
 */
export async function sweepExpired(core: Core, limit = 500): Promise<{ tokens: number; leases: number; failed: number }> {
  const due = await core.store.query({
    IndexName: 'due',
    KeyConditionExpression: 'duePk = :queue AND dueSk <= :now',
    ExpressionAttributeValues: { ':queue': 'expiry', ':now': dueKey(epochSeconds(core.clock), '~') },
    Limit: limit,
  });
  const result = { tokens: 0, leases: 0, failed: 0 };
  for (const item of due.slice(0, limit)) {
    try {
      if (item.pk === 'leases') {
        await core.leases.revoke(item.sk);
        result.leases++;
      } else if (item.sk === 'token') {
        await core.tokens.revoke(item.pk.slice('token#'.length));
        result.tokens++;
      }
    } catch (error) {
      result.failed++;
      core.log.error('sweep item failed', { pk: item.pk.startsWith('token#') ? 'token' : item.pk, error: String(error) });
    }
  }
  // Mounts disabled by a process without their backend, once the leases above are revoked.
  await finishDisabledMounts(core);
  // The scheduler service's expired ACL tokens and events live in the same table.
  await sweepScheduler(core);
  return result;
}

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
