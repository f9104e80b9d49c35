/**
 * A job (Nomad's `structs.Job`) as a user submits it in JSON: canonicalised with the defaults Nomad's HTTP agent
 * applies (`api/jobs.go` and `api/tasks.go` Canonicalize, then the server's job canonicalizer hook: datacenters `*`,
 * the namespace's default node pool) and validated as `structs.Job.Validate` does, every problem named in one 400.
 * Fields this service does not read yet are kept as sent. Durations are nanoseconds, as in Nomad's JSON.
 */
import * as z from 'zod/mini';
import { badRequest } from '../../../lib/errors.ts';
import { shown } from '../../acl/identifiers.ts';
import { canonicalNetworks } from './networks.ts';
import { countedSummary, type JobSummary } from './summary.ts';

/** A stored job: Nomad's Job with what this service reads typed. */
export interface Job extends Record<string, unknown> {
  ID: string;
  Name: string;
  Namespace: string;
  Region: string;
  Type: string;
  Priority: number;
  NodePool: string;
  Datacenters: string[];
  TaskGroups: TaskGroup[];
  Stop: boolean;
  Status: string;
  StatusDescription: string;
  Stable: boolean;
  Version: number;
  SubmitTime: number;
  CreateIndex: number;
  ModifyIndex: number;
  JobModifyIndex: number;
  Periodic: Record<string, unknown> | null;
  ParameterizedJob: Record<string, unknown> | null;
  Meta: Record<string, string> | null;
}

export interface TaskGroup extends Record<string, unknown> {
  Name: string;
  Count: number;
  Tasks: Array<Record<string, unknown>>;
}

export const jobTypes = ['service', 'batch', 'system', 'sysbatch'] as const;
/** Nomad's JobDefaultPriority and the bounds of its default server configuration (`job_max_priority` 100). */
export const defaultPriority = 50;
const maxPriority = 100;
/**
 * The largest job accepted, as its canonical JSON: the job item, its version item and the event that carries it
 * are each one DynamoDB item (at most 400 KB), and the event item holds the job beside its evaluation.
 */
export const maxJobBytes = 256 * 1024;

const second = 1e9;
const minute = 60 * second;
const hour = 60 * minute;

type Loose = Record<string, unknown>;

/** The body of a job registration (`api.JobRegisterRequest`). */
export const registerBody = z.object({
  Job: z.nullish(z.record(z.string(), z.unknown())).check(z.describe('The job, in Nomad’s JSON form.')),
  EnforceIndex: z
    .optional(z.boolean())
    .check(z.describe('Register only if the job’s JobModifyIndex is JobModifyIndex (0: only if it does not exist).')),
  JobModifyIndex: z.optional(z.number()).check(z.describe('The JobModifyIndex EnforceIndex expects.')),
  PreserveCounts: z
    .optional(z.boolean())
    .check(z.describe('Keep the task group counts of the registered job for groups it already has.')),
  PolicyOverride: z.optional(z.boolean()).check(z.describe('Sentinel override (no Sentinel policies here).')),
  EvalPriority: z.optional(z.number()).check(z.describe('The evaluation’s priority (1 to 100; 0: the job’s).')),
  Submission: z.nullish(z.unknown()).check(z.describe('The job’s source as submitted (not kept).')),
  Namespace: z.optional(z.string()).check(z.describe('The namespace when the job names none.')),
  Region: z.optional(z.string()).check(z.describe('The region when the job names none.')),
  SecretID: z.optional(z.string()).check(z.describe('Not read: the token comes from the X-Nomad-Token header.')),
});
export type RegisterBody = z.output<typeof registerBody>;

const isObject = (value: unknown): value is Loose =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** `target[key]` when set (not null or undefined), else `fallback`. */
function orDefault<T>(target: Loose, key: string, fallback: T): T {
  const value = target[key];
  return value === undefined || value === null ? fallback : (value as T);
}

/** Fills each absent field of `target` from `defaults`. */
function fill(target: Loose, defaults: Loose): Loose {
  for (const [key, value] of Object.entries(defaults))
    if (target[key] === undefined || target[key] === null) target[key] = value;
  return target;
}

