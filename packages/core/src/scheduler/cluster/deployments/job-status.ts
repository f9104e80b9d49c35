/**
 * The job's status in the write that changes its deployment and creates an evaluation (a deployment failed by the
 * watcher or the fail route, resumed, promoted, or given a `deployment-watcher` evaluation): Nomad's state store sets
 * it there, in `UpdateDeploymentStatus`, `UpdateDeploymentPromotion` and `UpdateDeploymentAllocHealth`, whose
 * evaluation's `nestedUpsertEval` runs `setJobStatuses` after the deployment's change. So a job whose deployment ends
 * with no allocation left running leaves `running` in that write (`pending` while the new evaluation waits), not
 * only when the evaluation runs. A write that registers the job again (auto-revert) sets it with the job.
 */
import type { Write } from '../../../storage/store.ts';
import type { PendingEvent, TableName } from '../../state.ts';
import { type Allocation, isTerminal } from '../allocations/model.ts';
import type { Evaluation } from '../evaluations/model.ts';
import type { Evaluations } from '../evaluations/store.ts';
import { derivedJobStatus, type Job } from '../jobs/model.ts';
import type { Jobs } from '../jobs/store.ts';
import { type ClusterDeployment, isActive } from './model.ts';

export interface JobStatusReaders {
  jobs: Jobs;
  evaluations: Evaluations;
  /** The job's deployments as stored (before this write). */
  deploymentsOf: (namespace: string, jobId: string) => Promise<ClusterDeployment[]>;
  allocationsOf: (namespace: string, jobId: string) => Promise<Allocation[]>;
}

/** The writes and event setting the job's status after `after` and `created`, when that changes it. */
export async function jobStatusWithDeployment(
  readers: JobStatusReaders,
  job: Job | undefined,
  after: ClusterDeployment,
  created: Evaluation | undefined,
  index: number,
  type: string,
): Promise<{ items: Write[]; events: PendingEvent[]; tables: TableName[] }> {
  const none = { items: [], events: [], tables: [] };
  if (!job) return none;
  const deployments = (await readers.deploymentsOf(job.Namespace, job.ID)).map((deployment) =>
    deployment.ID === after.ID ? after : deployment,
  );
  const status = derivedJobStatus(job, {
    activeDeployment: deployments.some(isActive),
    liveAllocation: (await readers.allocationsOf(job.Namespace, job.ID)).some((alloc) => !isTerminal(alloc)),
    evaluationStatuses: [
      ...(await readers.evaluations.ofJob(job.Namespace, job.ID)).map((evaluation) => evaluation.Status),
      ...(created ? [created.Status] : []),
    ],
  });
  if (status === job.Status) return none;
  const { writes, event } = await readers.jobs.statusWrites(job, status, index, type);
  return {
    items: writes,
    events: [event],
    tables: (job.ParentID ?? '') !== '' ? ['jobs', 'job_summary'] : ['jobs'],
  };
}
