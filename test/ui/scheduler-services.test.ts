import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PlanApplier } from '../../packages/core/src/scheduler/cluster/evaluations/plan-apply.ts';
import { schedulerFor } from '../../packages/core/src/scheduler/composition/scheduler-core.ts';
import { allocationOf, webJob } from '../support/cluster-allocations.ts';
import { clientNode } from '../support/cluster-nodes.ts';
import { liveBy, type SchedulerConsole, screenshot, startSchedulerConsole } from '../support/console.ts';
import type { SchedulerService } from '../support/scheduler-harness.ts';

/**
 * The console's services pages in Chromium against the product as `npm start` runs it: a node registered over the
 * client protocol registers the services of an allocation placed on it, and the list and the service's page show
 * them without a reload (the `Service` topic for a management token, blocking reads for a token that may not stream
 * every namespace); a registration is deleted from its page and is gone from the API; a token that reads one
 * namespace sees only that namespace's services. The allocation is placed through the scheduler's plan apply in
 * process (the evaluation worker that calls it is not built yet).
 */
const caseTimeoutMs = 90_000;
const node = clientNode();

/** An allocation of `job` in `namespace` placed on the node, through the plan apply of the running service. */
async function placed(namespace: string, job: string): Promise<string> {
  const registered = await ui.api('PUT', 'jobs', { Job: webJob(job, { Namespace: namespace }) });
  expect(registered.status).toBe(200);
  const scheduler = schedulerFor(ui.product.runtime.core);
  const service = { scheduler, clock: ui.product.runtime.core.clock } as unknown as SchedulerService;
  const alloc = await allocationOf(service, { namespace, id: job, evalId: registered.json().EvalID }, node);
  const beat = await scheduler.nodes.beat(node.ID);
  const applied = await new PlanApplier(scheduler.state, scheduler.nodes, scheduler.allocations).apply({
    place: [alloc],
    update: [],
    nodeVersions: new Map([[node.ID, beat?.allocIndex ?? 0]]),
  });
  expect(applied.placed.map((entry) => entry.ID)).toEqual([alloc.ID]);
  return alloc.ID;
}

/** The node registers `name` of `allocId` at `port`, as its agent does once the task runs. */
async function registerService(allocId: string, namespace: string, job: string, name: string, port: number) {
  const out = await ui.api(
    'PUT',
    'client/services',
    {
      Services: [
        {
          ID: `_nomad-task-${allocId}-server-${name}-http`,
          ServiceName: name,
          Namespace: namespace,
          NodeID: node.ID,
          JobID: job,
          AllocID: allocId,
          Tags: ['http', namespace],
          Address: '10.0.0.7',
          Port: port,
        },
      ],
    },
    node.SecretID,
  );
  expect(out.status).toBe(200);
}

let ui: SchedulerConsole;
beforeAll(async () => {
  ui = await startSchedulerConsole({ nodes: [node], namespaces: ['dev'] });
}, 120_000);
afterAll(() => ui?.stop());

describe('the services pages', () => {
  it(
    'lists services live from the Service topic, shows a service’s registrations and deletes one',
    async () => {
      const { context, page } = await ui.signedIn();
      await page.getByRole('link', { name: 'Services', exact: true }).click();
      await page.getByText('No services registered in the namespaces you may read.').waitFor();
      await liveBy(page, 'event stream');

      // The node registers a running allocation's service: the list shows it without a reload.
      const first = await placed('default', 'web');
      await registerService(first, 'default', 'web', 'api', 25_001);
      const link = page.getByRole('link', { name: 'api', exact: true });
      await link.waitFor();
      await page.getByRole('cell', { name: 'default, http', exact: true }).waitFor();
      await screenshot(page, 'services');

      await link.click();
      await page.getByRole('heading', { name: 'Service api', exact: true }).waitFor();
      await page.getByRole('cell', { name: '10.0.0.7:25001', exact: true }).waitFor();
      await page.getByRole('link', { name: node.ID.slice(0, 8) }).waitFor();
      await liveBy(page, 'event stream');
      // A second instance appears on the open page.
      const second = await placed('default', 'web');
      await registerService(second, 'default', 'web', 'api', 25_002);
      await page.getByRole('cell', { name: '10.0.0.7:25002', exact: true }).waitFor();
      await screenshot(page, 'service');

      await page.getByRole('button', { name: 'Delete registration 10.0.0.7:25001' }).click();
      await page.getByRole('button', { name: 'Confirm delete' }).click();
      await page.getByRole('cell', { name: '10.0.0.7:25001', exact: true }).waitFor({ state: 'detached' });
      const left = (await ui.api('GET', 'service/api')).json() as Array<{ Port: number; AllocID: string }>;
      expect(left.map((registration) => [registration.Port, registration.AllocID])).toEqual([[25_002, second]]);
      await context.close();
    },
    caseTimeoutMs,
  );

  it(
    'a token that reads one namespace sees only its services, following them with blocking reads',
    async () => {
      const dev = await placed('dev', 'docs');
      await registerService(dev, 'dev', 'docs', 'wiki', 26_000);
      expect(
        (await ui.api('POST', 'acl/policy/dev-read', { Rules: 'namespace "dev" { policy = "read" }' })).status,
      ).toBe(200);
      const token = (await ui.api('POST', 'acl/token', { Type: 'client', Policies: ['dev-read'] })).json() as {
        SecretID: string;
      };
      const { context, page } = await ui.signedIn(token.SecretID);
      await page.getByRole('link', { name: 'Services', exact: true }).click();
      await page.getByRole('link', { name: 'wiki', exact: true }).waitFor();
      // Streaming every namespace needs read-job in all of them: the page follows the list with blocking reads.
      await liveBy(page, 'blocking queries');
      expect(await page.getByRole('link', { name: 'api', exact: true }).count()).toBe(0);
      const later = await placed('dev', 'docs');
      await registerService(later, 'dev', 'docs', 'wiki-admin', 26_001);
      await page.getByRole('link', { name: 'wiki-admin', exact: true }).waitFor();
      await context.close();
    },
    caseTimeoutMs,
  );
});
