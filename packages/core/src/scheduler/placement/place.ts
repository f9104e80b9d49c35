/**
 * The placement function (`Place`, `types.ts`): Nomad's generic stack for `service` and `batch` jobs and its system
 * stack for `system` and `sysbatch` (`scheduler/feasible/stack.go`), over one snapshot, deterministic from the seed.
 *
 * Generic: the ready nodes of the job's pool and datacenters are shuffled once; each placement takes nodes from
 * where the previous one stopped (Nomad's `StaticIterator` goes round, it does not start over), keeps the feasible
 * ones that fit, scores them, and stops after a limited number of scored nodes — `max(2, ⌈log₂ n⌉)` for a service
 * job, 2 for a batch job (the power of two choices), the group's count (at least 100) when it has affinities or
 * spreads, skipping up to three nodes that score 0 or less while others remain (`LimitIterator`) — then takes the
 * highest score. A group that fails once is not tried again in the same call: its later requests are counted in
 * `CoalescedFailures` of the first failure's metrics, as Nomad's `computePlacements`.
 *
 * System: a request names its node (`nodeId`); the node alone is checked and bin-packed. A request whose node was
 * filtered by constraints is not a failure unless every request of its group was filtered and the job runs none of
 * the group yet (Nomad's system scheduler); one whose node is not ready (or not in the job's pool and datacenters)
 * is dropped, as Nomad drops it.
 *
 * What the caller passes in `snapshot.allocs` holds resources: leave out the allocations the plan stops (the
 * reconciler's `stop`). The allocation a request replaces (`previousAlloc`) is treated as stopped while the request
 * is placed and after; if the request fails, a rescheduled or destructively updated one holds its resources again
 * (its stop is dropped), a lost or migrated one does not (its stop stands), as Nomad's plan does.
 *
 * `AllocationTime` is the one figure not derived from the inputs: the time each attempt took, as Nomad reports it.
 */
import { bexprReady } from '../../lib/bexpr.ts';
import type { Allocation } from '../cluster/allocations/model.ts';
import type { AllocatedResources, AllocMetric } from '../cluster/allocations/resources.ts';
import type { Job, TaskGroup } from '../cluster/jobs/model.ts';
import type { ClusterNode } from '../cluster/nodes/model.ts';
import { type GroupAsk, groupAsk } from './asks.ts';
import { type Candidates, inAnyDatacenter, inJobPool, readyNodes } from './candidates.ts';
import { newConstraintCache } from './constraints.ts';
import { Feasibility } from './feasibility.ts';
import { exhaustResources, MetricRecorder } from './metrics.ts';
import type { PropertyContext } from './property-set.ts';
import { clientTerminal, type HeldAlloc, ProposedState } from './proposed.ts';
import { grantedResources, type RankContext, type RankedNode, Ranker } from './rank.ts';
import { type Random, seededRandom, shuffle } from './shuffle.ts';
import { SpreadScorer } from './spread.ts';
import { defaultNodeLimitForFeasibilityChecks, type PlacementSettings } from '../cluster/scheduler-config/model.ts';
import {
  type Place,
  type Placement,
  type PlacementRequest,
  type PlacementResult,
  groupKey,
  type JobRef,
  priorityKey,
  type Snapshot,
} from './types.ts';
import { parallelPenalty } from './preemption.ts';

/** Nomad's `skipScoreThreshold` and `maxSkip` (`LimitIterator`). */
const skipScoreThreshold = 0;
const maxSkip = 3;
/**
 * Nomad's defaults: `binpack`, preemption for system jobs only, 100 nodes for groups with affinities or spreads, no
 * memory oversubscription.
 */
const defaultSettings = (job: Job): PlacementSettings => ({
  algorithm: 'binpack',
  preempt: job.Type === 'system',
  nodeLimit: defaultNodeLimitForFeasibilityChecks,
  memoryOversubscription: false,
});

export const isSystemJob = (job: Pick<Job, 'Type'>): boolean => job.Type === 'system' || job.Type === 'sysbatch';

/** Nomad's limit on scored nodes for a generic job over `n` candidates (before affinities or spreads raise it). */
export const candidateLimit = (type: string, n: number): number =>
  type === 'batch' || n === 0 ? 2 : Math.max(2, Math.ceil(Math.log2(n)));

/** A reschedule's or destructive update's stop holds only if its replacement is placed; a lost or migrated one's always. */
const stopHoldsOnlyIfPlaced = (request: PlacementRequest): boolean =>
  request.replacing !== 'lost' && request.replacing !== 'migrate';

