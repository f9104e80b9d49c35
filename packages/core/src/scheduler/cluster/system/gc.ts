/**
 * Nomad's garbage collection (`nomad/core_sched.go`: jobGC, evalGC, deploymentGC; `Job.BatchDeregister` in
 * `nomad/job_endpoint.go`), run by the scheduler's minute sweep (`sweep.ts`) with the operator's thresholds
 * (`thresholds.ts`) and, with every threshold at zero, as `PUT /v1/system/gc` requests it (`forced-gc.ts`). In Nomad's
 * order:
 *
 * - jobs: a job that may be collected (`gc-rules.ts` jobIsGcable), submitted before the job threshold, whose
 *   evaluations are all terminal and old enough and whose allocations may all go, is reaped with them and its
 *   finished deployments: first the evaluations, allocations (with their two links) and deployments, in writes of
 *   their own without events (Nomad's `Eval.Reap` and deployment reap emit none), then the jobs, a batch of them per
 *   write with their versions and summaries, each a `JobBatchDeregistered` event on the Job topic whose payload is
 *   `{Job, Deleted: true}` (Nomad's `eventFromChange` for a deleted job); a dispatched or periodic child leaves its
 *   parent's children count in the same write.
 * - evaluations: a terminal evaluation older than its threshold (batch jobs' own, longer) whose allocations may all
 *   go is reaped with them; the allocations that may go are reaped even when the evaluation stays.
 * - deployments: a finished deployment older than its threshold with no allocation that is not terminal.
 * - nodes, last (Nomad's order in a forced run): a node `down` for longer than its threshold whose allocations are all
 *   terminal (`nodes/store.ts` `reapDown`; no event, as Nomad's batch deregistration).
 *
 * Every delete is conditional on the item being unchanged since it was read, so a change that lands between the
 * read and the write (a job registered again, an allocation reported) fails that write, which is skipped: the next
 * run looks again. A run deletes at most `maxDeletes` items (writes of at most `perWrite`): a backlog is worked off
 * over several runs, never in one long one.
 */
import type { Key, Write } from '../../../storage/store.ts';
import { jobPk, jobVersionPk } from '../../keys.ts';
import { type PendingEvent, type SchedulerState, type TableName, WriteConditionFailed } from '../../state.ts';
import { isTerminal } from '../allocations/model.ts';
import { Allocations, type StoredAllocation } from '../allocations/store.ts';
import { type ClusterDeployment, isActive } from '../deployments/model.ts';
import { Deployments } from '../deployments/store.ts';
import type { Evaluation } from '../evaluations/model.ts';
import { Evaluations } from '../evaluations/store.ts';
import type { Job } from '../jobs/model.ts';
import type { Jobs } from '../jobs/store.ts';
import type { Namespaces } from '../namespaces/store.ts';
import type { ClusterNodes } from '../nodes/store.ts';
import { allocGcEligible, evalGc, jobIsGcable } from './gc-rules.ts';
import type { GcThresholds } from './thresholds.ts';

/** What a run reaped. */
export interface GcResult {
  jobs: number;
  evaluations: number;
  allocations: number;
  deployments: number;
  nodes: number;
}

export interface GcOptions {
  /** The most items one run deletes (default 2,000). */
  maxDeletes?: number;
  /** The most items one write deletes (default 80: a DynamoDB transaction takes 100, the state's own among them). */
  perWrite?: number;
}

/** The event of a job reaped by the garbage collection, as Nomad's `JobBatchDeregistered`. */
export function jobReapedEvent(job: Job): PendingEvent {
  return {
    Topic: 'Job',
    Type: 'JobBatchDeregistered',
    Key: job.ID,
    Namespace: job.Namespace,
    FilterKeys: null,
    Payload: { Job: job, Deleted: true },
  };
}

const jobKey = (namespace: string, id: string) => `${namespace}\u0000${id}`;
const nanos = (ms: number) => ms * 1e6;

/** The objects one run has chosen to reap, and what is left of its budget. */
class Reaping {
  readonly evaluations = new Map<string, Evaluation>();
  readonly allocations = new Map<string, StoredAllocation>();
  readonly deployments = new Map<string, ClusterDeployment>();
  readonly jobs: Job[] = [];
  /** The jobs filled the bound: the run reaps what it took and looks no further. */
  full = false;
  constructor(public budget: number) {}

