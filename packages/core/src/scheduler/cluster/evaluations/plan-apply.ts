/**
 * Plan apply (Nomad's `nomad/plan_apply.go`): the allocations an evaluation decided to place, stop or update, written
 * as transactions of the scheduler's state, each conditional on every touched node's allocation version.
 *
 * A node's allocation version is its beat's `allocIndex` (`nodes/store.ts`), moved by every write that changes the
 * node's allocations and by a drain or an eligibility change. The plan was computed on the versions in `nodeVersions`;
 * a node whose version moved since then (another evaluation placed there meanwhile, or the node was drained or marked
 * ineligible) is left out of the commit, and its part of the plan is reported back
 * (`rejectedNodes`) for the worker to compute again on a fresh snapshot, as Nomad's planner answers a partial commit
 * with a `RefreshIndex`. So two evaluations never over-commit a node: the second one's placements on a node the first
 * one changed do not commit. The rest of the plan commits (partially, as Nomad's may).
 *
 * DynamoDB holds at most 100 writes in a transaction and 400 KB in an item (the events of one write are one item), so
 * a large plan is several transactions, each holding whole nodes: a node's allocations and its beat together.
 */
import type { Write } from '../../../storage/store.ts';
import { type PendingEvent, type SchedulerState, type TableName, WriteConditionFailed } from '../../state.ts';
import {
  allocationEvent,
  type Allocations,
  type StoredAllocation,
  terminalClientStatuses,
} from '../allocations/store.ts';
import { allocationServicesRemoval } from '../services/store.ts';
import type { ClusterDeployment } from '../deployments/model.ts';
import { terminalAlloc } from '../deployments/promotion.ts';
import type { DeploymentChanges, Deployments } from '../deployments/store.ts';
import type { ClusterNodes } from '../nodes/store.ts';
import type { CountedChange } from '../jobs/summary.ts';
import type { Jobs } from '../jobs/store.ts';
import { evaluationEvent, pendingEvaluation } from './model.ts';
import type { Evaluations } from './store.ts';

/** What one transaction of a plan may hold besides the state's own writes (index, table indexes, events). */
const writesPerTransaction = 90;
/** What the events of one transaction may weigh as JSON (they are one item, at most 400 KB). */
const eventBytesPerTransaction = 200 * 1024;

/** A change to an allocation already placed, applied to the allocation as it is when the write is made. */
export interface AllocationChange {
  id: string;
  nodeId: string;
  change: (current: StoredAllocation, index: number) => StoredAllocation;
}

export interface Plan {
  /** New allocations, complete but for their indexes (set to the write's). */
  place: StoredAllocation[];
  /** Changes of placed allocations (stops, in-place updates, follow-up evaluation IDs). */
  update: AllocationChange[];
  /** Per node touched, the allocation version (`allocIndex`) the plan was computed on. */
  nodeVersions: Map<string, number>;
  /** The event type of the writes (`PlanResult`). */
  eventType?: string;
  /** The deployment the plan creates and status changes of others, written with its first transaction. */
  deployments?: DeploymentChanges;
}

/** What plan apply needs to evaluate the jobs a plan preempts (Nomad's `PreemptionEvals`). */
export interface PreemptionParts {
  jobs: Pick<Jobs, 'get'>;
  evaluations: Pick<Evaluations, 'put'>;
}

export interface ApplyResult {
  placed: StoredAllocation[];
  updated: StoredAllocation[];
  /** Nodes whose version moved since the plan was computed: none of their part was written. */
  rejectedNodes: Set<string>;
  /** The index of the last transaction, 0 when nothing was written. */
  index: number;
}

interface NodePart {
  nodeId: string;
  place: StoredAllocation[];
  update: AllocationChange[];
}

export class PlanApplier {
  constructor(
    private readonly state: SchedulerState,
    private readonly nodes: ClusterNodes,
    private readonly allocations: Allocations,
    private readonly deployments?: Deployments,
    private readonly preemption?: PreemptionParts,
  ) {}

  /** Whether the plan changes any deployment (a plan may do only that: a deployment made successful). */
  static changesDeployments(plan: Plan): boolean {
    return Boolean(plan.deployments?.created) || (plan.deployments?.updates.length ?? 0) > 0;
  }

