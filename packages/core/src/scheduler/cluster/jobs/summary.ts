/**
 * Job summaries (Nomad's `structs.JobSummary`, kept by its state store: `updateSummaryWithJob`,
 * `updateSummaryWithAlloc`, the evaluation's `QueuedAllocations`, `setJobSummary` for a parent's children): per task
 * group the allocations in each client state and those left queued, and per parent job its children by status.
 * One item per job (`jobSummaryPk(namespace)`, the job's ID), written in the same transaction as the change it counts
 * — the job's registration, the allocations' placement or client update, the evaluation's outcome — so a summary is
 * never behind its allocations. Every write moves the scheduler's one index (`state.ts`), so the read-modify-write a
 * change does here runs again whenever another write came first: counts are never lost.
 *
 * A job registered before summaries were kept has none: its first change counts from its allocations as stored.
 */
import type { Item, Write } from '../../../storage/store.ts';
import { jobSummaryPk } from '../../keys.ts';
import type { SchedulerState } from '../../state.ts';
import type { Allocation } from '../allocations/model.ts';

/** What a summary reads of a job (`model.ts` Job has it). */
export interface SummarizedJob {
  ID: string;
  Namespace: string;
  Status: string;
  ParentID?: string | undefined;
  TaskGroups: Array<{ Name: string }>;
  CreateIndex: number;
  ModifyIndex: number;
}

/** Nomad's TaskGroupSummary. */
export interface TaskGroupSummary {
  Queued: number;
  Complete: number;
  Failed: number;
  Running: number;
  Starting: number;
  Lost: number;
  Unknown: number;
}

/** Nomad's JobChildrenSummary: a parameterized or periodic job's children by status. */
export interface JobChildrenSummary {
  Pending: number;
  Running: number;
  Dead: number;
}

export interface JobSummary {
  JobID: string;
  Namespace: string;
  Summary: Record<string, TaskGroupSummary>;
  Children: JobChildrenSummary;
  CreateIndex: number;
  ModifyIndex: number;
}

/** What a summary counts of an allocation. */
export type CountedAllocation = Pick<Allocation, 'Namespace' | 'JobID' | 'TaskGroup' | 'ClientStatus'>;

/** An allocation written: `before` absent for a new one. */
export interface CountedChange {
  before?: CountedAllocation | undefined;
  after: CountedAllocation;
}

const field: Record<string, keyof TaskGroupSummary> = {
  pending: 'Starting',
  running: 'Running',
  complete: 'Complete',
  failed: 'Failed',
  lost: 'Lost',
  unknown: 'Unknown',
};

const childField: Record<string, keyof JobChildrenSummary> = { pending: 'Pending', running: 'Running', dead: 'Dead' };

export const emptyGroupSummary = (): TaskGroupSummary => ({
  Queued: 0,
  Complete: 0,
  Failed: 0,
  Running: 0,
  Starting: 0,
  Lost: 0,
  Unknown: 0,
});

const jobKey = (namespace: string, id: string) => `${namespace}\u0000${id}`;

/** The summary of a job from its allocations (and `queued`), as a new one counts them. */
export function countedSummary(
  job: Pick<SummarizedJob, 'ID' | 'Namespace' | 'TaskGroups' | 'CreateIndex' | 'ModifyIndex'>,
  allocs: CountedAllocation[],
  queued: Record<string, number> = {},
): JobSummary {
  const summary: JobSummary = {
    JobID: job.ID,
    Namespace: job.Namespace,
    Summary: {},
    Children: { Pending: 0, Running: 0, Dead: 0 },
    CreateIndex: job.CreateIndex,
    ModifyIndex: job.ModifyIndex,
  };
  for (const group of job.TaskGroups)
    summary.Summary[group.Name] = { ...emptyGroupSummary(), Queued: queued[group.Name] ?? 0 };
  for (const alloc of allocs) {
    const counted = field[alloc.ClientStatus];
    const group = summary.Summary[alloc.TaskGroup];
    if (counted && group) group[counted]++;
  }
  return summary;
}

export class JobSummaries {
  private allocationsOf: (namespace: string, id: string) => Promise<CountedAllocation[]> = async () => [];

  constructor(
    private readonly state: SchedulerState,
    private readonly jobOf: (namespace: string, id: string) => Promise<SummarizedJob | undefined>,
  ) {}

  /** Where a job's allocations are read, for a job that has no summary yet (`allocations/store.ts` sets it). */
  allocationsWith(reader: (namespace: string, id: string) => Promise<CountedAllocation[]>): void {
    this.allocationsOf = reader;
  }

  private get store() {
    return this.state.store;
  }

  async get(namespace: string, id: string): Promise<JobSummary | undefined> {
    const item = await this.store.get(jobSummaryPk(namespace), id);
    return item ? withoutKey(item) : undefined;
  }

  /** The summaries of a namespace's jobs, by job ID. */
  async ofNamespace(namespace: string): Promise<Map<string, JobSummary>> {
    const items = await this.store.list(jobSummaryPk(namespace));
    return new Map(items.map((item) => [item.sk, withoutKey(item)]));
  }

