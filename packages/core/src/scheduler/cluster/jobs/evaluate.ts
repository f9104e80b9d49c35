/**
 * A job evaluated again on demand, as Nomad's `Job.Evaluate` (`nomad/job_endpoint.go`): a pending `job-register`
 * evaluation of the job as stored, in one write; with `ForceReschedule`, the job's failed allocations not yet replaced
 * (in a group whose reschedule policy is enabled) marked `DesiredTransition.ForceReschedule` in the same write, so the
 * reconciler reschedules them now whatever their policy's attempts and delay. Periodic and parameterized jobs are
 * refused (they run through their children), as Nomad refuses them.
 */
import { badRequest, conflict, notFound } from '../../../lib/errors.ts';
import type { Write } from '../../../storage/store.ts';
import { type PendingEvent, type SchedulerState, WriteConditionFailed } from '../../state.ts';
import { allocationEvent, type Allocations, type StoredAllocation } from '../allocations/store.ts';
import { evaluationEvent, pendingEvaluation } from '../evaluations/model.ts';
import type { Evaluations } from '../evaluations/store.ts';
import { isParameterized } from './model.ts';
import type { Jobs } from './store.ts';

export interface EvaluateParts {
  state: SchedulerState;
  jobs: Jobs;
  evaluations: Evaluations;
  allocations: Allocations;
}

export interface EvaluateResult {
  EvalID: string;
  EvalCreateIndex: number;
  JobModifyIndex: number;
  Index: number;
}

/** Nomad's ReschedulePolicy.Enabled: unlimited, or some attempts in an interval. */
function rescheduleEnabled(policy: unknown): boolean {
  if (typeof policy !== 'object' || policy === null) return false;
  const p = policy as Record<string, unknown>;
  return p.Unlimited === true || (Number(p.Attempts) > 0 && Number(p.Interval) > 0);
}

export async function evaluateJob(
  parts: EvaluateParts,
  namespace: string,
  jobId: string,
  forceReschedule: boolean,
): Promise<EvaluateResult> {
  let result: EvaluateResult | undefined;
  try {
    await parts.state.commit(async (index) => {
      const job = await parts.jobs.get(namespace, jobId);
      if (!job) throw notFound('job not found');
      if (job.Periodic) throw badRequest("can't evaluate periodic job");
      if (isParameterized(job)) throw badRequest("can't evaluate parameterized job");
      const now = parts.state.clock.now();
      const items: Write[] = [];
      const events: PendingEvent[] = [];
      if (forceReschedule) {
        for (const alloc of await parts.allocations.ofJob(namespace, jobId)) {
          const group = job.TaskGroups.find((tg) => tg.Name === alloc.TaskGroup);
          if (!group || !rescheduleEnabled(group.ReschedulePolicy)) continue;
          if (alloc.NextAllocation !== '' || alloc.ClientStatus !== 'failed') continue;
          if (alloc.DesiredTransition.ForceReschedule === true) continue;
          const marked: StoredAllocation = {
            ...alloc,
            DesiredTransition: { ...alloc.DesiredTransition, ForceReschedule: true },
            ModifyIndex: index,
            ModifyTime: now * 1e6,
          };
          items.push(parts.allocations.updated(marked, alloc));
          events.push(allocationEvent('AllocationUpdateDesiredStatus', marked));
        }
      }
      const evaluation = pendingEvaluation(
        {
          Namespace: namespace,
          Priority: job.Priority,
          Type: job.Type,
          TriggeredBy: 'job-register',
          JobID: job.ID,
          JobModifyIndex: job.ModifyIndex,
        },
        index,
        now,
      );
      items.push(parts.evaluations.put(evaluation));
      // Nomad's Job.Evaluate writes the evaluation (and any forced allocations) as one AllocUpdateDesiredTransition
      // message, so its events are of that type, forced allocations or none.
      events.push(evaluationEvent('AllocationUpdateDesiredStatus', evaluation));
      result = { EvalID: evaluation.ID, EvalCreateIndex: index, JobModifyIndex: job.ModifyIndex, Index: index };
      return { items, tables: events.length > 1 ? ['evals', 'allocs'] : ['evals'], events };
    });
  } catch (error) {
    if (error instanceof WriteConditionFailed) throw conflict('the job’s allocations changed concurrently; retry');
    throw error;
  }
  return result as EvaluateResult;
}
