/**
 * Reading other jobs' priorities only when placement asks for them (`decide.ts` `decideReading`): the loop, and what
 * one job read adds to the snapshot's tables. The loop takes its runner and reader as functions, so the placement
 * tests drive the very loop the worker runs over their own snapshots.
 */
import type { Job } from '../cluster/jobs/model.ts';
import { migrateMaxParallel } from '../placement/tainted.ts';
import { groupKey, type JobRef, priorityKey } from '../placement/types.ts';

/**
 * Runs `run` until what it lacked (`lacked`) has all been read. The first read is exactly the jobs the first run
 * lacked. A run that still lacks some (a preemption made room, so a later placement went on to nodes not tried
 * before, which a service or batch job of a large count can do once per placement) reads those and every job of
 * `everyOther` not read yet at once, so an evaluation runs placement at most three times. `read` answers false when
 * nothing may be read (the result then stands). A job read but not found stays unknown (never preempted), as it is
 * when read up front.
 */
export async function settlePriorities<T>(
  run: () => T,
  lacked: (result: T) => readonly JobRef[] | undefined,
  read: (refs: JobRef[]) => Promise<boolean>,
  everyOther: () => readonly JobRef[] = () => [],
): Promise<T> {
  const asked = new Set<string>();
  const unasked = (refs: readonly JobRef[]): JobRef[] => {
    const fresh = new Map<string, JobRef>();
    for (const ref of refs) {
      const key = priorityKey(ref.Namespace, ref.JobID);
      if (!asked.has(key)) fresh.set(key, ref);
    }
    return [...fresh.values()];
  };
  for (let reads = 0; ; reads++) {
    const result = run();
    const wanted = unasked(lacked(result) ?? []);
    if (wanted.length === 0) return result;
    const refs = reads === 0 ? wanted : unasked([...wanted, ...everyOther()]);
    for (const ref of refs) asked.add(priorityKey(ref.Namespace, ref.JobID));
    if (!(await read(refs))) return result;
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
