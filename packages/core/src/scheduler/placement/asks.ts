/**
 * What a task group asks of a node, read once from the stored job (whose groups and tasks keep Nomad's JSON as
 * submitted and canonicalised: `cluster/jobs/model.ts`): its tasks' drivers, CPU, memory and lifecycles, its
 * ephemeral disk, its network's ports, and its constraints, affinities and spreads with the job's and its tasks'
 * merged in as Nomad's `TaskGroupConstraints` and the affinity and spread iterators merge them.
 */
import type { Job, TaskGroup } from '../cluster/jobs/model.ts';
import { type Constraint, constraintEscapes, constraintsOf } from './constraints.ts';
import { type DeviceAsk, deviceAsks } from './devices.ts';

export interface TaskAsk {
  name: string;
  driver: string;
  cpu: number;
  /** Whole cores to reserve (Nomad's `resources.cores`): the task's CPU is then those cores' MHz, not `cpu`. */
  cores: number;
  memoryMB: number;
  memoryMaxMB: number;
  /** Its device requests. */
  devices: DeviceAsk[];
  /** Nomad's `TaskLifecycleConfig`, or null for a main task. */
  lifecycle: { Hook: string; Sidecar: boolean } | null;
}

export interface PortAsk {
  Label: string;
  Value: number;
  To: number;
  HostNetwork: string;
}

export interface NetworkAsk {
  Mode: string;
  ReservedPorts: PortAsk[];
  DynamicPorts: PortAsk[];
}

export interface Affinity extends Constraint {
  Weight: number;
}

export interface Spread {
  Attribute: string;
  Weight: number;
  SpreadTarget: Array<{ Value: string; Percent: number }>;
}

export interface GroupAsk {
  name: string;
  count: number;
  tasks: TaskAsk[];
  drivers: Set<string>;
  diskMB: number;
  /** The ephemeral disk is sticky or migrated: a replacement prefers the previous allocation's node. */
  stickyDisk: boolean;
  /** The group's first network (Nomad reads only `Networks[0]`), if it has one. */
  network: NetworkAsk | null;
  /** The group's and its tasks' constraints (the job's are checked apart, as Nomad's job checker). */
  constraints: Constraint[];
  /** The group's own constraints (distinct_hosts and distinct_property at group level). */
  groupConstraints: Constraint[];
  /** A constraint reads a target unique to a node: the computed-class cache cannot answer for the group. */
  escaped: boolean;
  /** The CPU and memory its tasks hold together (lifecycles overlapped as Nomad's `Comparable`), reserved cores apart. */
  cpu: number;
  memoryMB: number;
  /** The whole cores its tasks reserve, together. */
  cores: number;
  /** Every task's device requests, together (what the node must have). */
  devices: DeviceAsk[];
  /** The job's, the group's and its tasks' affinities. */
  affinities: Affinity[];
  /** The group's spreads and the job's (Nomad keeps them apart: `SpreadIterator`). */
  groupSpreads: Spread[];
  jobSpreads: Spread[];
}

type Loose = Record<string, unknown>;
const isObject = (value: unknown): value is Loose =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const numberOf = (value: unknown, fallback = 0): number =>
  typeof value === 'number' && Number.isFinite(value) ? value : fallback;
const textOf = (value: unknown, fallback = ''): string => (typeof value === 'string' ? value : fallback);
const objects = (value: unknown): Loose[] => (Array.isArray(value) ? value.filter(isObject) : []);

function ports(value: unknown): PortAsk[] {
  return objects(value).map((port) => ({
    Label: textOf(port.Label),
    Value: numberOf(port.Value),
    To: numberOf(port.To),
    // Nomad's NetworkResource.Canonicalize: a port names the default host network unless it names one.
    HostNetwork: textOf(port.HostNetwork) || 'default',
  }));
}

export function affinitiesOf(value: unknown): Affinity[] {
  const weights = objects(value).map((entry) => numberOf(entry.Weight, 50));
  return constraintsOf(value).map((constraint, i) => ({ ...constraint, Weight: weights[i] ?? 50 }));
}

export function spreadsOf(value: unknown): Spread[] {
  return objects(value).map((spread) => ({
    Attribute: textOf(spread.Attribute),
    Weight: numberOf(spread.Weight, 50),
    SpreadTarget: objects(spread.SpreadTarget).map((target) => ({
      Value: textOf(target.Value),
      Percent: numberOf(target.Percent),
    })),
  }));
}

