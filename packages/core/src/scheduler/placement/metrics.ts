/**
 * Nomad's `AllocMetric` as one placement attempt fills it (`nomad/structs/alloc.go`): nodes evaluated, filtered (by
 * class and by the constraint's string), exhausted (by class and dimension), the scores of each node ranked, and
 * the top five by normalized score (`ScoreMetaData`, Nomad's `MaxRetainedNodeScores`).
 */
import type { AllocMetric, NodeScoreMeta } from '../cluster/allocations/resources.ts';
import type { ClusterNode } from '../cluster/nodes/model.ts';
import type { TaskAsk } from './asks.ts';

export const maxRetainedNodeScores = 5;
export const normScorerName = 'normalized-score';

export const emptyMetric = (): AllocMetric => ({
  NodesEvaluated: 0,
  NodesFiltered: 0,
  NodesInPool: 0,
  NodePool: '',
  NodesAvailable: {},
  ClassFiltered: null,
  ConstraintFiltered: null,
  NodesExhausted: 0,
  ClassExhausted: null,
  DimensionExhausted: null,
  QuotaExhausted: null,
  ResourcesExhausted: null,
  Scores: null,
  ScoreMetaData: null,
  AllocationTime: 0,
  CoalescedFailures: 0,
});

const bump = (map: Record<string, number> | null, key: string): Record<string, number> => {
  const into = map ?? {};
  into[key] = (into[key] ?? 0) + 1;
  return into;
};

/** One attempt's metric, with the scoring state Nomad keeps beside it (`nodeScoreMeta`, `topScores`). */
export class MetricRecorder {
  readonly metric: AllocMetric = emptyMetric();
  /** The node being scored and its scores so far (Nomad's `nodeScoreMeta`). */
  private currentNode = '';
  private readonly names: string[] = [];
  private readonly values: number[] = [];
  private readonly top: NodeScoreMeta[] = [];

  evaluateNode(): void {
    this.metric.NodesEvaluated++;
  }

  filterNode(node: ClusterNode, constraint: string): void {
    this.metric.NodesFiltered++;
    if (node.NodeClass !== '') this.metric.ClassFiltered = bump(this.metric.ClassFiltered, node.NodeClass);
    if (constraint !== '') this.metric.ConstraintFiltered = bump(this.metric.ConstraintFiltered, constraint);
  }

  exhaustedNode(node: ClusterNode, dimension: string): void {
    this.metric.NodesExhausted++;
    if (node.NodeClass !== '') this.metric.ClassExhausted = bump(this.metric.ClassExhausted, node.NodeClass);
    if (dimension !== '') this.metric.DimensionExhausted = bump(this.metric.DimensionExhausted, dimension);
  }

  /**
   * Nomad's `ScoreNode`: a scorer's score of a node; the normalized one closes the node's entry, which is kept if it
   * is among the best (the entry is built only then: most nodes scored are not).
   */
  scoreNode(node: ClusterNode, name: string, score: number): void {
    if (this.currentNode !== node.ID) {
      this.currentNode = node.ID;
      this.names.length = 0;
      this.values.length = 0;
    }
    if (name !== normScorerName) {
      this.names.push(name);
      this.values.push(score);
      return;
    }
    this.currentNode = '';
    if (this.top.length >= maxRetainedNodeScores && !(score > (this.top[this.lowest()] as NodeScoreMeta).NormScore))
      return;
    const scores: Record<string, number> = {};
    for (let i = 0; i < this.names.length; i++) scores[this.names[i] as string] = this.values[i] as number;
    this.pushTop({ NodeID: node.ID, Scores: scores, NormScore: score });
  }

  private lowest(): number {
    let lowest = 0;
    for (let i = 1; i < this.top.length; i++)
      if ((this.top[i] as NodeScoreMeta).NormScore < (this.top[lowest] as NodeScoreMeta).NormScore) lowest = i;
    return lowest;
  }

  /** Nomad's bounded score heap: keeps the highest `maxRetainedNodeScores`, a newcomer replacing the lowest if higher. */
  private pushTop(entry: NodeScoreMeta): void {
    if (this.top.length < maxRetainedNodeScores) this.top.push(entry);
    else this.top[this.lowest()] = entry;
  }

  /** Nomad's `PopulateScoreMetaData`: the retained scores, highest first. */
  populateScoreMetaData(): void {
    if (this.top.length === 0) return;
    this.metric.ScoreMetaData = [...this.top].sort((a, b) => b.NormScore - a.NormScore);
  }
}

/** Nomad's `ExhaustResources`: the resources of the group's tasks, for the exhausted CPU and memory dimensions. */
export function exhaustResources(metric: AllocMetric, tasks: TaskAsk[]): void {
  const dimensions = metric.DimensionExhausted;
  if (!dimensions) return;
  const exhausted = (metric.ResourcesExhausted ?? {}) as Record<string, { CPU: number; MemoryMB: number }>;
  for (const task of tasks) {
    const entry = exhausted[task.name] ?? emptyResources();
    if ((dimensions.memory ?? 0) > 0) entry.MemoryMB += task.memoryMB;
    if ((dimensions.cpu ?? 0) > 0) entry.CPU += task.cpu;
    exhausted[task.name] = entry;
  }
  metric.ResourcesExhausted = exhausted;
}

/** Nomad's `Resources` zero value, as its JSON shows it. */
const emptyResources = () => ({
  CPU: 0,
  Cores: 0,
  MemoryMB: 0,
  MemoryMaxMB: 0,
  SecretsMB: 0,
  DiskMB: 0,
  IOPS: 0,
  Networks: null,
  Devices: null,
  NUMA: null,
});
