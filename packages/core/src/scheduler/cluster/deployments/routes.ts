/**
 * Deployments over HTTP, as Nomad's reads (`command/agent/deployment_endpoint.go`, `nomad/deployment_endpoint.go`):
 * `GET /v1/deployments` (`prefix`, `namespace` with `*`, the list query), `/v1/deployment/:id`,
 * `/v1/deployment/allocations/:id`, and a job's `GET /v1/job/:id/deployments` (newest first) and
 * `/v1/job/:id/deployment` (its latest, `null` when none). Every read needs `read-job` in the deployment's namespace;
 * `PUT|POST /v1/deployment/fail/:id` and `pause/:id` (`store.ts` `setStatus`), `promote/:id` and
 * `allocation-health/:id` (`watcher.ts`) need `submit-job` there.
 * Plan apply writes them (`store.ts`).
 */
import * as z from 'zod/mini';
import { badRequest, notFound } from '../../../lib/errors.ts';
import { namespacedListRoute, namespaceQuery } from '../../http/namespaced-list.ts';
import { permissionDenied } from '../../http/nomad.ts';
import { route, type SchedulerRoute } from '../../http/route.ts';
import type { Scheduler, SchedulerCaller } from '../../composition/scheduler-core.ts';
import { allocationStub } from '../allocations/stub.ts';
import { boolQuery } from '../jobs/routes.ts';
import { isActive } from './model.ts';
import type { DeploymentUpdateResponse } from './store.ts';

const deploymentId = z.string().check(z.describe('The deployment ID.'));
const jobId = z.string().check(z.describe('The job ID.'));

async function readable(scheduler: Scheduler, caller: () => Promise<SchedulerCaller>, id: string) {
  const deployment = await scheduler.deployments.get(id);
  if (!deployment) throw notFound('deployment not found');
  if (!(await caller()).acl.allowNamespaceOperation(deployment.Namespace, 'read-job')) throw permissionDenied();
  return deployment;
}

async function jobReader(caller: () => Promise<SchedulerCaller>, namespace: string | undefined) {
  const ns = namespace || 'default';
  if (!(await caller()).acl.allowNamespaceOperation(ns, 'read-job')) throw permissionDenied();
  return ns;
}

/** A deployment a write may change: found, and `submit-job` in its namespace. */
async function writable(scheduler: Scheduler, caller: () => Promise<SchedulerCaller>, id: string) {
  const deployment = await scheduler.deployments.get(id);
  if (!deployment) throw notFound('deployment not found');
  if (!(await caller()).acl.allowNamespaceOperation(deployment.Namespace, 'submit-job')) throw permissionDenied();
  return deployment;
}

/** Nomad's HTTP agent: the body's DeploymentID is required and must be the path's. */
function matchingId(inBody: string | undefined, inPath: string): void {
  if (!inBody) throw badRequest('DeploymentID must be specified');
  if (inBody !== inPath) throw badRequest('Deployment ID does not match');
}

