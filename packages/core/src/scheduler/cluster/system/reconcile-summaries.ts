/**
 * Nomad's `System.ReconcileJobSummaries` (`nomad/state/state_store.go` ReconcileJobSummaries): every job's summary
 * counted again from what is stored. A periodic or parameterized parent's is its children by status (only where it
 * has a summary, as Nomad); any other job's is its allocations by client status per task group, counting only the
 * allocations of the job as registered now (created at or after its CreateIndex: a purged job's namesake's are not
 * its own), with nothing queued. Nomad rewrites every summary in one Raft entry; here a write holds at most
 * `perWrite` summaries, each write its own index, and a summary that is already right is not rewritten.
 */
import { sameContent } from '../../acl/common.ts';
import type { SchedulerState } from '../../state.ts';
import type { Allocations } from '../allocations/store.ts';
import { isParameterized, type Job } from '../jobs/model.ts';
import type { Jobs } from '../jobs/store.ts';
import { countedSummary, type JobSummary } from '../jobs/summary.ts';
import type { Namespaces } from '../namespaces/store.ts';

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null;

/** Reconciles every summary; answers the index of the last write (the summaries' table index when none changed). */
export async function reconcileJobSummaries(
  state: SchedulerState,
  namespaces: Namespaces,
  jobs: Jobs,
  allocations: Allocations,
  perWrite = 80,
): Promise<number> {
  const all: Job[] = [];
  for (const namespace of await namespaces.list()) all.push(...(await jobs.list(namespace.Name)));
  const childrenOf = new Map<string, Job[]>();
  for (const job of all) {
    if (!job.ParentID) continue;
    const key = `${job.Namespace}\u0000${String(job.ParentID)}`;
    childrenOf.set(key, [...(childrenOf.get(key) ?? []), job]);
  }
  const changed: JobSummary[] = [];
  for (const job of all) {
    const stored = await jobs.summaries.get(job.Namespace, job.ID);
    let summary: JobSummary;
    if (isObject(job.Periodic) || isParameterized(job)) {
      if (!stored) continue;
      const children = { Pending: 0, Running: 0, Dead: 0 };
      for (const child of childrenOf.get(`${job.Namespace}\u0000${job.ID}`) ?? []) {
        if (child.Status === 'pending') children.Pending++;
        else if (child.Status === 'running') children.Running++;
        else if (child.Status === 'dead') children.Dead++;
      }
      summary = { ...stored, Summary: {}, Children: children };
    } else {
      const allocs = (await allocations.ofJob(job.Namespace, job.ID)).filter(
        (alloc) => alloc.CreateIndex >= job.CreateIndex,
      );
      summary = countedSummary(job, allocs);
    }
    summary.CreateIndex = job.CreateIndex;
    const { ModifyIndex: _before, ...was } = stored ?? ({} as Partial<JobSummary>);
    const { ModifyIndex: _after, ...now } = summary;
    if (stored && sameContent(was, now)) continue;
    changed.push(summary);
  }
  let last = 0;
  for (let start = 0; start < changed.length; start += perWrite) {
    const batch = changed.slice(start, start + perWrite);
    last = await state.commit((index) => ({
      items: batch.map((summary) => jobs.summaries.replaced({ ...summary, ModifyIndex: index })),
      tables: ['job_summary'],
    }));
  }
  return last || (await state.tableIndex(['job_summary']));
}
