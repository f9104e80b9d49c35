/**
 * The evaluation worker (Nomad's `nomad/worker.go` over its eval broker, `nomad/eval_broker.go`): it takes pending
 * evaluations from the queue (and blocked ones once room was made where they may place: `capacity-wake.ts`), one
 * evaluation of a job at a time, and runs each: a snapshot of the job, its allocations and the candidate nodes with
 * theirs, the reconciler (`placement/reconcile.ts`), placement (`placement/place.ts`), the plan (`plan.ts`), plan
 * apply (`cluster/evaluations/plan-apply.ts`),
 * then the evaluation's outcome in one write: `complete`, or `complete` with `FailedTGAllocs` and a new `blocked`
 * evaluation for what could not be placed, as Nomad's.
 *
 * One evaluation per job at a time: the worker takes the job's lease (`EVAL_LEASE_PK`) with a conditional put; a
 * lease held by another worker skips the job for now, an expired one (a worker that died) is taken over and counts a
 * delivery; past the delivery limit (Nomad's 3) the evaluation is `failed`. Of several pending evaluations of a job,
 * the newest runs and the older ones are `canceled` with it (Nomad's broker cancels them the same way): each reads
 * the whole current state, so the newest does the work of all. A plan that lost a node to another evaluation (plan
 * apply's `rejectedNodes`) is computed again on a fresh snapshot, up to Nomad's attempts (5 for service jobs, 2 for
 * batch), then what is left is blocked.
 */
import { randomUUID } from 'node:crypto';
import { type DueSource, dueItems, shardKey, ttlBackstop } from '../../storage/due.ts';
import { ConditionFailed, type Item } from '../../storage/store.ts';
import type { Evaluation } from '../cluster/evaluations/model.ts';
import { PlanApplier } from '../cluster/evaluations/plan-apply.ts';
import type { Job } from '../cluster/jobs/model.ts';
import { EVAL_BLOCKED, EVAL_LEASE_PK, EVAL_QUEUE } from '../keys.ts';
import { placementReady } from '../placement/place.ts';
import type { Reconciliation } from '../placement/types.ts';
import { roomSince, wakes } from './capacity-wake.ts';
import { decideReading, readSnapshot } from './decide.ts';
import { type EvaluationOutcome, OutcomeRecorder, type WorkerParts } from './outcome.ts';
import { planOf } from './plan.ts';

export type { WorkerParts } from './outcome.ts';

/** Where a job's evaluation lease is (`keys.ts`, `EVAL_LEASE_PK`). */
export function evalLeaseKey(namespace: string, jobId: string): { pk: string; sk: string } {
  const sk = `${namespace}#${jobId}`;
  return { pk: shardKey(EVAL_LEASE_PK, sk), sk };
}

/** Nomad's eval broker delivery limit. */
export const deliveryLimit = 3;
/** How long a worker holds a job's lease before another may take it over. */
const leaseMs = 60_000;

/**
 * How a run went; `error`: it threw (told to `onError`), to be delivered again; `paused`: not run, the scheduler
 * configuration pauses the broker (it stays on its queue).
 */
export type Outcome = 'complete' | 'blocked' | 'failed' | 'busy' | 'skipped' | 'error' | 'paused';

interface Lease extends Item {
  pk: string;
  sk: string;
  evalId: string;
  holder: string;
  until: number;
  attempts: number;
  expiresAt: number;
}

export class EvaluationWorker {
  private readonly applier: PlanApplier;
  private readonly outcomes: OutcomeRecorder;
  private readonly holder = randomUUID();

  constructor(
    private readonly parts: WorkerParts,
    /** Told of an evaluation whose run failed (it is delivered again, up to the limit); by default thrown. */
    private readonly onError?: (error: unknown, evaluation: Evaluation) => void,
  ) {
    this.applier = new PlanApplier(parts.state, parts.nodes, parts.allocations, parts.deployments, {
      jobs: parts.jobs,
      evaluations: parts.evaluations,
    });
    this.outcomes = new OutcomeRecorder(parts);
  }

  private get store() {
    return this.parts.state.store;
  }

  private get now() {
    return this.parts.state.clock.now();
  }

