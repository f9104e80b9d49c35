import type { Core } from '../composition/secrets-core.ts';
import { EVAL_QUEUE, TOKEN_EXPIRY_QUEUE } from '../scheduler/keys.ts';
import { type GcThresholds, gcThresholdsFromEnvironment } from '../scheduler/cluster/system/thresholds.ts';
import { sweepScheduler } from '../scheduler/sweep.ts';
import { sweepLeases } from '../secrets/framework/lease-sweep.ts';
import { dueItems } from '../storage/due.ts';

/**
 * Scheduled work as plain functions over the table. In AWS EventBridge rules call them (`functions/jobs/`);
 * locally `packages/local` calls them from timers. The token sweep job runs `sweepTokens`; each engine's job runs
 * `sweepLeases` with its one backend and the periodic work its backend declares (`Backend.periodic`); the TTL backstop on
 * the table's stream is `table-changes.ts` (beside this file).
 */

/** Everything that has fallen due in this process's reach: `sweepTokens` and `sweepLeases` (what `npm start` runs). */
export async function sweepExpired(
  core: Core,
  limit = 500,
): Promise<{ tokens: number; leases: number; failed: number }> {
  const tokens = await sweepTokens(core, limit);
  const leases = await sweepLeases(core, { limit });
  return { tokens: tokens.tokens, leases: leases.leases, failed: tokens.failed + leases.failed };
}

/** The due queues `sweepTokens` reads: the secrets service's tokens and the scheduler's. */
export const tokenQueues = ['expiry', TOKEN_EXPIRY_QUEUE];

/**
 * The scheduler's pending evaluations (`scheduler/worker/evaluation-worker.ts`, run by `sweepTokens` through the
 * scheduler's sweep, the backstop of the table stream's trigger): a job run that finds one due soon runs again for it
 * (a follow-up's `WaitUntil`, one that failed and is delivered again). Blocked evaluations are not here: they wait
 * for room on a node, not a time.
 */
export const evaluationQueues = [EVAL_QUEUE];

/** Revokes the expired tokens (with their children; their leases go to their engines' queues), then the scheduler's. */
export async function sweepTokens(core: Core, limit = 500): Promise<{ tokens: number; failed: number }> {
  const result = { tokens: 0, failed: 0 };
  for (const item of await dueItems(core, 'expiry', limit)) {
    if (item.sk !== 'token') continue;
    try {
      await core.tokens.revoke(item.pk.slice('token#'.length));
      result.tokens++;
    } catch (error) {
      result.failed++;
      core.log.error('sweeping a token failed', { error: String(error) });
    }
  }
  // The scheduler service's expired ACL tokens and events live in the same table; its garbage collection runs with
  // the operator's thresholds (`KEYHAVEN_SCHEDULER_*_GC_THRESHOLD`, Nomad's defaults when unset).
  await sweepScheduler(core, { gc: gcThresholds(core) });
  return result;
}

/**
 * The scheduler's garbage collection thresholds from the environment; a setting that is not a Go duration turns the
 * collection off (logged, naming the variable) rather than stopping the rest of the scheduler's sweep.
 */
function gcThresholds(core: Core): GcThresholds | false {
  try {
    return gcThresholdsFromEnvironment(process.env);
  } catch (error) {
    core.log.error('scheduler garbage collection is off: a threshold setting is not a duration', {
      error: String(error),
    });
    return false;
  }
}
