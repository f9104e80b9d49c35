/**
 * Allocations in the table (keys: `keys.ts`, `allocNodePk`). Three items per allocation, all authenticated:
 *
 * - the allocation, in its node's partition (`allocNodePk(node)`, its ID): the `Allocation` without its job (a read
 *   rehydrates the job from its version item: `withJob`) and with the job's type (for list stubs), in the compact
 *   form of `item-form.ts`, through which every read and write of it goes;
 * - a link by job (`allocJobPk(namespace, job)`, its ID) and a link by ID (`ALLOC_ID_PK`, sharded), each naming the
 *   node, written once when the allocation is placed: an allocation never moves to another node or job.
 *
 * So a node's allocations are one strongly consistent Query (the client's map, plan apply), a job's one Query and a
 * batch read, one by ID two reads. Writes that change allocations are the plan apply's (`evaluations/plan-apply.ts`),
 * the client's updates and the stop (below), the deployment watcher's, the evaluation outcome's marks and the garbage
 * collection's deletes; each is one `SchedulerState.commit` with its events, which moves the allocation mark of each
 * node whose partition it changes (`scheduler/beat-marks.ts`).
 */
import { VerifiedCache } from '../../../storage/verified-cache.ts';
import { badRequest, DomainError, notFound } from '../../../lib/errors.ts';
import { shardCount, shardKey } from '../../../storage/due.ts';
import { itemKind } from '../../../storage/item-mac.ts';
import type { Item, Key, Write } from '../../../storage/store.ts';
import { sameContent, unchangedSince } from '../../acl/common.ts';
import { ALLOC_ID_PK, allocJobPk, allocNodePk } from '../../keys.ts';
import { type PendingEvent, type SchedulerState, type TableName, WriteConditionFailed } from '../../state.ts';
import { type Evaluation, evaluationEvent, pendingEvaluation } from '../evaluations/model.ts';
import type { Evaluations } from '../evaluations/store.ts';
import { allocationServicesRemoval } from '../services/store.ts';
import type { Jobs } from '../jobs/store.ts';
import type { JobSummaries } from '../jobs/summary.ts';
import { derivedJobStatus, type Job } from '../jobs/model.ts';
import { validUuid } from '../nodes/model.ts';
import {
  type AllocDeploymentStatus,
  type Allocation,
  type ClientStatus,
  isTerminal,
  type StoredAllocation,
  type TaskState,
} from './model.ts';
import { allocationJson } from './json.ts';
import { allocationItem, allocationOfItem } from './item-form.ts';
import type { ClusterDeployment } from '../deployments/model.ts';
import { withAllocHealth } from '../deployments/health.ts';
import { deploymentEvent, type Deployments, type QueuedDeployment } from '../deployments/store.ts';
import { allocationFreed, CapacityLog } from '../nodes/capacity.ts';

export const allocationKind = itemKind('scheduler-allocation');
export const allocationLinkKind = itemKind('scheduler-allocation-link');

/** What a link holds: where the allocation is. */
interface AllocationLink extends Item {
  NodeID: string;
  Namespace: string;
  JobID: string;
}

export type { StoredAllocation } from './model.ts';

/** Client statuses that never change again (Nomad's `terminalAllocationStatuses`). */
export const terminalClientStatuses: readonly ClientStatus[] = ['complete', 'failed', 'lost'];

/** The largest allocation kept, as JSON: one item (DynamoDB's 400 KB), and its event beside others in one. */
const maxAllocationBytes = 64 * 1024;
/** The most one report may change, as JSON: its events are one item beside the evaluations' (DynamoDB's 400 KB). */
const maxReportBytes = 256 * 1024;
/** The most writes one report's transaction may carry beside the state's own (DynamoDB takes 100 in all). */
const maxReportWrites = 90;

/** Task events kept per task of an allocation: the last ten, as Nomad's client keeps. */
const taskEventsKept = 10;

/** What a node reports of one of its allocations (Nomad's `Node.UpdateAlloc`: the client-owned fields only). */
export interface ClientAllocUpdate {
  ID: string;
  ClientStatus: ClientStatus;
  ClientDescription?: string | undefined;
  TaskStates?: Record<string, TaskState> | null | undefined;
  DeploymentStatus?: { Healthy: boolean | null; Timestamp?: string | undefined } | null | undefined;
}

