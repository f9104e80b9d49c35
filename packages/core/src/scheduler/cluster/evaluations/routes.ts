/**
 * Evaluations over HTTP, as Nomad's (`command/agent/eval_endpoint.go`, `nomad/eval_endpoint.go`):
 * `GET /v1/evaluations` (`status`, `job`, `prefix`, `namespace`, the list query), `/v1/evaluation/:id` and its
 * `allocations`. Every read needs `read-job` in the evaluation's namespace. The evaluation worker runs
 * them.
 */
import * as z from 'zod/mini';
import { notFound } from '../../../lib/errors.ts';
import { namespacedListRoute } from '../../http/namespaced-list.ts';
import { permissionDenied } from '../../http/nomad.ts';
import { route, type SchedulerRoute } from '../../http/route.ts';
import type { Scheduler, SchedulerCaller } from '../../composition/scheduler-core.ts';
import { allocationStub } from '../allocations/stub.ts';
import { evaluationJson } from './model.ts';

const evalId = z.string().check(z.describe('The evaluation ID.'));

async function readable(scheduler: Scheduler, caller: () => Promise<SchedulerCaller>, id: string) {
  const evaluation = await scheduler.evaluations.get(id);
  if (!evaluation) throw notFound('eval not found');
  if (!(await caller()).acl.allowNamespaceOperation(evaluation.Namespace, 'read-job')) throw permissionDenied();
  return evaluation;
}

export const evaluationRoutes: SchedulerRoute[] = [
  namespacedListRoute({
    path: '/v1/evaluations',
    summary: 'List evaluations in a namespace (`*`: every namespace the caller may read).',
    noun: 'evaluations',
    query: {
      status: z.optional(z.string()).check(z.describe('Only evaluations of this status.')),
      job: z.optional(z.string()).check(z.describe('Only evaluations of this job ID.')),
    },
    blocking: ['evals'],
    returns: 'The evaluations, sorted by ID (paginated: `X-Nomad-NextToken`).',
    items: (scheduler) => scheduler.evaluations.list(),
    shows: (evaluation) => evaluationJson(evaluation),
    keeps: (evaluation, query) =>
      (!query.status || evaluation.Status === query.status) && (!query.job || evaluation.JobID === query.job),
  }),
  route({
    method: 'GET',
    path: '/v1/evaluation/:id',
    summary: 'Read an evaluation.',
    access: 'token',
    params: { id: evalId },
    blocking: ['evals'],
    returns: 'The evaluation.',
    handler: async ({ scheduler, caller, params }) => {
      await readable(scheduler, caller, params.id);
      return { read: async () => evaluationJson(await readable(scheduler, caller, params.id)) };
    },
  }),
  route({
    method: 'GET',
    path: '/v1/evaluation/:id/allocations',
    summary: 'The allocations an evaluation placed.',
    access: 'token',
    params: { id: evalId },
    blocking: ['evals', 'allocs'],
    returns: 'AllocListStub[], sorted by ID.',
    handler: async ({ scheduler, caller, params }) => {
      await readable(scheduler, caller, params.id);
      return {
        read: async () => {
          const evaluation = await readable(scheduler, caller, params.id);
          return (await scheduler.allocations.ofJob(evaluation.Namespace, evaluation.JobID))
            .filter((alloc) => alloc.EvalID === evaluation.ID)
            .map((alloc) => allocationStub(alloc));
        },
      };
    },
  }),
];