  /**
   * Runs what is due: the pending evaluations on the queue, and the blocked ones that room made since they were
   * computed may let place (`capacity-wake.ts`), the newest of each job. Returns how each went, by evaluation ID.
   */
  async runDue(limit = 100): Promise<Map<string, Outcome>> {
    const source: DueSource = { store: this.store, clock: this.parts.state.clock };
    const candidates: Evaluation[] = [];
    for (const item of await dueItems(source, EVAL_QUEUE, limit)) {
      const evaluation = await this.parts.evaluations.get(item.sk);
      if (evaluation?.Status === 'pending') candidates.push(evaluation);
    }
    candidates.push(...(await this.wokenBlocked(limit)));
    return this.runNewestOfEachJob(candidates);
  }

  /** Runs the blocked evaluations that room made since they were computed may let place (what the stream wakes). */
  async runWoken(limit = 100): Promise<Map<string, Outcome>> {
    return this.runNewestOfEachJob(await this.wokenBlocked(limit));
  }

  /** The blocked evaluations woken by room made since their snapshots (Nomad's blocked-evals unblock rule). */
  private async wokenBlocked(limit: number): Promise<Evaluation[]> {
    const source: DueSource = { store: this.store, clock: this.parts.state.clock };
    const blocked: Evaluation[] = [];
    for (const item of await dueItems(source, EVAL_BLOCKED, limit)) {
      const evaluation = await this.parts.evaluations.get(item.sk);
      if (evaluation?.Status === 'blocked') blocked.push(evaluation);
    }
    if (blocked.length === 0) return [];
    const room = await roomSince(this.parts, Math.min(...blocked.map((evaluation) => evaluation.SnapshotIndex)));
    return blocked.filter((evaluation) => wakes(evaluation, room));
  }

  /**
   * Runs the evaluations of these IDs that are pending and due (what the table's stream says was written pending:
   * `evaluation-trigger.ts`), read again from the table, verified: the stream's image is not trusted. The newest of
   * each job runs, the older ones are canceled with it. A delivery of an evaluation already run is `skipped`.
   */
  async runEvaluations(ids: readonly string[]): Promise<Map<string, Outcome>> {
    const outcomes = new Map<string, Outcome>();
    const candidates: Evaluation[] = [];
    for (const id of new Set(ids)) {
      const evaluation = await this.parts.evaluations.get(id);
      const due = evaluation?.WaitUntil ? Date.parse(evaluation.WaitUntil) <= this.now : true;
      if (evaluation?.Status === 'pending' && due) candidates.push(evaluation);
      else outcomes.set(id, 'skipped');
    }
    for (const [id, outcome] of await this.runNewestOfEachJob(candidates)) outcomes.set(id, outcome);
    return outcomes;
  }

  private async runNewestOfEachJob(candidates: Evaluation[]): Promise<Map<string, Outcome>> {
    // Nomad's PauseEvalBroker: while the configuration pauses the broker nothing is dequeued; the evaluations stay
    // pending (or blocked) on their queues for the first round after it is unpaused.
    if (candidates.length > 0 && (await this.parts.schedulerConfig?.get())?.PauseEvalBroker)
      return new Map(candidates.map((evaluation) => [evaluation.ID, 'paused' as const]));
    const byJob = new Map<string, Evaluation[]>();
    for (const evaluation of candidates) {
      const key = `${evaluation.Namespace}\u0000${evaluation.JobID}`;
      byJob.set(key, [...(byJob.get(key) ?? []), evaluation]);
    }
    const outcomes = new Map<string, Outcome>();
    for (const evaluations of byJob.values()) {
      const sorted = evaluations.sort((a, b) => b.CreateIndex - a.CreateIndex);
      const [newest, ...older] = sorted as [Evaluation, ...Evaluation[]];
      try {
        outcomes.set(newest.ID, await this.run(newest, older));
      } catch (error) {
        if (!this.onError) throw error;
        this.onError(error, newest);
        outcomes.set(newest.ID, 'error');
      }
    }
    return outcomes;
  }