/** An Allocation-topic event: the allocation without its job, as Nomad's (`json.ts`); FilterKeys its job and deployment. */
export function allocationEvent(type: string, alloc: Allocation): PendingEvent {
  return {
    Topic: 'Allocation',
    Type: type,
    Key: alloc.ID,
    Namespace: alloc.Namespace,
    FilterKeys: [alloc.JobID, alloc.DeploymentID],
    Payload: { Allocation: allocationJson({ ...alloc, Job: null }) },
  };
}

/** The allocation as Nomad shows it: without the stored job type. */
export function publicAllocation(alloc: Allocation): Allocation {
  const { JobType: _type, ...rest } = alloc as StoredAllocation;
  return rest;
}

/** The allocations a node's agent must act on: not terminal, or told to stop but not yet terminal on the client. */
export const agentMustSee = (alloc: Allocation): boolean => !terminalClientStatuses.includes(alloc.ClientStatus);

/** The most allocations `onNodeForSnapshot` holds verified between reads. */
const heldAllocations = 20_000;

export class Allocations {
  private held: VerifiedCache<StoredAllocation> | undefined;
  private overflowSeen: number | undefined;
  private draining: ((nodeIds: string[]) => Promise<Set<string>>) | undefined;
  private activeDeployment: ((namespace: string, jobId: string) => Promise<boolean>) | undefined;

  constructor(
    private readonly state: SchedulerState,
    private readonly jobs: Jobs,
    private readonly evaluations: Evaluations,
    /** Where a report's health verdicts count (Nomad's updateDeploymentWithAlloc); none in the sweep. */
    private readonly deployments?: Deployments,
  ) {
    jobs.summaries.allocationsWith((namespace, id) => this.ofJob(namespace, id));
  }

  private get store() {
    return this.state.store;
  }

  /** The job summaries that every write of allocations keeps (`jobs/summary.ts`). */
  get summaries(): JobSummaries {
    return this.jobs.summaries;
  }

  static key = (nodeId: string, id: string): Key => ({ pk: allocNodePk(nodeId), sk: id });
  static idLinkKey = (id: string): Key => ({ pk: shardKey(ALLOC_ID_PK, id), sk: id });
  static jobLinkKey = (namespace: string, jobId: string, id: string): Key => ({
    pk: allocJobPk(namespace, jobId),
    sk: id,
  });

  /** The allocation of that ID (its job not rehydrated: `withJob`). */
  async get(id: string): Promise<StoredAllocation | undefined> {
    const linkKey = Allocations.idLinkKey(id);
    const link = await this.store.getVerified<AllocationLink>(allocationLinkKind, linkKey.pk, linkKey.sk);
    if (!link) return undefined;
    const key = Allocations.key(link.NodeID, id);
    const item = await this.store.getVerified(allocationKind, key.pk, key.sk);
    return item && allocationOfItem(item);
  }

  /** Every allocation placed on a node (terminal ones too), sorted by ID: one Query. */
  async onNode(nodeId: string): Promise<StoredAllocation[]> {
    if (!validUuid.test(nodeId)) return [];
    return (await this.store.list(allocNodePk(nodeId)))
      .filter((item) => this.store.verified(allocationKind, item))
      .map(allocationOfItem);
  }

  /**
   * A node's allocations, as `onNode` reads them, but through verified allocations held from the last read
   * (`storage/verified-cache.ts`): the partition's keys and MACs, then only new or changed allocations whole. For the
   * scheduler's snapshot (`worker/decide.ts`), which reads every node's on every evaluation and plan. Frozen.
   * `mark` is the node's allocation mark (its verified beat's `allocItemsIndex`, `scheduler/beat-marks.ts`) read
   * before: while it is the one the held allocations were read under, they are returned without a request.
   */
  async onNodeForSnapshot(nodeId: string, mark?: number): Promise<StoredAllocation[]> {
    if (!validUuid.test(nodeId)) return [];
    this.held ??= new VerifiedCache(() => this.store, allocationKind, allocationOfItem, heldAllocations);
    return this.held.list(allocNodePk(nodeId), mark);
  }

