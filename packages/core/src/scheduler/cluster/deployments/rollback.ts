/**
 * Auto-revert (Nomad's deployment watcher: latestStableJob, handleRollbackValidity and the
 * DeploymentStatusDescriptionRollback* texts, `nomad/deploymentwatcher/deployment_watcher.go`,
 * `nomad/structs/deployment.go`): a failed deployment of a group with `auto_revert` registers the job's latest stable
 * version again, unless its spec is the current one's.
 */
import type { Write } from '../../../storage/store.ts';
import { rfc3339, sameContent } from '../../acl/common.ts';
import type { PendingEvent } from '../../state.ts';
import { type Job, specOf } from '../jobs/model.ts';
import type { Jobs } from '../jobs/store.ts';
import type { ClusterDeployment, DeploymentStatus } from './model.ts';

export const rollbackDescription = (base: string, version: number) =>
  `${base} - rolling back to job version ${version}`;
export const rollbackNoopDescription = (base: string, version: number) =>
  `${base} - not rolling back to stable job version ${version} as current job has same specification`;
export const noRollbackTargetDescription = (base: string) => `${base} - no stable job version to auto revert to`;

/** Whether any group of the deployment reverts on failure. */
export const anyAutoRevert = (deployment: ClusterDeployment): boolean =>
  Object.values(deployment.TaskGroups).some((group) => group.AutoRevert);

/** Nomad's latestStableJob: the newest kept version marked stable. */
export async function latestStableJob(jobs: Jobs, namespace: string, jobId: string): Promise<Job | undefined> {
  return (await jobs.versions(namespace, jobId)).find((version) => version.Stable);
}

/**
 * Nomad's rollback decision: the stable version to register again (none when there is none, or when its spec is the
 * current job's) and the description. `noTargetSuffix`: say so when there is no stable version (the watcher and the
 * fail route do; an allocation-health request does not).
 */
export async function rollback(
  jobs: Jobs,
  current: Job | undefined,
  base: string,
  noTargetSuffix: boolean,
): Promise<{ target: Job | undefined; description: string }> {
  if (!current) return { target: undefined, description: base };
  const stable = await latestStableJob(jobs, current.Namespace, current.ID);
  if (!stable) return { target: undefined, description: noTargetSuffix ? noRollbackTargetDescription(base) : base };
  if (sameContent(specOf(stable), specOf(current)))
    return { target: undefined, description: rollbackNoopDescription(base, stable.Version) };
  return { target: stable, description: rollbackDescription(base, stable.Version) };
}

/**
 * Nomad's updateDeploymentStatusImpl on a copy: the status and description set, and a running or paused deployment's
 * progress deadlines restarted from now.
 */
export function withStatus(
  deployment: ClusterDeployment,
  status: DeploymentStatus,
  description: string,
  index: number,
  nowNs: number,
): ClusterDeployment {
  const restart = status === 'running' || status === 'paused';
  return {
    ...deployment,
    Status: status,
    StatusDescription: description,
    ModifyIndex: index,
    ModifyTime: nowNs,
    TaskGroups: Object.fromEntries(
      Object.entries(deployment.TaskGroups).map(([name, group]) => [
        name,
        restart && group.ProgressDeadline !== 0
          ? { ...group, RequireProgressBy: rfc3339(nowNs / 1e6 + group.ProgressDeadline / 1e6) }
          : group,
      ]),
    ),
  };
}

/**
 * A deployment failed with `base` as the reason: reverted to the latest stable job when `revert` (the job's writes and
 * its Job-topic event of the write's `type`), its description saying so.
 */
export async function failure(
  jobs: Jobs,
  job: Job | undefined,
  deployment: ClusterDeployment,
  base: string,
  revert: boolean,
  noTargetSuffix: boolean,
  index: number,
  nowNs: number,
  type: string,
): Promise<{ deployment: ClusterDeployment; reverted?: { job: Job; items: Write[]; event: PendingEvent } }> {
  const decided = revert ? await rollback(jobs, job, base, noTargetSuffix) : { target: undefined, description: base };
  const failed = withStatus(deployment, 'failed', decided.description, index, nowNs);
  if (!decided.target || !job) return { deployment: failed };
  return { deployment: failed, reverted: jobs.revertWrites(job, decided.target, index, type) };
}
