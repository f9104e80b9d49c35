/**
 * How an allocation's deployment health counts in its deployment (Nomad's `updateDeploymentWithAlloc`,
 * `nomad/state/state_store.go`): a first health verdict adds to the group's `HealthyAllocs` or `UnhealthyAllocs`, a
 * healthy allocation that turns unhealthy moves from one to the other, and a healthy one pushes the group's progress
 * deadline (`RequireProgressBy`) to its verdict's time plus the deadline. Pure: the caller writes the result in the
 * transaction that changes the allocation.
 */
import { rfc3339 } from '../../acl/common.ts';
import type { Allocation } from '../allocations/model.ts';
import { zeroTime } from '../nodes/model.ts';
import type { ClusterDeployment, DeploymentState } from './model.ts';

/** Nomad's AllocDeploymentStatus.HasHealth. */
export const hasHealth = (alloc: Pick<Allocation, 'DeploymentStatus'>): boolean =>
  typeof alloc.DeploymentStatus?.Healthy === 'boolean';
/** Nomad's IsHealthy / IsUnhealthy. */
export const isHealthy = (alloc: Pick<Allocation, 'DeploymentStatus'>): boolean =>
  alloc.DeploymentStatus?.Healthy === true;
export const isUnhealthy = (alloc: Pick<Allocation, 'DeploymentStatus'>): boolean =>
  alloc.DeploymentStatus?.Healthy === false;

/** A time in RFC 3339 as milliseconds, Go's zero time (or nothing) as undefined. */
export function timeMs(value: string | undefined | null): number | undefined {
  if (!value || value === zeroTime || value.startsWith('0001-01-01')) return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : ms;
}

/**
 * The deployment after `after` replaced `before` (the same allocation, already in the deployment), or undefined when
 * its counts do not change. `nowNs` is the write's time.
 */
export function withAllocHealth(
  deployment: ClusterDeployment,
  before: Allocation,
  after: Allocation,
  index: number,
  nowNs: number,
): ClusterDeployment | undefined {
  if (!after.DeploymentID || after.DeploymentID !== deployment.ID || before.DeploymentID !== after.DeploymentID)
    return undefined;
  const group = deployment.TaskGroups[after.TaskGroup];
  if (!group) return undefined;
  let healthy = 0;
  let unhealthy = 0;
  if (!hasHealth(before) && hasHealth(after)) {
    if (isHealthy(after)) healthy++;
    else unhealthy++;
  } else if (isHealthy(before) && isUnhealthy(after)) {
    healthy--;
    unhealthy++;
  }
  if (healthy === 0 && unhealthy === 0) return undefined;
  const state: DeploymentState = {
    ...group,
    HealthyAllocs: group.HealthyAllocs + healthy,
    UnhealthyAllocs: group.UnhealthyAllocs + unhealthy,
  };
  if (group.ProgressDeadline !== 0 && healthy > 0) {
    const verdict = timeMs(after.DeploymentStatus?.Timestamp) ?? nowNs / 1e6;
    const by = verdict + group.ProgressDeadline / 1e6;
    if (by > (timeMs(group.RequireProgressBy) ?? 0)) state.RequireProgressBy = rfc3339(by);
  }
  return {
    ...deployment,
    TaskGroups: { ...deployment.TaskGroups, [after.TaskGroup]: state },
    ModifyIndex: index,
    ModifyTime: nowNs,
  };
}

/** A group's state once an allocation is placed in it: the progress deadline starts with its first placement. */
export function withPlacement(group: DeploymentState, nowNs: number): DeploymentState {
  if (group.ProgressDeadline === 0 || timeMs(group.RequireProgressBy) !== undefined) return group;
  return { ...group, RequireProgressBy: rfc3339(nowNs / 1e6 + group.ProgressDeadline / 1e6) };
}