  /**
   * The overflow mark a snapshot read (`scheduler/beat-marks.ts` `marksOverflow`), before its beats: when it moved
   * since the last one, the allocation marks held are dropped.
   */
  snapshotOverflow(overflow: number): void {
    if (this.overflowSeen !== undefined && this.overflowSeen !== overflow) this.held?.forgetMarks();
    this.overflowSeen = overflow;
  }

  /** Every allocation of a job, sorted by ID. */
  async ofJob(namespace: string, jobId: string): Promise<StoredAllocation[]> {
    const links = (await this.store.list<AllocationLink>(allocJobPk(namespace, jobId))).filter((link) =>
      this.store.verified(allocationLinkKind, link),
    );
    return this.fetch(links);
  }

  /** Every allocation, sorted by ID. */
  async list(): Promise<StoredAllocation[]> {
    const shards = await Promise.all(
      Array.from({ length: shardCount }, (_, shard) =>
        this.store.list<AllocationLink>(`${ALLOC_ID_PK}#${String(shard).padStart(2, '0')}`),
      ),
    );
    return this.fetch(shards.flat().filter((link) => this.store.verified(allocationLinkKind, link)));
  }

  private async fetch(links: AllocationLink[]): Promise<StoredAllocation[]> {
    const found = await this.store.batchGet(links.map((link) => Allocations.key(link.NodeID, link.sk)));
    return [...found.values()]
      .filter((item) => this.store.verified(allocationKind, item))
      .map(allocationOfItem)
      .sort((a, b) => (a.ID < b.ID ? -1 : a.ID > b.ID ? 1 : 0));
  }

  /** The allocation with its job as it was at `JobVersion` (the current job when that version is no longer kept). */
  async withJob(alloc: StoredAllocation): Promise<Allocation> {
    const job =
      (await this.jobs.version(alloc.Namespace, alloc.JobID, alloc.JobVersion)) ??
      (await this.jobs.get(alloc.Namespace, alloc.JobID));
    return { ...publicAllocation(alloc), Job: (job as unknown as Record<string, unknown>) ?? null };
  }

  /** The writes of a new allocation: the allocation (which must not exist yet) and its two links. */
  created(alloc: StoredAllocation): Write[] {
    const link = { NodeID: alloc.NodeID, Namespace: alloc.Namespace, JobID: alloc.JobID };
    return [
      { put: this.store.signed(allocationKind, allocationItem(alloc)), when: { absent: true } },
      {
        put: this.store.signed(allocationLinkKind, {
          ...Allocations.jobLinkKey(alloc.Namespace, alloc.JobID, alloc.ID),
          ...link,
        }),
      },
      { put: this.store.signed(allocationLinkKind, { ...Allocations.idLinkKey(alloc.ID), ...link }) },
    ];
  }

  /** The write of a changed allocation, conditional on it being unchanged since `previous` was read. */
  updated(alloc: StoredAllocation, previous: Allocation): Write {
    return {
      put: this.store.signed(allocationKind, allocationItem(alloc)),
      when: unchangedSince(previous),
    };
  }

  /**
   * Stops an allocation as Nomad's `Alloc.Stop`: its `DesiredTransition.Migrate` set (the scheduler then stops it and
   * places a replacement) and a pending `alloc-stop` evaluation for its job, with `AllocationUpdateDesiredStatus`
   * on the Allocation and Evaluation topics, at one index.
   */
  async stop(id: string, noShutdownDelay: boolean): Promise<{ EvalID: string; Index: number }> {
    let evalId = '';
    const index = await this.commitOrExplain(async (index) => {
      const alloc = await this.get(id);
      if (!alloc) throw notFound('alloc not found');
      const job = await this.jobs.get(alloc.Namespace, alloc.JobID);
      const evaluation = pendingEvaluation(
        {
          Namespace: alloc.Namespace,
          Priority: job?.Priority ?? 50,
          Type: job?.Type ?? alloc.JobType,
          TriggeredBy: 'alloc-stop',
          JobID: alloc.JobID,
          JobModifyIndex: job?.ModifyIndex ?? 0,
        },
        index,
        this.state.clock.now(),
      );
      evalId = evaluation.ID;
      const stopped: StoredAllocation = {
        ...alloc,
        DesiredTransition: { ...alloc.DesiredTransition, Migrate: true, NoShutdownDelay: noShutdownDelay },
        ModifyIndex: index,
        ModifyTime: this.state.clock.now() * 1e6,
      };
      return {
        items: [this.updated(stopped, alloc), this.evaluations.put(evaluation)],
        tables: ['allocs', 'evals'],
        events: [
          allocationEvent('AllocationUpdateDesiredStatus', stopped),
          evaluationEvent('AllocationUpdateDesiredStatus', evaluation),
        ],
      };
    });
    return { EvalID: evalId, Index: index as number };
  }

