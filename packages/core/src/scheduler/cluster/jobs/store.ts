/**
 * Jobs in the table, as Nomad's Job.Register and Job.Deregister write them (`nomad/job_endpoint.go`,
 * `nomad/state/state_store.go`): the job item (`jobPk(namespace)`, its ID), one item per version (`jobVersionPk`, the
 * last six kept) and the evaluation the write creates, with the index and the events, in one transaction at one
 * index (`state.ts`). Events: `JobRegistered` (or `JobDeregistered`) on the Job topic and on the Evaluation topic, the
 * write's type on both as in Nomad; a purge's Job event carries `Deleted: true`.
 */
import { badRequest, conflict } from '../../../lib/errors.ts';
import { itemKind } from '../../../storage/item-mac.ts';
import type { Write } from '../../../storage/store.ts';
import { sameContent, unchangedSince, withoutKeys } from '../../acl/common.ts';
import { jobPk, jobVersionPk, jobVersionSk } from '../../keys.ts';
import { type PendingEvent, type SchedulerState, WriteConditionFailed } from '../../state.ts';
import { evaluationEvent, pendingEvaluation, type Evaluation } from '../evaluations/model.ts';
import type { Evaluations } from '../evaluations/store.ts';
import type { Namespaces } from '../namespaces/store.ts';
import type { NodePools } from '../node-pools/store.ts';
import { evaluatesOnRegister, type Job, jobStatus, maxJobBytes, specOf } from './model.ts';
import { JobSummaries } from './summary.ts';

export const jobKind = itemKind('scheduler-job');
export const jobVersionKind = itemKind('scheduler-job-version');
/** Nomad's JobTrackedVersions. */
export const trackedVersions = 6;

export interface RegisterOptions {
  enforceIndex?: boolean | undefined;
  jobModifyIndex?: number | undefined;
  preserveCounts?: boolean | undefined;
  evalPriority?: number | undefined;
}

export interface RegisterResult {
  EvalID: string;
  EvalCreateIndex: number;
  JobModifyIndex: number;
  Warnings: string;
  Index: number;
}

const enforcePrefix = 'Enforcing job modify index';

export class Jobs {
  /** The jobs' summaries, written with each registration, placement, client update and evaluation outcome. */
  readonly summaries: JobSummaries;

  constructor(
    private readonly state: SchedulerState,
    private readonly namespaces: Namespaces,
    private readonly nodePools: NodePools,
    private readonly evaluations: Evaluations,
  ) {
    this.summaries = new JobSummaries(state, (namespace, id) => this.get(namespace, id));
  }

  async get(namespace: string, id: string): Promise<Job | undefined> {
    return withoutKeys<Job>(await this.state.store.getVerified(jobKind, jobPk(namespace), id));
  }

  /** The jobs of one namespace, sorted by ID. */
  async list(namespace: string): Promise<Job[]> {
    return (await this.state.store.list(jobPk(namespace)))
      .filter((item) => this.state.store.verified(jobKind, item))
      .map((item) => withoutKeys<Job>(item) as Job);
  }

  /** The versions kept of a job, newest first. */
  async versions(namespace: string, id: string): Promise<Job[]> {
    return (await this.state.store.list(jobVersionPk(namespace, id)))
      .filter((item) => this.state.store.verified(jobVersionKind, item))
      .map((item) => withoutKeys<Job>(item) as Job)
      .reverse();
  }

  /** The job as it was at `version`, if that version is still kept (the last six are). */
  async version(namespace: string, id: string, version: number): Promise<Job | undefined> {
    return withoutKeys<Job>(
      await this.state.store.getVerified(jobVersionKind, jobVersionPk(namespace, id), jobVersionSk(version)),
    );
  }

