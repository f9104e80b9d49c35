/**
 * The score of a feasible node, as Nomad's rank iterators chain them (`scheduler/feasible/rank.go`): bin-packing
 * (the ports offered and CPU, memory and disk fitting, else the node is exhausted on that dimension), then for
 * service and batch jobs the anti-affinity to the job's own allocations of the group, the reschedule penalty, the
 * affinities and the spreads; the final score is the mean of the scores the node got (a scorer with nothing to say
 * adds none, though the metric shows its 0).
 */
import type {
  AllocatedDeviceResource,
  AllocatedResources,
  AllocatedTaskResources,
} from '../cluster/allocations/resources.ts';
import { assignDevices, heldDevices, instanceKey } from './devices.ts';
import { preemptForDevice } from './device-preemption.ts';
import type { Job } from '../cluster/jobs/model.ts';
import type { ClusterNode } from '../cluster/nodes/model.ts';
import type { GroupAsk } from './asks.ts';
import { type ConstraintCache, meetsConstraint } from './constraints.ts';
import { type MetricRecorder, normScorerName } from './metrics.ts';
import { NetworkIndex, networkResource, type Offer } from './ports.ts';
import { preemptFor, preemptForPorts, preemptionScore } from './preemption.ts';
import type { HeldAlloc, NodeState, ProposedState } from './proposed.ts';
import {
  binPackFitness,
  type Capacity,
  capacityOf,
  coreMhz,
  exhaustedDimension,
  maxFitScore,
  reservableCores,
  spreadFitness,
  subtractUsage,
  type Usage,
  usageOf,
} from './resources.ts';
import type { Random } from './shuffle.ts';
import type { SpreadScorer } from './spread.ts';

export interface RankedNode {
  node: ClusterNode;
  finalScore: number;
  /** The group network granted (ports offered, on the node's host address), when the group asks for one. */
  network: { offer: Offer; hostIP: string } | null;
  /** The device instances granted to each task that asks for devices. */
  devices: Record<string, AllocatedDeviceResource[]> | null;
  /** The cores reserved for each task that asks for cores, and the MHz they give it. */
  cores: Record<string, { ids: number[]; cpu: number }> | null;
  /** The allocations evicted to make room (Nomad's `PreemptedAllocs`), when the group fits only so. */
  preempted?: HeldAlloc[];
}

/** What the scheduler configuration sets for ranking (`cluster/scheduler-config/model.ts`). */
export interface RankOptions {
  /** `binpack` (Nomad's `ScoreFitBinPack`) or `spread` (`ScoreFitSpread`). */
  algorithm: 'binpack' | 'spread';
  /** The priority of an allocation's job (for preemption), undefined when unknown. */
  priorityOf: (alloc: HeldAlloc) => number | undefined;
  /** Nomad's `max_parallel` penalty of a preemption candidate (given the plan's evictions so far). */
  penaltyOf?: (alloc: HeldAlloc) => number;
}

/** What scoring one group's placement needs beside the node. */
export interface RankContext {
  group: GroupAsk;
  metrics: MetricRecorder;
  /** Nodes scored down (the nodes earlier attempts failed on). */
  penaltyNodes: ReadonlySet<string> | undefined;
  /** The generic stack's scorers (service, batch); the system stack only bin-packs. */
  generic: boolean;
  /** Whether the group has spreads to score (`SpreadScorer.setGroup`). */
  spreads: boolean;
  /** Whether allocations of lower-priority jobs may be evicted to fit (Nomad's `BinPackIterator.evict`). */
  preempt?: boolean;
}

/**
 * The resources a placement of `group` grants (Nomad's `AllocatedResources` of the chosen option); a task's
 * `memory_max` only when the scheduler configuration enables memory oversubscription (else 0, as Nomad's).
 */
export function grantedResources(
  group: GroupAsk,
  ranked: RankedNode,
  memoryOversubscription = false,
): AllocatedResources {
  const resources: AllocatedResources = {
    Tasks: {},
    TaskLifecycles: {},
    Shared: {
      DiskMB: group.diskMB,
      Networks:
        ranked.network && group.network
          ? [networkResource(group.network, ranked.network.offer, ranked.network.hostIP)]
          : null,
      Ports: ranked.network ? ranked.network.offer : null,
    },
  };
  for (const task of group.tasks) {
    const pinned = ranked.cores?.[task.name];
    const granted: AllocatedTaskResources = {
      Cpu: pinned ? { CpuShares: pinned.cpu, ReservedCores: pinned.ids } : { CpuShares: task.cpu, ReservedCores: null },
      Memory: { MemoryMB: task.memoryMB, MemoryMaxMB: memoryOversubscription ? task.memoryMaxMB : 0 },
      Networks: null,
      Devices: ranked.devices?.[task.name] ?? null,
    };
    resources.Tasks[task.name] = granted;
    resources.TaskLifecycles[task.name] = task.lifecycle ? { ...task.lifecycle } : null;
  }
  return resources;
}

