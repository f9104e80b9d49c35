/**
 * Rescheduling failed allocations by their task group's `ReschedulePolicy` (Nomad's `Allocation.NextRescheduleTime`,
 * `NextDelay`, `RescheduleTracker.rescheduleInfo`, `nomad/structs/alloc.go`; the reconciler's
 * `filterByRescheduleable`, `scheduler/reconciler/filters.go`; the scheduler's `UpdateRescheduleTracker` and penalty
 * nodes, `scheduler/generic_sched.go`). Times here are milliseconds; the policy's durations and the tracker's times are
 * nanoseconds, as in Nomad's JSON.
 */
import type { Allocation, RescheduleTracker } from '../cluster/allocations/model.ts';
import type { Job } from '../cluster/jobs/model.ts';

export interface ReschedulePolicy {
  Attempts: number;
  /** Nanoseconds. */
  Interval: number;
  /** Nanoseconds. */
  Delay: number;
  DelayFunction: string;
  /** Nanoseconds. */
  MaxDelay: number;
  Unlimited: boolean;
}

/** Within this of its time a reschedule happens now (Nomad's rescheduleWindowSize). */
const rescheduleWindowMs = 1000;
/** Nomad's maxPastRescheduleEvents: an unlimited policy's tracker keeps this many events. */
const maxPastRescheduleEvents = 5;
const nanosPerMs = 1e6;

/** The reschedule policy of the allocation's task group in the job version it runs. */
export function reschedulePolicy(job: Job | undefined, group: string): ReschedulePolicy | undefined {
  const policy = job?.TaskGroups.find((tg) => tg.Name === group)?.ReschedulePolicy;
  if (typeof policy !== 'object' || policy === null) return undefined;
  const loose = policy as Record<string, unknown>;
  const num = (key: string) => (typeof loose[key] === 'number' ? (loose[key] as number) : 0);
  return {
    Attempts: num('Attempts'),
    Interval: num('Interval'),
    Delay: num('Delay'),
    DelayFunction: typeof loose.DelayFunction === 'string' ? loose.DelayFunction : '',
    MaxDelay: num('MaxDelay'),
    Unlimited: loose.Unlimited === true,
  };
}

/** When the allocation failed (ms): its tasks' last FinishedAt, else its ModifyTime (Nomad's LastEventTime). */
export function lastEventTime(alloc: Allocation): number {
  let last = 0;
  for (const state of Object.values(alloc.TaskStates ?? {})) {
    const finished = state.FinishedAt ? Date.parse(state.FinishedAt) : Number.NaN;
    if (Number.isFinite(finished) && finished > last) last = finished;
  }
  return last > 0 ? last : alloc.ModifyTime / nanosPerMs;
}

const events = (alloc: Allocation) => alloc.RescheduleTracker?.Events ?? [];

/** The delay before the next reschedule, in nanoseconds (Nomad's NextDelay). */
export function nextDelay(alloc: Allocation, policy: ReschedulePolicy | undefined): number {
  if (!policy) return 0;
  const past = events(alloc);
  if (past.length === 0) return policy.Delay;
  const last = past[past.length - 1]!;
  let delay: number;
  if (policy.DelayFunction === 'exponential') delay = last.Delay * 2;
  else if (policy.DelayFunction === 'fibonacci') {
    delay = policy.Delay;
    if (past.length >= 2) {
      const previous = past[past.length - 2]!;
      delay =
        previous.Delay === policy.MaxDelay && last.Delay === policy.Delay ? last.Delay : last.Delay + previous.Delay;
    }
  } else return policy.Delay;
  if (policy.MaxDelay > 0 && delay > policy.MaxDelay) {
    delay = policy.MaxDelay;
    // A failure longer than the ceiling after the last reschedule starts the series again.
    if (lastEventTime(alloc) * nanosPerMs - last.RescheduleTime > delay) delay = policy.Delay;
  }
  return delay;
}

/** Reschedules of the lineage within the policy's interval before `failTime` (ms), and the attempts allowed. */
function attemptsWithin(alloc: Allocation, policy: ReschedulePolicy, failTime: number): number {
  if (policy.Attempts <= 0) return 0;
  return events(alloc).filter((event) => failTime * nanosPerMs - event.RescheduleTime < policy.Interval).length;
}

/**
 * When the failed allocation may be rescheduled (ms) and whether it may be at all (attempts left in the interval),
 * or undefined when its policy disables rescheduling or it has not failed (Nomad's NextRescheduleTime).
 */
export function nextRescheduleTime(
  alloc: Allocation,
  policy: ReschedulePolicy | undefined,
  isBatch: boolean,
): { at: number; eligible: boolean } | undefined {
  if (!policy || (policy.Attempts === 0 && !policy.Unlimited)) return undefined;
  const failTime = lastEventTime(alloc);
  const lastFailed = lastRescheduleFailed(alloc);
  if ((alloc.DesiredStatus === 'stop' && !lastFailed) || failTime === 0) return undefined;
  // A batch allocation stopped to be rescheduled (`alloc stop -reschedule`) reschedules whatever its status.
  const rescheduledBatch = isBatch && alloc.DesiredTransition.Reschedule === true;
  if (!rescheduledBatch && alloc.ClientStatus !== 'failed' && alloc.ClientStatus !== 'lost') return undefined;
  const delay = nextDelay(alloc, policy);
  const at = failTime + delay / nanosPerMs;
  let eligible = policy.Unlimited || (policy.Attempts > 0 && alloc.RescheduleTracker === null);
  // Nomad checks the attempts only when the tracker has events; a tracker with none (a first reschedule that found no
  // placement) has made no attempt here, rather than none left.
  if (policy.Attempts > 0 && alloc.RescheduleTracker)
    eligible = attemptsWithin(alloc, policy, failTime) < policy.Attempts && delay < policy.Interval;
  return { at, eligible };
}