  /** Takes `evaluations` and `allocations` (and `deployments`) if they fit in the budget, all or none. */
  take(
    evaluations: Evaluation[],
    allocations: StoredAllocation[],
    deployments: ClusterDeployment[] = [],
    extra = 0,
  ): boolean {
    const fresh = {
      evaluations: evaluations.filter((evaluation) => !this.evaluations.has(evaluation.ID)),
      allocations: allocations.filter((alloc) => !this.allocations.has(alloc.ID)),
      deployments: deployments.filter((deployment) => !this.deployments.has(deployment.ID)),
    };
    const cost = fresh.evaluations.length + 3 * fresh.allocations.length + fresh.deployments.length + extra;
    if (cost > this.budget) return false;
    this.budget -= cost;
    for (const evaluation of fresh.evaluations) this.evaluations.set(evaluation.ID, evaluation);
    for (const alloc of fresh.allocations) this.allocations.set(alloc.ID, alloc);
    for (const deployment of fresh.deployments) this.deployments.set(deployment.ID, deployment);
    return true;
  }
}

export class GarbageCollector {
  private readonly maxDeletes: number;
  private readonly perWrite: number;

  constructor(
    private readonly state: SchedulerState,
    private readonly namespaces: Namespaces,
    private readonly jobs: Jobs,
    private readonly evaluations: Evaluations,
    private readonly allocations: Allocations,
    private readonly deployments: Deployments,
    private readonly nodes: ClusterNodes,
    options: GcOptions = {},
  ) {
    this.maxDeletes = options.maxDeletes ?? 2000;
    this.perWrite = options.perWrite ?? 80;
  }

  /** One run: what may be reaped under `thresholds`, reaped (at most `maxDeletes` items). */
  async collect(thresholds: GcThresholds): Promise<GcResult> {
    const nowMs = this.state.clock.now();
    const nowNs = nanos(nowMs);
    const reaping = new Reaping(this.maxDeletes);
    const evaluationsByJob = new Map<string, Evaluation[]>();
    for (const evaluation of await this.evaluations.list()) {
      const key = jobKey(evaluation.Namespace, evaluation.JobID);
      evaluationsByJob.set(key, [...(evaluationsByJob.get(key) ?? []), evaluation]);
    }
    const deployments = await this.deployments.list();
    const deploymentsByJob = new Map<string, ClusterDeployment[]>();
    for (const deployment of deployments) {
      const key = jobKey(deployment.Namespace, deployment.JobID);
      deploymentsByJob.set(key, [...(deploymentsByJob.get(key) ?? []), deployment]);
    }
    const jobsRead = new Map<string, Job | undefined>();
    const allocationsRead = new Map<string, StoredAllocation[]>();
    const allocationsOf = async (namespace: string, id: string) => {
      const key = jobKey(namespace, id);
      let allocs = allocationsRead.get(key);
      if (!allocs) {
        allocs = await this.allocations.ofJob(namespace, id);
        allocationsRead.set(key, allocs);
      }
      return allocs;
    };

    // Jobs (Nomad's jobGC, allowBatch: a dead batch job's evaluations go whole).
    const jobCutoff = nanos(nowMs - thresholds.jobMs);
    for (const namespace of await this.namespaces.list()) {
      for (const job of await this.jobs.list(namespace.Name)) {
        jobsRead.set(jobKey(job.Namespace, job.ID), job);
        if (!jobIsGcable(job) || job.SubmitTime > jobCutoff) continue;
        const key = jobKey(job.Namespace, job.ID);
        const allocs = await allocationsOf(job.Namespace, job.ID);
        const evaluations = evaluationsByJob.get(key) ?? [];
        const allGo = evaluations.every(
          (evaluation) =>
            evalGc(
              evaluation,
              job,
              allocs.filter((alloc) => alloc.EvalID === evaluation.ID),
              nowNs,
              jobCutoff,
              true,
            ).gc,
        );
        // Every allocation of the job goes with it (so no allocation outlives its job's item).
        if (!allGo || !allocs.every((alloc) => allocGcEligible(alloc, job, nowNs, jobCutoff))) continue;
        const finished = (deploymentsByJob.get(key) ?? []).filter((deployment) => !isActive(deployment));
        if (finished.length !== (deploymentsByJob.get(key) ?? []).length) continue;
        // The job's own item, its versions (at most six), its summary and its parent's.
        if (!reaping.take(evaluations, allocs, finished, 9)) {
          reaping.full = true;
          break;
        }
        reaping.jobs.push(job);
      }
    }
    const reapedJobs = new Set(reaping.jobs.map((job) => jobKey(job.Namespace, job.ID)));

    // Evaluations (Nomad's evalGC). A run whose bound the jobs filled reads no further: what is left is the next
    // run's, which starts from the jobs again (reading every evaluation's allocations here would be spent for nothing).
    const evalCutoff = nanos(nowMs - thresholds.evalMs);
    const batchEvalCutoff = nanos(nowMs - thresholds.batchEvalMs);
    for (const evaluations of reaping.full ? [] : evaluationsByJob.values()) {
      for (const evaluation of evaluations) {
        const key = jobKey(evaluation.Namespace, evaluation.JobID);
        if (reapedJobs.has(key) || reaping.evaluations.has(evaluation.ID)) continue;
        const cutoff = evaluation.Type === 'batch' ? batchEvalCutoff : evalCutoff;
        if (evaluation.ModifyTime > cutoff) continue;
        if (!jobsRead.has(key)) jobsRead.set(key, await this.jobs.get(evaluation.Namespace, evaluation.JobID));
        const job = jobsRead.get(key);
        const allocs = (await allocationsOf(evaluation.Namespace, evaluation.JobID)).filter(
          (alloc) => alloc.EvalID === evaluation.ID,
        );
        const verdict = evalGc(evaluation, job, allocs, nowNs, cutoff, false);
        const going = allocs.filter((alloc) => verdict.allocs.includes(alloc.ID));
        reaping.take(verdict.gc ? [evaluation] : [], going);
      }
    }

    // Deployments (Nomad's deploymentGC).
    const deploymentCutoff = nanos(nowMs - thresholds.deploymentMs);
    for (const deployment of reaping.full ? [] : deployments) {
      if (reaping.deployments.has(deployment.ID) || isActive(deployment)) continue;
      if ((deployment.ModifyTime || deployment.CreateTime) > deploymentCutoff) continue;
      const allocs = (await allocationsOf(deployment.Namespace, deployment.JobID)).filter(
        (alloc) => alloc.DeploymentID === deployment.ID,
      );
      // An allocation of the deployment that is not reaped must be terminal (Nomad's check).
      if (allocs.some((alloc) => !reaping.allocations.has(alloc.ID) && !isTerminal(alloc))) continue;
      reaping.take([], [], [deployment]);
    }

    const result = await this.reap(reaping);
    result.nodes = await this.reapNodes(nanos(nowMs - thresholds.nodeMs) / 1e9, reaping.budget);
    return result;
  }