export class Ranker {
  constructor(
    private readonly job: Job,
    private readonly proposed: ProposedState,
    private readonly cache: ConstraintCache,
    private readonly random: Random,
    private readonly spread: SpreadScorer,
    private readonly options: RankOptions = { algorithm: 'binpack', priorityOf: () => undefined },
  ) {}

  private fitness(capacity: Capacity, used: Usage): number {
    return (this.options.algorithm === 'spread' ? spreadFitness : binPackFitness)(capacity, used) / maxFitScore;
  }

  /**
   * The device instances granted to each task of the group that asks for devices, none held by the node's
   * allocations (less `evictions`) or granted to the group's earlier requests; null when a request cannot be met.
   * When the placement may evict, a request short of free instances evicts what `preemptForDevice` chooses (added
   * to `evictions`) and is granted from what that frees, as Nomad's BinPackIterator does.
   */
  private grantDevices(
    node: ClusterNode,
    state: NodeState,
    context: RankContext,
    evictions: HeldAlloc[],
  ): Record<string, AllocatedDeviceResource[]> | null {
    const kept = () =>
      evictions.length > 0 ? state.allocs.filter((alloc) => !evictions.includes(alloc)) : state.allocs;
    const grantedKeys: string[] = [];
    let held = heldDevices(kept());
    const devices: Record<string, AllocatedDeviceResource[]> = {};
    for (const task of context.group.tasks) {
      if (task.devices.length === 0) continue;
      const granted: AllocatedDeviceResource[] = [];
      for (const ask of task.devices) {
        let offer = assignDevices(node, [ask], held);
        if (!offer && context.preempt) {
          const evicted = preemptForDevice({
            node,
            ask,
            allocs: kept(),
            held,
            job: this.job,
            priorityOf: this.options.priorityOf,
          });
          if (evicted) {
            evictions.push(...evicted);
            held = heldDevices(kept());
            for (const key of grantedKeys) held.add(key);
            offer = assignDevices(node, [ask], held);
          }
        }
        if (!offer) return null;
        for (const device of offer)
          for (const id of device.DeviceIDs) grantedKeys.push(instanceKey(device.Vendor, device.Type, device.Name, id));
        granted.push(...offer);
      }
      devices[task.name] = granted;
    }
    return devices;
  }

