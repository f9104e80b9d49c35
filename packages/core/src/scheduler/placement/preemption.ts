/**
 * Preemption (Nomad's `scheduler/feasible/preemption.go`, `PreemptForTaskGroup`, and the `PreemptionScoringIterator`
 * of `rank.go`): when a group does not fit a node, the allocations of other jobs whose priority is at least 10 below
 * the job's may be evicted to make room. The pure choice:
 *
 * 1. the candidates, grouped by their job's priority, lowest first (an allocation whose job's priority is unknown,
 *    or within 10 of the placing job's, or of the placing job itself, is never a candidate);
 * 2. from the lowest group on, repeatedly the candidate closest to what is still needed (Nomad's
 *    `basicResourceDistance`: the Euclidean distance of the CPU, memory and disk still needed minus the candidate's,
 *    each over what is needed), until the node's free resources plus those taken cover the ask; none if they never do;
 * 3. then the set trimmed (Nomad's `filterSuperset`): sorted by distance to the whole ask, farthest first, taken only
 *    until the ask is covered.
 *
 * CPU, memory and disk are preempted for, a group's static ports (`preemptForPorts`), and its device requests
 * (`device-preemption.ts`), as Nomad's are. Nomad's `maxParallelPenalty` (a migrate block's `max_parallel` spacing
 * evictions of one group) is applied through `PreemptionInput.penaltyOf`.
 */
import type { HeldAlloc } from './proposed.ts';
import { type Capacity, type Usage, usageOf } from './resources.ts';

/** Nomad's `maxParallelPenalty`: the distance added per eviction of a group past its `max_parallel`. */
export const maxParallelPenalty = 50;

/** Nomad's penalty for a candidate whose group has `preempted` evictions in the plan already. */
export function parallelPenalty(maxParallel: number, preempted: number): number {
  return maxParallel > 0 && preempted >= maxParallel ? (preempted + 1 - maxParallel) * maxParallelPenalty : 0;
}

/** Nomad's minimum priority gap: a job preempts only allocations of jobs at least this much lower. */
export const preemptionPriorityDelta = 10;

/** Nomad's `basicResourceDistance`: how far what `used` gives is from `ask`, per dimension over the ask. */
export function resourceDistance(ask: Usage, used: Usage): number {
  const coordinate = (asked: number, given: number) => (asked > 0 ? (asked - given) / asked : 0);
  const memory = coordinate(ask.memoryMB, used.memoryMB);
  const cpu = coordinate(ask.cpu, used.cpu);
  const disk = coordinate(ask.diskMB, used.diskMB);
  return Math.sqrt(memory * memory + cpu * cpu + disk * disk);
}

const covers = (available: Usage, ask: Usage): boolean =>
  available.cpu >= ask.cpu && available.memoryMB >= ask.memoryMB && available.diskMB >= ask.diskMB;

export interface PreemptionInput {
  /** What the node offers (its resources less its reserved ones). */
  capacity: Capacity;
  /** What the node's allocations (those this plan keeps, and its placements) hold now. */
  used: Usage;
  /** The node's allocations (the candidates are among them). */
  allocs: readonly HeldAlloc[];
  /** What the group asks. */
  ask: Usage;
  /** The placing job. */
  job: { ID: string; Namespace: string; Priority: number };
  /** The priority of an allocation's job, undefined when unknown (never preempted). */
  priorityOf: (alloc: HeldAlloc) => number | undefined;
  /** The `max_parallel` penalty of a candidate (`parallelPenalty`), 0 when absent. */
  penaltyOf?: (alloc: HeldAlloc) => number;
}

