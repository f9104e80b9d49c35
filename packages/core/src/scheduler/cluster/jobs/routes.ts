/**
 * Jobs over HTTP, as Nomad's (`command/agent/job_endpoint.go`, `nomad/job_endpoint.go`): `GET|PUT|POST /v1/jobs`,
 * `GET|PUT|POST|DELETE /v1/job/:id` and the job's `versions`, `evaluations`, `allocations` and `summary`. The
 * namespace is the job's own, else `?namespace=`, else the body's, else `default`. ACL as Nomad's: `list-jobs` to
 * list (with `namespace=*`, only the namespaces that grant it), `read-job` to read, `submit-job` (or the split
 * `register-job`) to register, `submit-job` or `deregister-job` to stop, `submit-job` or `purge-job` to purge.
 */
import * as z from 'zod/mini';
import { badRequest, notFound } from '../../../lib/errors.ts';
import type { SchedulerAcl } from '../../acl/policy-rules.ts';
import { listParameters, paginate, parsedFilter } from '../../http/list-query.ts';
import { namespaceQuery } from '../../http/namespaced-list.ts';
import { permissionDenied, writeQueryMeta } from '../../http/nomad.ts';
import { ensureRegistrationsAllowed } from '../scheduler-config/model.ts';
import { route, type SchedulerReply, type SchedulerRoute } from '../../http/route.ts';
import type { Scheduler, SchedulerCaller } from '../../composition/scheduler-core.ts';
import { allocationStub } from '../allocations/stub.ts';
import { evaluationJson } from '../evaluations/model.ts';
import { jobDiff } from './diff.ts';
import { canonicalJob, jobStub, type RegisterBody, registerBody, validateJob } from './model.ts';
import { countedSummary } from './summary.ts';

const jobId = z.string().check(z.describe('The job ID.'));
/** A query flag read as Go's strconv.ParseBool reads it (absent or empty: false). */
export const boolQuery = (name: string, description: string) =>
  z
    .optional(
      z.pipe(
        z.string(),
        z.transform((value, ctx): boolean => {
          if (value === '') return false;
          if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(value)) return true;
          if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(value)) return false;
          ctx.issues.push({
            code: 'custom',
            input: value,
            message: `Failed to parse value of ${JSON.stringify(name)} (${value}) as a bool: strconv.ParseBool: parsing ${JSON.stringify(value)}: invalid syntax`,
          });
          return z.NEVER;
        }),
      ),
    )
    .check(z.describe(description));

export const allowsAny = (acl: SchedulerAcl, namespace: string, capabilities: string[]): boolean =>
  capabilities.some((capability) => acl.allowNamespaceOperation(namespace, capability));

async function register(
  scheduler: Scheduler,
  caller: () => Promise<SchedulerCaller>,
  body: RegisterBody,
  queryNamespace: string | undefined,
  pathId: string | undefined,
): Promise<SchedulerReply> {
  const sent = body.Job;
  if (!sent) throw badRequest('Job must be specified');
  if (sent.ID === undefined || sent.ID === null) throw badRequest("Job ID hasn't been provided");
  if (pathId !== undefined && sent.ID !== pathId) throw badRequest('Job ID does not match name');
  if (sent.Type === 'system' && Array.isArray(sent.TaskGroups))
    for (const group of sent.TaskGroups as Array<Record<string, unknown> | null>)
      if (group?.Scaling) throw badRequest('Task groups with job type system do not support scaling blocks');
  const priority = body.EvalPriority ?? 0;
  if (priority !== 0 && (!Number.isInteger(priority) || priority < 1 || priority > 100))
    throw badRequest('Eval priority must be between 1 and 100 inclusively');
  const jobNamespace = typeof sent.Namespace === 'string' && sent.Namespace !== '' ? sent.Namespace : undefined;
  const namespace = jobNamespace ?? (queryNamespace || body.Namespace || 'default');
  const canonical = canonicalJob(sent, namespace, typeof sent.Region === 'string' ? sent.Region : body.Region || '');
  const who = await caller();
  if (!allowsAny(who.acl, String(canonical.Namespace), ['submit-job', 'register-job'])) throw permissionDenied();
  await ensureRegistrationsAllowed(scheduler.schedulerConfig, who.acl.management);
  const job = validateJob(canonical);
  const result = await scheduler.jobs.register(job, {
    enforceIndex: body.EnforceIndex,
    jobModifyIndex: body.JobModifyIndex,
    preserveCounts: body.PreserveCounts,
    evalPriority: priority,
  });
  return { json: { ...result, ...writeQueryMeta(result.Index) }, index: result.Index };
}