  /** Nomad's nodeGC: down nodes older than the cutoff (seconds) with only terminal allocations, three deletes each. */
  private async reapNodes(cutoffSeconds: number, budget: number): Promise<number> {
    let reaped = 0;
    const allTerminal = async (id: string) => (await this.allocations.onNode(id)).every(isTerminal);
    for (const id of await this.nodes.downIds()) {
      if (budget < 3) break;
      if (await this.nodes.reapDown(id, cutoffSeconds, allTerminal)) {
        reaped++;
        budget -= 3;
      }
    }
    return reaped;
  }

  /** The reaping written: evaluations, allocations and deployments first, then the jobs. */
  private async reap(reaping: Reaping): Promise<GcResult> {
    const result: GcResult = { jobs: 0, evaluations: 0, allocations: 0, deployments: 0, nodes: 0 };
    const deletes: Array<{ writes: Write[]; counts: Partial<GcResult>; table: TableName; job: string }> = [
      ...[...reaping.allocations.values()].map((alloc) => ({
        writes: allocationDeletes(alloc),
        counts: { allocations: 1 },
        table: 'allocs' as const,
        job: jobKey(alloc.Namespace, alloc.JobID),
      })),
      ...[...reaping.evaluations.values()].map((evaluation) => ({
        writes: [unchangedDelete(Evaluations.key(evaluation.ID), evaluation.ModifyIndex)],
        counts: { evaluations: 1 },
        table: 'evals' as const,
        job: jobKey(evaluation.Namespace, evaluation.JobID),
      })),
      ...[...reaping.deployments.values()].map((deployment) => ({
        writes: [unchangedDelete(Deployments.key(deployment.ID), deployment.ModifyIndex)],
        counts: { deployments: 1 },
        table: 'deployment' as const,
        job: jobKey(deployment.Namespace, deployment.JobID),
      })),
    ];
    // A job whose evaluations, allocations or deployments were not all reaped stays (Nomad reaps no job then).
    const kept = new Set<string>();
    // An allocation's deletes carry one more write: its node's allocation mark (`scheduler/beat-marks.ts`).
    const size = (entry: (typeof deletes)[number]) => entry.writes.length + (entry.table === 'allocs' ? 1 : 0);
    for (const chunk of chunked(deletes, size, this.perWrite)) {
      const written = await this.commitOrSkip(() => ({
        items: chunk.flatMap((entry) => entry.writes),
        tables: [...new Set(chunk.map((entry) => entry.table))],
      }));
      if (!written) {
        for (const entry of chunk) kept.add(entry.job);
        continue;
      }
      for (const entry of chunk)
        for (const [field, count] of Object.entries(entry.counts)) result[field as keyof GcResult] += count as number;
    }
    result.jobs = await this.reapJobs(reaping.jobs.filter((job) => !kept.has(jobKey(job.Namespace, job.ID))));
    return result;
  }

