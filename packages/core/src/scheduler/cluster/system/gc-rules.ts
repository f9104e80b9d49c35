/**
 * What Nomad's core scheduler may reap, as pure functions of the stored objects (`nomad/core_sched.go` `gcEval`,
 * `allocGCEligible`, `olderVersionTerminalAllocs`; `nomad/state/schema.go` `jobIsGCable`). Times are nanoseconds, as
 * the objects hold them.
 */
import type { Allocation } from '../allocations/model.ts';
import { isTerminal } from '../allocations/model.ts';
import type { Evaluation } from '../evaluations/model.ts';
import { isParameterized, type Job } from '../jobs/model.ts';

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null;

/**
 * Nomad's jobIsGCable: a periodic or parameterized parent only once stopped (so one that still launches children is
 * kept); any other job once dead and either stopped or of a type that completes by itself (batch, sysbatch).
 */
export function jobIsGcable(job: Job): boolean {
  const periodic = isObject(job.Periodic) && job.Periodic.Enabled !== false;
  if (periodic || isParameterized(job)) return job.Stop;
  if (job.Status !== 'dead') return false;
  if (job.Stop) return true;
  return job.Type === 'batch' || job.Type === 'sysbatch';
}

const evaluationTerminal = (evaluation: Evaluation) =>
  evaluation.Status === 'complete' || evaluation.Status === 'failed' || evaluation.Status === 'canceled';

/** Nomad's allocGCEligible: terminal, old enough, not running, and not still needed to reschedule from. */
export function allocGcEligible(alloc: Allocation, job: Job | undefined, nowNs: number, cutoffNs: number): boolean {
  if (!isTerminal(alloc) || alloc.ModifyTime > cutoffNs) return false;
  if (alloc.ClientStatus === 'running') return false;
  if (!job || job.Stop || job.Status === 'dead') return true;
  if (alloc.DesiredStatus === 'stop') return true;
  if (alloc.ClientStatus !== 'failed') return true;
  const policy = job.TaskGroups.find((group) => group.Name === alloc.TaskGroup)?.ReschedulePolicy;
  const attempts = isObject(policy) && typeof policy.Attempts === 'number' ? policy.Attempts : 0;
  const unlimited = isObject(policy) && policy.Unlimited === true;
  if (!isObject(policy) || (!unlimited && attempts === 0)) return true;
  // Its replacement carried the reschedule history forward.
  if (alloc.NextAllocation !== '') return true;
  if (unlimited) return false;
  const events = alloc.RescheduleTracker?.Events ?? [];
  const last = events.at(-1);
  if (!last) return false;
  const interval = typeof policy.Interval === 'number' ? policy.Interval : 0;
  return nowNs - last.RescheduleTime > interval;
}

/**
 * Nomad's gcEval: whether a terminal evaluation older than the cutoff may go, and which of its allocations may go
 * with it (or without it). `allowBatch` is the job GC's: a dead batch job's evaluations go whole.
 */
export function evalGc(
  evaluation: Evaluation,
  job: Job | undefined,
  allocs: Allocation[],
  nowNs: number,
  cutoffNs: number,
  allowBatch: boolean,
): { gc: boolean; allocs: string[] } {
  if (!evaluationTerminal(evaluation) || evaluation.ModifyTime > cutoffNs) return { gc: false, allocs: [] };
  if (evaluation.Type === 'batch') {
    const collect = !job || (job.Status === 'dead' && (job.Stop || allowBatch));
    if (!collect && job) {
      // A batch job still running keeps its current allocations (reaping them would run them again); older
      // versions' terminal ones may go.
      const old = allocs
        .filter((alloc) => alloc.CreateIndex < job.JobModifyIndex && alloc.ModifyTime < cutoffNs && isTerminal(alloc))
        .map((alloc) => alloc.ID);
      return { gc: old.length === allocs.length, allocs: old };
    }
  }
  const eligible = allocs.filter((alloc) => allocGcEligible(alloc, job, nowNs, cutoffNs)).map((alloc) => alloc.ID);
  return { gc: eligible.length === allocs.length, allocs: eligible };
}