/** A read of one job's data: `read-job` in the namespace, else 403; 404 when the job does not exist. */
function readJob<T>(
  id: string,
  namespace: string | undefined,
  scheduler: Scheduler,
  answer: (namespace: string) => Promise<T>,
) {
  return async (caller: () => Promise<SchedulerCaller>): Promise<SchedulerReply> => {
    const ns = namespace || 'default';
    if (!(await caller()).acl.allowNamespaceOperation(ns, 'read-job')) throw permissionDenied();
    return {
      read: async () => {
        if (!(await scheduler.jobs.get(ns, id))) throw notFound('job not found');
        return answer(ns);
      },
    };
  };
}

export const jobRoutes: SchedulerRoute[] = [
  route({
    method: 'GET',
    path: '/v1/jobs',
    summary: 'List jobs (JobListStub) in a namespace, or in every namespace the caller may list (`namespace=*`).',
    access: 'token',
    query: {
      prefix: z.optional(z.string()).check(z.describe('Only jobs whose ID starts with this.')),
      namespace: namespaceQuery,
      meta: boolQuery('meta', 'Include each job’s Meta.'),
      ...listParameters,
    },
    // Nomad's Job.List: the later of the jobs' and the job summaries' indexes (a stub carries its summary).
    blocking: ['jobs', 'job_summary'],
    returns: 'The job stubs, sorted by ID (paginated: `X-Nomad-NextToken`).',
    handler: async ({ scheduler, caller, query }) => {
      const who = await caller();
      const namespace = query.namespace || 'default';
      if (!who.acl.allowNamespaceOperation(namespace, 'list-jobs')) throw permissionDenied();
      const expression = await parsedFilter(query.filter);
      return {
        read: async () => {
          const namespaces =
            namespace === '*' ? (await scheduler.namespaces.list()).map((entry) => entry.Name) : [namespace];
          const jobs = (await Promise.all(namespaces.map((name) => scheduler.jobs.list(name)))).flat();
          const summaries = new Map(
            await Promise.all(
              namespaces.map(async (name) => [name, await scheduler.jobs.summaries.ofNamespace(name)] as const),
            ),
          );
          const stubs = jobs
            .filter((job) => job.ID.startsWith(query.prefix ?? ''))
            .filter((job) => who.acl.allowNamespaceOperation(job.Namespace, 'list-jobs'))
            .map((job) => jobStub(job, query.meta ?? false, summaries.get(job.Namespace)?.get(job.ID)));
          const page = paginate(stubs, {
            ...query,
            expression,
            // Nomad's NamespaceIDTokenizer: pages walk namespace, then ID, and a token is `<namespace>.<id>`.
            idOf: (stub) => `${stub.Namespace as string}.${stub.ID as string}`,
            datum: (stub) => ({ ...stub, Meta: stub.Meta ?? {} }),
          });
          return page;
        },
      };
    },
  }),
  route({
    method: ['PUT', 'POST'],
    path: '/v1/jobs',
    summary: 'Register a job (Nomad’s JSON job, canonicalised with Nomad’s defaults) and create its evaluation.',
    access: 'token',
    query: { namespace: namespaceQuery },
    body: registerBody,
    returns: '`{EvalID, EvalCreateIndex, JobModifyIndex, Warnings, Index, LastContact, KnownLeader, NextToken}`.',
    handler: ({ scheduler, caller, body, query }) => register(scheduler, caller, body, query.namespace, undefined),
  }),
  route({
    method: 'GET',
    path: '/v1/job/:id',
    slashParams: ['id'],
    summary: 'Read a job.',
    access: 'token',
    params: { id: jobId },
    query: { namespace: namespaceQuery },
    blocking: ['jobs'],
    returns: 'The job.',
    handler: async ({ scheduler, caller, params, query }) =>
      readJob(params.id, query.namespace, scheduler, async (ns) => scheduler.jobs.get(ns, params.id))(caller),
  }),
  route({
    method: ['PUT', 'POST'],
    path: '/v1/job/:id',
    slashParams: ['id'],
    summary: 'Register the job named in the path (the body’s Job.ID must match).',
    access: 'token',
    params: { id: jobId },
    query: { namespace: namespaceQuery },
    body: registerBody,
    returns: '`{EvalID, EvalCreateIndex, JobModifyIndex, Warnings, Index, LastContact, KnownLeader, NextToken}`.',
    handler: ({ scheduler, caller, body, query, params }) =>
      register(scheduler, caller, body, query.namespace, params.id),
  }),
  route({
    method: 'DELETE',
    path: '/v1/job/:id',
    slashParams: ['id'],
    summary: 'Stop a job (a new version with Stop set), or with `purge` delete it and its versions.',
    access: 'token',
    params: { id: jobId },
    query: {
      namespace: namespaceQuery,
      purge: boolQuery('purge', 'Delete the job and its versions instead of stopping it.'),
      global: boolQuery('global', 'Every region of a multiregion job (this service has one region).'),
    },
    returns:
      '`{EvalID, EvalCreateIndex, JobModifyIndex, VolumeEvalID, VolumeEvalIndex, Index, LastContact, KnownLeader, NextToken}`.',
    handler: async ({ scheduler, caller, params, query }) => {
      const namespace = query.namespace || 'default';
      const purge = query.purge ?? false;
      const needed = purge ? ['submit-job', 'purge-job'] : ['submit-job', 'deregister-job'];
      if (!allowsAny((await caller()).acl, namespace, needed)) throw permissionDenied();
      const result = await scheduler.jobs.deregister(namespace, params.id, purge);
      const { Warnings: _warnings, ...answer } = result;
      // Nomad's JobDeregisterResponse: its volume evaluation fields are empty here (no CSI volumes).
      const json = { ...answer, VolumeEvalID: '', VolumeEvalIndex: 0, ...writeQueryMeta(result.Index) };
      return { json, ...(result.Index > 0 ? { index: result.Index } : {}) };
    },
  }),
  route({
    method: 'GET',
    path: '/v1/job/:id/versions',
    slashParams: ['id'],
    summary: 'The versions kept of a job (the last six), newest first.',
    access: 'token',
    params: { id: jobId },
    query: {
      namespace: namespaceQuery,
      diffs: boolQuery('diffs', 'Each version’s diff from the one before it (Nomad’s JobDiff).'),
    },
    blocking: ['jobs'],
    returns: '`{Versions, Diffs}` (Diffs null unless `diffs`).',
    handler: async ({ scheduler, caller, params, query }) =>
      readJob(params.id, query.namespace, scheduler, async (ns) => {
        const versions = await scheduler.jobs.versions(ns, params.id);
        // As Nomad's Job.GetJobVersions: newest first, each version diffed from the one kept before it.
        const diffs = query.diffs
          ? versions.slice(0, -1).map((version, at) => jobDiff(versions[at + 1], version))
          : null;
        return { Versions: versions, Diffs: diffs && diffs.length > 0 ? diffs : null };
      })(caller),
  }),
  route({
    method: 'GET',
    path: '/v1/job/:id/evaluations',
    slashParams: ['id'],
    summary: 'The evaluations of a job, newest first.',
    access: 'token',
    params: { id: jobId },
    query: { namespace: namespaceQuery },
    blocking: ['jobs', 'evals'],
    returns: 'The evaluations.',
    handler: async ({ scheduler, caller, params, query }) =>
      readJob(params.id, query.namespace, scheduler, async (ns) =>
        (await scheduler.evaluations.ofJob(ns, params.id)).map(evaluationJson),
      )(caller),
  }),
  route({
    method: 'GET',
    path: '/v1/job/:id/allocations',
    slashParams: ['id'],
    summary: 'The allocations of a job.',
    access: 'token',
    params: { id: jobId },
    query: { namespace: namespaceQuery, all: boolQuery('all', 'Include allocations of earlier job versions.') },
    blocking: ['jobs', 'allocs'],
    returns: 'AllocListStub[], sorted by ID.',
    handler: async ({ scheduler, caller, params, query }) =>
      readJob(params.id, query.namespace, scheduler, async (ns) =>
        (await scheduler.allocations.ofJob(ns, params.id)).map((alloc) => allocationStub(alloc)),
      )(caller),
  }),
  route({
    method: 'GET',
    path: '/v1/job/:id/summary',
    slashParams: ['id'],
    summary: 'The job’s summary: allocations per task group and client state, and those left queued.',
    access: 'token',
    params: { id: jobId },
    query: { namespace: namespaceQuery },
    blocking: ['jobs', 'job_summary'],
    returns: 'JobSummary.',
    handler: async ({ scheduler, caller, params, query }) =>
      readJob(params.id, query.namespace, scheduler, async (ns) => {
        const job = await scheduler.jobs.get(ns, params.id);
        if (!job) throw notFound('job not found');
        // Kept with every write that changes it; a job registered before summaries were kept is counted now.
        return (
          (await scheduler.jobs.summaries.get(ns, params.id)) ??
          countedSummary(job, await scheduler.allocations.ofJob(ns, params.id))
        );
      })(caller),
  }),
  route({
    method: 'GET',
    path: '/v1/job/:id/services',
    slashParams: ['id'],
    summary: 'The service registrations of the job’s allocations (Nomad’s `Job.GetServiceRegistrations`).',
    access: 'token',
    params: { id: jobId },
    query: { namespace: namespaceQuery },
    blocking: ['service_registrations'],
    returns: 'The registrations, sorted by ID; 404 `job not found`.',
    handler: async ({ scheduler, caller, params, query }) =>
      readJob(params.id, query.namespace, scheduler, (ns) => scheduler.services.ofJob(ns, params.id))(caller),
  }),
];
