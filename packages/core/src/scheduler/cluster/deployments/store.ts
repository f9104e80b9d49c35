/**
 * Deployments in the table: one signed item per deployment, sharded 16 ways by its ID (`DEPLOYMENT_PK`), written by
 * plan apply (`evaluations/plan-apply.ts`) in the transaction of the plan that creates or changes them, with a
 * `PlanResult` event on the Deployment topic. A placement that joins a deployment counts in its group's
 * `PlacedAllocs` (and a canary in its `PlacedCanaries`) in the same write, as Nomad's state store does on upsert.
 */
import { epochSeconds } from '../../../lib/clock.ts';
import { dueItems, dueKey, shardCount, shardedQueue, shardKey } from '../../../storage/due.ts';
import { badRequest, DomainError, notFound } from '../../../lib/errors.ts';
import { itemKind } from '../../../storage/item-mac.ts';
import { withoutKeys } from '../../acl/common.ts';
import { DEPLOYMENT_DUE, DEPLOYMENT_PK } from '../../keys.ts';
import { ConditionFailed, type Write } from '../../../storage/store.ts';
import { type PendingEvent, type SchedulerState, type TableName, WriteConditionFailed } from '../../state.ts';
import { type Evaluation, evaluationEvent, pendingEvaluation } from '../evaluations/model.ts';
import type { Evaluations } from '../evaluations/store.ts';
import type { Job } from '../jobs/model.ts';
import type { Jobs } from '../jobs/store.ts';
import type { Allocation } from '../allocations/model.ts';
import {
  type ClusterDeployment,
  type DeploymentStatusUpdate,
  deploymentDescriptions,
  isActive,
  requiresPromotion,
} from './model.ts';
import { withPlacement } from './health.ts';
import { jobStatusWithDeployment } from './job-status.ts';
import { anyAutoRevert, failure, withStatus } from './rollback.ts';

/** What a deployment write answers (Nomad's DeploymentUpdateResponse). */
export interface DeploymentUpdateResponse {
  EvalID: string;
  EvalCreateIndex: number;
  DeploymentModifyIndex: number;
  /** The job version registered again when the deployment failed under `auto_revert`; null otherwise. */
  RevertedJobVersion: number | null;
  Index: number;
}

export const deploymentKind = itemKind('scheduler-deployment');

/** What a plan changes of deployments. */
export interface DeploymentChanges {
  /** A deployment the plan creates (written with the plan's first transaction). */
  created?: ClusterDeployment | undefined;
  /** Status changes of existing deployments (likewise). */
  updates: DeploymentStatusUpdate[];
}

/** A Deployment-topic event, as Nomad's: Key the ID, FilterKeys the job. */
export function deploymentEvent(type: string, deployment: ClusterDeployment): PendingEvent {
  return {
    Topic: 'Deployment',
    Type: type,
    Key: deployment.ID,
    Namespace: deployment.Namespace,
    FilterKeys: [deployment.JobID],
    Payload: { Deployment: deployment },
  };
}

export class Deployments {
  private allocationsOf: ((namespace: string, jobId: string) => Promise<Allocation[]>) | undefined;

  constructor(
    private readonly state: SchedulerState,
    private readonly jobs?: Jobs,
    private readonly evaluations?: Evaluations,
  ) {}

  /** Where a job's allocations are read, for its status after a fail or resume (`allocations/store.ts` is built after). */
  allocationsWith(reader: (namespace: string, jobId: string) => Promise<Allocation[]>): void {
    this.allocationsOf = reader;
  }

