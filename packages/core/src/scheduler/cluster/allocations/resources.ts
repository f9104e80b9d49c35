/**
 * What a placement grants and how it went, as an allocation carries them (Nomad's `AllocatedResources` and
 * `AllocMetric`): the placement function (`scheduler/placement/`) fills them, the allocation model stores them. They
 * live beside the allocation so that the model needs nothing of placement (`placement/types.ts` re-exports them).
 */

/** Nomad's `Port` (`ReservedPorts`/`DynamicPorts` of a network ask or grant). */
export interface Port {
  Label: string;
  Value: number;
  To: number;
  HostNetwork: string;
}

/** Nomad's `NetworkResource`. */
export interface NetworkResource {
  Mode: string;
  Device: string;
  CIDR: string;
  IP: string;
  MBits: number;
  DNS: null;
  ReservedPorts: Port[] | null;
  DynamicPorts: Port[] | null;
}

/** Nomad's `AllocatedPortMapping`. */
export interface AllocatedPort {
  Label: string;
  Value: number;
  To: number;
  HostIP: string;
}

/** Nomad's `AllocatedDeviceResource`: the instances of one device group granted to a task. */
export interface AllocatedDeviceResource {
  Vendor: string;
  Type: string;
  Name: string;
  DeviceIDs: string[];
}

export interface AllocatedTaskResources {
  Cpu: { CpuShares: number; ReservedCores: number[] | null };
  Memory: { MemoryMB: number; MemoryMaxMB: number };
  Networks: NetworkResource[] | null;
  Devices: AllocatedDeviceResource[] | null;
}

/** Nomad's `AllocatedResources`: what a placement granted. */
export interface AllocatedResources {
  Tasks: Record<string, AllocatedTaskResources>;
  TaskLifecycles: Record<string, unknown>;
  Shared: { DiskMB: number; Networks: NetworkResource[] | null; Ports: AllocatedPort[] | null };
}

/** Nomad's `NodeScoreMeta`. */
export interface NodeScoreMeta {
  NodeID: string;
  Scores: Record<string, number>;
  NormScore: number;
}

/** Nomad's `AllocMetric`: how a placement (or a failed one, in `FailedTGAllocs`) went. */
export interface AllocMetric {
  NodesEvaluated: number;
  NodesFiltered: number;
  NodesInPool: number;
  /** The job's node pool (Nomad's `NodePool`; optional so that older metrics without it still read). */
  NodePool?: string;
  NodesAvailable: Record<string, number>;
  ClassFiltered: Record<string, number> | null;
  ConstraintFiltered: Record<string, number> | null;
  NodesExhausted: number;
  ClassExhausted: Record<string, number> | null;
  DimensionExhausted: Record<string, number> | null;
  QuotaExhausted: string[] | null;
  ResourcesExhausted: Record<string, unknown> | null;
  Scores: Record<string, number> | null;
  ScoreMetaData: NodeScoreMeta[] | null;
  AllocationTime: number;
  CoalescedFailures: number;
}
