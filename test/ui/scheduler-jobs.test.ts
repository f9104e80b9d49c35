import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientNode } from '../support/cluster-nodes.ts';
import {
  liveBy,
  signInWithToken,
  type SchedulerConsole,
  screenshot,
  startSchedulerConsole,
} from '../support/console.ts';

/**
 * The console's jobs pages in Chromium against the product as `npm start` runs it, with a node registered over the
 * client protocol (the test plays its agent: heartbeats and allocation reports) and the evaluation worker that the
 * sweep runs: a job submitted through the run form is placed on the node; the list shows it, its page shows the
 * allocation appear and scale without a reload; an allocation's page shows the task states the node reports and stops
 * it; a bad spec shows the service's 400; a token of one namespace sees only that namespace's jobs.
 */
const caseTimeoutMs = 120_000;
const node = clientNode();
/** The nodes the test beats for, as their agents would. */
const nodes = [node];

/** A JSON job spec as a person would paste it: one raw_exec task, small enough for the node. */
const spec = (id: string, count: number, extra: Record<string, unknown> = {}, cpu = 100) => ({
  ID: id,
  ...extra,
  TaskGroups: [
    {
      Name: 'web',
      Count: count,
      Tasks: [
        {
          Name: 'server',
          Driver: 'raw_exec',
          Config: { command: 'python3', args: ['-m', 'http.server'] },
          Resources: { CPU: cpu, MemoryMB: 64 },
        },
      ],
    },
  ],
});

interface AllocStub {
  ID: string;
  DesiredStatus: string;
  ClientStatus: string;
}
const allocationsOf = async (job: string, namespace = 'default') =>
  (await ui.api('GET', `job/${job}/allocations?namespace=${namespace}`)).json() as AllocStub[];