  /**
   * Nomad's `Deployment.Fail` and `Deployment.Pause` (`nomad/deployment_endpoint.go`, the deployment watcher's
   * FailDeployment and PauseDeployment): the status changed with a `DeploymentStatusUpdate` event and, when failed or
   * resumed, a pending `deployment-watcher` evaluation of the job, in one write. A terminal deployment is refused.
   */
  async setStatus(id: string, change: 'fail' | 'pause' | 'resume'): Promise<DeploymentUpdateResponse> {
    let evalId = '';
    let evalIndex = 0;
    let revertedVersion: number | null = null;
    try {
      const index = await this.state.commit(async (index) => {
        const deployment = await this.get(id);
        if (!deployment) throw notFound('deployment not found');
        if (!isActive(deployment))
          throw badRequest(change === 'fail' ? "can't fail terminal deployment" : "can't pause terminal deployment");
        const nowNs = this.state.clock.now() * 1e6;
        const type = 'DeploymentStatusUpdate';
        const job = await this.jobs?.get(deployment.Namespace, deployment.JobID);
        let after: ClusterDeployment;
        const reverted: { items: Write[]; events: PendingEvent[] } = { items: [], events: [] };
        revertedVersion = null;
        if (change === 'fail' && this.jobs) {
          // Nomad's FailDeployment: a group with auto_revert registers the latest stable job again.
          const failed = await failure(
            this.jobs,
            job,
            deployment,
            deploymentDescriptions.failedByUser,
            anyAutoRevert(deployment),
            true,
            index,
            nowNs,
            type,
          );
          after = failed.deployment;
          if (failed.reverted) {
            reverted.items.push(...failed.reverted.items);
            reverted.events.push(failed.reverted.event);
            revertedVersion = failed.reverted.job.Version;
          }
        } else {
          const status = change === 'fail' ? 'failed' : change === 'pause' ? 'paused' : 'running';
          const description =
            change === 'fail'
              ? deploymentDescriptions.failedByUser
              : change === 'pause'
                ? deploymentDescriptions.paused
                : requiresPromotion(deployment)
                  ? deploymentDescriptions.runningNeedsPromotion
                  : deploymentDescriptions.running;
          after = withStatus(deployment, status, description, index, nowNs);
        }
        const items: Write[] = [this.put(after, deployment), ...reverted.items];
        const events: PendingEvent[] = [deploymentEvent(type, after), ...reverted.events];
        evalId = '';
        evalIndex = 0;
        let created: Evaluation | undefined;
        if (change !== 'pause' && this.evaluations) {
          const evaluation = watcherEvaluation(deployment, job, index, this.state.clock.now());
          created = evaluation;
          items.push(this.evaluations.put(evaluation));
          events.push(evaluationEvent(type, evaluation));
          evalId = evaluation.ID;
          evalIndex = index;
        }
        const tables: TableName[] = ['deployment', ...(evalId ? (['evals'] as const) : [])];
        if (reverted.items.length > 0) tables.push('jobs');
        // With its evaluation, the job's status as the deployment leaves it (`job-status.ts`), unless reverted.
        if (created && reverted.items.length === 0 && this.jobs && this.evaluations && this.allocationsOf) {
          const status = await jobStatusWithDeployment(
            {
              jobs: this.jobs,
              evaluations: this.evaluations,
              deploymentsOf: (namespace, jobId) => this.ofJob(namespace, jobId),
              allocationsOf: this.allocationsOf,
            },
            job,
            after,
            created,
            index,
            type,
          );
          items.push(...status.items);
          events.push(...status.events);
          tables.push(...status.tables);
        }
        return { items, tables, events };
      });
      return {
        EvalID: evalId,
        EvalCreateIndex: evalIndex,
        DeploymentModifyIndex: index,
        RevertedJobVersion: revertedVersion,
        Index: index,
      };
    } catch (error) {
      if (error instanceof WriteConditionFailed)
        throw new DomainError(
          'conflict',
          'the deployment was changed concurrently; the request did not happen, retry it',
        );
      throw error;
    }
  }

  static key = (id: string) => ({ pk: shardKey(DEPLOYMENT_PK, id), sk: id });

  /**
   * The put of a deployment; conditional on `previous` unchanged, or on none existing yet. An active deployment is
   * on the watcher's due queue (`DEPLOYMENT_DUE`, sharded by its ID) at `dueAt` (epoch seconds): by default now, so
   * the next sweep checks a deployment any write changed unless that write's own check ran first and moved it to its
   * next progress deadline (`watcher.ts`), or to `neverDue` when no time alone can change it. A terminal deployment
   * leaves the queue.
   */
  put(deployment: ClusterDeployment, previous?: ClusterDeployment, dueAt: number = this.nowSeconds()): Write {
    const queued = isActive(deployment)
      ? { duePk: shardedQueue(DEPLOYMENT_DUE, deployment.ID), dueSk: dueKey(dueAt, deployment.ID) }
      : {};
    return {
      put: this.state.store.signed(deploymentKind, { ...Deployments.key(deployment.ID), ...deployment, ...queued }),
      when: previous ? { equals: { ModifyIndex: previous.ModifyIndex } } : { absent: true },
    };
  }