  /**
   * Nomad's Job.BatchDeregister with purge: the jobs deleted, a batch per write, each with its versions, its summary,
   * its parent's children count and a `JobBatchDeregistered` event. Two children of one parent, or a parent and its
   * child, never share a write (each touches the parent's summary). A batch whose condition fails is tried a job at a
   * time.
   */
  private async reapJobs(jobs: Job[]): Promise<number> {
    let reaped = 0;
    const batches: Job[][] = [];
    let batch: Job[] = [];
    let parents = new Set<string>();
    let members = new Set<string>();
    for (const job of jobs) {
      const own = jobKey(job.Namespace, job.ID);
      const parent = job.ParentID ? jobKey(job.Namespace, String(job.ParentID)) : '';
      // A write touches a summary once: no two children of one parent, and no parent beside its child (the child's
      // count would rewrite the summary the parent's reaping deletes).
      const clash = parent !== '' && (parents.has(parent) || members.has(parent));
      if (batch.length >= Math.floor(this.perWrite / 9) || clash || parents.has(own)) {
        batches.push(batch);
        batch = [];
        parents = new Set();
        members = new Set();
      }
      batch.push(job);
      members.add(own);
      if (parent) parents.add(parent);
    }
    if (batch.length > 0) batches.push(batch);
    for (const jobsOfWrite of batches) {
      if (await this.commitOrSkip((index) => this.jobReapWrite(jobsOfWrite, index))) reaped += jobsOfWrite.length;
      else if (jobsOfWrite.length > 1)
        for (const job of jobsOfWrite)
          if (await this.commitOrSkip((index) => this.jobReapWrite([job], index))) reaped++;
    }
    return reaped;
  }

  private async jobReapWrite(jobs: Job[], index: number) {
    const items: Write[] = [];
    for (const job of jobs) {
      const versions = await this.state.store.list(jobVersionPk(job.Namespace, job.ID));
      items.push(
        unchangedDelete({ pk: jobPk(job.Namespace), sk: job.ID }, job.ModifyIndex),
        ...versions.map((version): Write => ({ delete: { pk: version.pk, sk: version.sk } })),
        this.jobs.summaries.deleted(job.Namespace, job.ID),
        ...(await this.jobs.summaries.childStatus(job, job.Status, '', index)),
      );
    }
    return {
      items,
      tables: ['jobs', 'job_summary'] as TableName[],
      events: jobs.map(jobReapedEvent),
    };
  }

  /** Commits the write; false when one of its conditions failed (something changed since it was read). */
  private async commitOrSkip(
    plan: (index: number) =>
      | { items: Write[]; tables: TableName[]; events?: PendingEvent[] }
      | Promise<{
          items: Write[];
          tables: TableName[];
          events?: PendingEvent[];
        }>,
  ): Promise<boolean> {
    try {
      await this.state.commit(plan);
      return true;
    } catch (error) {
      if (error instanceof WriteConditionFailed) return false;
      throw error;
    }
  }
}

/** The item at `key` deleted only if its `ModifyIndex` is still the one read. */
function unchangedDelete(key: Key, modifyIndex: number): Write {
  return { delete: key, when: { equals: { ModifyIndex: modifyIndex } } };
}

/** An allocation and its two links, the allocation only if unchanged since read. */
function allocationDeletes(alloc: StoredAllocation): Write[] {
  return [
    unchangedDelete(Allocations.key(alloc.NodeID, alloc.ID), alloc.ModifyIndex),
    { delete: Allocations.jobLinkKey(alloc.Namespace, alloc.JobID, alloc.ID) },
    { delete: Allocations.idLinkKey(alloc.ID) },
  ];
}

/** Entries in groups whose sizes (by `size`) add up to at most `limit` (an entry larger than it alone). */
function chunked<T>(entries: T[], size: (entry: T) => number, limit: number): T[][] {
  const chunks: T[][] = [];
  let chunk: T[] = [];
  let total = 0;
  for (const entry of entries) {
    const n = size(entry);
    if (chunk.length > 0 && total + n > limit) {
      chunks.push(chunk);
      chunk = [];
      total = 0;
    }
    chunk.push(entry);
    total += n;
  }
  if (chunk.length > 0) chunks.push(chunk);
  return chunks;
}
