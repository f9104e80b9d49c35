/**
 * What an evaluation's run leaves (Nomad's worker `UpdateEval`, `CreateEval`, `ReblockEval` and the state store's
 * setJobStatus), in one write: the evaluation's status, its failed and queued allocations; the blocked evaluation for
 * what could not be placed (one per job: an older one is canceled); the follow-up evaluations of delayed
 * reschedules, their allocations marked with them; the superseded evaluations of the job canceled; and the job's
 * status as its allocations now make it. Events `EvaluationUpdated` on the Evaluation topic (and Job, Allocation).
 */
import { allShards } from '../../storage/due.ts';
import type { Write } from '../../storage/store.ts';
import { EVAL_BLOCKED } from '../keys.ts';
import type { Reconciliation } from '../placement/types.ts';
import type { PendingEvent } from '../state.ts';
import { isTerminal } from '../cluster/allocations/model.ts';
import { allocationEvent } from '../cluster/allocations/store.ts';
import { type Evaluation, evaluationEvent, pendingEvaluation } from '../cluster/evaluations/model.ts';
import { isParameterized, type Job } from '../cluster/jobs/model.ts';
import type { Allocations } from '../cluster/allocations/store.ts';
import type { Deployments } from '../cluster/deployments/store.ts';
import type { Evaluations } from '../cluster/evaluations/store.ts';
import type { Jobs } from '../cluster/jobs/store.ts';
import type { ClusterNodes } from '../cluster/nodes/store.ts';
import type { SchedulerConfigs } from '../cluster/scheduler-config/store.ts';
import type { SchedulerState } from '../state.ts';

/** The stores the worker runs on. */
export interface WorkerParts {
  state: SchedulerState;
  evaluations: Evaluations;
  jobs: Jobs;
  nodes: ClusterNodes;
  allocations: Allocations;
  deployments: Deployments;
  /** The scheduler configuration placement runs with (Nomad's defaults without it). */
  schedulerConfig?: Pick<SchedulerConfigs, 'get'>;
}

export interface EvaluationOutcome {
  status: 'complete' | 'blocked' | 'failed';
  description?: string;
  failed?: Record<string, unknown> | null;
  queued?: Record<string, number>;
  snapshotIndex?: number;
  superseded?: Evaluation[];
  job?: Job | undefined;
  followups?: Reconciliation['followups'];
  blockNew?: boolean;
  /** For a blocked evaluation: the computed classes placement found eligible or not, and whether one escaped. */
  classes?: { eligibility: Record<string, boolean>; escaped: boolean };
}

export class OutcomeRecorder {
  constructor(private readonly parts: WorkerParts) {}

  private get store() {
    return this.parts.state.store;
  }