const defaultUpdate = (): Loose => ({
  Stagger: 30 * second,
  MaxParallel: 1,
  HealthCheck: 'checks',
  MinHealthyTime: 10 * second,
  HealthyDeadline: 5 * minute,
  ProgressDeadline: 10 * minute,
  AutoRevert: false,
  AutoPromote: false,
  Canary: 0,
});

/** api UpdateStrategy.Empty: no field set to a non-zero value. */
function updateEmpty(update: Loose | null): boolean {
  if (!update) return true;
  return Object.values(update).every(
    (value) => value === undefined || value === null || value === 0 || value === '' || value === false,
  );
}

const defaultReschedule = (type: string): Loose =>
  type === 'batch'
    ? { Attempts: 1, Interval: 24 * hour, Delay: 5 * second, DelayFunction: 'constant', MaxDelay: 0, Unlimited: false }
    : { Attempts: 0, Interval: 0, Delay: 30 * second, DelayFunction: 'exponential', MaxDelay: hour, Unlimited: true };

const defaultRestart = (type: string): Loose =>
  type === 'batch' || type === 'sysbatch'
    ? { Delay: 15 * second, Attempts: 3, Interval: 24 * hour, Mode: 'fail', RenderTemplates: false }
    : { Delay: 15 * second, Attempts: 2, Interval: 30 * minute, Mode: 'fail', RenderTemplates: false };

/**
 * The job with Nomad's defaults: the api Canonicalize of the job, its update block, its task groups (count, the
 * update block merged from the job's, reschedule and restart policies, ephemeral disk) and their tasks (resources,
 * kill timeout, log config), then the server's canonicalizer (datacenters `*`) and the `structs` networks of groups
 * and tasks (`networks.ts`). `namespace` is the request's when the job names none; the node pool is left empty for the
 * store to fill from the namespace.
 */
export function canonicalJob(sent: Loose, namespace: string, region: string): Loose {
  const job: Loose = structuredClone(sent);
  // The server sets it at each registration (nanoseconds, above 2^53): a job sent back as `GET /v1/job/:id` shows it
  // (`nomad job inspect` then `nomad job run`) registers as Nomad's does, whatever it says.
  delete job.SubmitTime;
  const id = orDefault(job, 'ID', '');
  fill(job, {
    ID: id,
    Name: id,
    ParentID: '',
    Namespace: namespace || 'default',
    Priority: defaultPriority,
    Stop: false,
    Region: region || 'global',
    NodePool: '',
    Type: 'service',
    AllAtOnce: false,
    ConsulNamespace: '',
    VaultNamespace: '',
    NomadTokenID: '',
    Status: '',
    StatusDescription: '',
    Stable: false,
    Version: 0,
    CreateIndex: 0,
    ModifyIndex: 0,
    JobModifyIndex: 0,
    Periodic: null,
    ParameterizedJob: null,
    Meta: null,
    Constraints: null,
    Affinities: null,
    Spreads: null,
  });
  if (job.Namespace === '') job.Namespace = namespace || 'default';
  const type = String(job.Type);
  if (isObject(job.Update)) fill(job.Update, defaultUpdate());
  else if (type === 'service' || type === 'system') job.Update = defaultUpdate();
  else job.Update = null;
  if (!Array.isArray(job.Datacenters) || job.Datacenters.length === 0) job.Datacenters = ['*'];
  if (!Array.isArray(job.TaskGroups)) job.TaskGroups = [];
  job.TaskGroups = (job.TaskGroups as unknown[]).map((group) =>
    isObject(group) ? canonicalGroup(group, job, type) : group,
  );
  return job;
}