export const deploymentRoutes: SchedulerRoute[] = [
  namespacedListRoute({
    path: '/v1/deployments',
    summary: 'List deployments in a namespace (`*`: every namespace the caller may read).',
    noun: 'deployments',
    query: {},
    blocking: ['deployment'],
    returns: 'The deployments, sorted by ID (paginated: `X-Nomad-NextToken`).',
    items: (scheduler) => scheduler.deployments.list(),
  }),
  route({
    method: 'GET',
    path: '/v1/deployment/:id',
    summary: 'Read a deployment.',
    access: 'token',
    params: { id: deploymentId },
    blocking: ['deployment'],
    returns: 'The Deployment; 404 `deployment not found`.',
    handler: async ({ scheduler, caller, params }) => {
      await readable(scheduler, caller, params.id);
      return { read: () => readable(scheduler, caller, params.id) };
    },
  }),
  route({
    method: 'GET',
    path: '/v1/deployment/allocations/:id',
    summary: 'The allocations of a deployment.',
    access: 'token',
    params: { id: deploymentId },
    blocking: ['deployment', 'allocs'],
    returns: 'AllocListStub[], sorted by ID.',
    handler: async ({ scheduler, caller, params }) => {
      await readable(scheduler, caller, params.id);
      return {
        read: async () => {
          const deployment = await readable(scheduler, caller, params.id);
          return (await scheduler.allocations.ofJob(deployment.Namespace, deployment.JobID))
            .filter((alloc) => alloc.DeploymentID === deployment.ID)
            .map((alloc) => allocationStub(alloc));
        },
      };
    },
  }),
  route({
    method: 'GET',
    path: '/v1/job/:id/deployments',
    slashParams: ['id'],
    summary: 'The deployments of a job, newest first.',
    access: 'token',
    params: { id: jobId },
    query: { namespace: namespaceQuery, all: boolQuery('all', 'Accepted as Nomad’s; every deployment is listed.') },
    blocking: ['deployment'],
    returns: 'The deployments (empty when the job has none).',
    handler: async ({ scheduler, caller, params, query }) => {
      const ns = await jobReader(caller, query.namespace);
      return { read: () => scheduler.deployments.ofJob(ns, params.id) };
    },
  }),
  route({
    method: 'GET',
    path: '/v1/job/:id/deployment',
    slashParams: ['id'],
    summary: 'The latest deployment of a job.',
    access: 'token',
    params: { id: jobId },
    query: { namespace: namespaceQuery },
    blocking: ['deployment'],
    returns: 'The Deployment, or `null` when the job has none.',
    handler: async ({ scheduler, caller, params, query }) => {
      const ns = await jobReader(caller, query.namespace);
      return { read: async () => (await scheduler.deployments.latest(ns, params.id)) ?? null };
    },
  }),
  route({
    method: ['PUT', 'POST'],
    path: '/v1/deployment/fail/:id',
    summary: 'Mark an active deployment failed (Nomad’s `Deployment.Fail`); the job is evaluated again.',
    access: 'token',
    params: { id: deploymentId },
    returns:
      '`{"EvalID", "EvalCreateIndex", "DeploymentModifyIndex", "RevertedJobVersion", "Index"}`: the `deployment-watcher` evaluation, and the job version registered again under `auto_revert`.',
    handler: async ({ scheduler, caller, params }) => {
      await writable(scheduler, caller, params.id);
      const out = await scheduler.deployments.setStatus(params.id, 'fail');
      return { json: out, index: out.Index };
    },
  }),
  route({
    method: ['PUT', 'POST'],
    path: '/v1/deployment/pause/:id',
    summary: 'Pause or resume an active deployment (Nomad’s `Deployment.Pause`); a resume evaluates the job again.',
    access: 'token',
    params: { id: deploymentId },
    body: z.object({
      Pause: z.optional(z.boolean()).check(z.describe('true to pause, false to resume.')),
      DeploymentID: z.optional(z.string()).check(z.describe('Ignored: the deployment is the one in the path.')),
    }),
    returns:
      '`{"EvalID", "EvalCreateIndex", "DeploymentModifyIndex", "RevertedJobVersion", "Index"}` (no evaluation on a pause).',
    handler: async ({ scheduler, caller, params, body }) => {
      await writable(scheduler, caller, params.id);
      const out = await scheduler.deployments.setStatus(params.id, body.Pause ? 'pause' : 'resume');
      return { json: out, index: out.Index };
    },
  }),
  route({
    method: ['PUT', 'POST'],
    path: '/v1/deployment/promote/:id',
    summary: 'Promote the canaries of an active deployment (Nomad’s `Deployment.Promote`); the job is evaluated again.',
    description:
      'Every promoted group must have as many healthy canaries as it desires, else a 400 names each short group and nothing is written. One write: the groups marked promoted, the healthy canaries no longer canaries, a `deployment-watcher` evaluation, each with a `DeploymentPromotion` event.',
    access: 'token',
    params: { id: deploymentId },
    body: z.object({
      DeploymentID: z.optional(z.string()).check(z.describe('The deployment ID; must be the one in the path.')),
      All: z.optional(z.boolean()).check(z.describe('Promote every task group.')),
      Groups: z
        .optional(z.nullable(z.array(z.string())))
        .check(z.describe('The task groups to promote, when not `All`.')),
    }),
    returns:
      '`{"EvalID", "EvalCreateIndex", "DeploymentModifyIndex", "RevertedJobVersion", "Index"}`; 400 when the deployment is terminal or a group’s canaries are not all healthy.',
    handler: async ({ scheduler, caller, params, body }) => {
      matchingId(body.DeploymentID, params.id);
      await writable(scheduler, caller, params.id);
      const out = await scheduler.deploymentWatcher.promote(params.id, body.All === true, body.Groups ?? []);
      return { json: out, index: out.Index };
    },
  }),
  route({
    method: ['PUT', 'POST'],
    path: '/v1/deployment/allocation-health/:id',
    summary:
      'Set the deployment health of a deployment’s allocations by hand (Nomad’s `Deployment.SetAllocHealth`); the job is evaluated again.',
    description:
      'Each ID must be an allocation of this deployment, else a 400 and nothing is written. An unhealthy one fails the deployment (`Failed due to unhealthy allocations`, reverted to the latest stable job under `auto_revert`). One write, with `DeploymentAllocHealth` events.',
    access: 'token',
    params: { id: deploymentId },
    body: z.object({
      DeploymentID: z.optional(z.string()).check(z.describe('The deployment ID; must be the one in the path.')),
      HealthyAllocationIDs: z
        .optional(z.nullable(z.array(z.string())))
        .check(z.describe('Allocations of the deployment to mark healthy.')),
      UnhealthyAllocationIDs: z
        .optional(z.nullable(z.array(z.string())))
        .check(z.describe('Allocations of the deployment to mark unhealthy.')),
    }),
    returns:
      '`{"EvalID", "EvalCreateIndex", "DeploymentModifyIndex", "RevertedJobVersion", "Index"}` (`RevertedJobVersion` the version registered again, or null).',
    handler: async ({ scheduler, caller, params, body }) => {
      matchingId(body.DeploymentID, params.id);
      await writable(scheduler, caller, params.id);
      const out = await scheduler.deploymentWatcher.setAllocHealth(
        params.id,
        body.HealthyAllocationIDs ?? [],
        body.UnhealthyAllocationIDs ?? [],
      );
      return { json: out, index: out.Index };
    },
  }),
  route({
    method: ['PUT', 'POST'],
    path: '/v1/deployment/unblock/:id',
    summary: 'Unblock a multiregion deployment (Nomad’s `Deployment.Unblock`): a no-op on this single-region service.',
    description:
      'Nomad’s community edition answers an active deployment with an empty `DeploymentUpdateResponse` and writes nothing: only a multiregion deployment is ever `blocked`, and this service has none. A terminal deployment is a 400 `can’t unblock terminal deployment`. `submit-job` or `unblock-deployment` in the deployment’s namespace.',
    access: 'token',
    params: { id: deploymentId },
    body: z.object({
      DeploymentID: z.optional(z.string()).check(z.describe('The deployment ID; must be the one in the path.')),
    }),
    returns:
      '`{"EvalID": "", "EvalCreateIndex": 0, "DeploymentModifyIndex": 0, "RevertedJobVersion": null, "Index": 0}`.',
    handler: async ({ scheduler, caller, params, body }) => {
      matchingId(body.DeploymentID, params.id);
      const deployment = await scheduler.deployments.get(params.id);
      if (!deployment) throw notFound('deployment not found');
      const acl = (await caller()).acl;
      if (
        !acl.allowNamespaceOperation(deployment.Namespace, 'submit-job') &&
        !acl.allowNamespaceOperation(deployment.Namespace, 'unblock-deployment')
      )
        throw permissionDenied();
      if (!isActive(deployment)) throw badRequest("can't unblock terminal deployment");
      const out: DeploymentUpdateResponse = {
        EvalID: '',
        EvalCreateIndex: 0,
        DeploymentModifyIndex: 0,
        RevertedJobVersion: null,
        Index: 0,
      };
      // Nomad's setIndex sends 1 for 0, so that a client's blocking loop never spins on ?index=0.
      return { json: out, index: 1 };
    },
  }),
];
