/**
 * A deployment (Nomad's `structs.Deployment`, `nomad/structs/deployment.go`): how a job moves from one version to the
 * next, per task group — canaries placed and promoted, allocations placed and healthy. The reconciler creates one
 * when a job's spec changes under an update block and reads the job's latest to limit and stage its placements. Times
 * are nanoseconds since the epoch and durations nanoseconds, as in Nomad's JSON.
 */
import type { Job } from '../jobs/model.ts';

export const deploymentStatuses = [
  'running',
  'paused',
  'failed',
  'successful',
  'cancelled',
  'initializing',
  'pending',
  'blocked',
  'unblocking',
] as const;
export type DeploymentStatus = (typeof deploymentStatuses)[number];

/** Nomad's DeploymentStatusDescription* texts. */
export const deploymentDescriptions = {
  running: 'Deployment is running',
  runningNeedsPromotion: 'Deployment is running but requires manual promotion',
  runningAutoPromotion: 'Deployment is running pending automatic promotion',
  paused: 'Deployment is paused',
  successful: 'Deployment completed successfully',
  stoppedJob: 'Cancelled because job is stopped',
  newerJob: 'Cancelled due to newer version of job',
  failedAllocations: 'Failed due to unhealthy allocations',
  progressDeadline: 'Failed due to progress deadline',
  failedByUser: 'Deployment marked as failed',
  pendingForPeer: 'Deployment is pending, waiting for peer region',
} as const;

/** Nomad's `DeploymentState`: one task group's part of a deployment. */
export interface DeploymentState {
  AutoRevert: boolean;
  AutoPromote: boolean;
  /** Nanoseconds. */
  ProgressDeadline: number;
  /** RFC 3339; Go's zero time until an allocation of the group is placed. */
  RequireProgressBy: string;
  Promoted: boolean;
  PlacedCanaries: string[] | null;
  DesiredCanaries: number;
  DesiredTotal: number;
  PlacedAllocs: number;
  HealthyAllocs: number;
  UnhealthyAllocs: number;
}

export interface ClusterDeployment {
  ID: string;
  Namespace: string;
  JobID: string;
  JobVersion: number;
  JobModifyIndex: number;
  JobSpecModifyIndex: number;
  JobCreateIndex: number;
  IsMultiregion: boolean;
  TaskGroups: Record<string, DeploymentState>;
  Status: DeploymentStatus;
  StatusDescription: string;
  EvalPriority: number;
  CreateIndex: number;
  ModifyIndex: number;
  CreateTime: number;
  ModifyTime: number;
}

/** Nomad's `DeploymentStatusUpdate`: a status change of an existing deployment. */
export interface DeploymentStatusUpdate {
  DeploymentID: string;
  Status: DeploymentStatus;
  StatusDescription: string;
}

/** Nomad's NewDeployment: running, for the job's current version, created at `nowMs`. */
export function newDeployment(job: Job, id: string, evalPriority: number, nowMs: number): ClusterDeployment {
  return {
    ID: id,
    Namespace: job.Namespace,
    JobID: job.ID,
    JobVersion: job.Version,
    JobModifyIndex: job.ModifyIndex,
    JobSpecModifyIndex: job.JobModifyIndex,
    JobCreateIndex: job.CreateIndex,
    IsMultiregion: false,
    TaskGroups: {},
    Status: 'running',
    StatusDescription: deploymentDescriptions.running,
    EvalPriority: evalPriority,
    CreateIndex: 0,
    ModifyIndex: 0,
    CreateTime: nowMs * 1e6,
    ModifyTime: 0,
  };
}

/** Nomad's Deployment.Active: not yet terminal. */
export const isActive = (deployment: Pick<ClusterDeployment, 'Status'>): boolean =>
  ['running', 'paused', 'blocked', 'unblocking', 'initializing', 'pending'].includes(deployment.Status);

/** Nomad's RequiresPromotion: running, and a group with canaries not yet promoted. */
export const requiresPromotion = (deployment: ClusterDeployment): boolean =>
  deployment.Status === 'running' &&
  Object.values(deployment.TaskGroups).some((group) => group.DesiredCanaries > 0 && !group.Promoted);

/** Nomad's HasAutoPromote: running, and every group with canaries promotes them itself. */
export const hasAutoPromote = (deployment: ClusterDeployment): boolean =>
  deployment.Status === 'running' &&
  Object.keys(deployment.TaskGroups).length > 0 &&
  Object.values(deployment.TaskGroups).every((group) => group.DesiredCanaries === 0 || group.AutoPromote);