function canonicalGroup(group: Loose, job: Loose, type: string): Loose {
  group.Name = orDefault(group, 'Name', '');
  if (group.Count === undefined || group.Count === null) {
    const scalingMin = isObject(group.Scaling) ? group.Scaling.Min : undefined;
    group.Count = typeof scalingMin === 'number' ? scalingMin : 1;
  }
  group.EphemeralDisk = fill(isObject(group.EphemeralDisk) ? group.EphemeralDisk : {}, {
    Sticky: false,
    Migrate: false,
    SizeMB: 300,
  });
  const jobUpdate = isObject(job.Update) ? job.Update : null;
  if (jobUpdate && isObject(group.Update)) group.Update = fill(group.Update, jobUpdate);
  else if (jobUpdate && !updateEmpty(jobUpdate)) group.Update = { ...jobUpdate };
  else group.Update = isObject(group.Update) ? fill(group.Update, defaultUpdate()) : null;
  const jobReschedule = isObject(job.Reschedule) ? job.Reschedule : null;
  let reschedule = isObject(group.ReschedulePolicy) ? group.ReschedulePolicy : null;
  if (jobReschedule) reschedule = fill(reschedule ?? {}, jobReschedule);
  if (!reschedule && type !== 'system' && type !== 'sysbatch') reschedule = defaultReschedule(type);
  if (reschedule) fill(reschedule, defaultReschedule(type));
  group.ReschedulePolicy = reschedule;
  group.RestartPolicy = fill(isObject(group.RestartPolicy) ? group.RestartPolicy : {}, defaultRestart(type));
  group.Networks = canonicalNetworks(group.Networks);
  if (!Array.isArray(group.Tasks)) group.Tasks = [];
  group.Tasks = (group.Tasks as unknown[]).map((task) => (isObject(task) ? canonicalTask(task) : task));
  return group;
}

function canonicalTask(task: Loose): Loose {
  fill(task, { Name: '', Driver: '', Config: null, Env: null, Meta: null, Leader: false, KillTimeout: 5 * second });
  task.Resources = fill(isObject(task.Resources) ? task.Resources : {}, { CPU: 100, Cores: 0, MemoryMB: 300 });
  (task.Resources as Loose).Networks = canonicalNetworks((task.Resources as Loose).Networks);
  task.LogConfig = fill(isObject(task.LogConfig) ? task.LogConfig : {}, {
    MaxFiles: 10,
    MaxFileSizeMB: 10,
    Disabled: false,
  });
  return task;
}

const text = (value: unknown): string => (typeof value === 'string' ? value : '');

