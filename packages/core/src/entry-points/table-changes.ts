import type { Core } from '../composition/secrets-core.ts';
import { epochSeconds } from '../lib/clock.ts';
import { isLeasePk, type LeaseItem } from '../secrets/leases/lease-manager.ts';
import { tokenQueue } from '../secrets/tokens/token-store.ts';
import { dueKey } from '../storage/due.ts';
import type { Item } from '../storage/store.ts';

/**
 * A change on the table, as its stream reports it, in the core's own terms: the adapters convert what they read
 * (Lambda's stream event in `functions/jobs/table-stream.ts`, the Streams API in the local poller) into this.
 */
export interface TableChange {
  eventName: 'INSERT' | 'MODIFY' | 'REMOVE';
  /** The item's key attributes. */
  keys?: Record<string, unknown>;
  /** The item before the change (MODIFY, REMOVE). */
  oldImage?: Item;
  /** The item after the change (INSERT, MODIFY). */
  newImage?: Item;
  /** True when DynamoDB's TTL deleted the item (the stream's service principal). */
  byTtl: boolean;
  /** Its place in its shard's order (DynamoDB's sequence number), for reports. */
  sequenceNumber?: string;
}

/**
 * The TTL backstop: if DynamoDB's TTL deleted a lease or token before the sweep reached it, put it back
 * marked as due and revoke it the normal way, so the backend's revoke hook still runs.
 */
export async function onTableChange(core: Core, changes: TableChange[]): Promise<void> {
  for (const change of changes) {
    const old = change.oldImage;
    if (change.eventName !== 'REMOVE' || !change.byTtl || !old) continue;
    const isLease = isLeasePk(old.pk);
    const isToken = old.pk.startsWith('token#') && old.sk === 'token';
    if (!isLease && !isToken) continue;
    core.log.info('TTL deleted an item before the sweep; revoking it now', { kind: isLease ? 'lease' : 'token' });
    if (isLease) {
      // A failed revocation stays recorded on the restored lease and is retried by the sweep.
      if (await core.leases.restore(old as LeaseItem)) await core.leases.revoke(old.sk).catch(() => undefined);
      continue;
    }
    const { expiresAt: _expiresAt, ...restored } = old;
    await core.store.put({
      ...restored,
      duePk: tokenQueue(old.pk.slice(6)),
      dueSk: dueKey(epochSeconds(core.clock), `token#${old.pk.slice(6)}`),
    });
    await core.tokens.revoke(old.pk.slice('token#'.length));
  }
}
