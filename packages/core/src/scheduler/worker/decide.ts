/**
 * One evaluation's decision, shared by the evaluation worker (`evaluation-worker.ts`) and the job plan dry run
 * (`job-plan.ts`, `PUT /v1/job/:id/plan`): the snapshot it reads (the job, its versions and allocations, the nodes and
 * the allocations on them, each node's allocation version) and the reconciler and placement over it.
 */
import { type Allocation, isTerminal } from '../cluster/allocations/model.ts';
import type { StoredAllocation } from '../cluster/allocations/store.ts';
import type { Evaluation } from '../cluster/evaluations/model.ts';
import type { ClusterDeployment } from '../cluster/deployments/model.ts';
import type { Job } from '../cluster/jobs/model.ts';
import { inDatacenters } from '../cluster/jobs/system-jobs.ts';
import type { ClusterNode } from '../cluster/nodes/model.ts';
import { inPlaceUpdate, place } from '../placement/place.ts';
import { reconcile } from '../placement/reconcile.ts';
import type { AllocatedResources, PlacementResult, Reconciliation } from '../placement/types.ts';
import { addPriority, settlePriorities } from './lazy-priorities.ts';
import { type PlacementSettings, placementSettings } from '../cluster/scheduler-config/model.ts';
import type { WorkerParts } from './outcome.ts';

export interface EvaluationSnapshot {
  job: Job | undefined;
  jobVersions: Job[];
  nodes: ClusterNode[];
  jobAllocs: StoredAllocation[];
  nodeAllocs: StoredAllocation[];
  /** Per node read, its allocation version (`allocIndex`) before its allocations were read. */
  versions: Map<string, number>;
  /** The job's latest deployment (`cluster/deployments/store.ts`), if any. */
  deployment?: ClusterDeployment | undefined;
  /** What the scheduler configuration sets for the job's placements (Nomad's defaults when absent). */
  settings?: PlacementSettings;
  /**
   * When the job may preempt: the priorities read so far of other jobs with allocations on the nodes read
   * (`priorityKey`), none at first; `decideReading` adds exactly those placement asked for.
   */
  priorities?: Map<string, number>;
  /** With `priorities`: the migrate `max_parallel` of those jobs' groups (`groupKey`), for Nomad's penalty. */
  maxParallel?: Map<string, number>;
}

/**
 * What an evaluation of the job reads: the job (the stored one, or `planned` for a dry run), its versions and
 * allocations, the nodes, and the allocations on the nodes placement may choose or the job's allocations are on.
 */
export async function readSnapshot(
  parts: Pick<WorkerParts, 'jobs' | 'nodes' | 'allocations'> &
    Partial<Pick<WorkerParts, 'deployments' | 'schedulerConfig'>>,
  namespace: string,
  jobId: string,
  planned?: Job,
): Promise<EvaluationSnapshot> {
  const { jobs, nodes, allocations } = parts;
  const job = planned ?? (await jobs.get(namespace, jobId));
  const jobVersions = await jobs.versions(namespace, jobId);
  // Every beat, then every node through those held (each read again only when its beat's node mark moved).
  const { nodes: everyNode, beats, overflow } = await nodes.snapshot();
  allocations.snapshotOverflow(overflow);
  const jobAllocs = await allocations.ofJob(namespace, jobId);
  const deployment = await parts.deployments?.latest(namespace, jobId);
  // The nodes placement may choose, and those the job's allocations are on (a stop or an in-place update there).
  const touched = new Set(jobAllocs.map((alloc) => alloc.NodeID));
  const read = everyNode.filter((node) => touched.has(node.ID) || (job !== undefined && schedulable(node, job)));
  // Each node's version (its beat's, read above) before its allocations: an allocation placed between the two reads
  // moves the version, so the plan then fails on that node instead of over-committing it. A node at version 0 has
  // never had an allocation (every write placing one moves it, and a node registered again after a purge with
  // allocations left starts above 0: `nodes/store.ts` register), so only the others' allocations are read.
  const versions = new Map<string, number>();
  for (const node of read) versions.set(node.ID, beats.get(node.ID)?.allocIndex ?? 0);
  // A node's allocations are read again only when its allocation mark (which every write changing any of them moves,
  // `scheduler/beat-marks.ts`) is not the one the held ones were read under; read after the mark, as the versions.
  const nodeAllocs: StoredAllocation[] = [];
  await Promise.all(
    read
      .filter((node) => (versions.get(node.ID) ?? 0) > 0)
      .map(async (node) => {
        const mark = beats.get(node.ID)?.allocItemsIndex;
        nodeAllocs.push(...(await allocations.onNodeForSnapshot(node.ID, mark)).filter((alloc) => !isTerminal(alloc)));
      }),
  );
  const config = await parts.schedulerConfig?.get();
  const settings = config && job ? placementSettings(config, job.Type) : undefined;
  // A job that may preempt starts with no priorities read: `decideReading` reads those placement asks for.
  const preempts = job !== undefined && (settings ? settings.preempt : job.Type === 'system');
  return {
    job,
    jobVersions,
    nodes: everyNode,
    jobAllocs,
    nodeAllocs,
    versions,
    deployment,
    ...(settings ? { settings } : {}),
    ...(preempts ? { priorities: new Map(), maxParallel: new Map() } : {}),
  };
}