/** `structs.Job.Validate` over a canonical job: every problem found, in Nomad's words; none: the job as stored. */
export function validateJob(job: Loose): Job {
  const problems: string[] = [];
  const typed = (field: string, kind: 'string' | 'number' | 'boolean') => {
    if (job[field] !== null && typeof job[field] !== kind) problems.push(`${field} must be a ${kind}`);
  };
  for (const field of ['ID', 'Name', 'Namespace', 'Region', 'Type', 'NodePool']) typed(field, 'string');
  typed('Priority', 'number');
  typed('Stop', 'boolean');
  const id = text(job.ID);
  const name = text(job.Name);
  if (text(job.Region) === '' && !job.Multiregion) problems.push('Missing job region');
  if (id === '') problems.push('Missing job ID');
  else if (id.includes(' ')) problems.push('Job ID contains a space');
  else if (id.includes('\0')) problems.push('Job ID contains a null character');
  // A `/` is allowed (Nomad's dispatched jobs have one; the path spells it `%2F`), but not a name no path could spell.
  else if (id.split('/').some((part) => part === '' || part === '.' || part === '..'))
    problems.push('Job ID has an empty, "." or ".." part between its slashes');
  if (name === '') problems.push('Missing job name');
  else if (name.includes('\0')) problems.push('Job Name contains a null character');
  if (text(job.Namespace) === '') problems.push('Job must be in a namespace');
  const type = text(job.Type);
  if (type === '') problems.push('Missing job type');
  else if (!(jobTypes as readonly string[]).includes(type)) problems.push(`Invalid job type: ${JSON.stringify(type)}`);
  const priority = job.Priority;
  if (typeof priority === 'number' && (!Number.isInteger(priority) || priority < 1 || priority > maxPriority))
    problems.push(`job priority must be between [1, ${maxPriority}]`);
  const datacenters = job.Datacenters as unknown[];
  if (datacenters.some((dc) => typeof dc !== 'string' || dc === ''))
    problems.push('Job datacenter must be non-empty string');
  const groups = job.TaskGroups as unknown[];
  if (groups.length === 0) problems.push('Missing job task groups');
  if (job.Meta !== null && (!isObject(job.Meta) || Object.values(job.Meta).some((value) => typeof value !== 'string')))
    problems.push('Meta must be a map of strings');
  const seen = new Map<string, number>();
  groups.forEach((group, position) => {
    if (!isObject(group)) {
      problems.push(`Job task group ${position + 1} is not an object`);
      return;
    }
    const groupName = text(group.Name);
    if (groupName === '') problems.push(`Job task group ${position + 1} missing name`);
    else if (seen.has(groupName))
      problems.push(
        `Job task group ${position + 1} redefines '${groupName}' from group ${(seen.get(groupName) ?? 0) + 1}`,
      );
    else seen.set(groupName, position);
    if (type === 'system' && typeof group.Count === 'number' && group.Count > 1)
      problems.push(
        `Job task group ${groupName} has count ${group.Count}. Count cannot exceed 1 with system scheduler`,
      );
    const groupProblems = taskGroupProblems(group);
    if (groupProblems.length > 0)
      problems.push(`Task group ${groupName} validation failed: ${groupProblems.join('; ')}`);
  });
  if (isObject(job.Periodic) && job.Periodic.Enabled !== false && type !== 'batch' && type !== 'sysbatch')
    problems.push('Periodic can only be used with "batch" or "sysbatch" scheduler');
  if (isObject(job.ParameterizedJob) && type !== 'batch' && type !== 'sysbatch')
    problems.push('Parameterized job can only be used with "batch" or "sysbatch" scheduler');
  const inexact = inexactNumber(job, 'Job');
  if (inexact) problems.push(`${inexact} is not a number this service can keep exactly (at most 2^53 - 1 in size)`);
  if (problems.length > 0) {
    const listed = problems.map((problem) => `\t* ${problem}`).join('\n');
    throw badRequest(`${problems.length} error${problems.length === 1 ? '' : 's'} occurred:\n${listed}\n`);
  }
  return job as Job;
}

/** The path of the first number in `value` that is larger than Number.MAX_SAFE_INTEGER in size, if any. */
function inexactNumber(value: unknown, path: string): string | undefined {
  if (typeof value === 'number') return Math.abs(value) > Number.MAX_SAFE_INTEGER ? path : undefined;
  if (Array.isArray(value)) {
    for (const [position, entry] of value.entries()) {
      const found = inexactNumber(entry, `${path}[${position}]`);
      if (found) return found;
    }
  } else if (isObject(value)) {
    for (const [key, entry] of Object.entries(value)) {
      const found = inexactNumber(entry, `${path}.${key}`);
      if (found) return found;
    }
  }
  return undefined;
}

/**
 * The largest count of one task group. Nomad sets none, but a plan holds one allocation per count in memory (a count
 * of 10^12 ran the placement out of memory: a 500); ten times the bench's count of 10,000 leaves room.
 */
const maxGroupCount = 100_000;

function taskGroupProblems(group: Loose): string[] {
  const problems: string[] = [];
  const count = group.Count;
  if (typeof count !== 'number' || !Number.isInteger(count)) problems.push('Task group count must be an integer');
  else if (count < 0) problems.push("Task group count can't be negative");
  else if (count > maxGroupCount) problems.push(`Task group count must be at most ${maxGroupCount}`);
  const tasks = group.Tasks as unknown[];
  if (tasks.length === 0) problems.push('Missing tasks for task group');
  const names = new Set<string>();
  tasks.forEach((task, position) => {
    if (!isObject(task)) {
      problems.push(`Task ${position + 1} is not an object`);
      return;
    }
    const taskName = text(task.Name);
    if (taskName === '') problems.push(`Task ${position + 1} missing name`);
    else if (names.has(taskName)) problems.push(`Task ${position + 1} redefines '${taskName}'`);
    names.add(taskName);
    if (text(task.Driver) === '') problems.push(`Task ${shown(taskName)} validation failed: Missing task driver`);
  });
  return problems;
}

