/**
 * Jobs, nodes and allocations for the reconciler's tests: jobs go through the real canonicaliser and validator
 * (`cluster/jobs/model.ts`), so their defaults (update block, reschedule policy) are the service's own.
 */
import type { Allocation } from '../../../packages/core/src/scheduler/cluster/allocations/model.ts';
import { canonicalJob, type Job, validateJob } from '../../../packages/core/src/scheduler/cluster/jobs/model.ts';
import type { ClusterNode } from '../../../packages/core/src/scheduler/cluster/nodes/model.ts';
import { reconcile } from '../../../packages/core/src/scheduler/placement/reconcile.ts';
import type { ReconcileInput, Reconciliation } from '../../../packages/core/src/scheduler/placement/types.ts';

export const second = 1000;
/** A fixed clock: 2026-11-29T05:00:00Z. */
export const now = Date.parse('2026-11-29T05:00:00Z');
export const ns = (ms: number): number => ms * 1e6;

type Loose = Record<string, unknown>;

export function makeJob(spec: Loose & { TaskGroups?: Loose[] } = {}, version = 0): Job {
  const sent: Loose = {
    ID: 'web',
    TaskGroups: [
      {
        Name: 'web',
        Count: 3,
        Tasks: [{ Name: 'server', Driver: 'raw_exec', Config: { command: 'python3', args: ['-m', 'http.server'] } }],
      },
    ],
    ...spec,
  };
  const job = validateJob(canonicalJob(sent, 'default', 'global'));
  job.NodePool = job.NodePool || 'default';
  job.Version = version;
  return job;
}

/** The job with `change` applied to its first group's first task (a new version). */
export function changeTask(job: Job, change: Loose, version = job.Version + 1): Job {
  const next = structuredClone(job);
  const task = next.TaskGroups[0]?.Tasks[0] as Loose;
  Object.assign(task, change);
  next.Version = version;
  return next;
}

export function makeNode(id: string, overrides: Partial<ClusterNode> = {}): ClusterNode {
  return {
    ID: id,
    SecretID: '',
    Datacenter: 'dc1',
    Name: `node-${id}`,
    HTTPAddr: '127.0.0.1:4646',
    TLSEnabled: false,
    Attributes: {},
    NodeResources: null,
    ReservedResources: null,
    Resources: null,
    Reserved: null,
    Links: null,
    Meta: null,
    NodeClass: '',
    NodePool: 'default',
    CgroupParent: '',
    ComputedClass: '',
    DrainStrategy: null,
    SchedulingEligibility: 'eligible',
    Status: 'ready',
    StatusDescription: '',
    StatusUpdatedAt: 0,
    Events: [],
    Drivers: null,
    CSIControllerPlugins: null,
    CSINodePlugins: null,
    HostVolumes: null,
    HostNetworks: null,
    LastDrain: null,
    LastMissedHeartbeatIndex: 0,
    LastAllocUpdateIndex: 0,
    CreateIndex: 1,
    ModifyIndex: 1,
    ...overrides,
  };
}

/** Allocation `<job>.<group>[index]` of `job` on `nodeId`, running unless `overrides` say otherwise. */
export function makeAlloc(job: Job, index: number, nodeId: string, overrides: Partial<Allocation> = {}): Allocation {
  const group = overrides.TaskGroup ?? job.TaskGroups[0]?.Name ?? 'web';
  return {
    ID: `alloc-${group}-${index}`,
    Namespace: job.Namespace,
    EvalID: 'eval-0',
    Name: `${job.ID}.${group}[${index}]`,
    NodeID: nodeId,
    NodeName: `node-${nodeId}`,
    JobID: job.ID,
    JobVersion: job.Version,
    Job: null,
    TaskGroup: group,
    AllocatedResources: { Tasks: {}, TaskLifecycles: {}, Shared: { DiskMB: 300, Networks: null, Ports: null } },
    Metrics: null,
    DesiredStatus: 'run',
    DesiredDescription: '',
    DesiredTransition: { Migrate: null, Reschedule: null, ForceReschedule: null, NoShutdownDelay: null },
    ClientStatus: 'running',
    ClientDescription: '',
    TaskStates: null,
    DeploymentID: '',
    DeploymentStatus: null,
    PreviousAllocation: '',
    NextAllocation: '',
    RescheduleTracker: null,
    FollowupEvalID: '',
    CreateIndex: 10 + index,
    ModifyIndex: 10 + index,
    AllocModifyIndex: 10 + index,
    CreateTime: ns(now - 3600 * second),
    ModifyTime: ns(now - 3600 * second),
    ...overrides,
  };
}

/** A task that finished at `finishedMs`, failed or not. */
export const finished = (finishedMs: number, failed: boolean) => ({
  server: {
    State: 'dead' as const,
    Failed: failed,
    Restarts: 0,
    LastRestart: null,
    StartedAt: new Date(finishedMs - 60 * second).toISOString(),
    FinishedAt: new Date(finishedMs).toISOString(),
    Events: null,
  },
});

export function run(input: Partial<ReconcileInput> & Pick<ReconcileInput, 'allocs'>): Reconciliation {
  return reconcile({
    jobId: input.job?.ID ?? 'web',
    job: undefined,
    jobVersions: [],
    nodes: [],
    evaluation: { ID: 'eval-1', TriggeredBy: 'job-register' },
    now,
    ...input,
  });
}

/** The decisions in a form a test compares exactly: names, previous allocations, descriptions. */
export function summary(result: Reconciliation) {
  return {
    place: result.place.map((request) => ({
      name: request.name,
      ...(request.previousAlloc ? { previous: request.previousAlloc.ID } : {}),
      ...(request.replacing ? { replacing: request.replacing } : {}),
      ...(request.nodeId ? { nodeId: request.nodeId } : {}),
    })),
    stop: result.stop.map((stop) => ({
      id: stop.alloc.ID,
      description: stop.description,
      ...(stop.clientStatus ? { clientStatus: stop.clientStatus } : {}),
    })),
    inplace: result.inplace.map((alloc) => `${alloc.ID}@${alloc.JobVersion}`),
  };
}

/** A DesiredUpdates with the given counts, every other field 0. */
export const counts = (set: Partial<Record<string, number>>) => ({
  Ignore: 0,
  Place: 0,
  Migrate: 0,
  Stop: 0,
  InPlaceUpdate: 0,
  DestructiveUpdate: 0,
  Canary: 0,
  Preemptions: 0,
  Reconnect: 0,
  Disconnect: 0,
  RescheduleNow: 0,
  RescheduleLater: 0,
  ...set,
});