  /**
   * A node's report of its allocations (Nomad's `Node.UpdateAlloc`): only the client's fields change, a terminal
   * client status stays, each changed allocation is one `AllocationUpdated` event, and a newly failed allocation
   * whose job still runs it creates an `alloc-failure` evaluation (one per job), all at one index. An allocation
   * placed on another node refuses the whole report (403); one that no longer exists is skipped, as Nomad skips it.
   */
  async updateFromClient(
    nodeId: string,
    updates: ClientAllocUpdate[],
  ): Promise<{ index: number; deployments: string[] }> {
    let unchangedIndex = 0;
    let deploymentsAfter = new Map<string, ClusterDeployment>();
    const index = await this.commitOrExplain(async (index) => {
      const now = this.state.clock.now();
      // The deployments as read, and as this report's health verdicts leave them.
      const read = new Map<string, QueuedDeployment | undefined>();
      deploymentsAfter = new Map();
      // The deployments whose allocations changed in a way their check reads (client status, health).
      const watched = new Set<string>();
      const current = new Map((await this.onNode(nodeId)).map((alloc) => [alloc.ID, alloc]));
      const reported = new Map(current);
      const items: Write[] = [];
      const events: PendingEvent[] = [];
      const evaluations = new Map<string, Evaluation>();
      const jobs = new Map<string, Job | undefined>();
      const tables = new Set<TableName>(['allocs']);
      const healthier = new Map<string, StoredAllocation>();
      const touched = new Map<string, StoredAllocation>();
      let reportBytes = 0;
      let freed = false;
      for (const update of updates) {
        const existing = current.get(update.ID);
        if (!existing) {
          if (await this.get(update.ID)) throw new DomainError('denied', 'Permission denied');
          continue;
        }
        const next = clientUpdated(existing, update, index, now);
        if (!next) continue;
        const size = Buffer.byteLength(JSON.stringify(next));
        if (size > maxAllocationBytes)
          throw badRequest(
            `allocation ${next.ID} would be ${size} bytes as JSON; at most ${maxAllocationBytes} are kept`,
          );
        reportBytes += size;
        if (reportBytes > maxReportBytes)
          throw badRequest(
            `the report's allocations are over ${maxReportBytes} bytes as JSON: send them in several reports`,
          );
        current.set(next.ID, next);
        touched.set(`${next.Namespace}\u0000${next.JobID}`, next);
        items.push(this.updated(next, existing));
        if (allocationFreed(existing, next)) freed = true;
        events.push(allocationEvent('AllocationUpdated', next));
        if (next.DeploymentID && this.deployments) {
          if (!read.has(next.DeploymentID))
            read.set(next.DeploymentID, await this.deployments.getQueued(next.DeploymentID));
          if (
            next.ClientStatus !== existing.ClientStatus ||
            !sameContent(next.DeploymentStatus, existing.DeploymentStatus)
          )
            watched.add(next.DeploymentID);
          const deployment = deploymentsAfter.get(next.DeploymentID) ?? read.get(next.DeploymentID)?.deployment;
          const after = deployment && withAllocHealth(deployment, existing, next, index, now * 1e6);
          if (after) deploymentsAfter.set(after.ID, after);
        }
        if (
          terminalClientStatuses.includes(next.ClientStatus) &&
          !terminalClientStatuses.includes(existing.ClientStatus)
        ) {
          // Nomad's deregisterServicesForTerminalAllocs: a terminal allocation's services go in the same write.
          const removal = await allocationServicesRemoval(this.store, next.ID, 'AllocationUpdated');
          items.push(...removal.items);
          events.push(...removal.events);
          for (const table of removal.tables) tables.add(table);
        }
        const jobKey = `${next.Namespace}\u0000${next.JobID}`;
        if (becameHealthy(existing, next)) healthier.set(jobKey, next);
        if (next.ClientStatus !== 'failed' || existing.ClientStatus === 'failed' || existing.FollowupEvalID) continue;
        if (!jobs.has(jobKey)) jobs.set(jobKey, await this.jobs.get(next.Namespace, next.JobID));
        const job = jobs.get(jobKey);
        const group = job?.TaskGroups.find((candidate) => candidate.Name === next.TaskGroup);
        if (!job || job.Stop || !group || evaluations.has(jobKey) || !rescheduleEligible(group, next, now)) continue;
        evaluations.set(
          jobKey,
          pendingEvaluation(
            {
              Namespace: job.Namespace,
              Priority: job.Priority,
              Type: job.Type,
              TriggeredBy: 'alloc-failure',
              JobID: job.ID,
              JobModifyIndex: job.ModifyIndex,
            },
            index,
            now,
          ),
        );
      }
      if (items.length === 0) {
        unchangedIndex = await this.state.tableIndex(['allocs']);
        return undefined;
      }
      // The client statuses counted in their jobs' summaries (Nomad's updateSummaryWithAlloc), in the same write.
      const counted = [...new Set(updates.map((update) => update.ID))]
        .map((id) => ({ before: reported.get(id), after: current.get(id) }))
        .filter(
          (change): change is { before: StoredAllocation; after: StoredAllocation } =>
            change.before !== undefined && change.after !== undefined,
        );
      const summaryWrites = await this.summaries.allocationWrites(counted, index);
      items.push(...summaryWrites);
      if (summaryWrites.length > 0) tables.add('job_summary');
      // Nomad's drainer moves a draining node's allocations a few at a time, as the others are healthy: an allocation
      // that became healthy lets the next ones of its job move, so the job is evaluated again (`node-drain`).
      for (const [jobKey, alloc] of healthier) {
        if (evaluations.has(jobKey) || !(await this.drainingOf(alloc.Namespace, alloc.JobID, current))) continue;
        const job = await this.jobs.get(alloc.Namespace, alloc.JobID);
        if (!job || job.Stop) continue;
        evaluations.set(
          jobKey,
          pendingEvaluation(
            {
              Namespace: job.Namespace,
              Priority: job.Priority,
              Type: job.Type,
              TriggeredBy: 'node-drain',
              JobID: job.ID,
              JobModifyIndex: job.ModifyIndex,
            },
            index,
            now,
          ),
        );
      }
      for (const evaluation of evaluations.values()) {
        items.push(this.evaluations.put(evaluation));
        events.push(evaluationEvent('AllocationUpdated', evaluation));
        tables.add('evals');
      }
      // Nomad's UpdateAllocsFromClient sets the status of each job whose allocations it changed (setJobStatuses): a
      // batch job whose last allocation completes is dead now, with a Job event of the write's type.
      for (const [jobKey, alloc] of touched) {
        if (!jobs.has(jobKey)) jobs.set(jobKey, await this.jobs.get(alloc.Namespace, alloc.JobID));
        const job = jobs.get(jobKey);
        if (!job) continue;
        const created = evaluations.get(jobKey);
        const status = derivedJobStatus(job, {
          activeDeployment: (await this.activeDeployment?.(job.Namespace, job.ID)) ?? false,
          liveAllocation: (await this.ofJob(job.Namespace, job.ID)).some(
            (other) => !isTerminal(current.get(other.ID) ?? other),
          ),
          evaluationStatuses: [
            ...(await this.evaluations.ofJob(job.Namespace, job.ID)).map((evaluation) => evaluation.Status),
            ...(created ? [created.Status] : []),
          ],
        });
        if (status === job.Status) continue;
        const { writes, event } = await this.jobs.statusWrites(job, status, index, 'AllocationUpdated');
        items.push(...writes);
        events.push(event);
        tables.add('jobs');
        if ((job.ParentID ?? '') !== '') tables.add('job_summary');
      }
      // Nomad's state store counts the verdicts in the deployment in the same write; the deployment's change is an
      // event of the write's type (AllocationUpdated) on the Deployment topic, as Nomad's events.go makes it.
      for (const after of deploymentsAfter.values()) {
        items.push((this.deployments as Deployments).put(after, read.get(after.ID)?.deployment));
        events.push(deploymentEvent('AllocationUpdated', after));
        tables.add('deployment');
      }
      // The others whose allocations changed are due now on the watcher's queue, in this write: the route checks only
      // the deployments whose counts changed, and the sweep checks these (and those, if this process dies first).
      if (this.deployments)
        items.push(...(await this.deployments.dueNowWrites(watched, new Set(deploymentsAfter.keys()), read)));
      // An allocation the client finished frees its node's room: blocked evaluations may place there now.
      if (freed) items.push(new CapacityLog(this.state).roomMade(nodeId, index));
      if (items.length > maxReportWrites)
        throw badRequest(
          `the report's allocations, their services and evaluations are ${items.length} writes; at most ${maxReportWrites} fit one write: send them in several reports`,
        );
      return { items, tables: [...tables], events };
    });
    return { index: index ?? unchangedIndex, deployments: index === undefined ? [] : [...deploymentsAfter.keys()] };
  }

