/** Deployments for the reconciler's tests: the job `web`'s, one task group `web` of count 3. */
import type {
  ClusterDeployment,
  DeploymentState,
} from '../../../packages/core/src/scheduler/cluster/deployments/model.ts';

const minute = 60e9;

export function groupState(overrides: Partial<DeploymentState> = {}): DeploymentState {
  return {
    AutoRevert: false,
    AutoPromote: false,
    ProgressDeadline: 10 * minute,
    RequireProgressBy: '0001-01-01T00:00:00Z',
    Promoted: false,
    PlacedCanaries: null,
    DesiredCanaries: 0,
    DesiredTotal: 3,
    PlacedAllocs: 0,
    HealthyAllocs: 0,
    UnhealthyAllocs: 0,
    ...overrides,
  };
}

export function deployment(
  version: number,
  overrides: Partial<ClusterDeployment> = {},
  state = groupState(),
): ClusterDeployment {
  return {
    ID: `deploy-v${version}`,
    Namespace: 'default',
    JobID: 'web',
    JobVersion: version,
    JobModifyIndex: 0,
    JobSpecModifyIndex: 0,
    JobCreateIndex: 0,
    IsMultiregion: false,
    TaskGroups: { web: state },
    Status: 'running',
    StatusDescription: 'Deployment is running',
    EvalPriority: 50,
    CreateIndex: 5,
    ModifyIndex: 5,
    CreateTime: 0,
    ModifyTime: 0,
    ...overrides,
  };
}

/** An allocation's deployment status: health as the client reported it (null: not yet), a canary or not. */
export const health = (Healthy: boolean | null, Canary = false) => ({ Healthy, Timestamp: '', Canary, ModifyIndex: 0 });
