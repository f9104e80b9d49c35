/**
 * Nomad's deployment watcher (`nomad/deploymentwatcher/deployment_watcher.go`) without a long-running leader: every
 * decision is a function of the stored deployment, its allocations and the job's evaluations, taken inside one
 * serializable write (`SchedulerState.commit`), so running it twice changes nothing twice. It runs after a node's
 * allocation report (`client/routes.ts`) and from the scheduled sweep (`sweep.ts`) for the deployments due on its
 * queue (`checkDue`: a progress deadline reached, a write its own check did not follow; `store.ts` `put`), and it
 * answers the promote and allocation-health routes (`nomad/deployment_endpoint.go`).
 *
 * A check of an active deployment, in Nomad's order: an unhealthy allocation that cannot be replaced (no progress
 * deadline, or out of reschedule attempts) fails it (`Failed due to unhealthy allocations`); a progress deadline
 * passed with a group short of healthy allocations fails it (`Failed due to progress deadline`) — either reverting to
 * the latest stable job when the group has `auto_revert`; canaries all healthy under `auto_promote` promote; an
 * unhealthy allocation that may be replaced is marked to reschedule, and an allocation healthy since the job's last
 * evaluation gets a `deployment-watcher` evaluation, so the reconciler places the next batch (and, when all is
 * healthy, marks the deployment successful).
 */
import { badRequest, DomainError, notFound } from '../../../lib/errors.ts';
import type { Write } from '../../../storage/store.ts';
import { type PendingEvent, type SchedulerState, type TableName, WriteConditionFailed } from '../../state.ts';
import { allocationEvent, type Allocations, rescheduleEligible, type StoredAllocation } from '../allocations/store.ts';
import { type Evaluation, evaluationEvent } from '../evaluations/model.ts';
import type { Evaluations } from '../evaluations/store.ts';
import type { Job } from '../jobs/model.ts';
import type { Jobs } from '../jobs/store.ts';
import { isHealthy, isUnhealthy, timeMs, withAllocHealth } from './health.ts';
import { jobStatusWithDeployment } from './job-status.ts';
import { type ClusterDeployment, deploymentDescriptions, isActive, requiresPromotion } from './model.ts';
import { promote, terminalAlloc } from './promotion.ts';
import { failure } from './rollback.ts';
import {
  type DeploymentUpdateResponse,
  deploymentEvent,
  type Deployments,
  neverDue,
  watcherEvaluation,
} from './store.ts';

/** What a check did. */
export type WatchOutcome = 'failed' | 'promoted' | 'evaluated' | undefined;

interface Step {
  items: Write[];
  events: PendingEvent[];
  tables: TableName[];
  evaluation?: Evaluation | undefined;
  revertedVersion?: number | undefined;
}

export class DeploymentWatcher {
  constructor(
    private readonly state: SchedulerState,
    private readonly deployments: Deployments,
    private readonly jobs: Jobs,
    private readonly evaluations: Evaluations,
    private readonly allocations: Allocations,
  ) {}

  /** Nomad's `Deployment.Promote`: the canaries of `groups` (or all) promoted, with an evaluation, in one write. */
  async promote(id: string, all: boolean, groups: string[]): Promise<DeploymentUpdateResponse> {
    return this.respond(async (index) => {
      const deployment = await this.active(id, "can't promote terminal deployment");
      const job = await this.jobs.get(deployment.Namespace, deployment.JobID);
      return this.promotionStep(deployment, job, all, groups, index, 'DeploymentPromotion');
    });
  }