  /**
   * Nomad's `BinPackIterator` for one node: the node's normalized fitness with the group placed and the network
   * granted, or null when the node is exhausted (recorded in the metrics on the dimension).
   */
  private binPack(
    node: ClusterNode,
    state: NodeState,
    context: RankContext,
  ): (Pick<RankedNode, 'network' | 'cores' | 'devices' | 'preempted'> & { fitness: number }) | null {
    const { group, metrics } = context;
    const ports = this.proposed.ports(node, state);
    if (ports.error) {
      metrics.exhaustedNode(node, ports.error);
      return null;
    }
    let network: RankedNode['network'] = null;
    // The allocations evicted for the group's static ports (Nomad's PreemptForNetwork) and devices
    // (PreemptForDevice), when they are taken: Nomad removes them from the node's proposed allocations.
    const evictions: HeldAlloc[] = [];
    if (group.network) {
      let index = ports.index;
      let assigned = index.assignPorts(group.network, this.random);
      if ('error' in assigned && context.preempt) {
        const evicted = preemptForPorts({
          allocs: state.allocs,
          ports: group.network.ReservedPorts.map((port) => port.Value),
          job: this.job,
          priorityOf: this.options.priorityOf,
        });
        if (evicted) {
          const gone = new Set(evicted.map((alloc) => alloc.ID));
          index = new NetworkIndex();
          index.setNode(node);
          for (const alloc of state.allocs) if (!gone.has(alloc.ID)) index.addAlloc(alloc);
          assigned = index.assignPorts(group.network, this.random);
          if (!('error' in assigned)) evictions.push(...evicted);
        }
      }
      if ('error' in assigned) {
        metrics.exhaustedNode(node, `network: ${assigned.error}`);
        return null;
      }
      network = { offer: assigned.offer, hostIP: index.hostIP };
    }
    let devices: RankedNode['devices'] = null;
    if (group.devices.length > 0) {
      devices = this.grantDevices(node, state, context, evictions);
      if (!devices) {
        metrics.exhaustedNode(node, 'devices: no devices match request');
        return null;
      }
    }
    state.capacity ??= capacityOf(node);
    let cores: RankedNode['cores'] = null;
    let coresCpu = 0;
    if (group.cores > 0) {
      // The cores of the allocations evicted for ports or devices are free again (Nomad selects from `proposed`).
      let consumed = this.proposed.consumedCores(state);
      if (evictions.length > 0) {
        consumed = new Set(consumed);
        for (const alloc of evictions)
          for (const task of Object.values(alloc.AllocatedResources?.Tasks ?? {}))
            for (const core of task.Cpu?.ReservedCores ?? []) consumed.delete(core);
      }
      const available = reservableCores(node).filter((core) => !consumed.has(core));
      if (available.length < group.cores) {
        metrics.exhaustedNode(node, 'cores');
        return null;
      }
      const mhz = coreMhz(node);
      cores = {};
      let next = 0;
      for (const task of group.tasks) {
        if (task.cores <= 0) continue;
        const ids = available.slice(next, next + task.cores);
        next += task.cores;
        cores[task.name] = { ids, cpu: ids.length * mhz };
        coresCpu += ids.length * mhz;
      }
    }
    // What the node's allocations hold, less those evicted for the ports and devices.
    const held: Usage = { ...state.usage };
    for (const alloc of evictions) subtractUsage(held, usageOf(alloc.AllocatedResources));
    const remaining = evictions.length > 0 ? state.allocs.filter((alloc) => !evictions.includes(alloc)) : state.allocs;
    const used: Usage = {
      cpu: held.cpu + group.cpu + coresCpu,
      memoryMB: held.memoryMB + group.memoryMB,
      diskMB: held.diskMB + group.diskMB,
    };
    const dimension = exhaustedDimension(state.capacity, used);
    if (dimension) {
      const preempted = context.preempt
        ? preemptFor({
            capacity: state.capacity,
            used: held,
            allocs: remaining,
            ask: { cpu: group.cpu + coresCpu, memoryMB: group.memoryMB, diskMB: group.diskMB },
            job: this.job,
            priorityOf: this.options.priorityOf,
            ...(this.options.penaltyOf ? { penaltyOf: this.options.penaltyOf } : {}),
          })
        : null;
      if (!preempted) {
        metrics.exhaustedNode(node, dimension);
        return null;
      }
      // Nomad scores the fit over the node's allocations before the evictions (an over-full node: binpack's best).
      return {
        fitness: this.fitness(state.capacity, used),
        network,
        cores,
        devices,
        preempted: [...evictions, ...preempted],
      };
    }
    return {
      fitness: this.fitness(state.capacity, used),
      network,
      cores,
      devices,
      ...(evictions.length > 0 ? { preempted: evictions } : {}),
    };
  }

  /** The node ranked for the group, or null when it is exhausted. */
  rank(node: ClusterNode, state: NodeState, context: RankContext): RankedNode | null {
    const packed = this.binPack(node, state, context);
    if (!packed) return null;
    const { group, metrics } = context;
    let sum = packed.fitness;
    let scores = 1;
    metrics.scoreNode(node, 'binpack', packed.fitness);
    if (context.generic) {
      let collisions = 0;
      for (const alloc of state.allocs) if (alloc.JobID === this.job.ID && alloc.TaskGroup === group.name) collisions++;
      if (collisions > 0) {
        const penalty = (-1 * (collisions + 1)) / group.count;
        sum += penalty;
        scores++;
        metrics.scoreNode(node, 'job-anti-affinity', penalty);
      } else metrics.scoreNode(node, 'job-anti-affinity', 0);
      if (context.penaltyNodes?.has(node.ID)) {
        sum += -1;
        scores++;
        metrics.scoreNode(node, 'node-reschedule-penalty', -1);
      } else metrics.scoreNode(node, 'node-reschedule-penalty', 0);
      if (group.affinities.length === 0) metrics.scoreNode(node, 'node-affinity', 0);
      else {
        let sumWeight = 0;
        let total = 0;
        for (const affinity of group.affinities) {
          sumWeight += Math.abs(affinity.Weight);
          if (meetsConstraint(this.cache, affinity, node)) total += affinity.Weight;
        }
        const affinityScore = total / sumWeight;
        sum += affinityScore;
        scores++;
        metrics.scoreNode(node, 'node-affinity', affinityScore);
      }
      if (context.spreads) {
        const spreadScore = this.spread.score(node, group.name);
        if (spreadScore !== 0) {
          sum += spreadScore;
          scores++;
          metrics.scoreNode(node, 'allocation-spread', spreadScore);
        }
      }
      if (packed.preempted) {
        const score = preemptionScore(packed.preempted.map((alloc) => this.options.priorityOf(alloc) ?? 0));
        sum += score;
        scores++;
        metrics.scoreNode(node, 'preemption', score);
      }
    }
    const finalScore = sum / scores;
    metrics.scoreNode(node, normScorerName, finalScore);
    return {
      node,
      finalScore,
      network: packed.network,
      cores: packed.cores,
      devices: packed.devices,
      ...(packed.preempted ? { preempted: packed.preempted } : {}),
    };
  }
}
