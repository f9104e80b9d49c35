import { coreFromEnvironment } from '@keyhaven/core/runtime.ts';
import { meshBackend } from '@keyhaven/core/secrets/engines/mesh/mesh-backend.ts';
import { leaseQueues, sweepLeases } from '@keyhaven/core/secrets/framework/lease-sweep.ts';
import { nextDue } from '@keyhaven/core/storage/due.ts';
import { inRounds } from './rounds.ts';

/** The service-mesh engine's job: its leases (ACL tokens deleted from the mesh server). */
const core = coreFromEnvironment([meshBackend]);

export function handler(): Promise<{ leases: number; failed: number }> {
  return inRounds(
    async () => sweepLeases(await core()),
    async () => nextDue(await core(), leaseQueues(await core())),
  );
}