/** The allocations to evict so that the ask fits the node, or null when no eligible set makes it fit. */
export function preemptFor(input: PreemptionInput): HeldAlloc[] | null {
  const { capacity, used, ask, job } = input;
  const byPriority = new Map<number, { alloc: HeldAlloc; usage: Usage }[]>();
  for (const alloc of input.allocs) {
    if (alloc.JobID === job.ID && alloc.Namespace === job.Namespace) continue;
    const priority = input.priorityOf(alloc);
    if (priority === undefined || job.Priority - priority < preemptionPriorityDelta) continue;
    const group = byPriority.get(priority) ?? [];
    group.push({ alloc, usage: usageOf(alloc.AllocatedResources) });
    byPriority.set(priority, group);
  }
  const free: Usage = {
    cpu: capacity.cpu - used.cpu,
    memoryMB: capacity.memoryMB - used.memoryMB,
    diskMB: capacity.diskMB - used.diskMB,
  };
  const available = { ...free };
  const needed = { ...ask };
  const chosen: { alloc: HeldAlloc; usage: Usage }[] = [];
  let met = false;
  for (const priority of [...byPriority.keys()].sort((a, b) => a - b)) {
    const group = [...(byPriority.get(priority) ?? [])];
    while (group.length > 0 && !met) {
      let closest = 0;
      let best = Number.POSITIVE_INFINITY;
      group.forEach((candidate, index) => {
        const distance = resourceDistance(needed, candidate.usage) + (input.penaltyOf?.(candidate.alloc) ?? 0);
        if (distance < best) {
          best = distance;
          closest = index;
        }
      });
      const [taken] = group.splice(closest, 1) as [{ alloc: HeldAlloc; usage: Usage }];
      available.cpu += taken.usage.cpu;
      available.memoryMB += taken.usage.memoryMB;
      available.diskMB += taken.usage.diskMB;
      met = covers(available, ask);
      chosen.push(taken);
      needed.cpu -= taken.usage.cpu;
      needed.memoryMB -= taken.usage.memoryMB;
      needed.diskMB -= taken.usage.diskMB;
    }
    if (met) break;
  }
  if (!met) return null;
  // Nomad's filterSuperset: farthest from the ask first, kept only until the ask is covered.
  const sorted = [...chosen].sort((a, b) => resourceDistance(ask, b.usage) - resourceDistance(ask, a.usage));
  const kept: HeldAlloc[] = [];
  const room = { ...free };
  for (const { alloc, usage } of sorted) {
    kept.push(alloc);
    room.cpu += usage.cpu;
    room.memoryMB += usage.memoryMB;
    room.diskMB += usage.diskMB;
    if (covers(room, ask)) break;
  }
  return kept;
}

/**
 * Nomad's preemption score of a node (`netPriority`, `preemptionScore`): the highest evicted priority plus the sum
 * over the highest, through a logistic curve that is 0.5 at 2048, so evicting fewer and lower allocations scores higher.
 */
export function preemptionScore(priorities: readonly number[]): number {
  let max = 0;
  let sum = 0;
  for (const priority of priorities) {
    if (priority > max) max = priority;
    sum += priority;
  }
  const net = max + sum / max;
  return 1 / (1 + Math.exp(0.0048 * (net - 2048)));
}

/** The static ports an allocation holds (Nomad's `ReservedPorts` of its networks: the group's, then its tasks'). */
function staticPortsOf(alloc: HeldAlloc): number[] {
  const resources = alloc.AllocatedResources;
  if (!resources) return [];
  const networks = [
    ...(resources.Shared?.Networks ?? []),
    ...Object.values(resources.Tasks ?? {}).flatMap((task) => task?.Networks ?? []),
  ];
  return networks.flatMap((network) => (network?.ReservedPorts ?? []).map((port) => port.Value));
}

export interface PortPreemptionInput {
  /** The node's allocations. */
  allocs: readonly HeldAlloc[];
  /** The static ports the group asks. */
  ports: readonly number[];
  job: { ID: string; Namespace: string; Priority: number };
  priorityOf: (alloc: HeldAlloc) => number | undefined;
}

/**
 * Nomad's `PreemptForNetwork` for the ports a group asks statically: the allocations of jobs at least 10 priority
 * points lower that hold one of them; null when none does, or when one is held by an allocation that may not be
 * preempted (Nomad then skips the node). Bandwidth is not asked here (Nomad's `MBits` is 0 unless a job sets it),
 * so the ports are the whole requirement.
 */
export function preemptForPorts(input: PortPreemptionInput): HeldAlloc[] | null {
  const asked = new Set(input.ports);
  if (asked.size === 0) return null;
  const holders: HeldAlloc[] = [];
  for (const alloc of input.allocs) {
    if (alloc.JobID === input.job.ID && alloc.Namespace === input.job.Namespace) continue;
    const held = staticPortsOf(alloc).filter((port) => asked.has(port));
    if (held.length === 0) continue;
    const priority = input.priorityOf(alloc);
    if (priority === undefined || input.job.Priority - priority < preemptionPriorityDelta) return null;
    holders.push(alloc);
  }
  return holders.length > 0 ? holders : null;
}
