/**
 * A job's dry run (Nomad's `Job.Plan`, `nomad/job_endpoint.go`): the submitted job put in place of the stored one in
 * a snapshot the evaluation worker would read (`decide.ts`), the same reconciler and placement run on an
 * evaluation that is never stored, and what they decided reported — per task group what would be placed, stopped
 * and updated (`Annotations.DesiredTGUpdates`), what could not be placed (`FailedTGAllocs`, Nomad's metrics), the
 * evaluations the run would create (a blocked one, follow-ups), and on request the job's diff (`cluster/jobs/diff.ts`)
 * annotated with those decisions. Nothing is written.
 */
import { Cron } from 'croner';
import { badRequest } from '../../lib/errors.ts';
import { sameContent } from '../acl/common.ts';
import { type Evaluation, pendingEvaluation } from '../cluster/evaluations/model.ts';
import { annotateDiff, type JobDiff, jobDiff } from '../cluster/jobs/diff.ts';
import { type Job, specOf } from '../cluster/jobs/model.ts';
import type { Namespaces } from '../cluster/namespaces/store.ts';
import type { NodePools } from '../cluster/node-pools/store.ts';
import { placementReady } from '../placement/place.ts';
import type { DesiredUpdates } from '../placement/types.ts';
import { decideReading, readSnapshot } from './decide.ts';
import type { WorkerParts } from './outcome.ts';
import { allocationStub } from '../cluster/allocations/stub.ts';
import type { StoredAllocation } from '../cluster/allocations/store.ts';

export interface PlanParts extends WorkerParts {
  namespaces: Namespaces;
  nodePools: NodePools;
}

export interface JobPlanResponse {
  Annotations: { DesiredTGUpdates: Record<string, DesiredUpdates>; PreemptedAllocs: Record<string, unknown>[] | null };
  FailedTGAllocs: Record<string, unknown> | null;
  JobModifyIndex: number;
  CreatedEvals: Evaluation[] | null;
  Diff: JobDiff | null;
  NextPeriodicLaunch: string;
  Warnings: string;
  Index: number;
}

/** Go's zero time, as Nomad answers NextPeriodicLaunch for a job that is not periodic. */
const zeroTime = '0001-01-01T00:00:00Z';

/** Plans a validated, canonical job (`cluster/jobs/model.ts`) without writing anything. */
export async function planJob(parts: PlanParts, submitted: Job, withDiff: boolean): Promise<JobPlanResponse> {
  const namespace = await parts.namespaces.get(submitted.Namespace);
  if (!namespace)
    throw badRequest(
      `job ${JSON.stringify(submitted.ID)} is in nonexistent namespace ${JSON.stringify(submitted.Namespace)}`,
    );
  const job: Job = structuredClone(submitted);
  if (job.NodePool === '') job.NodePool = namespace.NodePoolConfiguration?.Default || 'default';
  if (!(await parts.nodePools.get(job.NodePool)))
    throw badRequest(`job ${JSON.stringify(job.ID)} is in nonexistent node pool ${JSON.stringify(job.NodePool)}`);
  const existing = await parts.jobs.get(job.Namespace, job.ID);
  const index = existing?.JobModifyIndex ?? 0;
  const changed = !existing || !sameContent(specOf(job), specOf(existing));
  // As Nomad's plan: the job put in the snapshot at the next job modify index when its spec changed (a new job at 100).
  const updatedIndex = changed ? (existing ? existing.JobModifyIndex + 1 : 100) : 0;
  const now = parts.state.clock.now();
  const planned: Job =
    existing && !changed
      ? existing
      : {
          ...job,
          Status: 'pending',
          StatusDescription: '',
          Stable: false,
          Version: existing ? existing.Version + 1 : 0,
          SubmitTime: now * 1e6,
          CreateIndex: existing?.CreateIndex ?? updatedIndex,
          ModifyIndex: updatedIndex,
          JobModifyIndex: updatedIndex,
        };
  const currentIndex = await parts.state.currentIndex();
  const evaluation: Evaluation = {
    ...pendingEvaluation(
      {
        Namespace: job.Namespace,
        Priority: job.Priority,
        Type: job.Type,
        TriggeredBy: 'job-register',
        JobID: job.ID,
        JobModifyIndex: updatedIndex,
      },
      currentIndex,
      now,
    ),
    AnnotatePlan: true,
  };
  const snapshot = await readSnapshot(parts, job.Namespace, job.ID, planned);
  await placementReady(job);
  const { reconciliation, placed, queued } = await decideReading(parts.jobs, evaluation, snapshot, now, evaluation.ID);
  const failed = Object.keys(placed.failed).length > 0 ? placed.failed : null;
  const created: Evaluation[] = [];
  for (const followup of reconciliation.followups ?? [])
    created.push({
      ...pendingEvaluation({ ...evaluation, TriggeredBy: followup.triggeredBy }, currentIndex, now),
      StatusDescription: followup.statusDescription,
      PreviousEval: evaluation.ID,
      WaitUntil: new Date(followup.at).toISOString(),
    });
  if (failed)
    created.push({
      ...pendingEvaluation(evaluation, currentIndex, now),
      Status: 'blocked',
      StatusDescription: 'created to place remaining allocations',
      PreviousEval: evaluation.ID,
      QueuedAllocations: queued,
      SnapshotIndex: currentIndex,
    });
  const desired = reconciliation.desiredTGUpdates;
  // Nomad's handlePreemptions: the allocations the placements would evict, counted per group as Preemptions.
  const preempted: Record<string, unknown>[] = [];
  for (const placement of placed.placements)
    for (const evicted of placement.preempted ?? []) {
      preempted.push(allocationStub(evicted as StoredAllocation));
      const counts = desired[placement.request.group];
      if (counts) counts.Preemptions += 1;
    }
  return {
    Annotations: { DesiredTGUpdates: desired, PreemptedAllocs: preempted.length > 0 ? preempted : null },
    FailedTGAllocs: failed,
    JobModifyIndex: index,
    CreatedEvals: created.length > 0 ? created : null,
    Diff: withDiff
      ? annotateDiff(jobDiff(existing, job), desired as unknown as Record<string, Record<string, number>>)
      : null,
    NextPeriodicLaunch: nextLaunch(job, now),
    Warnings: '',
    Index: index,
  };
}

/** When a periodic job would next launch (Go's zero time for one that is not periodic or not enabled). */
export function nextLaunch(job: Job, now: number): string {
  const periodic = job.Periodic;
  if (!periodic || periodic.Enabled === false || job.Stop || job.ParameterizedJob) return zeroTime;
  const specs = Array.isArray(periodic.Specs) && periodic.Specs.length > 0 ? periodic.Specs : [periodic.Spec];
  const times = specs
    .filter((spec): spec is string => typeof spec === 'string' && spec !== '')
    .map((spec) => {
      try {
        const timezone = typeof periodic.TimeZone === 'string' && periodic.TimeZone !== '' ? periodic.TimeZone : 'UTC';
        return new Cron(spec, { timezone, paused: true }).nextRun(new Date(now))?.getTime();
      } catch {
        return undefined;
      }
    })
    .filter((time): time is number => time !== undefined);
  if (times.length === 0) return zeroTime;
  return new Date(Math.min(...times)).toISOString().replace('.000Z', 'Z');
}