function taskAsk(task: Loose): TaskAsk {
  const resources = isObject(task.Resources) ? task.Resources : {};
  const lifecycle = isObject(task.Lifecycle) ? task.Lifecycle : null;
  return {
    name: textOf(task.Name),
    driver: textOf(task.Driver),
    cpu: numberOf(resources.CPU, 100),
    cores: numberOf(resources.Cores),
    devices: deviceAsks(resources),
    memoryMB: numberOf(resources.MemoryMB, 300),
    memoryMaxMB: numberOf(resources.MemoryMaxMB),
    lifecycle:
      lifecycle && textOf(lifecycle.Hook) !== ''
        ? { Hook: textOf(lifecycle.Hook), Sidecar: lifecycle.Sidecar === true }
        : null,
  };
}

/** The asks of `group` of `job`. */
export function groupAsk(job: Job, group: TaskGroup): GroupAsk {
  const tasks = (group.Tasks ?? []).filter(isObject);
  const network = objects(group.Networks)[0];
  const groupConstraints = constraintsOf(group.Constraints);
  const constraints = [...groupConstraints, ...tasks.flatMap((task) => constraintsOf(task.Constraints))];
  const asks = tasks.map(taskAsk);
  const disk = isObject(group.EphemeralDisk) ? group.EphemeralDisk : {};
  // a task on reserved cores holds their MHz, known only once a node is chosen (rank.ts adds it)
  const held = taskUsage(asks.map((each) => (each.cores > 0 ? { ...each, cpu: 0, reservedCores: true } : each)));
  return {
    name: group.Name,
    count: numberOf(group.Count, 1),
    tasks: asks,
    drivers: new Set(tasks.map((task) => textOf(task.Driver))),
    diskMB: numberOf(disk.SizeMB, 300),
    stickyDisk: disk.Sticky === true || disk.Migrate === true,
    network: network
      ? {
          Mode: textOf(network.Mode) || 'host',
          ReservedPorts: ports(network.ReservedPorts),
          DynamicPorts: ports(network.DynamicPorts),
        }
      : null,
    constraints,
    groupConstraints,
    escaped: constraints.some(constraintEscapes),
    cpu: held.cpu,
    memoryMB: held.memoryMB,
    cores: asks.reduce((sum, each) => sum + each.cores, 0),
    devices: asks.flatMap((each) => each.devices),
    affinities: [
      ...affinitiesOf(job.Affinities),
      ...affinitiesOf(group.Affinities),
      ...tasks.flatMap((task) => affinitiesOf(task.Affinities)),
    ],
    groupSpreads: spreadsOf(group.Spreads),
    jobSpreads: spreadsOf(job.Spreads),
  };
}

/**
 * What tasks hold together, as Nomad's `AllocatedResources.Comparable`: the main tasks (and poststart ones and
 * prestart sidecars) run together; a prestart task (with the sidecars) before them and a poststop task after, so the
 * group holds the largest of the three. A task on reserved cores holds their CPU throughout (not fungible).
 */
export function taskUsage(
  tasks: ReadonlyArray<Pick<TaskAsk, 'cpu' | 'memoryMB' | 'lifecycle'> & { reservedCores?: boolean }>,
): {
  cpu: number;
  memoryMB: number;
} {
  let prestartCpu = 0;
  let prestartMemory = 0;
  let mainCpu = 0;
  let mainMemory = 0;
  let stopCpu = 0;
  let stopMemory = 0;
  let pinnedCpu = 0;
  for (const task of tasks) {
    const cpu = task.reservedCores ? 0 : task.cpu;
    if (task.reservedCores) pinnedCpu += task.cpu;
    const hook = task.lifecycle?.Hook ?? '';
    if (hook === '' || hook === 'poststart' || (hook === 'prestart' && task.lifecycle?.Sidecar)) {
      mainCpu += cpu;
      mainMemory += task.memoryMB;
    }
    if (hook === 'prestart') {
      prestartCpu += cpu;
      prestartMemory += task.memoryMB;
    } else if (hook === 'poststop') {
      stopCpu += cpu;
      stopMemory += task.memoryMB;
    }
  }
  return {
    cpu: pinnedCpu + Math.max(mainCpu, prestartCpu, stopCpu),
    memoryMB: Math.max(mainMemory, prestartMemory, stopMemory),
  };
}