  /** Runs one evaluation (and cancels `superseded`, older ones of the same job, with it). */
  async run(evaluation: Evaluation, superseded: Evaluation[] = []): Promise<Outcome> {
    const lease = await this.take(evaluation);
    if (!lease) return 'busy';
    let outcome: Outcome;
    try {
      const current = await this.parts.evaluations.get(evaluation.ID);
      if (!current || (current.Status !== 'pending' && current.Status !== 'blocked')) outcome = 'skipped';
      else if (lease.attempts > deliveryLimit) {
        await this.outcomes.record(current, {
          status: 'failed',
          description: `evaluation reached delivery limit (${deliveryLimit})`,
        });
        outcome = 'failed';
      } else outcome = await this.evaluate(current, superseded);
    } catch (error) {
      // Left for another delivery: the lease expires now, so the next run takes it over and counts the attempt.
      await this.store
        .update(lease, { set: { until: 0 } }, { when: { equals: { holder: this.holder } } })
        .catch(() => undefined);
      throw error;
    }
    await this.release(lease);
    return outcome;
  }

  private async evaluate(evaluation: Evaluation, superseded: Evaluation[]): Promise<Outcome> {
    const attempts = evaluation.Type === 'batch' ? 2 : 5;
    let reconciliation: Reconciliation | undefined;
    let failed: Record<string, unknown> = {};
    let queued: Record<string, number> = {};
    let snapshotIndex = 0;
    let job: Job | undefined;
    let classes: EvaluationOutcome['classes'];
    for (let attempt = 0; attempt < attempts; attempt++) {
      snapshotIndex = await this.parts.state.currentIndex();
      const snapshot = await readSnapshot(this.parts, evaluation.Namespace, evaluation.JobID);
      job = snapshot.job;
      // RE2 for `regexp` constraints is loaded on demand (a bundle starts without it).
      if (job) await placementReady(job);
      const decision = await decideReading(
        this.parts.jobs,
        evaluation,
        snapshot,
        this.now,
        `${evaluation.ID}#${attempt}`,
      );
      reconciliation = decision.reconciliation;
      const placed = decision.placed;
      failed = placed.failed;
      classes = { eligibility: placed.classEligibility ?? {}, escaped: placed.escapedComputedClass ?? false };
      queued = decision.queued;
      const plan = planOf(
        evaluation,
        job,
        reconciliation,
        placed.placements,
        snapshot.versions,
        this.now,
        decision.inplaceResources,
      );
      if (plan.place.length === 0 && plan.update.length === 0 && !PlanApplier.changesDeployments(plan)) break;
      const applied = await this.applier.apply(plan);
      if (applied.rejectedNodes.size === 0) break;
    }
    const blockedNeeded = Object.keys(failed).length > 0;
    await this.outcomes.record(evaluation, {
      status: blockedNeeded && evaluation.Status === 'blocked' ? 'blocked' : 'complete',
      failed: blockedNeeded ? failed : null,
      queued,
      snapshotIndex,
      superseded,
      job,
      followups: reconciliation?.followups ?? [],
      blockNew: blockedNeeded && evaluation.Status !== 'blocked',
      ...(classes ? { classes } : {}),
    });
    return blockedNeeded ? 'blocked' : 'complete';
  }

  /** The job's lease for this evaluation, or undefined when another worker holds it. */
  private async take(evaluation: Evaluation): Promise<Lease | undefined> {
    const key = evalLeaseKey(evaluation.Namespace, evaluation.JobID);
    const existing = await this.store.get<Lease>(key.pk, key.sk);
    const now = this.now;
    if (existing && existing.until > now) return undefined;
    const lease: Lease = {
      ...key,
      evalId: evaluation.ID,
      holder: this.holder,
      until: now + leaseMs,
      attempts: existing && existing.evalId === evaluation.ID ? existing.attempts + 1 : 1,
      expiresAt: ttlBackstop(Math.floor((now + leaseMs) / 1000)),
    };
    try {
      await this.store.put(lease, {
        when: existing ? { equals: { holder: existing.holder, until: existing.until } } : { absent: true },
      });
      return lease;
    } catch (error) {
      if (error instanceof ConditionFailed) return undefined;
      throw error;
    }
  }

  private async release(lease: Lease): Promise<void> {
    await this.store.delete(lease, { when: { equals: { holder: this.holder } } }).catch((error) => {
      if (!(error instanceof ConditionFailed)) throw error;
    });
  }
}

export { schedulable } from './decide.ts';