  /**
   * Nomad's `Deployment.SetAllocHealth`: the named allocations' health set as given (each must be the deployment's),
   * the deployment's counts with them, failed when any is unhealthy (reverted under `auto_revert`), with an
   * evaluation, in one write.
   */
  async setAllocHealth(id: string, healthyIds: string[], unhealthyIds: string[]): Promise<DeploymentUpdateResponse> {
    if (healthyIds.length + unhealthyIds.length === 0)
      throw badRequest('must specify at least one healthy/unhealthy allocation ID');
    return this.respond(async (index) => {
      const type = 'DeploymentAllocHealth';
      const deployment = await this.active(id, "can't set health of allocations for a terminal deployment");
      const job = await this.jobs.get(deployment.Namespace, deployment.JobID);
      const nowMs = this.state.clock.now();
      const nowNs = nowMs * 1e6;
      const ofJob = new Map(
        (await this.allocations.ofJob(deployment.Namespace, deployment.JobID)).map((alloc) => [alloc.ID, alloc]),
      );
      let after = deployment;
      const items: Write[] = [];
      const events: PendingEvent[] = [];
      const verdicts: Array<[string, boolean]> = [
        ...healthyIds.map((allocId): [string, boolean] => [allocId, true]),
        ...unhealthyIds.map((allocId): [string, boolean] => [allocId, false]),
      ];
      for (const [allocId, healthy] of verdicts) {
        // Only the job's own allocations are looked at: an ID of another job or namespace is unknown here.
        const before = ofJob.get(allocId);
        if (!before) throw badRequest(`unknown alloc ${JSON.stringify(allocId)}`);
        if (before.DeploymentID !== deployment.ID)
          throw badRequest(
            `alloc ${JSON.stringify(allocId)} is not part of deployment ${JSON.stringify(deployment.ID)}`,
          );
        const changed: StoredAllocation = {
          ...before,
          DeploymentStatus: {
            Healthy: healthy,
            Timestamp: new Date(nowMs).toISOString(),
            Canary: before.DeploymentStatus?.Canary ?? false,
            ModifyIndex: index,
          },
          ModifyIndex: index,
          ModifyTime: nowNs,
        };
        after = withAllocHealth(after, before, changed, index, nowNs) ?? after;
        ofJob.set(allocId, changed);
        items.push(this.allocations.updated(changed, before));
        events.push(allocationEvent(type, changed));
      }
      const step: Step = { items, events, tables: ['allocs'] };
      let revertedVersion: number | undefined;
      if (unhealthyIds.length > 0) {
        const unhealthy = new Set(unhealthyIds);
        const revert = [...ofJob.values()].some(
          (alloc) => unhealthy.has(alloc.ID) && deployment.TaskGroups[alloc.TaskGroup]?.AutoRevert === true,
        );
        const failed = await failure(
          this.jobs,
          job,
          after,
          deploymentDescriptions.failedAllocations,
          revert,
          false,
          index,
          nowNs,
          type,
        );
        after = failed.deployment;
        if (failed.reverted) {
          step.items.push(...failed.reverted.items);
          step.events.push(failed.reverted.event);
          step.tables.push('jobs');
          revertedVersion = failed.reverted.job.Version;
        }
      } else after = { ...after, ModifyIndex: index, ModifyTime: nowNs };
      step.items.push(this.deployments.put(after, deployment));
      step.events.push(deploymentEvent(type, after));
      step.tables.push('deployment');
      step.revertedVersion = revertedVersion;
      await this.addEvaluation(step, after, job, index, type);
      return step;
    });
  }

  /**
   * Checks the deployments due on the watcher's queue (the scheduled sweep): up to `limit`, earliest first; the rest
   * are still due for the next sweep. A deployment is due at its next progress deadline, and now after any write that
   * changed it or its allocations without its own check running (`store.ts` `put`, `dueNowWrites`).
   */
  async checkDue(limit = 1000): Promise<Map<string, WatchOutcome>> {
    const outcomes = new Map<string, WatchOutcome>();
    for (const { deployment } of await this.deployments.due(limit))
      outcomes.set(deployment.ID, await this.check(deployment.ID));
    return outcomes;
  }

  /** Checks the deployments of these allocations (after a node reported them). */
  async checkAllocations(allocIds: string[]): Promise<void> {
    const ids = new Set<string>();
    for (const allocId of allocIds) {
      const alloc = await this.allocations.get(allocId);
      if (alloc?.DeploymentID) ids.add(alloc.DeploymentID);
    }
    for (const id of ids) await this.check(id);
  }

