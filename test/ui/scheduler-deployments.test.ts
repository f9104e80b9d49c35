import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rollingJob } from '../support/cluster-allocations.ts';
import { clientNode } from '../support/cluster-nodes.ts';
import { liveBy, type SchedulerConsole, screenshot, startSchedulerConsole } from '../support/console.ts';

/**
 * The console's deployments pages in Chromium against the product as `npm start` runs it, with a node registered over
 * the client protocol (the test plays its agent) and the evaluation worker that the sweep runs: a service job's
 * deployment appears in the list without a reload, which filters by namespace and status; its page (linked from the
 * job's) shows its task groups' counts and its allocations, follows a change made elsewhere, and pauses, resumes and
 * fails it, each effect read back through the API; a canary is promoted from it once healthy (the service's refusal
 * shown before); a read-only token sees the service's refusal and changes nothing; an address with hostile segments
 * reaches only the encoded API path.
 */
const caseTimeoutMs = 120_000;
const node = clientNode();
let ui: SchedulerConsole;

beforeAll(async () => {
  ui = await startSchedulerConsole({ nodes: [node], namespaces: ['dev'] });
}, 120_000);
afterAll(() => ui?.stop());

interface DeploymentJson {
  ID: string;
  Status: string;
  StatusDescription: string;
  TaskGroups: Record<
    string,
    {
      PlacedAllocs: number;
      DesiredTotal: number;
      RequireProgressBy: string;
      PlacedCanaries: string[] | null;
      HealthyAllocs: number;
      Promoted: boolean;
    }
  >;
}

/** Registers `id` and answers its deployment, once the evaluation worker has made it. */
async function deployed(id: string, count: number, namespace = 'default'): Promise<DeploymentJson> {
  // A service job with an update block: each registration of a new version makes a deployment.
  const job = { ...rollingJob(id, count, 'python3'), Namespace: namespace };
  expect((await ui.api('PUT', 'jobs', { Job: job })).status).toBe(200);
  let latest: DeploymentJson | null = null;
  await expect
    .poll(
      async () => {
        latest = (await ui.api('GET', `job/${id}/deployment?namespace=${namespace}`)).json();
        return latest?.TaskGroups?.web?.PlacedAllocs ?? 0;
      },
      { timeout: 60_000, interval: 200 },
    )
    .toBe(count);
  return latest as unknown as DeploymentJson;
}

const deploymentOf = async (id: string) => (await ui.api('GET', `deployment/${id}`)).json() as DeploymentJson;
const rowOf = (page: Page, text: string) =>
  page.getByRole('row').filter({ has: page.getByRole('link', { name: text, exact: true }) });