const nanoseconds = (startedMs: number) => Math.round((performance.now() - startedMs) * 1e6);

/** The shared state of one call. */
class Call {
  readonly proposed: ProposedState;
  readonly feasibility: Feasibility;
  readonly ranker: Ranker;
  readonly spread: SpreadScorer;
  readonly candidates: Candidates;
  readonly random: Random;
  readonly placements: Placement[] = [];
  readonly failed: Record<string, AllocMetric> = {};
  private readonly asks = new Map<string, GroupAsk>();
  private readonly placed: HeldAlloc[] = [];
  private readonly stopped = new Set<HeldAlloc>();
  private readonly groups: Map<string, TaskGroup>;

  readonly settings: PlacementSettings;
  /** The evictions this call's placements made, per group (`groupKey`), for Nomad's `max_parallel` penalty. */
  private readonly evictions = new Map<string, number>();
  /** The jobs whose priority preemption asked for and `snapshot.priorities` did not hold (`PlacementResult.lacked`). */
  readonly lacked = new Map<string, JobRef>();

  constructor(
    snapshot: Snapshot,
    readonly job: Job,
    seed: string,
    settings?: PlacementSettings,
  ) {
    this.settings = settings ?? defaultSettings(job);
    const held = snapshot.allocs.filter((alloc) => !clientTerminal(alloc));
    this.proposed = new ProposedState(held);
    const cache = newConstraintCache();
    const context: PropertyContext = {
      nodesById: new Map(snapshot.nodes.map((node) => [node.ID, node])),
      jobAllocs: snapshot.allocs.filter((alloc) => alloc.JobID === job.ID && alloc.Namespace === job.Namespace),
      placed: this.placed,
      stopped: this.stopped,
    };
    this.feasibility = new Feasibility(job, cache, context);
    this.spread = new SpreadScorer(context);
    this.random = seededRandom(seed);
    const priorities = snapshot.priorities;
    const maxParallel = snapshot.maxParallel;
    const evictions = this.evictions;
    const lacked = this.lacked;
    this.ranker = new Ranker(job, this.proposed, cache, this.random, this.spread, {
      algorithm: this.settings.algorithm,
      priorityOf: (alloc) => {
        const key = priorityKey(alloc.Namespace, alloc.JobID);
        const priority = priorities?.get(key);
        if (priority === undefined) lacked.set(key, { Namespace: alloc.Namespace, JobID: alloc.JobID });
        return priority;
      },
      penaltyOf: (alloc) => {
        const key = groupKey(alloc.Namespace, alloc.JobID, alloc.TaskGroup);
        return parallelPenalty(maxParallel?.get(key) ?? 0, evictions.get(key) ?? 0);
      },
    });
    this.candidates = readyNodes(snapshot.nodes, job);
    this.groups = new Map(job.TaskGroups.map((group) => [group.Name, group]));
  }

  ask(name: string): GroupAsk {
    let found = this.asks.get(name);
    if (!found) {
      const group = this.groups.get(name);
      if (!group) throw new Error(`placement asked for task group "${name}", which job "${this.job.ID}" does not have`);
      found = groupAsk(this.job, group);
      this.asks.set(name, found);
    }
    return found;
  }

  /** Stops (or restores) the allocation a request replaces, for the resources and the property counts. */
  setStopping(alloc: Allocation | undefined, stopping: boolean): void {
    if (!alloc || clientTerminal(alloc)) return;
    this.proposed.setStopping(alloc, stopping);
    if (stopping) this.stopped.add(alloc);
    else this.stopped.delete(alloc);
    this.feasibility.setCleared(alloc, stopping);
    this.spread.setCleared(alloc, stopping);
  }

  /** Records a placement on its node and in every count that reads it. */
  commit(request: PlacementRequest, ranked: RankedNode, metrics: AllocMetric): void {
    const resources = grantedResources(this.ask(request.group), ranked, this.settings.memoryOversubscription);
    const held: HeldAlloc = {
      ID: `placement:${this.placements.length}`,
      Namespace: this.job.Namespace,
      JobID: this.job.ID,
      TaskGroup: request.group,
      NodeID: ranked.node.ID,
      AllocatedResources: resources,
    };
    const preempted = (ranked.preempted ?? []) as Allocation[];
    for (const alloc of preempted) {
      this.setStopping(alloc, true);
      const key = groupKey(alloc.Namespace, alloc.JobID, alloc.TaskGroup);
      this.evictions.set(key, (this.evictions.get(key) ?? 0) + 1);
    }
    this.proposed.place(held);
    this.placed.push(held);
    this.feasibility.addProposed(held);
    this.spread.addProposed(held);
    this.placements.push({
      request,
      node: ranked.node,
      resources,
      metrics,
      ...(preempted.length > 0 ? { preempted } : {}),
    });
  }

