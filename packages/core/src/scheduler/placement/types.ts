/**
 * The placement contract: what the pure placement function (`place.ts`) and the reconciler (`reconcile.ts`) read
 * and answer. Both are pure: a snapshot in, a decision out, no clock or randomness but what is passed in (a seeded
 * shuffle), so the evaluation worker and `PUT /v1/job/:id/plan` share them and tests are exact.
 */
import type { Allocation, RescheduleTracker } from '../cluster/allocations/model.ts';
import type { ClusterDeployment, DeploymentStatusUpdate } from '../cluster/deployments/model.ts';
import type { AllocatedResources, AllocMetric } from '../cluster/allocations/resources.ts';
import type { Evaluation } from '../cluster/evaluations/model.ts';
import type { Job } from '../cluster/jobs/model.ts';
import type { ClusterNode } from '../cluster/nodes/model.ts';
import type { PlacementSettings } from '../cluster/scheduler-config/model.ts';

export type {
  Port,
  NetworkResource,
  AllocatedPort,
  AllocatedDeviceResource,
  AllocatedTaskResources,
  AllocatedResources,
  NodeScoreMeta,
  AllocMetric,
} from '../cluster/allocations/resources.ts';

/**
 * The state placement reads: the nodes (every status; placement filters) and the allocations that hold resources on
 * them (not terminal: `isTerminal`), of every job.
 */
export interface Snapshot {
  nodes: ClusterNode[];
  allocs: Allocation[];
  /**
   * The priority of the jobs of `allocs`, by `priorityKey` (for preemption); an allocation whose job is not here is
   * never preempted, and its job is named in `PlacementResult.lackedPriorities` when preemption asked for it.
   */
  priorities?: ReadonlyMap<string, number>;
  /** The migrate block's `max_parallel` of those jobs' groups, by `groupKey` (Nomad's preemption penalty). */
  maxParallel?: ReadonlyMap<string, number>;
}

/** The key of a job's task group in `Snapshot.maxParallel`. */
export const groupKey = (namespace: string, jobId: string, group: string): string =>
  `${namespace}\u0000${jobId}\u0000${group}`;

/** The key of a job in `Snapshot.priorities`. */
export const priorityKey = (namespace: string, jobId: string): string => `${namespace}\u0000${jobId}`;

/** One allocation to place. */
export interface PlacementRequest {
  group: string;
  /** The allocation's name, `<job>.<group>[<index>]`. */
  name: string;
  /** The allocation this one replaces (reschedule, migrate, destructive update), if any. */
  previousAlloc?: Allocation;
  /** Nodes to score down (Nomad's reschedule penalty: the nodes earlier attempts failed on). */
  penaltyNodeIds?: string[];
  /** System jobs: the one node this placement is for. */
  nodeId?: string;
  /** A canary of a deployment. */
  canary?: boolean;
  /**
   * Why `previousAlloc` is replaced: `reschedule` (it failed) and `update` (a destructive update) keep its stop (in
   * `Reconciliation.stop`) only when this placement succeeds — the worker drops that stop otherwise, and for a failed
   * reschedule sets the previous alloc's `RescheduleTracker.LastReschedule` to `no placement` (Nomad's
   * markFailedToReschedule); `lost` and `migrate` stop it either way.
   */
  replacing?: 'reschedule' | 'update' | 'lost' | 'migrate';
  /** A reschedule: the new allocation's `RescheduleTracker` (Nomad's UpdateRescheduleTracker at `now`). */
  rescheduleTracker?: RescheduleTracker;
}

export interface Placement {
  request: PlacementRequest;
  node: ClusterNode;
  resources: AllocatedResources;
  metrics: AllocMetric;
  /** The allocations this placement evicts (Nomad's `PreemptedAllocs`): their desired status becomes `evict`. */
  preempted?: Allocation[];
}

export interface PlacementResult {
  placements: Placement[];
  /** Per task group, the metrics of its first failed placement, `CoalescedFailures` counting the others. */
  failed: Record<string, AllocMetric>;
  /** Per computed class checked, whether the job may run there (Nomad's `ClassEligibility` of a blocked evaluation). */
  classEligibility?: Record<string, boolean>;
  /** Whether a constraint escaped the computed class (Nomad's `EscapedComputedClass`). */
  escapedComputedClass?: boolean;
  /**
   * The jobs whose priority preemption needed (an allocation of theirs was a candidate to evict) and
   * `Snapshot.priorities` did not hold: a caller that reads them lazily reads exactly these and places again.
   */
  lackedPriorities?: JobRef[];
}

/** A job by its namespace and ID. */
export interface JobRef {
  Namespace: string;
  JobID: string;
}