describe('the deployments pages', () => {
  it(
    'lists deployments live, by namespace and by status',
    async () => {
      const { context, page } = await ui.signedIn();
      await page.getByRole('link', { name: 'Deployments', exact: true }).click();
      await page.getByText('No deployments here: a service job with an update block makes one.').waitFor();
      await liveBy(page, 'event stream');

      // Deployments made elsewhere appear without a reload, each with its job linked in its namespace.
      const web = await deployed('web', 2);
      await rowOf(page, 'web').getByText('running', { exact: true }).waitFor();
      const docs = await deployed('docs', 1, 'dev');
      await rowOf(page, 'docs').waitFor();
      expect(
        await rowOf(page, 'web')
          .getByRole('link', { name: web.ID.slice(0, 8) })
          .getAttribute('href'),
      ).toBe(`/ui/scheduler/deployments/${web.ID}`);
      expect(await rowOf(page, 'docs').getByRole('link', { name: 'docs' }).getAttribute('href')).toBe(
        '/ui/scheduler/jobs/dev/docs',
      );

      // One namespace: the address says so, and only its deployment is listed.
      await page.getByRole('combobox', { name: 'Namespace' }).selectOption('dev');
      await page.waitForURL(/\/ui\/scheduler\/deployments\?namespace=dev$/);
      await liveBy(page, 'event stream');
      await rowOf(page, 'web').waitFor({ state: 'detached' });
      await rowOf(page, 'docs').waitFor();

      // By status: failed elsewhere, it moves from the running list to the failed one.
      await page.getByRole('combobox', { name: 'Status' }).selectOption('running');
      await rowOf(page, 'docs').waitFor();
      expect((await ui.api('PUT', `deployment/fail/${docs.ID}`, {})).status).toBe(200);
      await page.getByText('No running deployments here.').waitFor();
      await page.getByRole('combobox', { name: 'Status' }).selectOption('failed');
      await page.waitForURL(/\?namespace=dev&status=failed$/);
      await rowOf(page, 'docs').getByText('Deployment marked as failed').waitFor();

      // All namespaces, any status: both.
      await page.goto(`${ui.product.consoleUrl}scheduler/deployments`);
      await rowOf(page, 'web').waitFor();
      await rowOf(page, 'docs').waitFor();
      await screenshot(page, 'deployments');
      await context.close();
    },
    caseTimeoutMs,
  );

  it(
    'shows a deployment’s groups and allocations live from the job’s link, and pauses, resumes and fails it',
    async () => {
      const shown = await deployed('api', 2);
      const { context, page } = await ui.signedIn();
      await ui.open(page, 'jobs/default/api');
      await page.getByRole('heading', { name: 'Job api', exact: true }).waitFor();
      await page.getByRole('link', { name: shown.ID.slice(0, 8), exact: true }).click();
      await page.getByRole('heading', { name: `Deployment ${shown.ID.slice(0, 8)}`, exact: true }).waitFor();
      expect(page.url()).toBe(`${ui.product.consoleUrl}scheduler/deployments/${shown.ID}`);
      await liveBy(page, 'event stream');

      // The group's counts: 2 desired, 2 placed, none healthy or unhealthy yet, no canaries; its progress deadline
      // as the API holds it (Go's zero time, shown as none, until the service sets one).
      const stored = await deploymentOf(shown.ID);
      const deadline = stored.TaskGroups.web?.RequireProgressBy ?? '';
      const groups = page.getByRole('region', { name: 'Task groups', exact: true });
      expect(await groups.getByRole('row').nth(1).getByRole('cell').allTextContents()).toEqual([
        'web',
        '2',
        '2',
        '0',
        '0',
        '0 / 0',
        '—',
        deadline.startsWith('0001-01-01') ? '—' : `${deadline.slice(0, 10)} ${deadline.slice(11, 19)} UTC`,
      ]);

      // Its allocations, and a report of the node's that one runs, without a reload.
      const allocations = page.getByRole('region', { name: 'Allocations', exact: true });
      const listed = (await ui.api('GET', `deployment/allocations/${shown.ID}`)).json() as Array<{ ID: string }>;
      expect(listed).toHaveLength(2);
      for (const alloc of listed) await allocations.getByRole('link', { name: alloc.ID.slice(0, 8) }).waitFor();
      const [first] = listed;
      if (!first) throw new Error('no allocation');
      const report = await ui.api(
        'PUT',
        `client/node/${node.ID}/allocations`,
        { Allocs: [{ ID: first.ID, ClientStatus: 'running', TaskStates: { server: { State: 'running' } } }] },
        node.SecretID,
      );
      expect(report.status).toBe(200);
      await allocations
        .getByRole('row')
        .filter({ has: page.getByRole('link', { name: first.ID.slice(0, 8) }) })
        .getByText('running', { exact: true })
        .waitFor();

      // Paused elsewhere: the page follows; Resume, Pause and Fail from the page, each read back.
      const details = page.getByRole('region', { name: 'Deployment', exact: true });
      expect((await ui.api('PUT', `deployment/pause/${shown.ID}`, { Pause: true })).status).toBe(200);
      await details.getByText('paused', { exact: true }).waitFor();
      await page.getByRole('button', { name: 'Resume deployment' }).click();
      await details.getByText('running', { exact: true }).waitFor();
      expect((await deploymentOf(shown.ID)).Status).toBe('running');
      await page.getByRole('button', { name: 'Pause deployment' }).click();
      await details.getByText('paused', { exact: true }).waitFor();
      expect((await deploymentOf(shown.ID)).Status).toBe('paused');
      await page.getByRole('button', { name: 'Fail deployment' }).click();
      await details.getByText('Deployment marked as failed').waitFor();
      expect(await deploymentOf(shown.ID)).toMatchObject({
        Status: 'failed',
        StatusDescription: 'Deployment marked as failed',
      });
      // A failed deployment is over: nothing more to do with it.
      await page.getByRole('region', { name: 'Deployment actions' }).waitFor({ state: 'detached' });
      await screenshot(page, 'deployment');
      await context.close();
    },
    caseTimeoutMs,
  );

  it(
    'promotes a canary from the page once it is healthy, after showing the service’s refusal before',
    async () => {
      await deployed('canary', 1);
      // A new version with one canary: its deployment waits for a promotion.
      const base = rollingJob('canary', 1, 'python3 -V');
      const groups = base.TaskGroups as Array<Record<string, unknown>>;
      const v1 = { ...base, TaskGroups: groups.map((group) => ({ ...group, Update: { MaxParallel: 1, Canary: 1 } })) };
      expect((await ui.api('PUT', 'jobs', { Job: v1 })).status).toBe(200);
      let latest: DeploymentJson | null = null;
      await expect
        .poll(
          async () => {
            latest = (await ui.api('GET', 'job/canary/deployment')).json();
            return latest?.TaskGroups?.web?.PlacedCanaries?.length ?? 0;
          },
          { timeout: 60_000, interval: 200 },
        )
        .toBe(1);
      const canary = latest as unknown as DeploymentJson;
      const [canaryAlloc] = canary.TaskGroups.web?.PlacedCanaries ?? [];

      const { context, page } = await ui.signedIn();
      await ui.open(page, `deployments/${canary.ID}`);
      await liveBy(page, 'event stream');
      const groupCells = page.getByRole('region', { name: 'Task groups', exact: true }).getByRole('row').nth(1);
      await groupCells.getByRole('cell', { name: '1 / 1', exact: true }).waitFor();
      await groupCells.getByRole('cell', { name: 'no', exact: true }).waitFor();

      // Not healthy yet: the service's 400 is shown, and nothing is promoted.
      await page.getByRole('button', { name: 'Promote canaries' }).click();
      await expect(page.getByRole('alert').textContent()).resolves.toContain(
        'Task group "web" has 0/1 healthy allocations',
      );
      expect((await deploymentOf(canary.ID)).TaskGroups.web?.Promoted).toBe(false);

      // The node reports the canary healthy; the page follows, and the promotion is taken.
      const report = await ui.api(
        'PUT',
        `client/node/${node.ID}/allocations`,
        {
          Allocs: [
            {
              ID: canaryAlloc,
              ClientStatus: 'running',
              TaskStates: { server: { State: 'running' } },
              DeploymentStatus: { Healthy: true },
            },
          ],
        },
        node.SecretID,
      );
      expect(report.status).toBe(200);
      await groupCells.getByRole('cell', { name: '1', exact: true }).first().waitFor();
      await expect.poll(async () => (await deploymentOf(canary.ID)).TaskGroups.web?.HealthyAllocs).toBe(1);
      await page.getByRole('button', { name: 'Promote canaries' }).click();
      await groupCells.getByRole('cell', { name: 'yes', exact: true }).waitFor();
      expect((await deploymentOf(canary.ID)).TaskGroups.web?.Promoted).toBe(true);
      await page.getByRole('button', { name: 'Promote canaries' }).waitFor({ state: 'detached' });
      await context.close();
    },
    caseTimeoutMs,
  );

  it(
    'shows a read-only token the service’s refusal, and nothing changes',
    async () => {
      const mine = await deployed('readable', 1);
      expect(
        (await ui.api('POST', 'acl/policy/default-read', { Rules: 'namespace "default" { policy = "read" }' })).status,
      ).toBe(200);
      const token = (await ui.api('POST', 'acl/token', { Type: 'client', Policies: ['default-read'] })).json() as {
        SecretID: string;
      };
      const { context, page } = await ui.signedIn(token.SecretID);
      await ui.open(page, `deployments/${mine.ID}`);
      await page.getByRole('heading', { name: `Deployment ${mine.ID.slice(0, 8)}`, exact: true }).waitFor();
      await liveBy(page, 'event stream');
      await page.getByRole('button', { name: 'Fail deployment' }).click();
      await expect(page.getByRole('alert').textContent()).resolves.toContain('Permission denied');
      await page.getByRole('button', { name: 'Pause deployment' }).click();
      await expect(page.getByRole('alert').textContent()).resolves.toContain('HTTP 403');
      expect(await deploymentOf(mine.ID)).toMatchObject({ Status: 'running' });
      await context.close();
    },
    caseTimeoutMs,
  );

  it(
    'reaches only the encoded API path from an address with hostile segments',
    async () => {
      const { context, page, requests } = await ui.signedIn();
      const hostile = ['..%2F..%2Facl%2Fbootstrap', 'a%2Fb%3Fnamespace%3D*', '%20%23x'];
      for (const segment of hostile) {
        const before = requests.length;
        await ui.open(page, `deployments/${segment}`);
        await page.getByRole('alert').waitFor();
        const reads = requests.slice(before).filter((url) => url.startsWith(`${ui.product.schedulerUrl}/v1/`));
        expect(reads).toEqual([`${ui.product.schedulerUrl}/v1/deployment/${segment}`]);
      }
      expect(requests.filter((url) => url.includes('/v1/acl/bootstrap'))).toEqual([]);
      await context.close();
    },
    caseTimeoutMs,
  );
});
