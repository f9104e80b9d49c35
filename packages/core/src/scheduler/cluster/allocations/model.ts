/**
 * An allocation (Nomad's `structs.Allocation`): one instance of a job's task group placed on a node. Stored without
 * its job (`Job` is null in the table and in events, as Nomad's Allocation events carry it); a read rehydrates the
 * job from the version item named by `JobVersion` (`cluster/jobs/store.ts`). Statuses are Nomad's.
 */
import type { AllocatedResources, AllocMetric } from './resources.ts';

export const desiredStatuses = ['run', 'stop', 'evict'] as const;
export type DesiredStatus = (typeof desiredStatuses)[number];
export const clientStatuses = ['pending', 'running', 'complete', 'failed', 'lost', 'unknown'] as const;
export type ClientStatus = (typeof clientStatuses)[number];

/** A task's state as the agent reports it (Nomad's `TaskState`). */
export interface TaskState {
  State: 'pending' | 'running' | 'dead';
  Failed: boolean;
  Restarts: number;
  LastRestart: string | null;
  StartedAt: string | null;
  FinishedAt: string | null;
  Events: TaskEvent[] | null;
}

/** Nomad's `TaskEvent`, the fields this service reads typed; the agent may send more of Nomad's. */
export interface TaskEvent extends Record<string, unknown> {
  Type: string;
  Time: number;
  Message: string;
  DisplayMessage: string;
  Details: Record<string, string> | null;
  ExitCode?: number;
  Signal?: number;
}

/** Nomad's `DesiredTransition`: what the scheduler is asked to do with a running allocation. */
export interface DesiredTransition {
  Migrate: boolean | null;
  Reschedule: boolean | null;
  ForceReschedule: boolean | null;
  NoShutdownDelay: boolean | null;
}

/** Nomad's `RescheduleTracker`: the reschedule events of an allocation's lineage. */
export interface RescheduleTracker {
  /** `RescheduleTime` in nanoseconds since the epoch, `Delay` in nanoseconds, as Nomad's. */
  Events: Array<{ RescheduleTime: number; PrevAllocID: string; PrevNodeID: string; Delay: number }> | null;
  /** Whether the last reschedule of this allocation found a placement: `ok`, `no placement`, or unset. */
  LastReschedule?: '' | 'ok' | 'no placement';
}

/** Nomad's `AllocDeploymentStatus`. */
export interface AllocDeploymentStatus {
  Healthy: boolean | null;
  Timestamp: string;
  Canary: boolean;
  ModifyIndex: number;
}

export interface Allocation {
  ID: string;
  Namespace: string;
  EvalID: string;
  /** `<job>.<group>[<index>]`, as Nomad names them. */
  Name: string;
  NodeID: string;
  NodeName: string;
  JobID: string;
  /** The job version the allocation runs; `Job` is rehydrated from it on a read (not one of Nomad's fields). */
  JobVersion: number;
  Job: Record<string, unknown> | null;
  TaskGroup: string;
  AllocatedResources: AllocatedResources;
  Metrics: AllocMetric | null;
  DesiredStatus: DesiredStatus;
  DesiredDescription: string;
  DesiredTransition: DesiredTransition;
  ClientStatus: ClientStatus;
  ClientDescription: string;
  TaskStates: Record<string, TaskState> | null;
  DeploymentID: string;
  DeploymentStatus: AllocDeploymentStatus | null;
  PreviousAllocation: string;
  NextAllocation: string;
  RescheduleTracker: RescheduleTracker | null;
  FollowupEvalID: string;
  /** The allocations this one evicted when placed (Nomad's, `omitempty`: present only when it preempted). */
  PreemptedAllocations?: string[];
  /** The allocation that evicted this one (Nomad's, `omitempty`: present only when preempted). */
  PreemptedByAllocation?: string;
  CreateIndex: number;
  ModifyIndex: number;
  AllocModifyIndex: number;
  /** Nanoseconds since the epoch, as Nomad's. */
  CreateTime: number;
  ModifyTime: number;
}

/** A stored allocation: the allocation and its job's type (for list stubs; never in an answer: `publicAllocation`). */
export type StoredAllocation = Allocation & { JobType: string };

/** Nomad's `Allocation.TerminalStatus`: the scheduler no longer counts it. */
export const isTerminal = (alloc: Pick<Allocation, 'DesiredStatus' | 'ClientStatus'>): boolean =>
  alloc.DesiredStatus === 'stop' ||
  alloc.DesiredStatus === 'evict' ||
  alloc.ClientStatus === 'complete' ||
  alloc.ClientStatus === 'failed' ||
  alloc.ClientStatus === 'lost';

/** Nomad's `Allocation.ClientTerminalStatus`: the client no longer runs it (whatever the server wants of it). */
export const isClientTerminal = (alloc: Pick<Allocation, 'ClientStatus'>): boolean =>
  alloc.ClientStatus === 'complete' || alloc.ClientStatus === 'failed' || alloc.ClientStatus === 'lost';
