import { coreFromEnvironment } from '@keyhaven/core/runtime.ts';
import { cleanupPending } from '@keyhaven/core/secrets/engines/cloud/cleanup.ts';
import { cloudBackend } from '@keyhaven/core/secrets/engines/cloud/cloud-backend.ts';
import { leaseQueues, sweepLeases } from '@keyhaven/core/secrets/framework/lease-sweep.ts';
import { nextDue } from '@keyhaven/core/storage/due.ts';
import { inRounds } from './rounds.ts';

/**
 * The cloud engine's job: its leases (service-account keys), root rotations and the clean-up a failure left. The
 * clean-up runs each round; later rounds within the minute follow the lease queue only.
 */
const core = coreFromEnvironment([cloudBackend]);

export function handler(): Promise<{ leases: number; rotated: number; failed: number }> {
  return inRounds(
    async () => {
      const instance = await core();
      const leases = await sweepLeases(instance);
      const pending = await cleanupPending(instance);
      return { leases: leases.leases, rotated: pending.rotated + pending.settled, failed: leases.failed + pending.failed };
    },
    async () => nextDue(await core(), leaseQueues(await core())),
  );
}