  /** The summary as a change starts from: the stored one, else one counted from the job's allocations. */
  private async current(namespace: string, id: string): Promise<JobSummary | undefined> {
    const stored = await this.get(namespace, id);
    if (stored) return stored;
    const job = await this.jobOf(namespace, id);
    return job ? countedSummary(job, await this.allocationsOf(namespace, id)) : undefined;
  }

  private put(summary: JobSummary): Write {
    return { put: { pk: jobSummaryPk(summary.Namespace), sk: summary.JobID, ...summary } };
  }

  /**
   * A registration's write (Nomad's updateSummaryWithJob): a new job's summary, or the job's new task groups added
   * (a group the job no longer has keeps its counts, as Nomad's); with a child job's status change counted in its
   * parent's children (`childStatus`).
   */
  async registered(job: SummarizedJob, index: number, previousStatus: string | undefined): Promise<Write[]> {
    const stored = await this.get(job.Namespace, job.ID);
    // A job registered before summaries were kept counts its allocations as stored; a new job starts at zero.
    const summary: JobSummary = stored ??
      (await this.current(job.Namespace, job.ID)) ?? {
        JobID: job.ID,
        Namespace: job.Namespace,
        Summary: {},
        Children: { Pending: 0, Running: 0, Dead: 0 },
        CreateIndex: index,
        ModifyIndex: index,
      };
    let changed = !stored;
    for (const group of job.TaskGroups)
      if (!summary.Summary[group.Name]) {
        summary.Summary[group.Name] = emptyGroupSummary();
        changed = true;
      }
    const writes: Write[] = changed ? [this.put({ ...summary, ModifyIndex: index })] : [];
    writes.push(...(await this.childStatus(job, previousStatus, job.Status, index)));
    return writes;
  }

  /**
   * A child job's status change counted in its parent's summary (Nomad's setJobSummary): the old status's count
   * down, the new one's up. Nothing for a job without a parent, an unchanged status, or a parent without a summary.
   */
  async childStatus(
    job: Pick<SummarizedJob, 'ParentID' | 'Namespace'>,
    before: string | undefined,
    after: string,
    index: number,
  ): Promise<Write[]> {
    const parentId = job.ParentID ?? '';
    if (parentId === '' || before === after) return [];
    const parent = await this.get(job.Namespace, parentId);
    if (!parent) return [];
    const children = { ...parent.Children };
    const old = before ? childField[before] : undefined;
    if (old && children[old] > 0) children[old]--;
    const now = childField[after];
    if (now) children[now]++;
    return [this.put({ ...parent, Children: children, ModifyIndex: index })];
  }

  /**
   * The writes counting allocations placed or changed in one transaction (Nomad's updateSummaryWithAlloc): a new
   * allocation counts as `Starting` and takes one from `Queued`; a client status change moves one count from the old
   * state to the new. One write per job whose summary changed; a job that is gone (purged) has none.
   */
  async allocationWrites(changes: CountedChange[], index: number): Promise<Write[]> {
    const summaries = new Map<string, JobSummary | null>();
    const changed = new Set<string>();
    for (const { before, after } of changes) {
      if (before && before.ClientStatus === after.ClientStatus) continue;
      const key = jobKey(after.Namespace, after.JobID);
      if (!summaries.has(key)) summaries.set(key, (await this.current(after.Namespace, after.JobID)) ?? null);
      const summary = summaries.get(key);
      const group = summary?.Summary[after.TaskGroup];
      if (!summary || !group) continue;
      if (!before) {
        if (after.ClientStatus !== 'pending') continue;
        group.Starting++;
        if (group.Queued > 0) group.Queued--;
      } else {
        const up = field[after.ClientStatus];
        if (up) group[up]++;
        const down = field[before.ClientStatus];
        if (down && group[down] > 0) group[down]--;
      }
      changed.add(key);
    }
    return [...changed].map((key) => this.put({ ...(summaries.get(key) as JobSummary), ModifyIndex: index }));
  }

  /** An evaluation's queued allocations set in its job's summary (Nomad's nestedUpsertEval), when they changed it. */
  async queuedWrites(
    namespace: string,
    jobId: string,
    queued: Record<string, number> | null | undefined,
    index: number,
  ): Promise<Write[]> {
    if (!queued || Object.keys(queued).length === 0) return [];
    const summary = await this.current(namespace, jobId);
    if (!summary) return [];
    let changed = false;
    for (const [name, count] of Object.entries(queued)) {
      const group = summary.Summary[name];
      if (!group || group.Queued === count) continue;
      group.Queued = count;
      changed = true;
    }
    return changed ? [this.put({ ...summary, ModifyIndex: index })] : [];
  }

  /** A summary written whole, counted again from scratch (`system/reconcile-summaries.ts`). */
  replaced(summary: JobSummary): Write {
    return this.put(summary);
  }

  /** A purged job's summary deleted with it. */
  deleted(namespace: string, id: string): Write {
    return { delete: { pk: jobSummaryPk(namespace), sk: id } };
  }
}

function withoutKey(item: Item): JobSummary {
  const { pk: _pk, sk: _sk, ...summary } = item;
  return summary as unknown as JobSummary;
}
