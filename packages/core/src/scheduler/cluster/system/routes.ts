/**
 * Nomad's `/v1/system` routes (`command/agent/system_endpoint.go`, `nomad/system_endpoint.go`), both for a management
 * token only: `PUT /v1/system/gc` requests the garbage collection with every threshold at zero (Nomad's forceGC,
 * which it enqueues and answers at once: here the request is recorded and run in the background under a claim,
 * `forced-gc.ts`), and `PUT /v1/system/reconcile/summaries` counts every job's summary again. Both answer an empty
 * body, as Nomad's handlers.
 */
import { route, type SchedulerRoute } from '../../http/route.ts';
import { requestForcedGc } from './forced-gc.ts';
import { reconcileJobSummaries } from './reconcile-summaries.ts';

export const systemRoutes: SchedulerRoute[] = [
  route({
    method: 'PUT',
    path: '/v1/system/gc',
    summary: 'Request the garbage collection, every threshold at zero; it runs in the background.',
    description:
      'Answers at once, as Nomad, which enqueues its forced GC: the run that follows (from the table stream, or the ' +
      'sweep) reaps the finished jobs (each a JobBatchDeregistered event), evaluations, allocations, deployments and ' +
      'down nodes that Nomad would reap. Requests made before it starts are one run; a run deletes a bounded number ' +
      'of items, what is past the bound waits for the next run.',
    access: 'management',
    returns: 'An empty body; the index headers carry the current index.',
    handler: async ({ scheduler }) => {
      await requestForcedGc(scheduler.state.store, scheduler.state.clock);
      return { empty: true, index: await scheduler.state.currentIndex() };
    },
  }),
  route({
    method: 'PUT',
    path: '/v1/system/reconcile/summaries',
    summary: "Count every job's summary again from its allocations (a parent's from its children).",
    access: 'management',
    returns: 'An empty body; the index headers carry the index of the last write.',
    handler: async ({ scheduler }) => ({
      empty: true,
      index: await reconcileJobSummaries(scheduler.state, scheduler.namespaces, scheduler.jobs, scheduler.allocations),
    }),
  }),
];
