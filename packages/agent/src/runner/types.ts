/**
 * The allocation as the agent reads it from `GET /v1/client/allocation/:id` (Nomad's `structs.Allocation` with its
 * job rehydrated), typed only where the runner reads it. The agent imports nothing of the services (its layer), so
 * these mirror `packages/core/src/scheduler/cluster/allocations/model.ts` and the job's JSON form; everything else is
 * carried as it comes.
 */

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

/** Nomad's `TaskEvent` (the fields its task runner sets; `Time` in nanoseconds since the epoch). */
export interface TaskEvent {
  Type: string;
  Time: number;
  Message: string;
  DisplayMessage: string;
  Details: Record<string, string>;
  FailsTask: boolean;
  RestartReason: string;
  SetupError: string;
  DriverError: string;
  ExitCode: number;
  Signal: number;
  KillReason: string;
  KillTimeout: number;
  KillError: string;
  StartDelay: number;
  FailedSibling: string;
}

export type ClientStatus = 'pending' | 'running' | 'complete' | 'failed' | 'lost' | 'unknown';

export interface AllocatedPort {
  Label: string;
  Value: number;
  To: number;
  HostIP: string;
}

export interface RestartPolicy {
  Attempts: number;
  /** Nanoseconds. */
  Interval: number;
  /** Nanoseconds. */
  Delay: number;
  Mode: string;
}

/** A service block (Nomad's `structs.Service`), the fields the agent reads. */
export interface ServiceSpec {
  Name?: string;
  PortLabel?: string;
  Tags?: string[] | null;
  Provider?: string;
}

export interface TaskSpec {
  Name: string;
  Driver: string;
  Config?: Record<string, unknown> | null;
  Env?: Record<string, string> | null;
  Meta?: Record<string, string> | null;
  Leader?: boolean;
  /** Nanoseconds. */
  KillTimeout?: number;
  KillSignal?: string;
  Resources?: { CPU?: number; Cores?: number; MemoryMB?: number; MemoryMaxMB?: number } | null;
  Services?: ServiceSpec[] | null;
  LogConfig?: { MaxFiles?: number; MaxFileSizeMB?: number } | null;
  /** Nomad's `lifecycle` block: `Hook` prestart, poststart or poststop; `Sidecar` keeps it running beside the main tasks. */
  Lifecycle?: { Hook?: string; Sidecar?: boolean } | null;
}

/** A group's update block, the fields the agent's health watch reads (nanoseconds). */
export interface UpdateSpec {
  HealthCheck?: string;
  MinHealthyTime?: number;
  HealthyDeadline?: number;
}

export interface GroupSpec {
  Name: string;
  Tasks: TaskSpec[];
  Update?: UpdateSpec | null;
  RestartPolicy?: RestartPolicy | null;
  Services?: ServiceSpec[] | null;
  Meta?: Record<string, string> | null;
}

export interface JobSpec {
  ID: string;
  Name: string;
  Namespace: string;
  Region: string;
  Type: string;
  ParentID?: string;
  Meta?: Record<string, string> | null;
  TaskGroups: GroupSpec[];
}

export interface Allocation {
  ID: string;
  Namespace: string;
  Name: string;
  NodeID: string;
  JobID: string;
  Job: JobSpec | null;
  TaskGroup: string;
  AllocatedResources: {
    Tasks?: Record<
      string,
      { Cpu?: { CpuShares?: number }; Memory?: { MemoryMB?: number; MemoryMaxMB?: number } }
    > | null;
    Shared?: { Ports?: AllocatedPort[] | null } | null;
  } | null;
  DesiredStatus: 'run' | 'stop' | 'evict';
  ClientStatus: ClientStatus;
  DeploymentID?: string;
  DeploymentStatus?: { Healthy: boolean | null } | null;
  AllocModifyIndex: number;
}

/** What the runner knows of the node it runs on (for `NOMAD_DC`, addresses and `${node.*}` interpolation). */
export interface NodeInfo {
  ID: string;
  Name: string;
  Datacenter: string;
  NodeClass: string;
  NodePool: string;
  /** The address the node advertises (its network fingerprint's IP). */
  Address: string;
  Attributes: Record<string, string>;
  Meta: Record<string, string>;
}