  /** One check of a deployment (see the file's comment); nothing when it is not active or nothing is due. */
  async check(id: string): Promise<WatchOutcome> {
    let outcome: WatchOutcome;
    try {
      await this.state.commit(async (index) => {
        outcome = undefined;
        const queued = await this.deployments.getQueued(id);
        if (!queued) return undefined;
        const { deployment, dueAt } = queued;
        // What the check leaves of the deployment's place on the watcher's queue, when it writes nothing else of it.
        const requeued = (at: number) => ({
          items: [this.deployments.put(deployment, deployment, at)],
          tables: [] as TableName[],
        });
        // A terminal deployment leaves the queue (put without a due time); one whose job is gone is never due.
        if (!isActive(deployment)) return dueAt === undefined ? undefined : requeued(0);
        const job = await this.jobs.get(deployment.Namespace, deployment.JobID);
        if (!job) return dueAt === neverDue ? undefined : requeued(neverDue);
        const nowMs = this.state.clock.now();
        const allocs = (await this.allocations.ofJob(deployment.Namespace, deployment.JobID)).filter(
          (alloc) => alloc.DeploymentID === deployment.ID,
        );
        const groupOf = (alloc: StoredAllocation) => job.TaskGroups.find((group) => group.Name === alloc.TaskGroup);
        // Nomad's shouldFailEarly, then the progress deadline's shouldFail.
        let failing: { reason: string; revert: boolean } | undefined;
        for (const alloc of allocs) {
          const state = deployment.TaskGroups[alloc.TaskGroup];
          if (!state || !isUnhealthy(alloc)) continue;
          const group = groupOf(alloc);
          const early = state.ProgressDeadline === 0 || !group || !rescheduleEligible(group, alloc, nowMs);
          if (!early) continue;
          failing = {
            reason: deploymentDescriptions.failedAllocations,
            revert: (failing?.revert ?? false) || state.AutoRevert,
          };
        }
        if (!failing && deployment.Status !== 'paused') {
          const cutoff = progressCutoff(deployment, allocs);
          if (cutoff !== undefined && nowMs >= cutoff) {
            const short = shortGroups(deployment);
            if (short.length > 0)
              failing = {
                reason: deploymentDescriptions.progressDeadline,
                revert: short.some((name) => {
                  const group = job.TaskGroups.find((candidate) => candidate.Name === name);
                  const update = group?.Update as { AutoRevert?: unknown } | null | undefined;
                  return update?.AutoRevert === true;
                }),
              };
          }
        }
        if (failing) {
          outcome = 'failed';
          return this.failureStep(deployment, job, failing.reason, failing.revert, index);
        }
        if (autoPromotable(deployment, allocs)) {
          outcome = 'promoted';
          return this.promotionStep(deployment, job, true, [], index, 'DeploymentPromotion');
        }
        // Unhealthy allocations that may still be replaced are marked to reschedule; a new health asks for an evaluation.
        const type = 'AllocationUpdateDesiredStatus';
        const step: Step = { items: [], events: [], tables: [] };
        for (const alloc of allocs) {
          if (!deployment.TaskGroups[alloc.TaskGroup] || !isUnhealthy(alloc)) continue;
          if (alloc.DesiredTransition.Reschedule === true || terminalAlloc(alloc)) continue;
          const marked: StoredAllocation = {
            ...alloc,
            DesiredTransition: { ...alloc.DesiredTransition, Reschedule: true },
            ModifyIndex: index,
            ModifyTime: nowMs * 1e6,
          };
          step.items.push(this.allocations.updated(marked, alloc));
          step.events.push(allocationEvent(type, marked));
        }
        if (step.items.length > 0) step.tables.push('allocs');
        // Until a write changes it, only time changes what this check decides, at the next progress deadline.
        const next = nextCheckAt(deployment, allocs, nowMs);
        if (next !== dueAt) step.items.push(this.deployments.put(deployment, deployment, next));
        const newestHealth = Math.max(
          0,
          ...allocs
            .filter((alloc) => deployment.TaskGroups[alloc.TaskGroup] && isHealthy(alloc))
            .map((alloc) => alloc.DeploymentStatus?.ModifyIndex ?? 0),
        );
        // The job's evaluations are read only when a health could be newer than them (every sweep checks).
        const progressed =
          newestHealth > 0 &&
          newestHealth > latestEvaluationIndex(await this.evaluations.ofJob(deployment.Namespace, deployment.JobID));
        if (step.tables.length === 0 && !progressed) return step.items.length === 0 ? undefined : step;
        outcome = 'evaluated';
        await this.addEvaluation(step, deployment, job, index, type);
        return step;
      });
    } catch (error) {
      // Another write changed what the check read: the next report or sweep checks again.
      if (error instanceof WriteConditionFailed) return undefined;
      throw error;
    }
    return outcome;
  }

