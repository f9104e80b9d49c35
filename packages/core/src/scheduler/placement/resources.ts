/**
 * CPU, memory and disk: what a node offers (its `NodeResources` less its `ReservedResources`), what an allocation
 * holds (Nomad's `AllocatedResources.Comparable`: a prestart task's resources overlap the main tasks', a sidecar's
 * do not), whether they fit (`AllocsFit`, its dimensions `cpu`, `memory`, `disk` in that order) and how well
 * (`ScoreFitBinPack`, in [0, 18]).
 */
import type { AllocatedResources } from '../cluster/allocations/resources.ts';
import type { ClusterNode } from '../cluster/nodes/model.ts';
import { type TaskAsk, taskUsage } from './asks.ts';

export interface Usage {
  cpu: number;
  memoryMB: number;
  diskMB: number;
}

/** What a node offers allocations: its resources less its reserved ones. */
export interface Capacity extends Usage {}

const numberAt = (value: unknown, ...path: string[]): number => {
  let at: unknown = value;
  for (const key of path) {
    if (typeof at !== 'object' || at === null) return 0;
    at = (at as Record<string, unknown>)[key];
  }
  return typeof at === 'number' && Number.isFinite(at) ? at : 0;
};

export function capacityOf(node: ClusterNode): Capacity {
  const offered = node.NodeResources;
  const reserved = node.ReservedResources;
  return {
    cpu: numberAt(offered, 'Cpu', 'CpuShares') - numberAt(reserved, 'Cpu', 'CpuShares'),
    memoryMB: numberAt(offered, 'Memory', 'MemoryMB') - numberAt(reserved, 'Memory', 'MemoryMB'),
    diskMB: numberAt(offered, 'Disk', 'DiskMB') - numberAt(reserved, 'Disk', 'DiskMB'),
  };
}

/** Nomad's `AllocatedResources.Comparable`, flattened to CPU, memory and disk. */
export function usageOf(resources: AllocatedResources | null | undefined): Usage {
  if (!resources) return { cpu: 0, memoryMB: 0, diskMB: 0 };
  const lifecycles = (resources.TaskLifecycles ?? {}) as Record<string, TaskAsk['lifecycle']>;
  const tasks = Object.entries(resources.Tasks ?? {}).map(([name, task]) => ({
    cpu: numberAt(task, 'Cpu', 'CpuShares'),
    memoryMB: numberAt(task, 'Memory', 'MemoryMB'),
    lifecycle: lifecycles[name] ?? null,
    reservedCores: (task?.Cpu?.ReservedCores?.length ?? 0) > 0,
  }));
  return { ...taskUsage(tasks), diskMB: numberAt(resources.Shared, 'DiskMB') };
}

export const addUsage = (into: Usage, more: Usage): void => {
  into.cpu += more.cpu;
  into.memoryMB += more.memoryMB;
  into.diskMB += more.diskMB;
};

export const subtractUsage = (from: Usage, less: Usage): void => {
  from.cpu -= less.cpu;
  from.memoryMB -= less.memoryMB;
  from.diskMB -= less.diskMB;
};

/** Nomad's `ComparableResources.Superset`: "" when `used` fits `capacity`, else the first dimension short. */
export function exhaustedDimension(capacity: Capacity, used: Usage): '' | 'cpu' | 'memory' | 'disk' {
  if (capacity.cpu < used.cpu) return 'cpu';
  if (capacity.memoryMB < used.memoryMB) return 'memory';
  if (capacity.diskMB < used.diskMB) return 'disk';
  return '';
}

/**
 * Nomad's `ScoreFitBinPack` (Google's BestFit v3): 20 − (10^freeCpu + 10^freeMemory), bounded to [0, 18], where
 * free is the fraction of the node's unreserved CPU and memory left once `used` (the placement included) runs.
 */
export function binPackFitness(capacity: Capacity, used: Usage): number {
  const freeCpu = 1 - used.cpu / capacity.cpu;
  const freeMemory = 1 - used.memoryMB / capacity.memoryMB;
  const score = 20 - (10 ** freeCpu + 10 ** freeMemory);
  if (score > 18) return 18;
  if (score < 0) return 0;
  return score;
}

/**
 * Nomad's `ScoreFitSpread` (the `spread` scheduler algorithm): (10^freeCpu + 10^freeMemory) − 2, bounded to [0, 18],
 * so the emptiest node scores highest.
 */
export function spreadFitness(capacity: Capacity, used: Usage): number {
  const freeCpu = 1 - used.cpu / capacity.cpu;
  const freeMemory = 1 - used.memoryMB / capacity.memoryMB;
  const score = 10 ** freeCpu + 10 ** freeMemory - 2;
  if (score > 18) return 18;
  if (score < 0) return 0;
  return score;
}

/** Nomad's `binPackingMaxFitScore`: the binpack score a placement carries is the fitness over this. */
export const maxFitScore = 18;

/** The cores a node lets tasks reserve: its reservable cores less those it keeps for itself. */
export function reservableCores(node: ClusterNode): number[] {
  const offered = (node.NodeResources?.Cpu as { ReservableCpuCores?: unknown } | undefined)?.ReservableCpuCores;
  const keptList = (node.ReservedResources?.Cpu as { ReservedCpuCores?: unknown } | undefined)?.ReservedCpuCores;
  const kept = new Set(Array.isArray(keptList) ? keptList : []);
  return Array.isArray(offered)
    ? offered.filter((core): core is number => typeof core === 'number' && !kept.has(core))
    : [];
}

/** The MHz one core gives (the node's CPU over its cores), what a reserved core's task holds of CPU. */
export function coreMhz(node: ClusterNode): number {
  const cpu = (node.NodeResources?.Cpu ?? {}) as { CpuShares?: unknown; TotalCpuCores?: unknown };
  const total = typeof cpu.CpuShares === 'number' ? cpu.CpuShares : 0;
  const cores = typeof cpu.TotalCpuCores === 'number' && cpu.TotalCpuCores > 0 ? cpu.TotalCpuCores : 0;
  return cores > 0 ? Math.floor(total / cores) : 0;
}