  async get(id: string): Promise<ClusterDeployment | undefined> {
    return (await this.getQueued(id))?.deployment;
  }

  /** A deployment with when it is due on the watcher's queue (epoch seconds; undefined when it is not on it). */
  async getQueued(id: string): Promise<QueuedDeployment | undefined> {
    const key = Deployments.key(id);
    return queuedOf(await this.state.store.getVerified(deploymentKind, key.pk, key.sk));
  }

  /** Up to `limit` deployments due on the watcher's queue, earliest first (every shard: one query each). */
  async due(limit: number): Promise<QueuedDeployment[]> {
    return (await dueItems(this.state, DEPLOYMENT_DUE, limit))
      .map((item) => queuedOf(this.state.store.verified(deploymentKind, item)))
      .filter((queued): queued is QueuedDeployment => queued !== undefined);
  }

  /**
   * The writes that put these deployments on the watcher's queue now (a change to their allocations that no check
   * saw yet): each read, and written again unchanged but for its due time, when it is active and not already due.
   * `skip`: deployments the same write puts anyway; `read`: deployments the write already read (inside it).
   */
  async dueNowWrites(
    ids: Iterable<string>,
    skip: ReadonlySet<string> = new Set(),
    read: ReadonlyMap<string, QueuedDeployment | undefined> = new Map(),
  ): Promise<Write[]> {
    const now = this.nowSeconds();
    const writes: Write[] = [];
    for (const id of new Set(ids)) {
      if (skip.has(id)) continue;
      const queued = read.has(id) ? read.get(id) : await this.getQueued(id);
      if (!queued || !isActive(queued.deployment)) continue;
      if (queued.dueAt !== undefined && queued.dueAt <= now) continue;
      writes.push(this.put(queued.deployment, queued.deployment, now));
    }
    return writes;
  }

  /**
   * The backstop of the queue (run by the sweep once per garbage-collection interval): an active deployment that is
   * not on it (written before the queue existed) is put on it now. One listing of every deployment.
   */
  async queueUnqueued(): Promise<number> {
    const stranded = (await this.listQueued()).filter(
      (queued) => isActive(queued.deployment) && queued.dueAt === undefined,
    );
    let queued = 0;
    for (const { deployment } of stranded) {
      try {
        await this.state.store.transact([this.put(deployment, deployment)]);
        queued++;
      } catch (error) {
        // Changed since the listing: that write queued it.
        if (!(error instanceof ConditionFailed)) throw error;
      }
    }
    return queued;
  }

  private nowSeconds(): number {
    return epochSeconds(this.state.clock);
  }

  /** Every deployment, sorted by ID. */
  async list(): Promise<ClusterDeployment[]> {
    return (await this.listQueued()).map((queued) => queued.deployment);
  }

  /** Every deployment with its due time, sorted by ID. */
  private async listQueued(): Promise<QueuedDeployment[]> {
    const shards = await Promise.all(
      Array.from({ length: shardCount }, (_, shard) =>
        this.state.store.list(`${DEPLOYMENT_PK}#${String(shard).padStart(2, '0')}`),
      ),
    );
    return shards
      .flat()
      .map((item) => queuedOf(this.state.store.verified(deploymentKind, item)))
      .filter((queued): queued is QueuedDeployment => queued !== undefined)
      .sort((a, b) => (a.deployment.ID < b.deployment.ID ? -1 : a.deployment.ID > b.deployment.ID ? 1 : 0));
  }

  /** A job's deployments, newest first (Nomad's `DeploymentsByJobID` sorted by create index, descending). */
  async ofJob(namespace: string, jobId: string): Promise<ClusterDeployment[]> {
    return (await this.list())
      .filter((deployment) => deployment.Namespace === namespace && deployment.JobID === jobId)
      .sort((a, b) => b.CreateIndex - a.CreateIndex);
  }

  /** A job's latest deployment (Nomad's `LatestDeploymentByJobID`). */
  async latest(namespace: string, jobId: string): Promise<ClusterDeployment | undefined> {
    return (await this.ofJob(namespace, jobId))[0];
  }