  /**
   * The evaluations a node's change needs, for that change's transaction (Nomad's createNodeEvals): one pending
   * evaluation per job with an allocation on the node whose client status is not terminal, `TriggeredBy` the trigger,
   * `NodeID` the node; their events `EvaluationUpdated`, as Nomad's (it writes them in an evaluation update).
   */
  async nodeEvaluations(
    nodeId: string,
    index: number,
    trigger: 'node-update' | 'node-drain',
    /** Jobs to evaluate besides those on the node (a node that became ready: its system jobs). */
    also: Array<Pick<Job, 'Namespace' | 'ID'>> = [],
  ): Promise<{ items: Write[]; events: PendingEvent[]; tables: TableName[] }> {
    const jobs = new Map<string, { namespace: string; jobId: string }>();
    for (const alloc of await this.onNode(nodeId))
      if (!terminalClientStatuses.includes(alloc.ClientStatus) && alloc.DesiredStatus === 'run')
        jobs.set(`${alloc.Namespace}\u0000${alloc.JobID}`, { namespace: alloc.Namespace, jobId: alloc.JobID });
    for (const job of also) jobs.set(`${job.Namespace}\u0000${job.ID}`, { namespace: job.Namespace, jobId: job.ID });
    const items: Write[] = [];
    const events: PendingEvent[] = [];
    for (const { namespace, jobId } of jobs.values()) {
      const job = await this.jobs.get(namespace, jobId);
      const evaluation = {
        ...pendingEvaluation(
          {
            Namespace: namespace,
            Priority: job?.Priority ?? 50,
            Type: job?.Type ?? 'service',
            TriggeredBy: trigger,
            JobID: jobId,
            JobModifyIndex: job?.JobModifyIndex ?? 0,
          },
          index,
          this.state.clock.now(),
        ),
        NodeID: nodeId,
        NodeModifyIndex: index,
      };
      items.push(this.evaluations.put(evaluation));
      events.push(evaluationEvent('EvaluationUpdated', evaluation));
    }
    return { items, events, tables: items.length > 0 ? ['evals'] : [] };
  }

