/**
 * Nodes, jobs and allocations for the placement tests, built through the service's own code: a node as
 * `registeredNode` stores what the agent's `buildNode` sends (then marked ready), a job as `canonicalJob` and
 * `validateJob` store it, an allocation in the stored shape.
 */
import { buildNode } from '../../../packages/agent/src/node.ts';
import type { Allocation } from '../../../packages/core/src/scheduler/cluster/allocations/model.ts';
import type { AllocatedResources } from '../../../packages/core/src/scheduler/cluster/allocations/resources.ts';
import { canonicalJob, type Job, validateJob } from '../../../packages/core/src/scheduler/cluster/jobs/model.ts';
import { type ClusterNode, registeredNode } from '../../../packages/core/src/scheduler/cluster/nodes/model.ts';

export interface NodeSpec {
  id?: string;
  name?: string;
  datacenter?: string;
  pool?: string;
  nodeClass?: string;
  cpu?: number;
  memoryMB?: number;
  diskMB?: number;
  reserved?: { cpu?: number; memoryMB?: number; diskMB?: number; ports?: string };
  attributes?: Record<string, string>;
  meta?: Record<string, string>;
  rawExec?: boolean;
  ip?: string;
  status?: ClusterNode['Status'];
  eligibility?: ClusterNode['SchedulingEligibility'];
  draining?: boolean;
  dynamicPorts?: { min: number; max: number };
}

let counter = 0;

