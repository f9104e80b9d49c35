import { coreFromEnvironment } from '@keyhaven/core/runtime.ts';
import { ldapBackend } from '@keyhaven/core/secrets/engines/ldap/ldap-backend.ts';
import { rotationQueue } from '@keyhaven/core/secrets/engines/ldap/records.ts';
import { rotateDue } from '@keyhaven/core/secrets/engines/ldap/rotation.ts';
import { leaseQueues, sweepLeases } from '@keyhaven/core/secrets/framework/lease-sweep.ts';
import { nextDue } from '@keyhaven/core/storage/due.ts';
import { inRounds } from './rounds.ts';

/** The directory engine's job (in the directory's network, like its endpoints): its leases, root and static-role rotations. */
const core = coreFromEnvironment([ldapBackend]);

export function handler(): Promise<{ leases: number; rotated: number; failed: number }> {
  return inRounds(
    async () => {
      const instance = await core();
      const leases = await sweepLeases(instance);
      const rotations = await rotateDue(instance);
      return { leases: leases.leases, rotated: rotations.rotated, failed: leases.failed + rotations.failed };
    },
    async () => {
      const instance = await core();
      return nextDue(instance, [...leaseQueues(instance), rotationQueue]);
    },
  );
}
