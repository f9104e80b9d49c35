/**
 * The reconciler's side of deployments (Nomad's `reconcile_cluster.go`: cancelUnneededServiceDeployments,
 * initializeDeploymentState, computeUnderProvisionedBy, createDeployment, isDeploymentComplete,
 * setDeploymentStatusAndUpdates): which deployment is current, how many allocations a rolling update may replace
 * now, when an evaluation creates a deployment and when one is complete. The job's latest deployment is read, never
 * written: a new one and status changes are answered for the caller to store.
 */
import type { Allocation } from '../cluster/allocations/model.ts';
import {
  type ClusterDeployment,
  type DeploymentState,
  type DeploymentStatusUpdate,
  deploymentDescriptions,
  hasAutoPromote,
  isActive,
  newDeployment,
  requiresPromotion,
} from '../cluster/deployments/model.ts';
import type { Job, TaskGroup } from '../cluster/jobs/model.ts';
import { zeroTime } from '../cluster/nodes/model.ts';

/** The deployments an evaluation works with; `current` may be created while the groups are reconciled. */
export interface DeploymentContext {
  /** A deployment cancelled or finished whose unpromoted canaries stop. */
  old: ClusterDeployment | undefined;
  current: ClusterDeployment | undefined;
  /** The deployment this evaluation creates, if any (also `current` once created). */
  created: ClusterDeployment | undefined;
  paused: boolean;
  failed: boolean;
  updates: DeploymentStatusUpdate[];
  newId: string;
  evalPriority: number;
}

/** Nomad's cancelUnneededServiceDeployments and the paused/failed flags. */
export function deploymentContext(
  job: Job | undefined,
  latest: ClusterDeployment | undefined,
  newId: string,
  evalPriority: number,
): DeploymentContext {
  // The reconciler fills in a group's state (its desired canaries): work on a copy.
  const latestCopy = latest ? structuredClone(latest) : undefined;
  const context: DeploymentContext = {
    old: undefined,
    current: undefined,
    created: undefined,
    paused: false,
    failed: false,
    updates: [],
    newId,
    evalPriority,
  };
  if (!job || job.Stop) {
    if (latestCopy && isActive(latestCopy))
      context.updates.push({
        DeploymentID: latestCopy.ID,
        Status: 'cancelled',
        StatusDescription: deploymentDescriptions.stoppedJob,
      });
    context.old = latestCopy;
    return context;
  }
  if (!latestCopy) return context;
  if (latestCopy.JobCreateIndex !== job.CreateIndex || latestCopy.JobVersion !== job.Version) {
    if (isActive(latestCopy))
      context.updates.push({
        DeploymentID: latestCopy.ID,
        Status: 'cancelled',
        StatusDescription: deploymentDescriptions.newerJob,
      });
    context.old = latestCopy;
    return context;
  }
  if (latestCopy.Status === 'successful') {
    context.old = latestCopy;
    return context;
  }
  context.current = latestCopy;
  context.paused = ['paused', 'pending', 'initializing'].includes(latestCopy.Status);
  context.failed = latestCopy.Status === 'failed';
  return context;
}

/**
 * Nomad's UpdateStrategy.IsEmpty: no update block, or one whose `MaxParallel` is 0. The other fields are filled with
 * defaults when the job is canonicalised, so `max_parallel = 0` alone says "no rolling update, no deployment".
 */
export function updateEmpty(update: unknown): boolean {
  if (typeof update !== 'object' || update === null) return true;
  const maxParallel = (update as Record<string, unknown>).MaxParallel;
  return typeof maxParallel !== 'number' || maxParallel === 0;
}

export interface UpdateBlock {
  MaxParallel: number;
  Canary: number;
  AutoRevert: boolean;
  AutoPromote: boolean;
  ProgressDeadline: number;
}

export function updateBlock(group: TaskGroup): UpdateBlock | undefined {
  const update = group.Update;
  if (typeof update !== 'object' || update === null) return undefined;
  const loose = update as Record<string, unknown>;
  const num = (key: string) => (typeof loose[key] === 'number' ? (loose[key] as number) : 0);
  return {
    MaxParallel: num('MaxParallel'),
    Canary: num('Canary'),
    AutoRevert: loose.AutoRevert === true,
    AutoPromote: loose.AutoPromote === true,
    ProgressDeadline: num('ProgressDeadline'),
  };
}