/** A UUID-shaped ID from a number, so tests read which node is which. */
export const nodeId = (n: number): string => `00000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;

export function makeNode(spec: NodeSpec = {}): ClusterNode {
  counter++;
  const id = spec.id ?? nodeId(counter);
  const ip = spec.ip ?? `10.0.${(counter >> 8) & 255}.${counter & 255}`;
  const client = buildNode(
    { id, secretId: nodeId(1_000_000 + counter) },
    {
      datacenter: spec.datacenter ?? 'dc1',
      nodePool: spec.pool ?? 'default',
      nodeClass: spec.nodeClass ?? '',
      meta: spec.meta ?? {},
      httpPort: 4646,
      name: spec.name ?? `node-${counter}`,
    },
    {
      cpu: { cores: 4, mhz: (spec.cpu ?? 4000) / 4, totalCompute: spec.cpu ?? 4000, model: 'test', arch: 'amd64' },
      memory: { totalBytes: (spec.memoryMB ?? 8192) * 1024 * 1024 },
      storage: {
        volume: '/dev/test',
        bytesTotal: (spec.diskMB ?? 100_000) * 1024 * 1024,
        bytesFree: (spec.diskMB ?? 100_000) * 1024 * 1024,
      },
      host: {
        osName: 'debian',
        osVersion: '12',
        kernelName: 'linux',
        kernelArch: 'x86_64',
        kernelVersion: '6.1.0',
        hostname: spec.name ?? `node-${counter}`,
        signals: ['SIGTERM'],
      },
      network: { device: 'eth0', ip, cidr: `${ip}/32`, mac: '' },
    },
    {
      raw_exec: {
        Detected: true,
        Healthy: spec.rawExec ?? true,
        HealthDescription: '',
        UpdateTime: '2026-01-01T00:00:00Z',
        Attributes: {},
      },
    },
  );
  if (spec.rawExec === false) delete client.Attributes['driver.raw_exec'];
  client.Attributes = { ...client.Attributes, ...(spec.attributes ?? {}) };
  const reserved = spec.reserved ?? {};
  client.ReservedResources = {
    Cpu: { CpuShares: reserved.cpu ?? 0 },
    Memory: { MemoryMB: reserved.memoryMB ?? 0 },
    Disk: { DiskMB: reserved.diskMB ?? 0 },
    Networks: { ReservedHostPorts: reserved.ports ?? '' },
  };
  if (spec.dynamicPorts) {
    client.NodeResources.MinDynamicPort = spec.dynamicPorts.min;
    client.NodeResources.MaxDynamicPort = spec.dynamicPorts.max;
  }
  const node = registeredNode(client as never, undefined, counter, Date.UTC(2026, 0, 1));
  return {
    ...node,
    Status: spec.status ?? 'ready',
    SchedulingEligibility: spec.eligibility ?? 'eligible',
    DrainStrategy: spec.draining
      ? { Deadline: 0, IgnoreSystemJobs: false, ForceDeadline: '0001-01-01T00:00:00Z', StartedAt: '' }
      : null,
  };
}

type Loose = Record<string, unknown>;

/** A task of `driver` raw_exec asking `cpu` MHz and `memoryMB`. */
export const task = (name: string, cpu = 100, memoryMB = 300, extra: Loose = {}): Loose => ({
  Name: name,
  Driver: 'raw_exec',
  Config: { command: '/bin/true' },
  Resources: { CPU: cpu, MemoryMB: memoryMB },
  ...extra,
});

/** A stored job from a spec (groups default to one task "web"). */
export function makeJob(spec: Loose = {}): Job {
  const groups = (spec.TaskGroups as Loose[] | undefined) ?? [{ Name: 'web', Count: 1, Tasks: [task('server')] }];
  const canonical = canonicalJob({ ID: 'example', Type: 'service', ...spec, TaskGroups: groups }, 'default', 'global');
  if (canonical.NodePool === '') canonical.NodePool = 'default';
  return validateJob(canonical);
}

let allocCounter = 0;

/** An allocation of `job`'s group on `node` holding `cpu` and `memoryMB` (and `diskMB`), running. */
export function makeAlloc(
  job: Pick<Job, 'ID' | 'Namespace'>,
  group: string,
  node: ClusterNode,
  held: { cpu?: number; memoryMB?: number; diskMB?: number; ports?: Array<{ Label: string; Value: number }> } = {},
  status: Partial<Pick<Allocation, 'DesiredStatus' | 'ClientStatus'>> = {},
): Allocation {
  allocCounter++;
  const resources: AllocatedResources = {
    Tasks: {
      main: {
        Cpu: { CpuShares: held.cpu ?? 100, ReservedCores: null },
        Memory: { MemoryMB: held.memoryMB ?? 300, MemoryMaxMB: 0 },
        Networks: null,
        Devices: null,
      },
    },
    TaskLifecycles: { main: null },
    Shared: {
      DiskMB: held.diskMB ?? 300,
      Networks: null,
      Ports: held.ports
        ? held.ports.map((port) => ({
            Label: port.Label,
            Value: port.Value,
            To: 0,
            HostIP: String(node.Attributes['unique.network.ip-address']),
          }))
        : null,
    },
  };
  return {
    ID: `alloc-${allocCounter}`,
    Namespace: job.Namespace,
    EvalID: 'eval',
    Name: `${job.ID}.${group}[${allocCounter}]`,
    NodeID: node.ID,
    NodeName: node.Name,
    JobID: job.ID,
    JobVersion: 0,
    Job: null,
    TaskGroup: group,
    AllocatedResources: resources,
    Metrics: null,
    DesiredStatus: status.DesiredStatus ?? 'run',
    DesiredDescription: '',
    DesiredTransition: { Migrate: null, Reschedule: null, ForceReschedule: null, NoShutdownDelay: null },
    ClientStatus: status.ClientStatus ?? 'running',
    ClientDescription: '',
    TaskStates: null,
    DeploymentID: '',
    DeploymentStatus: null,
    PreviousAllocation: '',
    NextAllocation: '',
    RescheduleTracker: null,
    FollowupEvalID: '',
    CreateIndex: 1,
    ModifyIndex: 1,
    AllocModifyIndex: 1,
    CreateTime: 0,
    ModifyTime: 0,
  };
}

/** Requests for `count` allocations of `group` of `job`. */
export const requests = (job: Pick<Job, 'ID'>, group: string, count: number, from = 0) =>
  Array.from({ length: count }, (_, i) => ({ group, name: `${job.ID}.${group}[${from + i}]` }));
