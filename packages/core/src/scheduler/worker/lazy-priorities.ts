/**
 * Reading other jobs' priorities only when placement asks for them (`decide.ts` `decideReading`): the loop, and what
 * one job read adds to the snapshot's tables. The loop takes its runner and reader as functions, so the placement
 * tests drive the very loop the worker runs over their own snapshots.
 */
import type { Job } from '../cluster/jobs/model.ts';
import { migrateMaxParallel } from '../placement/tainted.ts';
import { groupKey, type JobRef, priorityKey } from '../placement/types.ts';

/**
 * Runs `run` until what it lacked (`lacked`) has all been read: each round reads only the jobs not read before
 * (`read`, which answers false when nothing may be read: the result then stands). A job read but not found stays
 * unknown (never preempted), as it is when read up front.
 */
export async function settlePriorities<T>(
  run: () => T,
  lacked: (result: T) => readonly JobRef[] | undefined,
  read: (refs: JobRef[]) => Promise<boolean>,
): Promise<T> {
  const asked = new Set<string>();
  for (;;) {
    const result = run();
    const wanted = (lacked(result) ?? []).filter((ref) => !asked.has(priorityKey(ref.Namespace, ref.JobID)));
    if (wanted.length === 0) return result;
    for (const ref of wanted) asked.add(priorityKey(ref.Namespace, ref.JobID));
    if (!(await read(wanted))) return result;
  }
}

/** What a job read adds: its priority, and its groups' migrate `max_parallel` (Nomad's preemption penalty). */
export function addPriority(
  priorities: Map<string, number>,
  maxParallel: Map<string, number>,
  job: Pick<Job, 'Namespace' | 'ID' | 'Priority' | 'Type' | 'TaskGroups'>,
): void {
  priorities.set(priorityKey(job.Namespace, job.ID), job.Priority);
  // Nomad's migrate block defaults to max_parallel 1 for service jobs only; the others have none (0).
  for (const group of job.TaskGroups)
    maxParallel.set(
      groupKey(job.Namespace, job.ID, group.Name),
      job.Type === 'service' ? migrateMaxParallel(group) : 0,
    );
}