  async apply(plan: Plan): Promise<ApplyResult> {
    const result: ApplyResult = { placed: [], updated: [], rejectedNodes: new Set(), index: 0 };
    const versions = new Map(plan.nodeVersions);
    // The deployments as this plan's committed transactions left them; the first one carries the plan's changes.
    const deployed = new Map<string, ClusterDeployment>();
    let deploymentsPending = PlanApplier.changesDeployments(plan);
    // The preempted jobs already given an evaluation by an earlier transaction of this plan.
    const evaluatedJobs = new Set<string>();
    const nodeBatches = batches(byNode(plan));
    if (nodeBatches.length === 0 && deploymentsPending) nodeBatches.push([]);
    for (const batch of nodeBatches) {
      let deployedNow = new Map<string, ClusterDeployment>();
      // Filled by the last run of the write's plan (it runs again when another writer took the index first).
      let outcome = {
        placed: [] as StoredAllocation[],
        updated: [] as StoredAllocation[],
        rejected: [] as string[],
        evaluated: [] as string[],
      };
      let index: number | undefined;
      try {
        index = await this.state.commit(async (index) => {
          outcome = { placed: [], updated: [], rejected: [], evaluated: [] };
          const items: Write[] = [];
          const joined: StoredAllocation[] = [];
          const removals: PendingEvent[] = [];
          const counted: CountedChange[] = [];
          // The deployments whose allocations this write stops or evicts (or a client's loss) in a way their check reads.
          const watched = new Set<string>();
          // The jobs whose allocations this write evicts (Nomad's preempted jobs).
          const evictedJobs = new Map<string, { namespace: string; jobId: string }>();
          const tables = new Set<TableName>(['allocs']);
          // The batch's beats in one batch read (a GetItem each made a large plan's transactions wait on reads).
          const beats = await this.nodes.beats(batch.map((part) => part.nodeId));
          for (const part of batch) {
            const beat = beats.get(part.nodeId);
            const expected = versions.get(part.nodeId) ?? 0;
            // A node purged: what the plan stops there commits (its allocations are lost: Nomad's plan apply checks
            // only placements against a node); nothing may be placed on it.
            const purged = !beat && part.place.length === 0;
            // A node gone, or changed since the plan: none of its part commits (Nomad's plan apply refuses it too).
            if (
              !purged &&
              (!beat || (beat.allocIndex ?? 0) !== expected || (part.place.length > 0 && beat.status !== 'ready'))
            ) {
              outcome.rejected.push(part.nodeId);
              continue;
            }
            const current =
              part.update.length > 0
                ? new Map((await this.allocations.onNode(part.nodeId)).map((alloc) => [alloc.ID, alloc]))
                : new Map<string, StoredAllocation>();
            for (const alloc of part.place) {
              const stored = { ...alloc, CreateIndex: index, ModifyIndex: index, AllocModifyIndex: index };
              items.push(...this.allocations.created(stored));
              outcome.placed.push(stored);
            }
            for (const { id, change } of part.update) {
              const before = current.get(id);
              if (!before) continue;
              const after = { ...change(before, index), ModifyIndex: index, AllocModifyIndex: index };
              items.push(this.allocations.updated(after, before));
              outcome.updated.push(after);
              counted.push({ before, after });
              if (after.DeploymentID && terminalAlloc(before) !== terminalAlloc(after)) watched.add(after.DeploymentID);
              if (after.DesiredStatus === 'evict' && before.DesiredStatus !== 'evict')
                evictedJobs.set(`${after.Namespace}\u0000${after.JobID}`, {
                  namespace: after.Namespace,
                  jobId: after.JobID,
                });
              if (after.DeploymentID && after.DeploymentID !== before.DeploymentID) joined.push(after);
              if (
                terminalClientStatuses.includes(after.ClientStatus) &&
                !terminalClientStatuses.includes(before.ClientStatus)
              ) {
                // A lost allocation's services go with it, in the same write (Nomad's DeleteByAllocID path).
                const removal = await allocationServicesRemoval(
                  this.state.store,
                  after.ID,
                  plan.eventType ?? 'PlanResult',
                );
                items.push(...removal.items);
                removals.push(...removal.events);
                for (const table of removal.tables) tables.add(table);
              }
            }
            // A stop or an eviction makes no room yet (Nomad's plan apply unblocks nothing): the work runs until the
            // node's client reports it ended, and that report records the room (`cluster/nodes/capacity.ts`).
            if (beat) items.push(this.nodes.allocIndexWrite(beat, index));
          }
          const written = [...outcome.placed, ...outcome.updated];
          // The allocations counted in their job's summary, in the same write (Nomad's updateSummaryWithAlloc).
          const summaryWrites = await this.allocations.summaries.allocationWrites(
            [...outcome.placed.map((after) => ({ after })), ...counted],
            index,
          );
          items.push(...summaryWrites);
          if (summaryWrites.length > 0) tables.add('job_summary');
          // Allocations that join a deployment count in it (Nomad's state store: new, or of another deployment).
          joined.push(...outcome.placed.filter((alloc) => alloc.DeploymentID));
          const deploymentWrites =
            this.deployments && (deploymentsPending || joined.length > 0)
              ? await this.deployments.planWrites(
                  index,
                  this.state.clock.now() * 1e6,
                  plan.deployments ?? { updates: [] },
                  joined,
                  deploymentsPending,
                  deployed,
                )
              : undefined;
          deployedNow = deploymentWrites?.after ?? new Map();
          if (written.length === 0 && (deploymentWrites?.items.length ?? 0) === 0) return undefined;
          const events = written.map((alloc) => allocationEvent(plan.eventType ?? 'PlanResult', alloc));
          // Nomad's plan apply: each job whose allocations this write evicts gets a `preemption` evaluation with it.
          outcome.evaluated = [];
          for (const [key, { namespace, jobId }] of evictedJobs) {
            if (evaluatedJobs.has(key) || !this.preemption) continue;
            const job = await this.preemption.jobs.get(namespace, jobId);
            if (!job) continue;
            const evaluation = pendingEvaluation(
              {
                Namespace: namespace,
                Priority: job.Priority,
                Type: job.Type,
                TriggeredBy: 'preemption',
                JobID: jobId,
                JobModifyIndex: 0,
              },
              index,
              this.state.clock.now(),
            );
            items.push(this.preemption.evaluations.put(evaluation));
            events.push(evaluationEvent(plan.eventType ?? 'PlanResult', evaluation));
            tables.add('evals');
            outcome.evaluated.push(key);
          }
          items.push(...(deploymentWrites?.items ?? []));
          if (deploymentWrites?.items.length) tables.add('deployment');
          // An allocation stopped, lost or evicted in a deployment this write does not put: the deployment is due now
          // on the watcher's queue, in this write (a group no longer done can bring its progress cutoff forward).
          if (this.deployments) {
            if (watched.size > 0)
              items.push(...(await this.deployments.dueNowWrites(watched, new Set(deployedNow.keys()))));
          }
          // A deployment that succeeded made its job version stable in the same write.
          if (deploymentWrites?.events.some((event) => event.Topic === 'Job')) tables.add('jobs');
          // A write of deployments alone moves no allocation (a blocked evaluation waits for one that does).
          if (written.length === 0) tables.delete('allocs');
          return {
            items,
            tables: [...tables],
            events: [...events, ...removals, ...(deploymentWrites?.events ?? [])],
          };
        });
      } catch (error) {
        // A write's own condition failed (an allocation or beat changed in a way the index did not show): none of
        // this transaction was written; its nodes are computed again.
        if (!(error instanceof WriteConditionFailed)) throw error;
        for (const part of batch) result.rejectedNodes.add(part.nodeId);
        continue;
      }
      for (const node of outcome.rejected) result.rejectedNodes.add(node);
      if (index === undefined) continue;
      deploymentsPending = false;
      for (const key of outcome.evaluated) evaluatedJobs.add(key);
      for (const [id, deployment] of deployedNow) deployed.set(id, deployment);
      result.index = index;
      result.placed.push(...outcome.placed);
      result.updated.push(...outcome.updated);
      for (const part of batch) if (!outcome.rejected.includes(part.nodeId)) versions.set(part.nodeId, index);
    }
    return result;
  }
}