/** Nomad's JobListStub of a stored job (`meta`: with its Meta). */
export function jobStub(job: Job, withMeta = false, summary?: JobSummary): Record<string, unknown> {
  return {
    ID: job.ID,
    ParentID: job.ParentID ?? '',
    Name: job.Name,
    Namespace: job.Namespace,
    Datacenters: job.Datacenters,
    NodePool: job.NodePool,
    Multiregion: job.Multiregion ?? null,
    Type: job.Type,
    Priority: job.Priority,
    Periodic: job.Periodic !== null && job.Periodic !== undefined,
    ParameterizedJob: job.ParameterizedJob !== null && job.ParameterizedJob !== undefined,
    Stop: job.Stop,
    Status: job.Status,
    StatusDescription: job.StatusDescription,
    // A job registered before summaries were kept has none stored: zeros until its next change counts it.
    JobSummary: summary ?? countedSummary(job, []),
    CreateIndex: job.CreateIndex,
    ModifyIndex: job.ModifyIndex,
    JobModifyIndex: job.JobModifyIndex,
    SubmitTime: job.SubmitTime,
    // Nomad's `Meta map[string]string \`json:",omitempty"\``: absent, even with `?meta=true`, for a job with none.
    ...(withMeta && job.Meta && Object.keys(job.Meta).length > 0 ? { Meta: job.Meta } : {}),
  };
}

/**
 * Nomad's getJobStatus with no allocations or deployments yet: system, periodic and parameterized jobs run until
 * stopped; any other job with a pending evaluation is pending.
 */
export function jobStatus(
  job: Pick<Job, 'Type' | 'Stop' | 'Periodic' | 'ParameterizedJob'>,
  pendingEval: boolean,
): string {
  if (job.Type === 'system' || isObject(job.Periodic) || isParameterized(job)) return job.Stop ? 'dead' : 'running';
  if (pendingEval) return 'pending';
  return job.Stop ? 'dead' : 'pending';
}

/**
 * Nomad's getJobStatus from what a job has now (its state store's setJobStatus, which every write changing a job's
 * allocations runs): system, periodic and parameterized jobs run until stopped; an active deployment or a
 * non-terminal allocation makes a job running; else a pending or blocked evaluation makes it pending; else it is dead
 * once it has had an evaluation (or is stopped), pending before.
 */
export function derivedJobStatus(
  job: Pick<Job, 'Type' | 'Stop' | 'Periodic' | 'ParameterizedJob'>,
  has: { activeDeployment: boolean; liveAllocation: boolean; evaluationStatuses: string[] },
): string {
  if (job.Type === 'system' || isObject(job.Periodic) || isParameterized(job)) return job.Stop ? 'dead' : 'running';
  if (has.activeDeployment || has.liveAllocation) return 'running';
  if (has.evaluationStatuses.some((status) => status === 'pending' || status === 'blocked')) return 'pending';
  return has.evaluationStatuses.length > 0 || job.Stop ? 'dead' : 'pending';
}

/** Whether registering `job` creates an evaluation (not for periodic or parameterized jobs, as Nomad). */
export const evaluatesOnRegister = (job: Job): boolean => !isObject(job.Periodic) && !isParameterized(job);

/** Nomad's IsParameterized: a parameterized job, not one of its dispatched children (which run as any batch job). */
export const isParameterized = (job: Pick<Job, 'ParameterizedJob'> & { Dispatched?: unknown }): boolean =>
  isObject(job.ParameterizedJob) && job.Dispatched !== true;

/** The fields Nomad's SpecChanged ignores: a registration that changes none of the rest keeps the version. */
const notSpec = [
  'Status',
  'StatusDescription',
  'Stable',
  'Version',
  'SubmitTime',
  'CreateIndex',
  'ModifyIndex',
  'JobModifyIndex',
];
export function specOf(job: Loose): Loose {
  const copy = { ...job };
  for (const field of notSpec) delete copy[field];
  return copy;
}

export const validJobId = (id: string): boolean => id !== '' && !id.includes('\0');