/** The group's state in the current deployment, or a new one (Nomad's initializeDeploymentState). */
export function groupState(
  deployments: DeploymentContext,
  group: TaskGroup,
): { state: DeploymentState; existing: boolean } {
  const held = deployments.current?.TaskGroups[group.Name];
  if (held) return { state: held, existing: true };
  const update = updateBlock(group);
  const filled = update && !updateEmpty(group.Update);
  return {
    state: {
      AutoRevert: filled ? update.AutoRevert : false,
      AutoPromote: filled ? update.AutoPromote : false,
      ProgressDeadline: filled ? update.ProgressDeadline : 0,
      RequireProgressBy: zeroTime,
      Promoted: false,
      PlacedCanaries: null,
      DesiredCanaries: 0,
      DesiredTotal: 0,
      PlacedAllocs: 0,
      HealthyAllocs: 0,
      UnhealthyAllocs: 0,
    },
    existing: false,
  };
}

/** How many allocations the group may still place or replace now (Nomad's computeUnderProvisionedBy). */
export function underProvisionedBy(
  group: TaskGroup,
  deployments: DeploymentContext,
  untainted: Allocation[],
  changing: number,
  isCanarying: boolean,
): number {
  if (updateEmpty(group.Update) || changing === 0) return group.Count;
  const maxParallel = updateBlock(group)?.MaxParallel ?? 0;
  const current = deployments.current;
  if (!current) return maxParallel;
  if (deployments.paused || deployments.failed || isCanarying) return 0;
  let left = maxParallel;
  for (const alloc of untainted) {
    if (alloc.DeploymentID !== current.ID) continue;
    // An unhealthy allocation stops the rollout; one whose health is not known yet takes a slot.
    if (alloc.DeploymentStatus?.Healthy === false) return 0;
    if (alloc.DeploymentStatus?.Healthy !== true) left--;
  }
  return Math.max(0, left);
}

/**
 * Nomad's createDeployment: a group with an update block and something to place or update makes the evaluation's
 * deployment (one per evaluation), unless nothing in the spec changed and the version already ran.
 */
export function attachGroup(
  deployments: DeploymentContext,
  job: Job,
  group: TaskGroup,
  state: DeploymentState,
  existing: boolean,
  all: Allocation[],
  updating: boolean,
  nowMs: number,
): void {
  if (existing || updateEmpty(group.Update) || state.DesiredTotal === 0) return;
  const hadRunning = all.some((alloc) => alloc.JobVersion === job.Version);
  if (hadRunning && !updating) return;
  if (!deployments.current) {
    deployments.current = newDeployment(job, deployments.newId, deployments.evalPriority, nowMs);
    deployments.created = deployments.current;
  }
  deployments.current.TaskGroups[group.Name] = state;
}

/** Nomad's isDeploymentComplete for one group: nothing left to do, and enough healthy (canaries promoted). */
export function groupComplete(deployments: DeploymentContext, group: string, pending: number, needsCanaries: boolean) {
  if (pending > 0 || needsCanaries || !deployments.current) return false;
  const state = deployments.current.TaskGroups[group];
  if (!state) return true;
  return (
    state.HealthyAllocs >= Math.max(state.DesiredTotal, state.DesiredCanaries) &&
    !(state.DesiredCanaries > 0 && !state.Promoted)
  );
}

/** Nomad's setDeploymentStatusAndUpdates: the current deployment succeeds when complete; a new one's description. */
export function finishDeployments(deployments: DeploymentContext, complete: boolean): void {
  const current = deployments.current;
  if (current && current !== deployments.created) {
    if (complete)
      deployments.updates.push({
        DeploymentID: current.ID,
        Status: 'successful',
        StatusDescription: deploymentDescriptions.successful,
      });
    if (current.Status === 'initializing')
      deployments.updates.push({
        DeploymentID: current.ID,
        Status: 'pending',
        StatusDescription: deploymentDescriptions.pendingForPeer,
      });
  }
  const created = deployments.created;
  if (created && requiresPromotion(created))
    created.StatusDescription = hasAutoPromote(created)
      ? deploymentDescriptions.runningAutoPromotion
      : deploymentDescriptions.runningNeedsPromotion;
}