  /** The failure of `deployment` as a write of `DeploymentStatusUpdate` (Nomad's watcher, or the fail route). */
  async failureStep(
    deployment: ClusterDeployment,
    job: Job | undefined,
    reason: string,
    revert: boolean,
    index: number,
  ): Promise<Step> {
    const type = 'DeploymentStatusUpdate';
    const failed = await failure(this.jobs, job, deployment, reason, revert, true, index, this.nowNs(), type);
    const step: Step = {
      items: [this.deployments.put(failed.deployment, deployment)],
      events: [deploymentEvent(type, failed.deployment)],
      tables: ['deployment'],
    };
    if (failed.reverted) {
      step.items.push(...failed.reverted.items);
      step.events.push(failed.reverted.event);
      step.tables.push('jobs');
      step.revertedVersion = failed.reverted.job.Version;
    }
    await this.addEvaluation(step, failed.deployment, job, index, type);
    return step;
  }

  private async promotionStep(
    deployment: ClusterDeployment,
    job: Job | undefined,
    all: boolean,
    groups: string[],
    index: number,
    type: string,
  ): Promise<Step> {
    const allocs = await this.allocations.ofJob(deployment.Namespace, deployment.JobID);
    const promotion = promote(deployment, allocs, all, groups, index, this.nowNs());
    const step: Step = {
      items: [this.deployments.put(promotion.deployment, deployment)],
      events: [deploymentEvent(type, promotion.deployment)],
      tables: ['deployment'],
    };
    await this.addEvaluation(step, promotion.deployment, job, index, type);
    const before = new Map(allocs.map((alloc) => [alloc.ID, alloc]));
    for (const alloc of promotion.promoted) {
      step.items.push(this.allocations.updated(alloc, before.get(alloc.ID) as StoredAllocation));
      step.events.push(allocationEvent(type, alloc));
    }
    if (promotion.promoted.length > 0) step.tables.push('allocs');
    return step;
  }

  /**
   * Nomad's getEval: a pending `deployment-watcher` evaluation of the deployment's job, and the job's status set in the
   * same write (`job-status.ts`) unless the write registers the job again (auto-revert sets it with the job).
   */
  private async addEvaluation(
    step: Step,
    deployment: ClusterDeployment,
    job: Job | undefined,
    index: number,
    type: string,
  ): Promise<void> {
    const evaluation = watcherEvaluation(deployment, job, index, this.state.clock.now());
    step.items.push(this.evaluations.put(evaluation));
    step.events.push(evaluationEvent(type, evaluation));
    step.tables.push('evals');
    step.evaluation = evaluation;
    if (step.revertedVersion !== undefined) return;
    const status = await jobStatusWithDeployment(
      {
        jobs: this.jobs,
        evaluations: this.evaluations,
        deploymentsOf: (namespace, id) => this.deployments.ofJob(namespace, id),
        allocationsOf: (namespace, id) => this.allocations.ofJob(namespace, id),
      },
      job,
      deployment,
      evaluation,
      index,
      type,
    );
    step.items.push(...status.items);
    step.events.push(...status.events);
    step.tables.push(...status.tables);
  }

  private async active(id: string, terminal: string): Promise<ClusterDeployment> {
    const deployment = await this.deployments.get(id);
    if (!deployment) throw notFound('deployment not found');
    if (!isActive(deployment)) throw badRequest(terminal);
    return deployment;
  }

  private nowNs(): number {
    return this.state.clock.now() * 1e6;
  }