  finish(metrics: MetricRecorder): AllocMetric {
    metrics.metric.NodesAvailable = { ...this.candidates.byDatacenter };
    metrics.metric.NodesInPool = this.candidates.nodes.length;
    metrics.metric.NodePool = this.job.NodePool;
    metrics.populateScoreMetaData();
    return metrics.metric;
  }

  /** Nomad's coalescing: true when the group already failed in this call (the request is then counted there). */
  coalesced(group: GroupAsk): boolean {
    const metric = this.failed[group.name];
    if (!metric) return false;
    metric.CoalescedFailures++;
    exhaustResources(metric, group.tasks);
    return true;
  }
}

/** Nomad's generic stack over the shuffled candidates: the source's position carries over between selections. */
class GenericStack {
  private readonly shuffled: ClusterNode[];
  private nodes: ClusterNode[];
  private offset = 0;
  private limit: number;
  /** Whether this selection may evict lower-priority allocations (Nomad's `SelectOptions.Preempt`). */
  preempt = false;

  constructor(
    private readonly call: Call,
    nodes?: ClusterNode[],
  ) {
    this.shuffled = nodes ?? shuffle([...call.candidates.nodes], call.random);
    this.nodes = this.shuffled;
    this.limit = candidateLimit(call.job.Type, this.nodes.length);
  }

  /**
   * Nomad's `Select` with preferred nodes: the preferred node alone first; the source is then set back to every
   * node, from the start (Nomad's `SetNodes` resets the position too).
   */
  selectPreferring(
    preferred: ClusterNode,
    group: GroupAsk,
    penaltyNodes: ReadonlySet<string> | undefined,
  ): { option: RankedNode | null; metrics: MetricRecorder } {
    this.nodes = [preferred];
    this.offset = 0;
    let metrics = new MetricRecorder();
    let option = this.select(group, penaltyNodes, metrics);
    this.nodes = this.shuffled;
    this.offset = 0;
    if (!option) {
      metrics = new MetricRecorder();
      option = this.select(group, penaltyNodes, metrics);
    }
    return { option, metrics };
  }

  select(group: GroupAsk, penaltyNodes: ReadonlySet<string> | undefined, metrics: MetricRecorder): RankedNode | null {
    const spreads = this.call.spread.setGroup(group);
    // Nomad raises the limit for a group with affinities or spreads, and the raise stays for later groups.
    if (group.affinities.length > 0 || spreads) this.limit = Math.max(group.count, this.call.settings.nodeLimit);
    const context: RankContext = { group, metrics, penaltyNodes, generic: true, spreads, preempt: this.preempt };
    let seen = 0;
    const source = (): RankedNode | null => {
      const n = this.nodes.length;
      while (true) {
        if (this.offset === n || seen === n) {
          if (seen === n) return null;
          this.offset = 0;
        }
        const node = this.nodes[this.offset++] as ClusterNode;
        seen++;
        metrics.evaluateNode();
        const state = this.call.proposed.node(node.ID);
        if (!this.call.feasibility.feasible(node, state, group, metrics, true)) continue;
        const ranked = this.call.ranker.rank(node, state, context);
        if (ranked) return ranked;
      }
    };
    // Nomad's LimitIterator: at most `limit` options, skipping up to maxSkip that score at or below the threshold.
    const skipped: RankedNode[] = [];
    let skippedIndex = 0;
    let returned = 0;
    const nextOption = (): RankedNode | null => {
      const option = source();
      if (option === null && skippedIndex < skipped.length) return skipped[skippedIndex++] as RankedNode;
      return option;
    };
    const limited = (): RankedNode | null => {
      if (returned === this.limit) return null;
      let option = nextOption();
      if (option === null) return null;
      while (option !== null && option.finalScore <= skipScoreThreshold && skipped.length < maxSkip) {
        skipped.push(option);
        option = source();
      }
      returned++;
      return option ?? nextOption();
    };
    let best: RankedNode | null = null;
    for (let option = limited(); option !== null; option = limited())
      if (best === null || option.finalScore > best.finalScore) best = option;
    return best;
  }
}

