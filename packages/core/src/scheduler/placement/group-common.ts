/**
 * What the reconciliation of one task group shares: the job's context, the group's result, Nomad's empty
 * `DesiredUpdates`, name order, and stopping a whole group (Nomad's filterAndStopAll).
 */
import type { Allocation } from '../cluster/allocations/model.ts';
import type { Job, TaskGroup } from '../cluster/jobs/model.ts';
import type { ClusterNode } from '../cluster/nodes/model.ts';
import { allocIndex } from './alloc-names.ts';
import type { DeploymentContext } from './deployment.ts';
import { stopDescriptions } from './descriptions.ts';
import { classify } from './tainted.ts';
import type { DesiredUpdates, PlacementRequest, StopDecision } from './types.ts';
import type { FitsInPlace } from './updates.ts';

export interface JobContext {
  jobId: string;
  job: Job;
  isBatch: boolean;
  nodes: Map<string, ClusterNode>;
  /** The job of an allocation's version (undefined when that version is no longer stored). */
  jobOf: (alloc: Allocation) => Job | undefined;
  evalId: string;
  now: number;
  deployments: DeploymentContext;
  fitsInPlace?: FitsInPlace;
}

export interface GroupResult {
  place: PlacementRequest[];
  stop: StopDecision[];
  inplace: Allocation[];
  updates: DesiredUpdates;
  /** Failed allocations to reschedule later, and when (ms). */
  later: Array<{ alloc: Allocation; at: number }>;
  /** Whether the group has nothing left to do for the current deployment. */
  complete: boolean;
}

export const emptyUpdates = (): DesiredUpdates => ({
  Ignore: 0,
  Place: 0,
  Migrate: 0,
  Stop: 0,
  InPlaceUpdate: 0,
  DestructiveUpdate: 0,
  Canary: 0,
  Preemptions: 0,
  Reconnect: 0,
  Disconnect: 0,
  RescheduleNow: 0,
  RescheduleLater: 0,
});

export const serverTerminal = (alloc: Allocation): boolean =>
  alloc.DesiredStatus === 'stop' || alloc.DesiredStatus === 'evict';

/** Allocations in name-index order (then ID), so that every decision is the same for the same input. */
export function byName(allocs: Iterable<Allocation>, jobId: string): Allocation[] {
  const keyed = [...allocs].map((alloc) => ({ alloc, index: allocIndex(alloc.Name, jobId, alloc.TaskGroup) }));
  keyed.sort((a, b) => a.index - b.index || (a.alloc.ID < b.alloc.ID ? -1 : a.alloc.ID > b.alloc.ID ? 1 : 0));
  return keyed.map((entry) => entry.alloc);
}

export interface StopAllContext {
  jobId: string;
  isBatch: boolean;
  nodes: Map<string, ClusterNode>;
  now: number;
  group: TaskGroup | undefined;
}

/**
 * Stops every allocation of a group that is removed, scaled to zero or whose job stopped (Nomad's
 * filterAndStopAll): a lost one as lost, the rest as not needed. Answers the stops and the Stop count (all of `set`).
 */
export function stopAll(set: Allocation[], context: StopAllContext) {
  const classified = classify(set, { ...context, groupAllocs: set });
  const stop: StopDecision[] = [
    ...byName([...classified.untainted, ...classified.migrate], context.jobId).map((alloc) => ({
      alloc,
      description: stopDescriptions.notNeeded,
    })),
    ...byName(classified.lost, context.jobId).map((alloc) => ({
      alloc,
      description: stopDescriptions.lost,
      clientStatus: 'lost' as const,
    })),
  ];
  return { stop, count: set.length };
}