  /** Tells whether a job has a deployment still going (set by the scheduler's assembly: the deployment store). */
  activeDeploymentWith(active: (namespace: string, jobId: string) => Promise<boolean>): void {
    this.activeDeployment = active;
  }

  /** Tells which of these nodes are draining (set by the scheduler's assembly: the node store). */
  drainingNodesWith(draining: (nodeIds: string[]) => Promise<Set<string>>): void {
    this.draining = draining;
  }

  /** Whether the job still has an allocation to move off a draining node (not stopped, not yet told to migrate). */
  private async drainingOf(
    namespace: string,
    jobId: string,
    reported: Map<string, StoredAllocation>,
  ): Promise<boolean> {
    if (!this.draining) return false;
    const waiting = (await this.ofJob(namespace, jobId))
      .map((alloc) => reported.get(alloc.ID) ?? alloc)
      .filter(
        (alloc) =>
          alloc.DesiredStatus === 'run' &&
          !terminalClientStatuses.includes(alloc.ClientStatus) &&
          alloc.DesiredTransition.Migrate !== true,
      );
    if (waiting.length === 0) return false;
    return (await this.draining([...new Set(waiting.map((alloc) => alloc.NodeID))])).size > 0;
  }

  private async commitOrExplain(plan: Parameters<SchedulerState['commit']>[0]): Promise<number | undefined> {
    try {
      return await this.state.commit(plan);
    } catch (error) {
      if (error instanceof WriteConditionFailed)
        throw new DomainError(
          'conflict',
          'the allocation was changed concurrently; the request did not happen, retry it',
        );
      throw error;
    }
  }
}