/**
 * Nomad's `findPreferredNode`: a replacement of an allocation whose group keeps its ephemeral disk (sticky or
 * migrated) tries the previous allocation's node first, if that node is still a candidate (ready, and in the job's
 * pool and datacenters: a changed pool or datacenter list does not pull the allocation back).
 */
function preferredNode(call: Call, request: PlacementRequest, group: GroupAsk): ClusterNode | undefined {
  if (!request.previousAlloc || !group.stickyDisk) return undefined;
  const nodeId = request.previousAlloc.NodeID;
  return call.candidates.nodes.find((node) => node.ID === nodeId);
}

function placeGeneric(call: Call, requests: PlacementRequest[]): void {
  const stack = new GenericStack(call);
  for (const request of requests) {
    const group = call.ask(request.group);
    if (call.coalesced(group)) continue;
    const started = performance.now();
    call.setStopping(request.previousAlloc, true);
    const penalty = request.penaltyNodeIds?.length ? new Set(request.penaltyNodeIds) : undefined;
    const preferred = preferredNode(call, request, group);
    let option: RankedNode | null;
    let metrics: MetricRecorder;
    const select = () => {
      if (preferred) return stack.selectPreferring(preferred, group, penalty);
      const metrics = new MetricRecorder();
      return { option: stack.select(group, penalty, metrics), metrics };
    };
    ({ option, metrics } = select());
    // Nomad's selectNextOption: nothing fits, so the stack runs again allowed to evict, if the job's type may.
    if (!option && call.settings.preempt) {
      stack.preempt = true;
      ({ option, metrics } = select());
      stack.preempt = false;
    }
    metrics.metric.AllocationTime = nanoseconds(started);
    const metric = call.finish(metrics);
    if (option) call.commit(request, option, metric);
    else {
      exhaustResources(metric, group.tasks);
      call.failed[group.name] = metric;
      if (stopHoldsOnlyIfPlaced(request)) call.setStopping(request.previousAlloc, false);
    }
  }
}

/** Nomad's `mergeNodeFiltered`. */
function mergeFiltered(into: AllocMetric | undefined, more: AllocMetric): AllocMetric {
  if (!into) return structuredClone(more);
  into.NodesEvaluated += more.NodesEvaluated;
  into.NodesFiltered += more.NodesFiltered;
  into.ClassFiltered ??= {};
  for (const [key, count] of Object.entries(more.ClassFiltered ?? {}))
    into.ClassFiltered[key] = (into.ClassFiltered[key] ?? 0) + count;
  into.ConstraintFiltered ??= {};
  for (const [key, count] of Object.entries(more.ConstraintFiltered ?? {}))
    into.ConstraintFiltered[key] = (into.ConstraintFiltered[key] ?? 0) + count;
  into.AllocationTime += more.AllocationTime;
  return into;
}

function placeSystem(call: Call, requests: PlacementRequest[], snapshot: Snapshot): void {
  const candidates = new Map(call.candidates.nodes.map((node) => [node.ID, node]));
  const queued = new Map<string, number>();
  for (const request of requests) queued.set(request.group, (queued.get(request.group) ?? 0) + 1);
  const running = new Set(
    snapshot.allocs
      .filter(
        (alloc) => alloc.JobID === call.job.ID && alloc.Namespace === call.job.Namespace && !clientTerminal(alloc),
      )
      .map((alloc) => alloc.TaskGroup),
  );
  const filtered = new Map<string, AllocMetric>();
  for (const request of requests) {
    const node = request.nodeId === undefined ? undefined : candidates.get(request.nodeId);
    if (!node) continue;
    const group = call.ask(request.group);
    const started = performance.now();
    call.setStopping(request.previousAlloc, true);
    const metrics = new MetricRecorder();
    call.feasibility.resetClasses();
    metrics.evaluateNode();
    let option: RankedNode | null = null;
    const state = call.proposed.node(node.ID);
    if (call.feasibility.feasible(node, state, group, metrics, false))
      option = call.ranker.rank(node, state, {
        group,
        metrics,
        penaltyNodes: undefined,
        generic: false,
        spreads: false,
        preempt: call.settings.preempt,
      });
    metrics.metric.AllocationTime = nanoseconds(started);
    if (option) {
      call.commit(request, option, call.finish(metrics));
      continue;
    }
    if (stopHoldsOnlyIfPlaced(request)) call.setStopping(request.previousAlloc, false);
    if (metrics.metric.NodesFiltered > 0) {
      const left = (queued.get(group.name) ?? 0) - 1;
      queued.set(group.name, left);
      const merged = mergeFiltered(filtered.get(group.name), metrics.metric);
      filtered.set(group.name, merged);
      if (left <= 0 && !running.has(group.name)) call.failed[group.name] = merged;
      continue;
    }
    if (call.coalesced(group)) continue;
    const metric = call.finish(metrics);
    exhaustResources(metric, group.tasks);
    call.failed[group.name] = metric;
  }
}

