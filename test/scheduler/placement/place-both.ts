/**
 * Placement run both ways for the preemption tests: with every priority of the snapshot given up front, and as the
 * worker runs it (`worker/decide.ts` `decideReading`): none at first, then, through the worker's own loop
 * (`worker/lazy-priorities.ts` `settlePriorities`), exactly the jobs placement lacked, read from the snapshot's.
 * The two plans must be identical.
 */
import { expect } from 'vitest';
import type { AllocMetric } from '../../../packages/core/src/scheduler/cluster/allocations/resources.ts';
import { place } from '../../../packages/core/src/scheduler/placement/place.ts';
import {
  type PlacementResult,
  priorityKey,
  type Snapshot,
} from '../../../packages/core/src/scheduler/placement/types.ts';
import { settlePriorities } from '../../../packages/core/src/scheduler/worker/lazy-priorities.ts';

/** A result's plan, less the one measured figure (`AllocationTime`). */
export const planOf = (result: PlacementResult) => {
  const untimed = (metric: AllocMetric) => ({ ...metric, AllocationTime: 0 });
  return {
    placements: result.placements.map((placement) => ({
      request: placement.request,
      node: placement.node.ID,
      resources: placement.resources,
      metrics: untimed(placement.metrics),
      preempted: placement.preempted?.map((alloc) => alloc.ID),
    })),
    failed: Object.fromEntries(Object.entries(result.failed).map(([group, metric]) => [group, untimed(metric)])),
    classEligibility: result.classEligibility,
    escapedComputedClass: result.escapedComputedClass,
  };
};

/**
 * Places both ways and asserts one plan: with every priority of the snapshot given up front, and as the worker
 * does (`decideReading`): none at first, then, through the worker's own loop (`settlePriorities`), exactly the jobs
 * placement lacked, read from the snapshot's. Answers the up-front result, in `read` the jobs read lazily and in
 * `rounds` how many reads that took.
 */
export async function placeBoth(
  snapshot: Snapshot,
  ...rest: Parameters<typeof place> extends [Snapshot, ...infer R] ? R : never
): Promise<PlacementResult & { read: string[]; rounds: number }> {
  const full = place(snapshot, ...rest);
  const priorities = new Map<string, number>();
  const maxParallel = new Map<string, number>();
  const read: string[] = [];
  let rounds = 0;
  const [job] = rest;
  const lazy = await settlePriorities(
    () => place({ ...snapshot, priorities, maxParallel }, ...rest),
    (result) => result.lackedPriorities,
    async (refs) => {
      for (const ref of refs) {
        const key = priorityKey(ref.Namespace, ref.JobID);
        read.push(ref.JobID);
        const priority = snapshot.priorities?.get(key);
        if (priority !== undefined) priorities.set(key, priority);
        for (const [group, value] of snapshot.maxParallel ?? [])
          if (group.startsWith(`${key}\u0000`)) maxParallel.set(group, value);
      }
      rounds++;
      return true;
    },
    () =>
      snapshot.allocs
        .filter((alloc) => alloc.JobID !== job.ID || alloc.Namespace !== job.Namespace)
        .map((alloc) => ({ Namespace: alloc.Namespace, JobID: alloc.JobID })),
  );
  expect(planOf(lazy)).toEqual(planOf(full));
  return Object.assign(full, { read, rounds });
}
