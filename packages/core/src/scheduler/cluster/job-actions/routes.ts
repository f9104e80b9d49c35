/**
 * A job's actions over HTTP, as Nomad's (`command/agent/job_endpoint.go`, `nomad/job_endpoint.go`): `PUT|POST
 * /v1/job/:id/plan`, a dry run through the evaluation worker's own reconciler and placement that writes nothing
 * (`worker/job-plan.ts`); `…/evaluate`, a new evaluation of the stored job, failed allocations optionally forced to
 * reschedule (`jobs/evaluate.ts`); `…/dispatch`, a child of a parameterized batch job (`jobs/dispatch.ts`). The
 * namespace is the job's own (plan), else `?namespace=`, else the body's, else `default`. ACL as Nomad's: `submit-job`
 * to plan (Nomad has no plan-only capability) and to evaluate, `dispatch-job` to dispatch.
 */
import * as z from 'zod/mini';
import { badRequest } from '../../../lib/errors.ts';
import { permissionDenied, writeQueryMeta } from '../../http/nomad.ts';
import { ensureRegistrationsAllowed } from '../scheduler-config/model.ts';
import { route, type SchedulerRoute } from '../../http/route.ts';
import { planJob } from '../../worker/job-plan.ts';
import { dispatchJob } from '../jobs/dispatch.ts';
import { evaluateJob } from '../jobs/evaluate.ts';
import { canonicalJob, validateJob } from '../jobs/model.ts';
import { namespaceQuery } from '../../http/namespaced-list.ts';

const jobId = z.string().check(z.describe('The job ID.'));

const planBody = z.object({
  Job: z.nullish(z.record(z.string(), z.unknown())).check(z.describe('The job to plan, in Nomad’s JSON form.')),
  Diff: z.optional(z.boolean()).check(z.describe('Answer the diff of the job against the stored one.')),
  PolicyOverride: z.optional(z.boolean()).check(z.describe('Sentinel override (no Sentinel policies here).')),
  Namespace: z.optional(z.string()).check(z.describe('The namespace when the job names none.')),
  Region: z.optional(z.string()).check(z.describe('The region when the job names none.')),
});

const evaluateBody = z.object({
  JobID: z.optional(z.string()).check(z.describe('The job ID (the path’s; an empty body evaluates the path’s job).')),
  EvalOptions: z
    .optional(
      z.object({
        ForceReschedule: z
          .optional(z.boolean())
          .check(z.describe('Reschedule the job’s failed allocations now, whatever their reschedule policy’s delay.')),
      }),
    )
    .check(z.describe('Options of the evaluation.')),
  Namespace: z.optional(z.string()).check(z.describe('The namespace when the query names none.')),
  Region: z.optional(z.string()).check(z.describe('Not read: this service has one region.')),
});

const dispatchBody = z.object({
  JobID: z.optional(z.string()).check(z.describe('The parameterized job’s ID (the path’s when absent).')),
  Payload: z.nullish(z.string()).check(z.describe('The payload, base64 (at most 16 KiB decoded).')),
  Meta: z.nullish(z.record(z.string(), z.string())).check(z.describe('Meta keys for the child job.')),
  IdPrefixTemplate: z.optional(z.string()).check(z.describe('Put in the child’s ID after its dispatch time.')),
  IdempotencyToken: z
    .optional(z.string())
    .check(z.describe('A retry with the token of a child still stored answers that child, creating none.')),
  Namespace: z.optional(z.string()).check(z.describe('The namespace when the query names none.')),
  Region: z.optional(z.string()).check(z.describe('Not read: this service has one region.')),
});

export const jobActionRoutes: SchedulerRoute[] = [
  route({
    method: ['PUT', 'POST'],
    path: '/v1/job/:id/plan',
    slashParams: ['id'],
    summary:
      'Plan a job: what registering it would place, stop and update, and what could not be placed; nothing written.',
    access: 'token',
    params: { id: jobId },
    query: { namespace: namespaceQuery },
    body: planBody,
    returns:
      '`{Annotations: {DesiredTGUpdates}, FailedTGAllocs, JobModifyIndex, CreatedEvals, Diff, NextPeriodicLaunch, Warnings, Index}`.',
    handler: async ({ scheduler, caller, params, body, query }) => {
      const sent = body.Job;
      if (!sent) throw badRequest('Job must be specified');
      if (typeof sent.ID !== 'string' || sent.ID === '') throw badRequest('Job must have a valid ID');
      if (sent.ID !== params.id) throw badRequest('Job ID does not match');
      const jobNamespace = typeof sent.Namespace === 'string' && sent.Namespace !== '' ? sent.Namespace : undefined;
      const namespace = jobNamespace ?? (query.namespace || body.Namespace || 'default');
      const canonical = canonicalJob(
        sent,
        namespace,
        typeof sent.Region === 'string' ? sent.Region : body.Region || '',
      );
      if (!(await caller()).acl.allowNamespaceOperation(String(canonical.Namespace), 'submit-job'))
        throw permissionDenied();
      const job = validateJob(canonical);
      const plan = await planJob(scheduler, job, body.Diff ?? false);
      return { json: plan, ...(plan.Index > 0 ? { index: plan.Index } : {}) };
    },
  }),
  route({
    method: ['PUT', 'POST'],
    path: '/v1/job/:id/evaluate',
    slashParams: ['id'],
    summary: 'Create a new evaluation of a job; with `ForceReschedule`, its failed allocations are rescheduled now.',
    access: 'token',
    params: { id: jobId },
    query: { namespace: namespaceQuery },
    body: evaluateBody,
    returns:
      '`{EvalID, EvalCreateIndex, JobModifyIndex, Warnings, Index, LastContact, KnownLeader, NextToken}`; 400 for a periodic or parameterized job.',
    handler: async ({ scheduler, caller, params, body, query }) => {
      const namespace = query.namespace || body.Namespace || 'default';
      if (!(await caller()).acl.allowNamespaceOperation(namespace, 'submit-job')) throw permissionDenied();
      if (Object.keys(body).length > 0) {
        if (!body.JobID) throw badRequest('Job ID must be specified');
        if (body.JobID !== params.id) throw badRequest('JobID not same as job name');
      }
      const result = await evaluateJob(scheduler, namespace, params.id, body.EvalOptions?.ForceReschedule ?? false);
      // Nomad answers its JobRegisterResponse: with Warnings and the flattened QueryMeta.
      return { json: { ...result, Warnings: '', ...writeQueryMeta(result.Index) }, index: result.Index };
    },
  }),
  route({
    method: ['PUT', 'POST'],
    path: '/v1/job/:id/dispatch',
    slashParams: ['id'],
    summary: 'Dispatch a parameterized batch job: a child job with the payload and meta, and its evaluation.',
    access: 'token',
    params: { id: jobId },
    query: { namespace: namespaceQuery },
    body: dispatchBody,
    returns: '`{DispatchedJobID, EvalID, EvalCreateIndex, JobCreateIndex, Index}`.',
    handler: async ({ scheduler, caller, params, body, query }) => {
      const namespace = query.namespace || body.Namespace || 'default';
      const who = await caller();
      if (!who.acl.allowNamespaceOperation(namespace, 'dispatch-job')) throw permissionDenied();
      await ensureRegistrationsAllowed(scheduler.schedulerConfig, who.acl.management);
      if (body.JobID && body.JobID !== params.id) throw badRequest('Job ID does not match');
      const result = await dispatchJob(scheduler.jobs, namespace, params.id, body, scheduler.state.clock.now());
      return { json: result, index: result.Index };
    },
  }),
];