export interface Decision {
  reconciliation: Reconciliation;
  placed: PlacementResult;
  /** Per task group, the allocations left unplaced. */
  queued: Record<string, number>;
  /** Per allocation updated in place, the resources it holds at the job's new version (Nomad's inplaceUpdate). */
  inplaceResources: Map<string, AllocatedResources>;
}

/** The reconciler and placement over a snapshot (`seed` makes placement's shuffle exact). */
export function decide(evaluation: Evaluation, snapshot: EvaluationSnapshot, now: number, seed: string): Decision {
  const job = snapshot.job;
  // Nomad's inplaceUpdate: an update that needs no restart is checked on its node (the allocation itself freed); one
  // that no longer fits there (its resources grew) is destructive instead. What fits is the resources it then holds.
  const fitting = inPlaceUpdate({ nodes: snapshot.nodes, allocs: snapshot.nodeAllocs }, seed, snapshot.settings);
  const inplaceResources = new Map<string, AllocatedResources>();
  const fitsInPlace = (alloc: Allocation, version: Job, node: ClusterNode): boolean => {
    const resources = fitting(alloc, version, node);
    if (resources) inplaceResources.set(alloc.ID, resources);
    else inplaceResources.delete(alloc.ID);
    return resources !== null;
  };
  const reconciliation = reconcile({
    jobId: evaluation.JobID,
    job,
    allocs: snapshot.jobAllocs,
    jobVersions: snapshot.jobVersions,
    nodes: snapshot.nodes,
    evaluation,
    now,
    ...(snapshot.deployment ? { deployment: snapshot.deployment } : {}),
    eligibleNodes: snapshot.nodes.filter((node) => job !== undefined && schedulable(node, job)),
    fitsInPlace,
  });
  const placed =
    job && reconciliation.place.length > 0
      ? place(
          {
            nodes: snapshot.nodes,
            allocs: snapshot.nodeAllocs,
            ...(snapshot.priorities ? { priorities: snapshot.priorities } : {}),
            ...(snapshot.maxParallel ? { maxParallel: snapshot.maxParallel } : {}),
          },
          job,
          reconciliation.place,
          seed,
          snapshot.settings,
        )
      : { placements: [], failed: {} };
  const queued: Record<string, number> = {};
  for (const request of reconciliation.place) queued[request.group] = (queued[request.group] ?? 0) + 1;
  for (const placement of placed.placements)
    queued[placement.request.group] = (queued[placement.request.group] ?? 1) - 1;
  return { reconciliation, placed, queued, inplaceResources };
}

/**
 * `decide`, reading other jobs' priorities only when placement needs them (Nomad needs them only when a node does
 * not fit and the job may evict): placement runs with none read; when it names jobs it lacked, exactly those are read
 * (one GetItem each) and it runs again (the seeded shuffle makes each run exact); should that run lack more, those
 * and every other job on the nodes read are read at once and it runs a last time (`settlePriorities`). The decision is the one placement gives with every priority read up front: each run asks for priorities
 * in the order it needs them, and one that found all it asked for took every branch the full one takes.
 */
export async function decideReading(
  jobs: Pick<WorkerParts['jobs'], 'get'>,
  evaluation: Evaluation,
  snapshot: EvaluationSnapshot,
  now: number,
  seed: string,
): Promise<Decision> {
  const { priorities, maxParallel } = snapshot;
  return settlePriorities(
    () => decide(evaluation, snapshot, now, seed),
    (decision) => decision.placed.lackedPriorities,
    async (refs) => {
      if (!priorities || !maxParallel) return false;
      const found = await Promise.all(refs.map((ref) => jobs.get(ref.Namespace, ref.JobID)));
      for (const other of found) if (other) addPriority(priorities, maxParallel, other);
      return true;
    },
    () =>
      snapshot.nodeAllocs
        .filter((alloc) => alloc.JobID !== evaluation.JobID || alloc.Namespace !== evaluation.Namespace)
        .map((alloc) => ({ Namespace: alloc.Namespace, JobID: alloc.JobID })),
  );
}

/** Nomad's `Node.Ready` in the job's pool: where placement may put the job's allocations. */
export function schedulable(node: ClusterNode, job: Job): boolean {
  return (
    node.Status === 'ready' &&
    node.SchedulingEligibility === 'eligible' &&
    !node.DrainStrategy &&
    (job.NodePool === 'all' || node.NodePool === job.NodePool) &&
    inDatacenters(node, job.Datacenters)
  );
}