  /**
   * The evaluation's outcome in one write: its status, what failed and was left queued; the blocked evaluation for
   * what failed, the follow-up evaluations of delayed reschedules (their allocations marked), the superseded ones
   * canceled, and the job's status as its allocations now make it (Nomad's setJobStatus).
   */
  async record(evaluation: Evaluation, outcome: EvaluationOutcome): Promise<void> {
    const { state, evaluations, allocations, jobs } = this.parts;
    await state.commit(async (index) => {
      const current = await evaluations.get(evaluation.ID);
      if (!current || (current.Status !== 'pending' && current.Status !== 'blocked')) return undefined;
      const nowNs = this.parts.state.clock.now() * 1e6;
      const items: Write[] = [];
      const events: PendingEvent[] = [];
      const changed = (next: Evaluation, previous: Evaluation) => {
        items.push(evaluations.put(next, previous));
        events.push(evaluationEvent('EvaluationUpdated', next));
      };
      const created = (next: Evaluation) => {
        items.push(evaluations.put(next));
        events.push(evaluationEvent('EvaluationUpdated', next));
      };
      const blocked =
        outcome.blockNew && outcome.job
          ? {
              ...pendingEvaluation(
                {
                  Namespace: current.Namespace,
                  Priority: current.Priority,
                  Type: current.Type,
                  TriggeredBy: current.TriggeredBy,
                  JobID: current.JobID,
                  JobModifyIndex: current.JobModifyIndex,
                },
                index,
                this.parts.state.clock.now(),
              ),
              Status: 'blocked',
              StatusDescription: 'created to place remaining allocations',
              PreviousEval: current.ID,
              FailedTGAllocs: null,
              SnapshotIndex: outcome.snapshotIndex ?? index,
              ...classesOf(outcome),
            }
          : undefined;
      const followups = (outcome.followups ?? []).map((followup) => ({
        followup,
        evaluation: {
          ...pendingEvaluation(
            {
              Namespace: current.Namespace,
              Priority: current.Priority,
              Type: current.Type,
              TriggeredBy: followup.triggeredBy,
              JobID: current.JobID,
              JobModifyIndex: current.JobModifyIndex,
            },
            index,
            this.parts.state.clock.now(),
          ),
          StatusDescription: followup.statusDescription,
          PreviousEval: current.ID,
          WaitUntil: new Date(followup.at).toISOString(),
        },
      }));
      changed(
        {
          ...current,
          Status: outcome.status,
          StatusDescription: outcome.description ?? (outcome.status === 'blocked' ? current.StatusDescription : ''),
          FailedTGAllocs: outcome.failed ?? null,
          QueuedAllocations: outcome.queued ?? current.QueuedAllocations,
          BlockedEval: blocked?.ID ?? current.BlockedEval,
          NextEval: followups[0]?.evaluation.ID ?? current.NextEval,
          SnapshotIndex: outcome.snapshotIndex ?? current.SnapshotIndex,
          ...(outcome.status === 'blocked' ? classesOf(outcome) : {}),
          ModifyIndex: index,
          ModifyTime: nowNs,
        },
        current,
      );
      if (blocked) {
        // One blocked evaluation per job, as Nomad's blocked-evals tracker keeps: an older one is canceled.
        for (const other of await this.blockedOf(current)) {
          if (other.ID === current.ID) continue;
          changed(
            {
              ...other,
              Status: 'canceled',
              StatusDescription: 'canceled: a newer blocked evaluation of the job',
              ModifyIndex: index,
              ModifyTime: nowNs,
            },
            other,
          );
        }
        created(blocked);
      }
      for (const { evaluation: next } of followups) created(next);
      for (const older of outcome.superseded ?? []) {
        const stored = await evaluations.get(older.ID);
        if (!stored || (stored.Status !== 'pending' && stored.Status !== 'blocked')) continue;
        changed(
          {
            ...stored,
            Status: 'canceled',
            StatusDescription: `canceled after more recent eval was processed: ${current.ID}`,
            ModifyIndex: index,
            ModifyTime: nowNs,
          },
          stored,
        );
      }
      const tables: Array<'evals' | 'allocs' | 'jobs' | 'job_summary'> = ['evals'];
      // The follow-ups' allocations carry their evaluation's ID, so the next run does not schedule them again.
      const marks = new Map<string, string>();
      for (const { followup, evaluation: next } of followups)
        for (const id of followup.allocIds) marks.set(id, next.ID);
      if (marks.size > 0) {
        tables.push('allocs');
        for (const alloc of await allocations.ofJob(current.Namespace, current.JobID)) {
          const mark = marks.get(alloc.ID);
          if (!mark) continue;
          const next = { ...alloc, FollowupEvalID: mark, ModifyIndex: index, ModifyTime: nowNs };
          items.push(allocations.updated(next, alloc));
          // Nomad's scheduler puts these marks in its plan (the reconciler's attribute updates): PlanResult events.
          events.push(allocationEvent('PlanResult', next));
        }
      }
      const job = await jobs.get(current.Namespace, current.JobID);
      if (job) {
        const status = await this.jobStatus(job, blocked !== undefined || outcome.status === 'blocked');
        if (status !== job.Status) {
          const { writes, event } = await jobs.statusWrites(job, status, index, 'EvaluationUpdated');
          items.push(...writes);
          events.push(event);
          tables.push('jobs');
        }
      }
      // What the evaluation left queued, in the job's summary (Nomad's nestedUpsertEval).
      const queuedWrites = await jobs.summaries.queuedWrites(current.Namespace, current.JobID, outcome.queued, index);
      items.push(...queuedWrites);
      if (queuedWrites.length > 0 || (job?.ParentID ?? '') !== '') tables.push('job_summary');
      return { items, tables, events };
    });
  }

  /** Nomad's getJobStatus: running while an allocation is not terminal, pending while evaluations wait, else dead. */
  private async jobStatus(job: Job, waiting: boolean): Promise<string> {
    if (job.Type === 'system' || job.Type === 'sysbatch' || job.Periodic || isParameterized(job))
      return job.Stop ? 'dead' : 'running';
    const allocs = await this.parts.allocations.ofJob(job.Namespace, job.ID);
    if (allocs.some((alloc) => !isTerminal(alloc))) return 'running';
    if (waiting) return 'pending';
    return allocs.length > 0 || job.Stop ? 'dead' : 'pending';
  }

  /** The job's blocked evaluations (the blocked queue's every shard, read whole: blocked evaluations are few). */
  private async blockedOf(evaluation: Evaluation): Promise<Evaluation[]> {
    const pages = await Promise.all(
      allShards(EVAL_BLOCKED).map((partition) => this.store.list(partition, { index: 'due' })),
    );
    const found: Evaluation[] = [];
    for (const item of pages.flat()) {
      const other = await this.parts.evaluations.get(item.sk);
      if (other?.Status === 'blocked' && other.Namespace === evaluation.Namespace && other.JobID === evaluation.JobID)
        found.push(other);
    }
    return found;
  }
}

/** A blocked evaluation's class fields (what wakes it: `capacity-wake.ts`). */
const classesOf = (outcome: EvaluationOutcome): Pick<Evaluation, 'ClassEligibility' | 'EscapedComputedClass'> => ({
  ClassEligibility: outcome.classes?.eligibility ?? null,
  EscapedComputedClass: outcome.classes?.escaped ?? false,
});
