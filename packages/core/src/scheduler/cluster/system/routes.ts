/**
 * Nomad's `/v1/system` routes (`command/agent/system_endpoint.go`, `nomad/system_endpoint.go`), both for a management
 * token only: `PUT /v1/system/gc` runs the garbage collection now with every threshold at zero (Nomad's forceGC;
 * Nomad queues it and answers at once, here one run is done before the answer, bounded as every run: what is past
 * its bound is left for the next), and `PUT /v1/system/reconcile/summaries` counts every job's summary again. Both
 * answer an empty body, as Nomad's handlers.
 */
import { route, type SchedulerRoute } from '../../http/route.ts';
import { reconcileJobSummaries } from './reconcile-summaries.ts';
import { forcedGcThresholds } from './thresholds.ts';

export const systemRoutes: SchedulerRoute[] = [
  route({
    method: 'PUT',
    path: '/v1/system/gc',
    summary: 'Run the garbage collection now, every threshold at zero.',
    description:
      'Reaps the finished jobs (each a JobBatchDeregistered event), evaluations, allocations and deployments that ' +
      'Nomad would reap; a run deletes a bounded number of items, what is past the bound waits for the next run.',
    access: 'management',
    returns: 'An empty body; the index headers carry the index after the run.',
    handler: async ({ scheduler }) => {
      await scheduler.garbage.collect(forcedGcThresholds);
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
