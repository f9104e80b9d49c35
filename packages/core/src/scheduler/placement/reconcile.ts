/**
 * The reconciler: from a job, its allocations and their nodes, what an evaluation does — allocations to place, to
 * stop, to update in place, the annotation counts of each task group (`Annotations.DesiredTGUpdates`), the
 * follow-up evaluations of delayed reschedules, and the job's deployment (one created, status changes of the
 * latest: `deployment.ts`, `canaries.ts`). Pure: everything it reads is in its input, `now` included, and its
 * answer is ordered (task groups in the job's order, allocations by name), so tests are exact. Service and batch jobs
 * as Nomad's generic scheduler reconciles them (`scheduler/reconciler/reconcile_cluster.go`), system and sysbatch
 * jobs as its node reconciler (`system-reconcile.ts`).
 */
import type { Allocation } from '../cluster/allocations/model.ts';
import { isActive } from '../cluster/deployments/model.ts';
import type { Job } from '../cluster/jobs/model.ts';
import { followupEvaluation } from './descriptions.ts';
import { deploymentContext, finishDeployments } from './deployment.ts';
import { emptyUpdates, type JobContext, stopAll } from './group-common.ts';
import { reconcileGroup } from './reconcile-group.ts';
import { reconcileSystem } from './system-reconcile.ts';
import { lostAfterStop } from './tainted.ts';
import type { DesiredUpdates, Followup, ReconcileInput, Reconciliation } from './types.ts';

const isSystem = (job: Job | undefined): boolean => job?.Type === 'system' || job?.Type === 'sysbatch';
const isTerminalAlloc = (alloc: Allocation): boolean =>
  alloc.DesiredStatus !== 'run' ||
  alloc.ClientStatus === 'complete' ||
  alloc.ClientStatus === 'failed' ||
  alloc.ClientStatus === 'lost';

/** The task groups to reconcile: the job's, in its order, then those only allocations name, sorted. */
export function groupNames(job: Job | undefined, allocs: Allocation[]): string[] {
  const names = job ? job.TaskGroups.map((group) => group.Name) : [];
  const others = [...new Set(allocs.map((alloc) => alloc.TaskGroup))].filter((name) => !names.includes(name)).sort();
  return [...names, ...others];
}

/** Delayed reschedules batched into follow-up evaluations, per group, as Nomad's createLaterEvals. */
function batchFollowups(later: Array<{ alloc: Allocation; at: number }>): Followup[] {
  const sorted = [...later].sort((a, b) => a.at - b.at || a.alloc.ID.localeCompare(b.alloc.ID));
  const batches: Followup[] = [];
  let current: Followup | undefined;
  for (const { alloc, at } of sorted) {
    if (current && at - current.at < followupEvaluation.windowMs) {
      current.allocIds.push(alloc.ID);
      continue;
    }
    const first = current === undefined;
    current = {
      at,
      allocIds: [alloc.ID],
      triggeredBy: first ? followupEvaluation.triggeredBy : followupEvaluation.laterTriggeredBy,
      statusDescription: first ? followupEvaluation.statusDescription : '',
    };
    batches.push(current);
  }
  return batches;
}

export function reconcile(input: ReconcileInput): Reconciliation {
  const nodes = new Map(input.nodes.map((node) => [node.ID, node]));
  const job = input.job;
  if (job && isSystem(job)) return reconcileSystem(input, job, nodes);
  const versions = new Map(input.jobVersions.map((version) => [version.Version, version]));
  const result: Reconciliation = {
    place: [],
    stop: [],
    inplace: [],
    desiredTGUpdates: {},
    followups: [],
    deploymentUpdates: [],
  };
  const deployments = deploymentContext(
    job,
    input.deployment,
    input.newDeploymentId ?? input.evaluation.ID,
    input.evaluation.Priority ?? job?.Priority ?? 0,
  );
  let complete = true;
  const byGroup = new Map<string, Allocation[]>();
  for (const alloc of input.allocs) {
    const list = byGroup.get(alloc.TaskGroup);
    if (list) list.push(alloc);
    else byGroup.set(alloc.TaskGroup, [alloc]);
  }
  const isBatch = job?.Type === 'batch';
  const base = { jobId: input.jobId, isBatch, nodes, evalId: input.evaluation.ID, now: input.now };
  result.stop.push(...lostAfterStop(input.allocs, nodes));
  for (const name of groupNames(job, input.allocs)) {
    const allocs = byGroup.get(name) ?? [];
    if (!job || job.Stop) {
      // Nomad's handleStop: every allocation not yet terminal stops.
      const live = allocs.filter((alloc) => !isTerminalAlloc(alloc));
      const group = job?.TaskGroups.find((tg) => tg.Name === name);
      const stopped = stopAll(live, { ...base, group });
      result.stop.push(...stopped.stop);
      result.desiredTGUpdates[name] = { ...emptyUpdates(), Stop: stopped.count } satisfies DesiredUpdates;
      continue;
    }
    const context: JobContext = {
      ...base,
      job,
      deployments,
      ...(input.fitsInPlace ? { fitsInPlace: input.fitsInPlace } : {}),
      jobOf: (alloc) => (alloc.JobVersion === job.Version ? job : versions.get(alloc.JobVersion)),
    };
    const group = reconcileGroup(name, allocs, context);
    result.place.push(...group.place);
    result.stop.push(...group.stop);
    result.inplace.push(...group.inplace);
    result.desiredTGUpdates[name] = group.updates;
    result.followups.push(...batchFollowups(group.later));
    complete &&= group.complete;
  }
  if (job && !job.Stop) finishDeployments(deployments, complete);
  result.deploymentUpdates = deployments.updates;
  if (deployments.created) result.deployment = deployments.created;
  const current = deployments.current;
  const joined = deployments.created ?? (current && isActive(current) ? current : undefined);
  if (joined) result.deploymentId = joined.ID;
  // An allocation updated in place joins that deployment, its health to be reported anew (Nomad's computeJobAllocs).
  result.inplace = result.inplace.map((alloc) =>
    alloc.DeploymentID === (joined?.ID ?? '')
      ? alloc
      : { ...alloc, DeploymentID: joined?.ID ?? '', DeploymentStatus: null },
  );
  result.followups.sort((a, b) => a.at - b.at);
  if (result.followups.length > 0) result.followupAt = result.followups[0]?.at;
  return result;
}
