import type { Core } from '../../core.ts';
import { dueItems } from '../../storage/due.ts';
import { finishDisabledMounts } from '../mounts/disable-mount.ts';
import { leaseQueue } from './lease-manager.ts';

/** The due queues `sweepLeases` reads: one per engine this process bundles that issues leases. */
export const leaseQueues = (core: Core) =>
  [...core.backends].filter(([, backend]) => backend.leases).map(([type]) => leaseQueue(type));

/**
 * Revokes the due leases of every engine this process bundles, each from its engine's queue (expired, handed off
 * by a function without the backend, or retried after a failure, with backoff: see LeaseManager), then finishes
 * disabling that engine's mounts whose leases are all gone.
 */
export async function sweepLeases(core: Core, limit = 500): Promise<{ leases: number; failed: number }> {
  const result = { leases: 0, failed: 0 };
  for (const queue of leaseQueues(core)) {
    for (const item of await dueItems(core, queue, limit)) {
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