/** The placement function's signature (`place.ts`). */
export type Place = (
  snapshot: Snapshot,
  job: Job,
  requests: PlacementRequest[],
  seed: string,
  settings?: PlacementSettings,
) => PlacementResult;

/** Nomad's `DesiredUpdates`: what a plan does to each task group (`Annotations.DesiredTGUpdates`). */
export interface DesiredUpdates {
  Ignore: number;
  Place: number;
  Migrate: number;
  Stop: number;
  InPlaceUpdate: number;
  DestructiveUpdate: number;
  Canary: number;
  Preemptions: number;
  Reconnect: number;
  Disconnect: number;
  RescheduleNow: number;
  RescheduleLater: number;
}

/** An allocation to stop, and why (its `DesiredDescription`; `ClientStatus` set to `lost` for a down node's). */
export interface StopDecision {
  alloc: Allocation;
  description: string;
  clientStatus?: 'lost';
}

/** What the reconciler (`reconcile.ts`) reads: one job's state at an evaluation. */
export interface ReconcileInput {
  /** The job's ID (the job may be purged). */
  jobId: string;
  /** The job at its latest version; undefined when purged (every allocation stops), `Stop: true` when stopped. */
  job: Job | undefined;
  /** All of the job's allocations, terminal ones included. */
  allocs: Allocation[];
  /**
   * The job versions the allocations run (their `JobVersion`), as stored; the latest (`job`) need not be repeated. An
   * allocation whose version is missing (collected) is treated as running a different spec: a destructive update.
   */
  jobVersions: Job[];
  /** The nodes the allocations are on; an allocation whose node is not here is on a collected node: lost. */
  nodes: ClusterNode[];
  /** The evaluation (its Priority, when given, becomes a new deployment's EvalPriority; else the job's). */
  evaluation: Pick<Evaluation, 'ID' | 'TriggeredBy'> & Partial<Pick<Evaluation, 'Priority'>>;
  /** Milliseconds since the epoch. */
  now: number;
  /** The job's latest deployment, if any (service and batch jobs). */
  deployment?: ClusterDeployment;
  /** The ID a deployment this evaluation creates takes (default: the evaluation's ID, unique per evaluation). */
  newDeploymentId?: string;
  /**
   * Whether the job's new version still fits on the allocation's node, the allocation's own resources freed (Nomad
   * re-runs feasibility for an in-place update; false makes it destructive). Absent: an update that needs no restart
   * is taken in place without that check.
   */
  fitsInPlace?: (alloc: Allocation, job: Job, node: ClusterNode) => boolean;
  /**
   * System and sysbatch jobs: the nodes the job may run on by eligibility (ready, eligible, not draining, in the job's
   * pool and datacenters); one allocation per such node and task group. Ignored for service and batch jobs.
   */
  eligibleNodes?: ClusterNode[];
}

/** A later evaluation (Nomad's follow-up evaluation for a delayed reschedule) and the allocations it is for. */
export interface Followup {
  /** When, in ms since the epoch (the evaluation's `WaitUntil`). */
  at: number;
  /** The failed allocations to mark with the follow-up evaluation's ID (their `FollowupEvalID`). */
  allocIds: string[];
  /** The evaluation's `TriggeredBy` and `StatusDescription`, Nomad's (a group's first batch differs from the rest). */
  triggeredBy: string;
  statusDescription: string;
}

/** What the reconciler (`reconcile.ts`) decides for a job from its allocations and their nodes. */
export interface Reconciliation {
  place: PlacementRequest[];
  stop: StopDecision[];
  /** Allocations updated in place to the job's version (no restart: only fields that do not need one changed). */
  inplace: Allocation[];
  desiredTGUpdates: Record<string, DesiredUpdates>;
  /** A later evaluation is needed (a reschedule with a delay): when, in ms since the epoch (the first of `followups`). */
  followupAt?: number;
  /** The follow-up evaluations to create, per task group as Nomad batches them (within 5 s of a batch's first). */
  followups: Followup[];
  /**
   * A deployment this evaluation creates (a spec change, or a new job, under an update block), to store; its
   * placements belong to it (their `DeploymentID`), and placed canaries join its group's `PlacedCanaries`.
   */
  deployment?: ClusterDeployment;
  /** Status changes of existing deployments: cancelled (job stopped or newer), successful (complete). */
  deploymentUpdates: DeploymentStatusUpdate[];
  /**
   * The active deployment this evaluation's placements join (their `DeploymentID`): the one it creates, else the
   * job's current one; undefined when none. In-place updates carry it already (their DeploymentStatus reset).
   */
  deploymentId?: string;
}
