/**
 * The evaluation queue fed by the table's stream (Nomad's eval broker, `nomad/eval_broker.go`, whose `Enqueue` the
 * state store calls as it writes a pending evaluation): an evaluation written `pending` (inserted, or changed to
 * pending) is run at once by the worker, in AWS by `functions/jobs/evaluation-trigger.ts` on the stream's records
 * (filtered to those by the event source mapping), under `npm start` by the same code on the local stream poller's
 * changes. The minute job (`sweep.ts`) stays the backstop: whatever the stream's consumer did not run is still on the
 * queue (`EVAL_QUEUE`).
 *
 * The same consumer wakes blocked evaluations when room is made (`capacity-wake.ts`): the records of room made
 * (`cluster/nodes/capacity.ts`), and blocked evaluations written, are on the stream too; and it runs what is due when
 * the scheduler configuration is written unpausing the broker (`brokerUnpaused`), as Nomad's leader restores the
 * pending evaluations into its re-enabled broker. (`sweep.ts` also gives it the forced garbage collection requested.)
 *
 * At least once and idempotent: the stream's image only names the evaluation; the worker reads it again (verified)
 * and runs it only while it is pending, under the job's lease, so a record delivered twice (a retry, the minute job
 * at the same moment) runs it once. A job whose lease another worker holds is tried again after a pause, a few times,
 * and then left to the backstop.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { CAPACITY_PK, EVAL_PK, SCHEDULER_CONFIG_PK } from '../keys.ts';
import type { EvaluationWorker, Outcome } from './evaluation-worker.ts';

/** A change on the table as the stream reports it (the fields of the core's `TableChange` the trigger reads). */
export interface StreamChange {
  eventName: 'INSERT' | 'MODIFY' | 'REMOVE';
  oldImage?: Record<string, unknown>;
  newImage?: Record<string, unknown>;
  sequenceNumber?: string;
}

/** The partitions of evaluation items (`EVAL_PK`, sharded): what the event source mapping's filter matches. */
export const evaluationPartitionPrefix = `${EVAL_PK}#`;

/** The ID of the evaluation this change wrote pending (it was not pending before), if it is such a change. */
export function writtenPending(change: StreamChange): string | undefined {
  const image = change.newImage;
  if (change.eventName === 'REMOVE' || !image) return undefined;
  if (typeof image.pk !== 'string' || !image.pk.startsWith(evaluationPartitionPrefix)) return undefined;
  if (image.Status !== 'pending' || typeof image.sk !== 'string') return undefined;
  if (change.eventName === 'MODIFY' && change.oldImage?.Status === 'pending') return undefined;
  return image.sk;
}

/** The partitions of the records of room made (`CAPACITY_PK`, sharded). */
export const capacityPartitionPrefix = `${CAPACITY_PK}#`;

/**
 * Whether this change may wake blocked evaluations (`capacity-wake.ts`): room recorded, or an evaluation written
 * blocked (room made while it ran, after its snapshot, wakes it at once: Nomad's missed unblock).
 */
export function mayWakeBlocked(change: StreamChange): boolean {
  const image = change.newImage;
  if (change.eventName === 'REMOVE' || !image || typeof image.pk !== 'string') return false;
  if (image.pk.startsWith(capacityPartitionPrefix)) return change.eventName === 'INSERT';
  return image.pk.startsWith(evaluationPartitionPrefix) && image.Status === 'blocked';
}

/**
 * Whether this change unpaused the evaluation broker: the scheduler configuration written with `PauseEvalBroker` false
 * over one with it true (Nomad's leader re-enables its broker and restores the pending evaluations at once). The
 * image only says when to look: the worker reads the configuration again, verified, before it takes anything.
 */
export function brokerUnpaused(change: StreamChange): boolean {
  const image = change.newImage;
  if (change.eventName !== 'MODIFY' || !image || image.pk !== SCHEDULER_CONFIG_PK) return false;
  return change.oldImage?.PauseEvalBroker === true && image.PauseEvalBroker !== true;
}

/** The most rounds (of `runDue`'s 100) one unpausing runs; what is left is the sweep's. */
const unpausedRounds = 10;

export interface TriggerOptions {
  /** How often a job whose lease another worker holds is tried again before it is left to the backstop; default 10. */
  busyRetries?: number;
  /** The pause before each such try (ms); default 500. */
  busyPauseMs?: number;
  /** How to pause (tests pass one that does not wait). */
  pause?: (ms: number) => Promise<void>;
}

export interface TriggerResult {
  /** How each evaluation went, by ID (`busy`: still held by another worker after the retries, left to the backstop). */
  outcomes: Map<string, Outcome>;
  /** The earliest change whose evaluation failed (to be delivered again from it), if any. */
  firstFailed?: StreamChange;
}

/**
 * Runs what was due if these changes unpaused the broker, the blocked evaluations they may wake, then the evaluations
 * they wrote pending, in one worker pass (the newest of each job).
 */
export async function runTriggered(
  worker: EvaluationWorker,
  changes: readonly StreamChange[],
  options: TriggerOptions = {},
): Promise<TriggerResult> {
  const written = changes.flatMap((change) => {
    const id = writtenPending(change);
    return id ? [{ id, change }] : [];
  });
  const outcomes = new Map<string, Outcome>();
  // The broker unpaused: what waited on the queue runs now, round after round while rounds come back full.
  if (changes.some(brokerUnpaused))
    for (let round = 0; round < unpausedRounds; round++) {
      const ran = await worker.runDue();
      for (const [id, outcome] of ran) outcomes.set(id, outcome);
      if (ran.size < 100 || [...ran.values()].every((outcome) => outcome === 'busy' || outcome === 'paused')) break;
    }
  // Blocked evaluations that room made wakes: one pass (a job leased now is left to the sweep, the backstop).
  if (changes.some(mayWakeBlocked)) for (const [id, outcome] of await worker.runWoken()) outcomes.set(id, outcome);
  if (written.length === 0) return { outcomes };
  const pause = options.pause ?? ((ms: number) => sleep(ms));
  let ids = [...new Set(written.map(({ id }) => id))];
  for (let attempt = 0; ; attempt++) {
    for (const [id, outcome] of await worker.runEvaluations(ids)) outcomes.set(id, outcome);
    if (!ids.some((id) => outcomes.get(id) === 'busy') || attempt >= (options.busyRetries ?? 10)) break;
    // Again: the busy ones, with the older ones of their jobs (not run: canceled with the newest once it runs).
    ids = ids.filter((id) => outcomes.get(id) === 'busy' || !outcomes.has(id));
    await pause(options.busyPauseMs ?? 500);
  }
  const failed = written.find(({ id }) => outcomes.get(id) === 'error');
  return { outcomes, ...(failed ? { firstFailed: failed.change } : {}) };
}