export const lastRescheduleFailed = (alloc: Allocation): boolean => {
  const last = alloc.RescheduleTracker?.LastReschedule ?? '';
  return last !== '' && last !== 'ok';
};

/**
 * Whether an allocation is set aside before rescheduling is considered (Nomad's shouldFilter): `untainted` counts
 * toward the group's count and is never rescheduled, `ignore` is neither counted nor rescheduled.
 */
function shouldFilter(alloc: Allocation, isBatch: boolean): { untainted: boolean; ignore: boolean } {
  if (isBatch) {
    if (alloc.DesiredTransition.Reschedule === true) return { untainted: false, ignore: false };
    if (alloc.DesiredStatus === 'stop') {
      if (ranSuccessfully(alloc)) return { untainted: true, ignore: false };
      return { untainted: false, ignore: !lastRescheduleFailed(alloc) };
    }
    if (alloc.DesiredStatus === 'evict') return { untainted: false, ignore: true };
    return { untainted: alloc.ClientStatus !== 'failed', ignore: false };
  }
  if (alloc.DesiredStatus === 'stop' || alloc.DesiredStatus === 'evict')
    return { untainted: false, ignore: !lastRescheduleFailed(alloc) };
  if (alloc.ClientStatus === 'complete' || alloc.ClientStatus === 'lost') return { untainted: false, ignore: true };
  return { untainted: false, ignore: false };
}

/** Every task finished successfully (Nomad's RanSuccessfully; TaskState.Successful is dead and not failed). */
export function ranSuccessfully(alloc: Allocation): boolean {
  const states = Object.values(alloc.TaskStates ?? {});
  return states.length > 0 && states.every((state) => state.State === 'dead' && !state.Failed);
}

export interface RescheduleSplit {
  untainted: Allocation[];
  now: Allocation[];
  later: Array<{ alloc: Allocation; at: number }>;
}

/**
 * Splits allocations into those that stay (counted toward the group), those to reschedule now and those to reschedule
 * later (a follow-up evaluation at `at`); allocations already replaced or not to be counted are dropped (Nomad's
 * filterByRescheduleable with no deployment).
 */
export function splitByRescheduleable(
  allocs: Allocation[],
  isBatch: boolean,
  now: number,
  evalId: string,
  policyOf: (alloc: Allocation) => ReschedulePolicy | undefined,
  /** An active deployment's ID: its allocations reschedule only when marked to (the deployment handles failures). */
  activeDeploymentId?: string,
): RescheduleSplit {
  const split: RescheduleSplit = { untainted: [], now: [], later: [] };
  for (const alloc of allocs) {
    if (alloc.NextAllocation !== '' && isTerminalAlloc(alloc)) continue;
    const filtered = shouldFilter(alloc, isBatch);
    if (filtered.untainted) {
      split.untainted.push(alloc);
      continue;
    }
    if (filtered.ignore) continue;
    if (
      activeDeploymentId &&
      alloc.DeploymentID === activeDeploymentId &&
      alloc.DesiredTransition.Reschedule !== true
    ) {
      split.untainted.push(alloc);
      continue;
    }
    const clientTerminal =
      alloc.ClientStatus === 'complete' || alloc.ClientStatus === 'failed' || alloc.ClientStatus === 'lost';
    let rescheduleNow = alloc.DesiredTransition.ForceReschedule === true && clientTerminal;
    const next = nextRescheduleTime(alloc, policyOf(alloc), isBatch);
    if (next?.eligible && (alloc.FollowupEvalID === evalId || next.at - now <= rescheduleWindowMs))
      rescheduleNow = true;
    if (rescheduleNow) {
      split.now.push(alloc);
      continue;
    }
    split.untainted.push(alloc);
    if (next?.eligible && alloc.FollowupEvalID === '') split.later.push({ alloc, at: next.at });
  }
  return split;
}

const isTerminalAlloc = (alloc: Allocation): boolean =>
  alloc.DesiredStatus === 'stop' ||
  alloc.DesiredStatus === 'evict' ||
  alloc.ClientStatus === 'complete' ||
  alloc.ClientStatus === 'failed' ||
  alloc.ClientStatus === 'lost';

/** The nodes a replacement of `previous` should avoid: the one it failed on and those its lineage failed on. */
export function penaltyNodeIds(previous: Allocation): string[] {
  const nodes = new Set<string>();
  if (previous.ClientStatus === 'failed') nodes.add(previous.NodeID);
  for (const event of events(previous)) nodes.add(event.PrevNodeID);
  return [...nodes];
}

/**
 * The reschedule tracker of the allocation replacing `previous` at `now` (ms): its lineage's events within the
 * interval (the last five for an unlimited policy) and this reschedule's (Nomad's UpdateRescheduleTracker).
 */
export function nextRescheduleTracker(
  previous: Allocation,
  policy: ReschedulePolicy | undefined,
  now: number,
): RescheduleTracker {
  const past = events(previous);
  const nowNanos = now * nanosPerMs;
  let kept = past;
  if (policy && policy.Attempts > 0)
    kept = past.filter((event) => policy.Interval > 0 && nowNanos - event.RescheduleTime <= policy.Interval);
  else kept = past.slice(Math.max(0, past.length - maxPastRescheduleEvents));
  return {
    Events: [
      ...kept.map((event) => ({ ...event })),
      {
        RescheduleTime: nowNanos,
        PrevAllocID: previous.ID,
        PrevNodeID: previous.NodeID,
        Delay: nextDelay(previous, policy),
      },
    ],
    LastReschedule: 'ok',
  };
}