  private async respond(plan: (index: number) => Promise<Step>): Promise<DeploymentUpdateResponse> {
    let step: Step | undefined;
    try {
      const index = await this.state.commit(async (index) => {
        step = await plan(index);
        return { items: step.items, tables: [...new Set(step.tables)], events: step.events };
      });
      return {
        EvalID: step?.evaluation?.ID ?? '',
        EvalCreateIndex: step?.evaluation ? index : 0,
        DeploymentModifyIndex: index,
        RevertedJobVersion: step?.revertedVersion ?? null,
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
}

/** Nomad's jobEvalStatus: the latest index an evaluation of the job (not cancelled) saw. */
function latestEvaluationIndex(evaluations: Evaluation[]): number {
  let max = 0;
  for (const evaluation of evaluations) {
    if (evaluation.Status === 'canceled') continue;
    if (evaluation.SnapshotIndex !== 0 && max < evaluation.SnapshotIndex) max = evaluation.SnapshotIndex;
    else if (max < evaluation.CreateIndex) max = evaluation.CreateIndex;
  }
  return max;
}

/** Nomad's doneGroups: a group is done when promoted (if it has canaries) and enough of its allocations are healthy. */
function doneGroups(deployment: ClusterDeployment, allocs: StoredAllocation[]): Set<string> {
  const healthy = new Map<string, number>();
  for (const alloc of allocs)
    if (!terminalAlloc(alloc) && isHealthy(alloc))
      healthy.set(alloc.TaskGroup, (healthy.get(alloc.TaskGroup) ?? 0) + 1);
  const done = new Set<string>();
  for (const [name, state] of Object.entries(deployment.TaskGroups)) {
    if (state.DesiredCanaries !== 0 && !state.Promoted) continue;
    if ((healthy.get(name) ?? 0) >= state.DesiredTotal) done.add(name);
  }
  return done;
}

/** Nomad's getDeploymentProgressCutoff: the earliest progress deadline of the groups not done (ms), if any. */
function progressCutoff(deployment: ClusterDeployment, allocs: StoredAllocation[]): number | undefined {
  const done = doneGroups(deployment, allocs);
  let next: number | undefined;
  for (const [name, state] of Object.entries(deployment.TaskGroups)) {
    if (done.has(name)) continue;
    const by = timeMs(state.RequireProgressBy);
    if (by !== undefined && (next === undefined || by < next)) next = by;
  }
  return next;
}

/**
 * When the check of an active deployment that decided nothing must run again if nothing is written before (epoch
 * seconds): its progress cutoff while that is ahead and the deployment not paused, else never (`neverDue`). The
 * check's other time-dependent test, an unhealthy allocation's reschedule eligibility, only gains with time (reschedule
 * events leave the policy's interval), so it can end a failure the check would make, never start one; the time a
 * failed allocation is replaced at is its follow-up evaluation's `WaitUntil`, on the evaluation queue.
 */
function nextCheckAt(deployment: ClusterDeployment, allocs: StoredAllocation[], nowMs: number): number {
  if (deployment.Status === 'paused') return neverDue;
  const cutoff = progressCutoff(deployment, allocs);
  return cutoff !== undefined && cutoff > nowMs ? Math.ceil(cutoff / 1000) : neverDue;
}

/** Nomad's shouldFail: the groups short of healthy allocations (canaries before promotion, else the total). */
function shortGroups(deployment: ClusterDeployment): string[] {
  return Object.entries(deployment.TaskGroups)
    .filter(([, state]) =>
      state.DesiredCanaries > 0 && !state.Promoted
        ? state.HealthyAllocs < state.DesiredCanaries
        : state.HealthyAllocs < state.DesiredTotal,
    )
    .map(([name]) => name);
}

/** Nomad's autoPromoteDeployment: placed canaries awaiting promotion, every canary group auto-promoting and healthy. */
function autoPromotable(deployment: ClusterDeployment, allocs: StoredAllocation[]): boolean {
  const placed = Object.values(deployment.TaskGroups).some((state) => (state.PlacedCanaries ?? []).length > 0);
  if (!placed || !requiresPromotion(deployment)) return false;
  const healthy = new Set(allocs.filter((alloc) => isHealthy(alloc)).map((alloc) => alloc.ID));
  for (const state of Object.values(deployment.TaskGroups)) {
    if (state.DesiredCanaries < 1) continue;
    const canaries = state.PlacedCanaries ?? [];
    if (!state.AutoPromote || canaries.length < state.DesiredCanaries) return false;
    if (canaries.filter((id) => healthy.has(id)).length !== state.DesiredCanaries) return false;
  }
  return true;
}
