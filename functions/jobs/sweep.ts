import { evaluationQueues, sweepTokens, tokenQueues } from '@keyhaven/core/entry-points/expiry-sweeps.ts';
import { coreFromEnvironment } from '@keyhaven/core/entry-points/secrets-core-from-environment.ts';
import { jwtBackend, oidcBackend } from '@keyhaven/core/secrets/auth/jwt/jwt-backend.ts';
import { kvBackend } from '@keyhaven/core/secrets/engines/kv/kv-backend.ts';
import { leaseQueues, sweepLeases } from '@keyhaven/core/secrets/framework/lease-sweep.ts';
import { nextDue } from '@keyhaven/core/storage/due.ts';
import { inRounds } from './rounds.ts';

/**
 * Expired tokens (secrets and scheduler), the scheduler's late nodes and due evaluations, and the families without a
 * job of their own: kv leases (nothing to take back) and the login methods' disabled mounts. The engines with work to do outside (directory, cloud, mesh)
 * each have a job of their own: `engine-job.ts`, with `KEYHAVEN_ENGINE` naming the engine.
 */
const core = coreFromEnvironment([kvBackend, jwtBackend, oidcBackend]);

export function handler(): Promise<{ tokens: number; leases: number; failed: number }> {
  return inRounds(
    async () => {
      const instance = await core();
      const tokens = await sweepTokens(instance);
      const leases = await sweepLeases(instance);
      return { tokens: tokens.tokens, leases: leases.leases, failed: tokens.failed + leases.failed };
    },
    async () => {
      const instance = await core();
      return nextDue(instance, [...tokenQueues, ...leaseQueues(instance), ...evaluationQueues]);
    },
  );
}