  /**
   * Registers a validated job (`model.ts`): a new version when its spec changed, the same version otherwise, and a
   * pending `job-register` evaluation (none for periodic and parameterized jobs).
   */
  async register(submitted: Job, options: RegisterOptions = {}): Promise<RegisterResult> {
    const size = Buffer.byteLength(JSON.stringify(submitted));
    if (size > maxJobBytes) throw badRequest(`job is ${size} bytes as JSON; at most ${maxJobBytes} are accepted`);
    let result: RegisterResult | undefined;
    try {
      await this.state.commit(async (index) => {
        const namespace = await this.namespaces.get(submitted.Namespace);
        if (!namespace)
          throw badRequest(
            `job ${JSON.stringify(submitted.ID)} is in nonexistent namespace ${JSON.stringify(submitted.Namespace)}`,
          );
        const existing = await this.get(submitted.Namespace, submitted.ID);
        if (options.enforceIndex) enforce(existing, options.jobModifyIndex ?? 0);
        const job: Job = structuredClone(submitted);
        if (job.NodePool === '') job.NodePool = namespace.NodePoolConfiguration?.Default || 'default';
        if (!(await this.nodePools.get(job.NodePool)))
          throw badRequest(`job ${JSON.stringify(job.ID)} is in nonexistent node pool ${JSON.stringify(job.NodePool)}`);
        if (options.preserveCounts && existing) {
          for (const group of job.TaskGroups) {
            const before = existing.TaskGroups.find((old) => old.Name === group.Name);
            if (before) group.Count = before.Count;
          }
        }
        const changed = !existing || !sameContent(specOf(job), specOf(existing));
        const evaluation = evaluatesOnRegister(job)
          ? pendingEvaluation(
              {
                Namespace: job.Namespace,
                Priority: options.evalPriority || job.Priority,
                Type: job.Type,
                TriggeredBy: 'job-register',
                JobID: job.ID,
                JobModifyIndex: changed ? index : (existing?.JobModifyIndex ?? index),
              },
              index,
              this.state.clock.now(),
            )
          : undefined;
        const stored: Job = {
          ...job,
          Status: jobStatus(job, evaluation !== undefined),
          StatusDescription: '',
          Stable: changed ? false : (existing?.Stable ?? false),
          Version: existing ? (changed ? existing.Version + 1 : existing.Version) : 0,
          SubmitTime: changed ? this.state.clock.now() * 1e6 : (existing?.SubmitTime ?? this.state.clock.now() * 1e6),
          CreateIndex: existing?.CreateIndex ?? index,
          ModifyIndex: index,
          JobModifyIndex: changed ? index : (existing?.JobModifyIndex ?? index),
        };
        result = {
          EvalID: evaluation?.ID ?? '',
          EvalCreateIndex: evaluation ? index : 0,
          JobModifyIndex: stored.JobModifyIndex,
          Warnings: '',
          Index: index,
        };
        const summaryWrites = await this.summaries.registered(stored, index, existing?.Status);
        return {
          items: [
            ...this.jobWrites(stored, existing, changed),
            ...(evaluation ? [this.evaluations.put(evaluation)] : []),
            ...summaryWrites,
          ],
          tables: [
            ...(evaluation ? (['jobs', 'evals'] as const) : (['jobs'] as const)),
            ...(summaryWrites.length > 0 ? (['job_summary'] as const) : []),
          ],
          events: events('JobRegistered', stored, evaluation),
        };
      });
    } catch (error) {
      if (error instanceof WriteConditionFailed) throw conflict('the job was modified concurrently; retry');
      throw error;
    }
    return result as RegisterResult;
  }

  /**
   * Deregisters a job: stopped as a new version, or with `purge` deleted with its versions; a pending
   * `job-deregister` evaluation either way (Nomad's type `service` whatever the job's). A job that does not exist is
   * answered as Nomad does: nothing written, no evaluation.
   */
  async deregister(namespace: string, id: string, purge: boolean): Promise<RegisterResult> {
    let result: RegisterResult = { EvalID: '', EvalCreateIndex: 0, JobModifyIndex: 0, Warnings: '', Index: 0 };
    try {
      await this.state.commit(async (index) => {
        const existing = await this.get(namespace, id);
        if (!existing) return undefined;
        const evaluation = evaluatesOnRegister(existing)
          ? pendingEvaluation(
              {
                Namespace: namespace,
                Priority: existing.Priority || 50,
                Type: 'service',
                TriggeredBy: 'job-deregister',
                JobID: id,
                JobModifyIndex: index,
              },
              index,
              this.state.clock.now(),
            )
          : undefined;
        const evalWrites = evaluation ? [this.evaluations.put(evaluation)] : [];
        const tables: Array<'jobs' | 'evals' | 'job_summary'> = evaluation ? ['jobs', 'evals'] : ['jobs'];
        tables.push('job_summary');
        result = {
          EvalID: evaluation?.ID ?? '',
          EvalCreateIndex: evaluation ? index : 0,
          JobModifyIndex: index,
          Warnings: '',
          Index: index,
        };
        if (purge) {
          const versions = await this.state.store.list(jobVersionPk(namespace, id));
          const jobEvent: PendingEvent = {
            ...jobEventOf('JobDeregistered', existing),
            Payload: { Job: existing, Deleted: true },
          };
          return {
            items: [
              { delete: { pk: jobPk(namespace), sk: id }, when: { equals: { ModifyIndex: existing.ModifyIndex } } },
              ...versions.map((version): Write => ({ delete: { pk: version.pk, sk: version.sk } })),
              ...evalWrites,
              this.summaries.deleted(namespace, id),
              // A purged child leaves its parent's children (Nomad's DeleteJobTxn).
              ...(await this.summaries.childStatus(existing, existing.Status, '', index)),
            ],
            tables,
            events: [jobEvent, ...(evaluation ? [evaluationEvent('JobDeregistered', evaluation)] : [])],
          };
        }
        const changed = !existing.Stop;
        const stopped: Job = {
          ...existing,
          Stop: true,
          Status: jobStatus({ ...existing, Stop: true }, evaluation !== undefined),
          Stable: changed ? false : existing.Stable,
          Version: changed ? existing.Version + 1 : existing.Version,
          SubmitTime: this.state.clock.now() * 1e6,
          ModifyIndex: index,
          JobModifyIndex: changed ? index : existing.JobModifyIndex,
        };
        return {
          items: [
            ...this.jobWrites(stopped, existing, changed),
            ...evalWrites,
            ...(await this.summaries.childStatus(existing, existing.Status, stopped.Status, index)),
          ],
          tables,
          events: events('JobDeregistered', stopped, evaluation),
        };
      });
    } catch (error) {
      if (error instanceof WriteConditionFailed) throw conflict('the job was modified concurrently; retry');
      throw error;
    }
    return result;
  }