  /**
   * The writes and events, inside a plan's transaction at `index`, of `changes` (when `first`) and of the deployments
   * `joined` allocations join (their groups' `PlacedAllocs` and `PlacedCanaries`). `written` holds the deployments as
   * this plan's earlier transactions left them; the caller keeps it once the write commits.
   */
  async planWrites(
    index: number,
    nowNs: number,
    changes: DeploymentChanges,
    joined: Allocation[],
    first: boolean,
    written: Map<string, ClusterDeployment>,
  ): Promise<{ items: Write[]; events: PendingEvent[]; after: Map<string, ClusterDeployment> }> {
    const after = new Map<string, ClusterDeployment>();
    const before = new Map<string, ClusterDeployment | undefined>();
    const current = async (id: string): Promise<ClusterDeployment | undefined> => {
      const changed = after.get(id);
      if (changed) return changed;
      if (!before.has(id)) before.set(id, written.get(id) ?? (await this.get(id)));
      return before.get(id);
    };
    if (first && changes.created) {
      before.set(changes.created.ID, undefined);
      after.set(changes.created.ID, { ...changes.created, CreateIndex: index, ModifyIndex: index, ModifyTime: nowNs });
    }
    if (first)
      for (const update of changes.updates) {
        const deployment = await current(update.DeploymentID);
        if (!deployment) continue;
        after.set(deployment.ID, {
          ...deployment,
          Status: update.Status,
          StatusDescription: update.StatusDescription,
          ModifyIndex: index,
          ModifyTime: nowNs,
        });
      }
    for (const alloc of joined) {
      if (!alloc.DeploymentID) continue;
      const deployment = await current(alloc.DeploymentID);
      const group = deployment?.TaskGroups[alloc.TaskGroup];
      if (!deployment || !group) continue;
      const canary = alloc.DeploymentStatus?.Canary === true;
      after.set(deployment.ID, {
        ...deployment,
        TaskGroups: {
          ...deployment.TaskGroups,
          [alloc.TaskGroup]: {
            ...withPlacement(group, nowNs),
            PlacedAllocs: group.PlacedAllocs + 1,
            PlacedCanaries: canary ? [...(group.PlacedCanaries ?? []), alloc.ID] : group.PlacedCanaries,
          },
        },
        ModifyIndex: index,
        ModifyTime: nowNs,
      });
    }
    const items: Write[] = [];
    const events: PendingEvent[] = [];
    for (const deployment of after.values()) {
      items.push(this.put(deployment, before.get(deployment.ID)));
      events.push(deploymentEvent('PlanResult', deployment));
      // Nomad's updateDeploymentStatusImpl: the version of a deployment that succeeded is stable.
      const succeeded = deployment.Status === 'successful' && before.get(deployment.ID)?.Status !== 'successful';
      if (succeeded && this.jobs) {
        const stable = await this.jobs.stabilityWrites(
          deployment.Namespace,
          deployment.JobID,
          deployment.JobVersion,
          index,
          'PlanResult',
        );
        items.push(...stable.items);
        events.push(...stable.events);
      }
    }
    return { items, events, after };
  }
}

/** The due time of an active deployment that no time alone can change (9999-12-31T23:59:59Z): on the queue, never due. */
export const neverDue = 253_402_300_799;

/** A deployment as stored, with its due time on the watcher's queue (epoch seconds), if it is on it. */
export interface QueuedDeployment {
  deployment: ClusterDeployment;
  dueAt: number | undefined;
}

function queuedOf(item: Record<string, unknown> | undefined): QueuedDeployment | undefined {
  const deployment = withoutKeys<ClusterDeployment>(item as never);
  if (!item || !deployment) return undefined;
  const dueAt = typeof item.dueSk === 'string' ? Number.parseInt(item.dueSk, 10) : undefined;
  return { deployment, dueAt: Number.isNaN(dueAt) ? undefined : dueAt };
}

/** Nomad's getEval: a pending `deployment-watcher` evaluation of the deployment's job, at `index`. */
export function watcherEvaluation(
  deployment: ClusterDeployment,
  job: Pick<Job, 'Priority' | 'Type' | 'ModifyIndex'> | undefined,
  index: number,
  now: number,
): Evaluation {
  return {
    ...pendingEvaluation(
      {
        Namespace: deployment.Namespace,
        Priority: deployment.EvalPriority || job?.Priority || 50,
        Type: job?.Type ?? 'service',
        TriggeredBy: 'deployment-watcher',
        JobID: deployment.JobID,
        JobModifyIndex: job?.ModifyIndex ?? deployment.JobModifyIndex,
      },
      index,
      now,
    ),
    DeploymentID: deployment.ID,
  };
}