/**
 * What placement loads on first need, loaded: RE2 for `regexp` constraints and affinities (the bundle keeps it in a
 * chunk of its own, as `lib/bexpr.ts` does). A bundled caller awaits this before `place`; outside a bundle RE2 loads
 * synchronously and this is not needed.
 */
export async function placementReady(job: Job): Promise<void> {
  if (JSON.stringify(job).includes('"regexp"')) await bexprReady('matches');
}

export const place: Place = (snapshot, job, requests, seed, settings): PlacementResult => {
  const call = new Call(snapshot, job, seed, settings);
  if (isSystemJob(job)) placeSystem(call, requests, snapshot);
  else placeGeneric(call, requests);
  const { classes, escaped } = call.feasibility.classReport();
  return {
    placements: call.placements,
    failed: call.failed,
    classEligibility: classes,
    escapedComputedClass: escaped,
    ...(call.lacked.size > 0 ? { lackedPriorities: [...call.lacked.values()] } : {}),
  };
};

/**
 * The nodes a system (or sysbatch) job's group may run on: the ready nodes of its pool and datacenters that pass its
 * constraints and drivers (the reconciler asks one placement per node; this says which nodes are worth asking).
 */
export function feasibleSystemNodes(snapshot: Snapshot, job: Job, groupName: string): ClusterNode[] {
  const call = new Call(snapshot, job, '');
  const group = call.ask(groupName);
  return call.candidates.nodes.filter((node) => {
    call.feasibility.resetClasses();
    return call.feasibility.feasible(node, call.proposed.node(node.ID), group, new MetricRecorder(), false);
  });
}

/**
 * Nomad's in-place update check (`genericAllocUpdateFn`), for `ReconcileInput.fitsInPlace` and for the resources of
 * an allocation updated in place: the job's new version of the allocation's group, checked and bin-packed on the
 * allocation's node alone with the allocation itself freed; the resources it would hold (its ports, devices and
 * reserved cores kept, as Nomad keeps the existing offers), or null when it does not fit there (then the update is
 * destructive). A node outside the job's datacenters or pool does not fit. The checks share one snapshot and do not see each other, as
 * Nomad's do not (the in-place updates join the plan after reconciliation).
 */
export function inPlaceUpdate(
  snapshot: Snapshot,
  seed: string,
  settings?: PlacementSettings,
): (alloc: Allocation, job: Job, node: ClusterNode) => AllocatedResources | null {
  const calls = new WeakMap<Job, Call>();
  return (alloc, job, node) => {
    if (!inJobPool(node, job.NodePool) || !inAnyDatacenter(node, job.Datacenters.length > 0 ? job.Datacenters : ['*']))
      return null;
    let call = calls.get(job);
    if (!call) {
      call = new Call(snapshot, job, seed, settings);
      calls.set(job, call);
    }
    const group = call.ask(alloc.TaskGroup);
    call.setStopping(alloc, true);
    const option = new GenericStack(call, [node]).select(group, undefined, new MetricRecorder());
    call.setStopping(alloc, false);
    if (!option) return null;
    const resources = grantedResources(group, option, call.settings.memoryOversubscription);
    const existing = alloc.AllocatedResources;
    for (const [task, granted] of Object.entries(resources.Tasks)) {
      granted.Networks = existing?.Tasks?.[task]?.Networks ?? null;
      granted.Devices = existing?.Tasks?.[task]?.Devices ?? null;
      const cores = existing?.Tasks?.[task]?.Cpu?.ReservedCores;
      if (cores && cores.length > 0) granted.Cpu.ReservedCores = cores;
    }
    resources.Shared.Networks = existing?.Shared?.Networks ?? null;
    resources.Shared.Ports = existing?.Shared?.Ports ?? null;
    return resources;
  };
}