/** Whether a report made the allocation healthy (its deployment health, else running), as the drainer counts it. */
function becameHealthy(before: Allocation, after: Allocation): boolean {
  const healthy = (alloc: Allocation) =>
    alloc.DeploymentStatus?.Healthy === true ||
    ((alloc.DeploymentStatus?.Healthy ?? null) === null && alloc.ClientStatus === 'running');
  return healthy(after) && !healthy(before);
}

/** The allocation after a client's report, or undefined when the report changes nothing. */
function clientUpdated(
  existing: StoredAllocation,
  update: ClientAllocUpdate,
  index: number,
  now: number,
): StoredAllocation | undefined {
  const terminal = terminalClientStatuses.includes(existing.ClientStatus);
  const taskStates = update.TaskStates === undefined ? existing.TaskStates : keptEvents(update.TaskStates);
  const deploymentStatus: AllocDeploymentStatus | null = update.DeploymentStatus
    ? {
        Healthy: update.DeploymentStatus.Healthy,
        Timestamp: update.DeploymentStatus.Timestamp ?? new Date(now).toISOString(),
        Canary: existing.DeploymentStatus?.Canary ?? false,
        // Moves only with the verdict: the watcher asks for an evaluation when a health is newer than the last one.
        ModifyIndex:
          existing.DeploymentStatus && existing.DeploymentStatus.Healthy === update.DeploymentStatus.Healthy
            ? existing.DeploymentStatus.ModifyIndex
            : index,
      }
    : existing.DeploymentStatus;
  const next: StoredAllocation = {
    ...existing,
    ClientStatus: terminal ? existing.ClientStatus : update.ClientStatus,
    ClientDescription: update.ClientDescription ?? existing.ClientDescription,
    TaskStates: taskStates,
    DeploymentStatus: deploymentStatus,
  };
  const same =
    next.ClientStatus === existing.ClientStatus &&
    next.ClientDescription === existing.ClientDescription &&
    sameContent(next.TaskStates, existing.TaskStates) &&
    sameContent(
      next.DeploymentStatus && { ...next.DeploymentStatus, ModifyIndex: 0 },
      existing.DeploymentStatus && { ...existing.DeploymentStatus, ModifyIndex: 0 },
    );
  if (same) return undefined;
  return { ...next, ModifyIndex: index, ModifyTime: now * 1e6 };
}

/** Each task's last ten events (Nomad keeps as many), so an allocation stays one item. */
function keptEvents(states: Record<string, TaskState> | null): Record<string, TaskState> | null {
  if (!states) return null;
  return Object.fromEntries(
    Object.entries(states).map(([task, state]) => [
      task,
      { ...state, Events: state.Events ? state.Events.slice(-taskEventsKept) : null },
    ]),
  );
}

/**
 * Nomad's `RescheduleEligible`: an unlimited policy always, else fewer reschedules within the policy's interval
 * than its attempts.
 */
export function rescheduleEligible(group: Job['TaskGroups'][number], alloc: Allocation, nowMs: number): boolean {
  const policy = group.ReschedulePolicy as Record<string, unknown> | null | undefined;
  if (!policy) return false;
  if (policy.Unlimited === true) return true;
  const attempts = Number(policy.Attempts ?? 0);
  if (attempts <= 0) return false;
  const intervalNs = Number(policy.Interval ?? 0);
  const since = nowMs * 1e6 - intervalNs;
  const recent = (alloc.RescheduleTracker?.Events ?? []).filter((event) => event.RescheduleTime >= since).length;
  return recent < attempts;
}