  /**
   * The writes that set a job's status (Nomad's setJobStatus, when its allocations or evaluations change it), for the
   * transaction of that change, and its Job-topic event of the write's `type`.
   */
  async statusWrites(
    job: Job,
    status: string,
    index: number,
    type: string,
  ): Promise<{ writes: Write[]; event: PendingEvent }> {
    const updated: Job = { ...job, Status: status, ModifyIndex: index };
    return {
      writes: [
        {
          put: this.state.store.signed(jobKind, { pk: jobPk(job.Namespace), sk: job.ID, ...updated }),
          when: unchangedSince(job),
        },
        // A child job's status counts in its parent's summary (Nomad's setJobSummary).
        ...(await this.summaries.childStatus(job, job.Status, status, index)),
      ],
      event: jobEventOf(type, updated),
    };
  }

  /**
   * Nomad's updateJobStabilityImpl, for the transaction of a deployment that succeeded: the version's `Stable` set
   * (and the job's, when that version is the current one), with a Job-topic event of the write's `type`. Nothing when
   * the version is no longer kept or already stable.
   */
  async stabilityWrites(
    namespace: string,
    id: string,
    version: number,
    index: number,
    type: string,
  ): Promise<{ items: Write[]; events: PendingEvent[] }> {
    const kept = await this.version(namespace, id, version);
    if (!kept || kept.Stable) return { items: [], events: [] };
    const store = this.state.store;
    const stableVersion: Job = { ...kept, Stable: true, ModifyIndex: index };
    const items: Write[] = [
      {
        put: store.signed(jobVersionKind, {
          pk: jobVersionPk(namespace, id),
          sk: jobVersionSk(version),
          ...stableVersion,
        }),
      },
    ];
    const current = await this.get(namespace, id);
    if (!current || current.Version !== version) return { items, events: [jobEventOf(type, stableVersion)] };
    const stableJob: Job = { ...current, Stable: true, ModifyIndex: index };
    items.push({
      put: store.signed(jobKind, { pk: jobPk(namespace), sk: id, ...stableJob }),
      when: unchangedSince(current),
    });
    return { items, events: [jobEventOf(type, stableJob)] };
  }

  /**
   * Nomad's auto-revert (the deployment watcher's rollback job, stored by upsertJobImpl): `target`, an earlier version,
   * registered again as the next version of the current job, for the transaction of the failed deployment's write,
   * with a Job-topic event of the write's `type`.
   */
  revertWrites(
    current: Job,
    target: Job,
    index: number,
    type: string,
  ): { job: Job; items: Write[]; event: PendingEvent } {
    const job: Job = {
      ...structuredClone(target),
      Version: current.Version + 1,
      CreateIndex: current.CreateIndex,
      ModifyIndex: index,
      JobModifyIndex: index,
      Status: current.Status === 'dead' ? 'pending' : current.Status,
    };
    return { job, items: this.jobWrites(job, current, true), event: jobEventOf(type, job) };
  }

  /** The job item, and for a new version its version item (the oldest kept one past six deleted). */
  private jobWrites(job: Job, existing: Job | undefined, changed: boolean): Write[] {
    const store = this.state.store;
    const writes: Write[] = [
      { put: store.signed(jobKind, { pk: jobPk(job.Namespace), sk: job.ID, ...job }), when: unchangedSince(existing) },
    ];
    const versionKey = { pk: jobVersionPk(job.Namespace, job.ID), sk: jobVersionSk(job.Version) };
    // One item per version: a registration that changed nothing rewrites its version's item, it adds none.
    writes.push({ put: store.signed(jobVersionKind, { ...versionKey, ...job }) });
    if (changed && job.Version >= trackedVersions)
      writes.push({ delete: { pk: versionKey.pk, sk: jobVersionSk(job.Version - trackedVersions) } });
    return writes;
  }
}

function enforce(existing: Job | undefined, expected: number): void {
  if (expected === 0 && existing) throw conflict(`${enforcePrefix} 0: job already exists`);
  if (expected !== 0 && !existing) throw conflict(`${enforcePrefix} ${expected}: job does not exist`);
  if (existing && expected !== 0 && existing.JobModifyIndex !== expected)
    throw conflict(
      `${enforcePrefix} ${expected}: job exists with conflicting job modify index: ${existing.JobModifyIndex}`,
    );
}

function jobEventOf(type: string, job: Job): PendingEvent {
  return { Topic: 'Job', Type: type, Key: job.ID, Namespace: job.Namespace, FilterKeys: null, Payload: { Job: job } };
}

function events(type: string, job: Job, evaluation: Evaluation | undefined): PendingEvent[] {
  return [jobEventOf(type, job), ...(evaluation ? [evaluationEvent(type, evaluation)] : [])];
}