/** Waits (polling the API, not sleeping a fixed time) until `check` holds. */
async function until<T>(read: () => Promise<T>, check: (value: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const value = await read();
    if (check(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

let ui: SchedulerConsole;
beforeAll(async () => {
  ui = await startSchedulerConsole({ nodes, namespaces: ['dev'] });
}, 120_000);
afterAll(() => ui?.stop());

const allocationLinks = (page: Page) =>
  page
    .getByRole('region', { name: 'Allocations', exact: true })
    .getByRole('row')
    .filter({ has: page.getByRole('link') });

describe('the jobs pages', () => {
  it(
    'runs a job from the form, lists it, and follows its allocations live through a scale and a stop',
    async () => {
      const { context, page } = await ui.signedIn();
      await page.getByRole('link', { name: 'Jobs', exact: true }).click();
      await page.getByText('No jobs here: run one.').waitFor();
      await liveBy(page, 'event stream');

      // A spec that is not JSON is refused by the page; one the service refuses shows the service's 400.
      await page.getByRole('link', { name: 'Run a job' }).click();
      const specBox = page.getByRole('textbox', { name: 'Job spec (JSON)' });
      await specBox.fill('{"ID": "web",');
      await page.getByRole('button', { name: 'Run', exact: true }).click();
      await page.getByRole('alert').getByText('The job spec is not JSON').waitFor();
      await specBox.fill(JSON.stringify(spec('web', -1)));
      await page.getByRole('button', { name: 'Run', exact: true }).click();
      const refusal = page.getByRole('alert');
      await refusal.getByText('Error 400').waitFor();
      const refused = await ui.api('PUT', 'jobs', { Job: spec('web', -1) });
      expect(refused.status).toBe(400);
      expect(await refusal.locator('li').first().textContent()).toBe(refused.text.trim());
      expect((await ui.api('GET', 'job/web')).status).toBe(404);

      // Plan is a dry run: what the scheduler would do, and why it could not place a group; nothing is written.
      const planButton = page.getByRole('button', { name: 'Plan', exact: true });
      const plan = page.getByRole('region', { name: 'Plan', exact: true });
      await specBox.fill(JSON.stringify(spec('web', 1, {}, 60_000)));
      await planButton.click();
      await plan
        .getByRole('alert', { name: 'Placement failures' })
        .getByText(/Dimension cpu: 1 nodes exhausted/)
        .waitFor();
      await specBox.fill(JSON.stringify(spec('web', 1), null, 2));
      // The plan shown was of another spec: it is gone once the spec changes.
      await plan.waitFor({ state: 'detached' });
      await planButton.click();
      await plan.getByText('All task groups can be placed.').waitFor();
      expect(await plan.getByRole('row').nth(1).getByRole('cell').allTextContents()).toEqual([
        'web',
        '1',
        '0',
        '0',
        '0',
        '0',
        '0',
        '0',
      ]);
      expect(await plan.getByRole('figure', { name: 'Job diff' }).textContent()).toContain('+ Job: "web"');
      await plan.scrollIntoViewIfNeeded();
      await screenshot(page, 'job-plan');
      expect((await ui.api('GET', 'job/web')).status).toBe(404);

      // Run after the plan: the job's page opens and its allocation appears without a reload.
      await page.getByRole('button', { name: 'Run', exact: true }).click();
      await page.getByRole('heading', { name: 'Job web', exact: true }).waitFor();
      await liveBy(page, 'event stream');
      const stored = (await ui.api('GET', 'job/web')).json() as { TaskGroups: Array<{ Count: number }> };
      expect(stored.TaskGroups[0]?.Count).toBe(1);
      await until(
        () => allocationsOf('web'),
        (allocs) => allocs.length === 1,
        'the first allocation',
      );
      await expect.poll(() => allocationLinks(page).count(), { timeout: 30_000 }).toBe(1);
      const groups = page.getByRole('region', { name: 'Task groups', exact: true });
      await groups.getByRole('cell', { name: 'server (raw_exec)' }).waitFor();
      await groups.getByRole('cell', { name: '100 MHz', exact: true }).waitFor();
      await page
        .getByRole('region', { name: 'Evaluations', exact: true })
        .getByRole('cell', { name: 'job-register' })
        .first()
        .waitFor();
      await screenshot(page, 'job');

      // Scale the group to 2: the job is registered again with the new count, and a second allocation appears.
      await groups.getByRole('spinbutton', { name: 'Count of web' }).fill('2');
      await groups.getByRole('button', { name: 'Scale' }).click();
      await page
        .getByRole('region', { name: 'Versions', exact: true })
        .getByRole('cell', { name: 'web (2)' })
        .waitFor();
      await until(
        () => allocationsOf('web'),
        (allocs) => allocs.length === 2,
        'the scaled allocations',
      );
      await expect.poll(() => allocationLinks(page).count(), { timeout: 30_000 }).toBe(2);
      const scaled = (await ui.api('GET', 'job/web')).json() as {
        Version: number;
        TaskGroups: Array<{ Count: number }>;
      };
      expect(scaled.TaskGroups[0]?.Count).toBe(2);
      expect(scaled.Version).toBe(1);

      // The list shows the job, and its status filter hides it under another status.
      await page.getByRole('link', { name: 'Jobs of default' }).click();
      await page.getByRole('link', { name: 'web', exact: true }).waitFor();
      await page.getByRole('combobox', { name: 'Status' }).selectOption('dead');
      await page.getByText('No dead jobs here.').waitFor();
      await page.getByRole('combobox', { name: 'Status' }).selectOption('');
      await screenshot(page, 'jobs');
      await page.getByRole('link', { name: 'web', exact: true }).click();

      // An allocation's page: the task state and events the node reports appear live; Stop stops it.
      const [first] = await allocationsOf('web');
      if (!first) throw new Error('no allocation');
      await page.getByRole('link', { name: first.ID.slice(0, 8), exact: true }).click();
      await page.getByRole('heading', { name: `Allocation ${first.ID.slice(0, 8)}`, exact: true }).waitFor();
      await liveBy(page, 'event stream');
      await page.getByText('No task has reported yet.').waitFor();
      const now = Date.now();
      const report = await ui.api(
        'PUT',
        `client/node/${node.ID}/allocations`,
        {
          Allocs: [
            {
              ID: first.ID,
              ClientStatus: 'running',
              TaskStates: {
                server: {
                  State: 'running',
                  StartedAt: new Date(now).toISOString(),
                  Events: [
                    { Type: 'Received', Time: now * 1e6, DisplayMessage: 'Task received by client' },
                    { Type: 'Started', Time: (now + 1) * 1e6, DisplayMessage: 'Task started by client' },
                  ],
                },
              },
            },
          ],
        },
        node.SecretID,
      );
      expect(report.status).toBe(200);
      const task = page.getByRole('region', { name: 'Task server', exact: true });
      await task.getByRole('cell', { name: 'Task started by client' }).waitFor();
      await task.getByRole('cell', { name: 'Task received by client' }).waitFor();
      await page
        .getByRole('region', { name: 'Allocation', exact: true })
        .getByText('running', { exact: true })
        .waitFor();
      await screenshot(page, 'allocation');

      await page.getByRole('button', { name: 'Stop allocation' }).click();
      await page.getByRole('button', { name: 'Confirm stop' }).click();
      await page.getByText('The scheduler wants this allocation stop.').waitFor();
      const stopped = (await ui.api('GET', `allocation/${first.ID}`)).json() as AllocStub;
      expect(stopped.DesiredStatus).toBe('stop');
      // The scheduler places a replacement: the job's page shows three allocations, one of them stopped.
      await until(
        () => allocationsOf('web'),
        (allocs) => allocs.length === 3,
        'the replacement',
      );
      await page.getByRole('link', { name: 'Job web' }).click();
      await expect.poll(() => allocationLinks(page).count(), { timeout: 30_000 }).toBe(3);
      await context.close();
    },
    caseTimeoutMs,
  );

  it(
    'stops, starts and purges a job from its page',
    async () => {
      expect((await ui.api('PUT', 'jobs', { Job: spec('batchy', 1) })).status).toBe(200);
      const { context, page } = await ui.signedIn();
      await page.goto(`${ui.product.consoleUrl}scheduler/jobs/default/batchy`);
      await page.getByRole('heading', { name: 'Job batchy', exact: true }).waitFor();
      await liveBy(page, 'event stream');
      await page.getByRole('button', { name: 'Stop job' }).click();
      await page.getByRole('button', { name: 'Confirm stop' }).click();
      await page.getByRole('button', { name: 'Start job' }).waitFor();
      expect(((await ui.api('GET', 'job/batchy')).json() as { Stop: boolean }).Stop).toBe(true);

      await page.getByRole('button', { name: 'Start job' }).click();
      await page.getByRole('button', { name: 'Stop job' }).waitFor();
      expect(((await ui.api('GET', 'job/batchy')).json() as { Stop: boolean }).Stop).toBe(false);

      // A second tab open on the job learns that it is gone (session storage is the tab's: it signs in too).
      const other = await context.newPage();
      await signInWithToken(other, ui.product, 'scheduler', ui.management);
      await other.goto(`${ui.product.consoleUrl}scheduler/jobs/default/batchy`);
      await other.getByRole('heading', { name: 'Job batchy', exact: true }).waitFor();
      await liveBy(other, 'event stream');

      await page.getByRole('button', { name: 'Purge job' }).click();
      await page.getByRole('button', { name: 'Confirm purge' }).click();
      await page.getByRole('heading', { name: 'Jobs', exact: true }).waitFor();
      expect((await ui.api('GET', 'job/batchy')).status).toBe(404);
      await other.getByRole('alert').getByText('Error 404').waitFor();
      expect(await other.getByRole('alert').locator('li').allTextContents()).toEqual(['job not found']);
      await context.close();
    },
    caseTimeoutMs,
  );

  it(
    'a token of one namespace sees only that namespace’s jobs, following them with blocking reads',
    async () => {
      expect((await ui.api('PUT', 'jobs', { Job: spec('docs', 1, { Namespace: 'dev' }) })).status).toBe(200);
      expect(
        (await ui.api('POST', 'acl/policy/dev-write', { Rules: 'namespace "dev" { policy = "write" }' })).status,
      ).toBe(200);
      const token = (await ui.api('POST', 'acl/token', { Type: 'client', Policies: ['dev-write'] })).json() as {
        SecretID: string;
      };
      const { context, page } = await ui.signedIn(token.SecretID);
      await page.getByRole('link', { name: 'Jobs', exact: true }).click();
      await page.getByRole('link', { name: 'docs', exact: true }).waitFor();
      // Streaming every namespace needs read-job in all of them: the page follows the list with blocking reads.
      await liveBy(page, 'blocking queries');
      const jobLinks = () => page.getByRole('main').getByRole('table').getByRole('link').allTextContents();
      expect(await jobLinks()).toEqual(['docs']);
      // A job submitted meanwhile appears.
      expect((await ui.api('PUT', 'jobs', { Job: spec('wiki', 1, { Namespace: 'dev' }) })).status).toBe(200);
      await page.getByRole('link', { name: 'wiki', exact: true }).waitFor();
      expect(await jobLinks()).toEqual(['docs', 'wiki']);
      // The management token's list of every namespace holds the default namespace's job too.
      expect(
        ((await ui.api('GET', 'jobs?namespace=*')).json() as Array<{ ID: string }>).map((job) => job.ID).sort(),
      ).toEqual(['docs', 'web', 'wiki']);

      // Its own namespace's job page streams; another namespace's is refused as the service words it.
      await page.getByRole('link', { name: 'docs', exact: true }).click();
      await page.getByRole('heading', { name: 'Job docs', exact: true }).waitFor();
      await liveBy(page, 'event stream');
      await page.goto(`${ui.product.consoleUrl}scheduler/jobs/default/web`);
      await page.getByRole('alert').getByText('HTTP 403').waitFor();
      expect(await page.getByRole('alert').locator('li').allTextContents()).toEqual(['Permission denied']);
      await context.close();
    },
    caseTimeoutMs,
  );
  it(
    'shows why a job cannot be placed, and its allocation once a node with room is ready',
    async () => {
      // 6,000 MHz: more than the first node has (4,000, 100 reserved).
      expect((await ui.api('PUT', 'jobs', { Job: spec('big', 1, {}, 6_000) })).status).toBe(200);
      const { context, page } = await ui.signedIn();
      await page.goto(`${ui.product.consoleUrl}scheduler/jobs/default/big`);
      await page.getByRole('heading', { name: 'Job big', exact: true }).waitFor();
      await liveBy(page, 'event stream');
      const failures = page.getByRole('region', { name: 'Placement failures', exact: true });
      await failures.getByText(/^Task group web: 1 nodes evaluated, 0 filtered, 1 exhausted/).waitFor();
      await failures.getByText(/Dimension cpu: 1 nodes exhausted/).waitFor();
      const evaluations = (await ui.api('GET', 'job/big/evaluations')).json() as Array<{ Status: string }>;
      expect(evaluations.map((evaluation) => evaluation.Status).sort()).toEqual(['blocked', 'complete']);
      expect(await allocationLinks(page).count()).toBe(0);

      // A node with room registers and becomes ready: the blocked evaluation runs, the page shows the allocation.
      const roomy = clientNode({
        NodeResources: {
          ...(node.NodeResources as Record<string, unknown>),
          Cpu: { CpuShares: 16_000, TotalCpuCores: 8 },
        },
      });
      const intro = (await ui.api('PUT', 'acl/identity/client-introduction-token', {})).json() as { JWT: string };
      expect((await ui.api('POST', 'client/register', { Node: roomy }, intro.JWT)).status).toBe(200);
      nodes.push(roomy);
      expect((await ui.api('PUT', `client/node/${roomy.ID}/status`, { Status: 'ready' }, roomy.SecretID)).status).toBe(
        200,
      );
      await expect.poll(() => allocationLinks(page).count(), { timeout: 60_000 }).toBe(1);
      await page
        .getByRole('region', { name: 'Allocations', exact: true })
        .getByRole('link', { name: roomy.Name })
        .waitFor();
      await failures.waitFor({ state: 'detached' });
      const placed = await allocationsOf('big');
      expect(placed.map((alloc) => alloc.DesiredStatus)).toEqual(['run']);
      await context.close();
    },
    caseTimeoutMs,
  );
});
