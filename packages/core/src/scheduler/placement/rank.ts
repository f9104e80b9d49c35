/**
 * The score of a feasible node, as Nomad's rank iterators chain them (`scheduler/feasible/rank.go`): bin-packing
 * (the ports offered and CPU, memory and disk fitting, else the node is exhausted on that dimension), then for
 * service and batch jobs the anti-affinity to the job's own allocations of the group, the reschedule penalty, the
 * affinities and the spreads; the final score is the mean of the scores the node got (a scorer with nothing to say
 * adds none, though the metric shows its 0).
 */
import type { AllocatedResources, AllocatedTaskResources } from '../cluster/allocations/resources.ts';
import type { Job } from '../cluster/jobs/model.ts';
import type { ClusterNode } from '../cluster/nodes/model.ts';
import type { GroupAsk } from './asks.ts';
import { type ConstraintCache, meetsConstraint } from './constraints.ts';
import { type MetricRecorder, normScorerName } from './metrics.ts';
import type { ProposedState } from './proposed.ts';
import {
  binPackFitness,
  type Capacity,
  capacityOf,
  exhaustedDimension,
  maxFitScore,
  type Usage,
  usageOf,
} from './resources.ts';
import type { Random } from './shuffle.ts';
import type { SpreadScorer } from './spread.ts';

export interface RankedNode {
  node: ClusterNode;
  finalScore: number;
  resources: AllocatedResources;
}

/** What scoring one group's placement needs beside the node. */
export interface RankContext {
  group: GroupAsk;
  metrics: MetricRecorder;
  /** Nodes scored down (the nodes earlier attempts failed on). */
  penaltyNodes: ReadonlySet<string>;
  /** The generic stack's scorers (service, batch); the system stack only bin-packs. */
  generic: boolean;
  /** Whether the group has spreads to score (`SpreadScorer.setGroup`). */
  spreads: boolean;
}

export class Ranker {
  private readonly capacities = new Map<string, Capacity>();

  constructor(
    private readonly job: Job,
    private readonly proposed: ProposedState,
    private readonly cache: ConstraintCache,
    private readonly random: Random,
    private readonly spread: SpreadScorer,
  ) {}

  private capacity(node: ClusterNode): Capacity {
    let found = this.capacities.get(node.ID);
    if (!found) {
      found = capacityOf(node);
      this.capacities.set(node.ID, found);
    }
    return found;
  }

  /** Nomad's `BinPackIterator` for one node: the resources granted, or null when the node is exhausted. */
  private binPack(node: ClusterNode, context: RankContext): { resources: AllocatedResources; used: Usage } | null {
    const { group, metrics } = context;
    const ports = this.proposed.ports(node);
    if (ports.error) {
      metrics.exhaustedNode(node, ports.error);
      return null;
    }
    const resources: AllocatedResources = {
      Tasks: {},
      TaskLifecycles: {},
      Shared: { DiskMB: group.diskMB, Networks: null, Ports: null },
    };
    if (group.network) {
      const assigned = ports.index.assignPorts(group.network, this.random);
      if ('error' in assigned) {
        metrics.exhaustedNode(node, `network: ${assigned.error}`);
        return null;
      }
      resources.Shared.Networks = [ports.index.networkResource(group.network, assigned.offer)];
      resources.Shared.Ports = assigned.offer;
    }
    for (const task of group.tasks) {
      const granted: AllocatedTaskResources = {
        Cpu: { CpuShares: task.cpu, ReservedCores: null },
        Memory: { MemoryMB: task.memoryMB, MemoryMaxMB: 0 },
        Networks: null,
        Devices: null,
      };
      resources.Tasks[task.name] = granted;
      resources.TaskLifecycles[task.name] = task.lifecycle;
    }
    const used = usageOf(resources);
    const held = this.proposed.node(node.ID).usage;
    used.cpu += held.cpu;
    used.memoryMB += held.memoryMB;
    used.diskMB += held.diskMB;
    const dimension = exhaustedDimension(this.capacity(node), used);
    if (dimension) {
      metrics.exhaustedNode(node, dimension);
      return null;
    }
    return { resources, used };
  }

  /** The node ranked for the group, or null when it is exhausted. */
  rank(node: ClusterNode, context: RankContext): RankedNode | null {
    const packed = this.binPack(node, context);
    if (!packed) return null;
    const { group, metrics } = context;
    const scores: number[] = [];
    const binpack = binPackFitness(this.capacity(node), packed.used) / maxFitScore;
    scores.push(binpack);
    metrics.scoreNode(node, 'binpack', binpack);
    if (context.generic) {
      let collisions = 0;
      for (const alloc of this.proposed.node(node.ID).allocs)
        if (alloc.JobID === this.job.ID && alloc.TaskGroup === group.name) collisions++;
      if (collisions > 0) {
        const penalty = (-1 * (collisions + 1)) / group.count;
        scores.push(penalty);
        metrics.scoreNode(node, 'job-anti-affinity', penalty);
      } else metrics.scoreNode(node, 'job-anti-affinity', 0);
      if (context.penaltyNodes.has(node.ID)) {
        scores.push(-1);
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
        scores.push(affinityScore);
        metrics.scoreNode(node, 'node-affinity', affinityScore);
      }
      if (context.spreads) {
        const spreadScore = this.spread.score(node, group.name);
        if (spreadScore !== 0) {
          scores.push(spreadScore);
          metrics.scoreNode(node, 'allocation-spread', spreadScore);
        }
      }
    }
    let sum = 0;
    for (const score of scores) sum += score;
    const finalScore = sum / scores.length;
    metrics.scoreNode(node, normScorerName, finalScore);
    return { node, finalScore, resources: packed.resources };
  }
}