function byNode(plan: Plan): NodePart[] {
  const parts = new Map<string, NodePart>();
  const part = (nodeId: string) => {
    let found = parts.get(nodeId);
    if (!found) {
      found = { nodeId, place: [], update: [] };
      parts.set(nodeId, found);
    }
    return found;
  };
  for (const alloc of plan.place) part(alloc.NodeID).place.push(alloc);
  for (const change of plan.update) part(change.nodeId).update.push(change);
  return [...parts.values()];
}

/**
 * The writes (3 per new allocation, up to 3 per change, 1 for the beat, 1 for the record of room a stop makes) and
 * event bytes a node part costs.
 */
function cost(part: NodePart): { writes: number; bytes: number } {
  const bytes =
    part.place.reduce((sum, alloc) => sum + Buffer.byteLength(JSON.stringify(alloc)), 0) + part.update.length * 4096;
  // A change counts 3: its put, and room for the deletes of a lost allocation's service registration.
  return { writes: part.place.length * 3 + part.update.length * 3 + 2, bytes };
}

/**
 * The node parts grouped into transactions. A node too large for one is split into several parts, each written with
 * the node's beat, one after the other (the version each expects is the one the part before wrote).
 */
function batches(parts: NodePart[]): NodePart[][] {
  const pieces: NodePart[] = [];
  for (const part of parts) {
    let piece: NodePart = { nodeId: part.nodeId, place: [], update: [] };
    const flush = () => {
      if (piece.place.length + piece.update.length > 0) pieces.push(piece);
      piece = { nodeId: part.nodeId, place: [], update: [] };
    };
    for (const alloc of part.place) {
      const next = { ...piece, place: [...piece.place, alloc] };
      const { writes, bytes } = cost(next);
      if (writes > writesPerTransaction || bytes > eventBytesPerTransaction) flush();
      piece.place.push(alloc);
    }
    for (const change of part.update) {
      const next = { ...piece, update: [...piece.update, change] };
      const { writes, bytes } = cost(next);
      if (writes > writesPerTransaction || bytes > eventBytesPerTransaction) flush();
      piece.update.push(change);
    }
    flush();
  }
  const out: NodePart[][] = [];
  let current: NodePart[] = [];
  let writes = 0;
  let bytes = 0;
  for (const piece of pieces) {
    const spent = cost(piece);
    const sameNodeAlready = current.some((other) => other.nodeId === piece.nodeId);
    if (
      current.length > 0 &&
      (sameNodeAlready ||
        writes + spent.writes > writesPerTransaction ||
        bytes + spent.bytes > eventBytesPerTransaction)
    ) {
      out.push(current);
      current = [];
      writes = 0;
      bytes = 0;
    }
    current.push(piece);
    writes += spent.writes;
    bytes += spent.bytes;
  }
  if (current.length > 0) out.push(current);
  return out;
}
