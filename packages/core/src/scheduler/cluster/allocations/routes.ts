/**
 * Allocations over HTTP, as Nomad's (`command/agent/alloc_endpoint.go`, `nomad/alloc_endpoint.go`):
 * `GET /v1/allocations` (`prefix`, `namespace` with `*`, `filter` and pages, `task_states`, `resources`: Nomad's
 * AllocListStub), `GET /v1/allocation/:id` (the job rehydrated from its version), its `services` and `PUT|POST
 * /v1/allocation/:id/stop`. Reads need `read-job` in the allocation's namespace, the stop `alloc-lifecycle`. A job's,
 * an evaluation's and a node's allocations are listed by their own routes (`jobs/routes.ts`,
 * `evaluations/routes.ts`, `nodes/routes.ts`) with `allocationStub` and `withJobs` (`stub.ts`).
 */
import * as z from 'zod/mini';
import { notFound } from '../../../lib/errors.ts';
import { namespacedListRoute, namespaceQuery } from '../../http/namespaced-list.ts';
import { permissionDenied } from '../../http/nomad.ts';
import { route, type SchedulerRoute } from '../../http/route.ts';
import type { Scheduler, SchedulerCaller } from '../../composition/scheduler-core.ts';
import { boolQuery } from '../jobs/routes.ts';
import { allocationJson } from './json.ts';
import { allocationStub } from './stub.ts';

const allocId = z.string().check(z.describe('The allocation ID.'));

async function readable(scheduler: Scheduler, caller: () => Promise<SchedulerCaller>, id: string) {
  const alloc = await scheduler.allocations.get(id);
  if (!alloc) throw notFound('alloc not found');
  if (!(await caller()).acl.allowNamespaceOperation(alloc.Namespace, 'read-job')) throw permissionDenied();
  return alloc;
}

export const allocationRoutes: SchedulerRoute[] = [
  namespacedListRoute({
    path: '/v1/allocations',
    summary: 'List allocations in a namespace (`*`: every namespace the caller may read).',
    noun: 'allocations',
    query: {
      task_states: boolQuery('task_states', 'Include each allocation’s task states (default true).'),
      resources: boolQuery('resources', 'Include each allocation’s allocated resources (default false).'),
    },
    blocking: ['allocs'],
    returns: 'AllocListStub[], sorted by ID (paginated: `X-Nomad-NextToken`).',
    items: (scheduler) => scheduler.allocations.list(),
    shows: (alloc, query) =>
      allocationStub(alloc, { taskStates: query.task_states ?? true, resources: query.resources ?? false }),
  }),
  route({
    method: 'GET',
    path: '/v1/allocation/:id',
    summary: 'Read an allocation, its job as it was at the allocation’s job version.',
    access: 'token',
    params: { id: allocId },
    blocking: ['allocs'],
    returns: 'The Allocation.',
    handler: async ({ scheduler, caller, params }) => {
      await readable(scheduler, caller, params.id);
      return {
        read: async () =>
          allocationJson(await scheduler.allocations.withJob(await readable(scheduler, caller, params.id))),
      };
    },
  }),
  route({
    method: 'GET',
    path: '/v1/allocation/:id/services',
    summary: 'The service registrations of an allocation (Nomad’s `Alloc.GetServiceRegistrations`).',
    access: 'token',
    params: { id: allocId },
    query: { namespace: namespaceQuery },
    blocking: ['service_registrations'],
    returns:
      'ServiceRegistration[], sorted by ID (empty when it has none); 404 `allocation not found`, also for an allocation of another namespace than the one asked for.',
    handler: async ({ scheduler, caller, params, query }) => {
      // As Nomad's: read-job in the namespace asked for; an allocation outside it is not found.
      const namespace = query.namespace || 'default';
      if (!(await caller()).acl.allowNamespaceOperation(namespace, 'read-job')) throw permissionDenied();
      return {
        read: async () => {
          const alloc = await scheduler.allocations.get(params.id);
          if (!alloc || alloc.Namespace !== namespace) throw notFound('allocation not found');
          return scheduler.services.ofAllocation(alloc.ID);
        },
      };
    },
  }),
  route({
    method: ['PUT', 'POST'],
    path: '/v1/allocation/:id/stop',
    summary: 'Stop an allocation: the scheduler stops it and places a replacement (Nomad’s `Alloc.Stop`).',
    access: 'token',
    params: { id: allocId },
    query: {
      no_shutdown_delay: boolQuery('no_shutdown_delay', 'Skip the task group’s shutdown delay.'),
    },
    returns: '`{"EvalID", "Index"}`: the `alloc-stop` evaluation created.',
    handler: async ({ scheduler, caller, params, query }) => {
      const alloc = await scheduler.allocations.get(params.id);
      if (!alloc) throw notFound('alloc not found');
      if (!(await caller()).acl.allowNamespaceOperation(alloc.Namespace, 'alloc-lifecycle')) throw permissionDenied();
      const out = await scheduler.allocations.stop(params.id, query.no_shutdown_delay ?? false);
      return { json: out, index: out.Index };
    },
  }),
];
