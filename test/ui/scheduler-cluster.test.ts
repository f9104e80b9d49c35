import { randomUUID } from 'node:crypto';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { liveBy, type SchedulerConsole, screenshot, startSchedulerConsole } from '../support/console.ts';

/**
 * The console's node-pool, namespace and node pages in Chromium against the product as `npm start` runs it: pools and
 * namespaces are created, edited and deleted in the pages, each effect read back through the API; the service's own
 * refusal is shown; the built-in ones offer no delete; lists follow changes made elsewhere without a reload (the
 * `NodePool` and `Node` event streams for a management token, blocking reads for a token that may not stream them and
 * for namespaces, which have no events); a narrow token sees only what its rules let it read; a node registered over
 * the client protocol appears, and is drained and made ineligible from its page.
 */
/** Each case signs in and walks several pages, each request answered live: more than the default 30 s on a busy machine. */
const caseTimeoutMs = 90_000;

let ui: SchedulerConsole;
beforeAll(async () => {
  ui = await startSchedulerConsole();
}, 120_000);
afterAll(() => ui?.stop());

const cell = (page: Page, text: string) => page.getByRole('cell', { name: text, exact: true });

describe('the cluster pages: nodes, node pools, namespaces', () => {
  it(
    'creates, edits and deletes a node pool; built-ins cannot be deleted; the list follows the event stream',
    async () => {
      const { context, page } = await ui.signedIn();
      await page.getByRole('link', { name: 'Node pools' }).click();
      await cell(page, 'default').waitFor();
      await cell(page, 'all').waitFor();
      await liveBy(page, 'event stream');

      // Written elsewhere: the list shows it without a reload.
      expect(
        (await ui.api('PUT', 'node/pools', { Name: 'from-elsewhere', Description: 'made by the API' })).status,
      ).toBe(200);
      await cell(page, 'from-elsewhere').waitFor();
      await screenshot(page, 'node-pools');

      await page.getByRole('link', { name: 'Create node pool' }).click();
      await page.getByLabel('Name', { exact: true }).fill('bad name');
      await page.getByRole('button', { name: 'Create node pool' }).click();
      await expect(page.getByRole('alert').textContent()).resolves.toContain('invalid name "bad name"');
      expect((await ui.api('GET', 'node/pool/bad%20name')).status).toBe(404);

      await page.getByLabel('Name', { exact: true }).fill('gpu_racks');
      await page.getByLabel('Description').fill('the GPU racks');
      await page.getByLabel('Node identity TTL').fill('12h');
      await page.getByLabel('Meta').fill('rack = r1\nzone = b');
      await page.getByLabel('Scheduler algorithm').selectOption('spread');
      await page.getByRole('button', { name: 'Create node pool' }).click();
      await page.getByRole('heading', { name: 'Node pool gpu_racks', exact: true }).waitFor();
      expect((await ui.api('GET', 'node/pool/gpu_racks')).json()).toMatchObject({
        Name: 'gpu_racks',
        Description: 'the GPU racks',
        NodeIdentityTTL: 12 * 3600 * 1e9,
        Meta: { rack: 'r1', zone: 'b' },
        SchedulerConfiguration: { SchedulerAlgorithm: 'spread', MemoryOversubscriptionEnabled: null },
      });
      const detail = (text: string) =>
        page.getByRole('region', { name: 'Node pool' }).locator('dd', { hasText: text }).waitFor();
      await detail('12h0m0s');
      await page.getByRole('region', { name: 'Nodes in the pool' }).getByText('No nodes in this pool.').waitFor();

      await page.getByLabel('Description').fill('GPU racks, row 2');
      await page.getByRole('button', { name: 'Save node pool' }).click();
      await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
      expect((await ui.api('GET', 'node/pool/gpu_racks')).json()).toMatchObject({
        Description: 'GPU racks, row 2',
        NodeIdentityTTL: 12 * 3600 * 1e9,
      });
      // A change made elsewhere reaches the open page.
      await ui.api('PUT', 'node/pool/gpu_racks', { Name: 'gpu_racks', Description: 'changed elsewhere' });
      await detail('changed elsewhere');

      await page.getByRole('button', { name: 'Delete node pool gpu_racks' }).click();
      await page.getByRole('button', { name: 'Confirm delete' }).click();
      await page.getByRole('heading', { name: 'Node pools', exact: true }).waitFor();
      expect((await ui.api('GET', 'node/pool/gpu_racks')).status).toBe(404);

      await ui.open(page, 'node-pools/default');
      await page.getByText('A built-in pool: it cannot be changed or deleted.').waitFor();
      expect(await page.getByRole('button', { name: /^Delete/ }).count()).toBe(0);
      await context.close();
    },
    caseTimeoutMs,
  );

  it(
    'a token with node_pool "prod-*" read sees prod pools only, following them with blocking reads',
    async () => {
      expect(
        (await ui.api('POST', 'acl/policy/prod-pools', { Rules: 'node_pool "prod-*" { policy = "read" }' })).status,
      ).toBe(200);
      const token = (await ui.api('POST', 'acl/token', { Type: 'client', Policies: ['prod-pools'] })).json() as {
        SecretID: string;
      };
      await ui.api('PUT', 'node/pools', { Name: 'prod-one' });
      const { context, page } = await ui.signedIn(token.SecretID);
      await ui.open(page, 'node-pools');
      await cell(page, 'prod-one').waitFor();
      await liveBy(page, 'blocking queries');
      expect(await cell(page, 'default').count()).toBe(0);
      expect(await cell(page, 'from-elsewhere').count()).toBe(0);
      await ui.api('PUT', 'node/pools', { Name: 'prod-two' });
      await cell(page, 'prod-two').waitFor();

      await ui.open(page, 'node-pools/prod-one');
      await page.getByRole('heading', { name: 'Node pool prod-one', exact: true }).waitFor();
      await page.getByRole('button', { name: 'Delete node pool prod-one' }).click();
      await page.getByRole('button', { name: 'Confirm delete' }).click();
      await expect(page.getByRole('alert').first().textContent()).resolves.toContain('Permission denied');
      expect((await ui.api('GET', 'node/pool/prod-one')).status).toBe(200);
      await context.close();
    },
    caseTimeoutMs,
  );

  it(
    'creates, edits and deletes a namespace; the list follows changes with blocking reads',
    async () => {
      const { context, page } = await ui.signedIn();
      await page.getByRole('link', { name: 'Namespaces' }).click();
      await cell(page, 'default').waitFor();
      await liveBy(page, 'blocking queries');
      expect((await ui.api('PUT', 'namespace', { Name: 'made-elsewhere' })).status).toBe(200);
      await cell(page, 'made-elsewhere').waitFor();

      await page.getByRole('link', { name: 'Create namespace' }).click();
      await page.getByLabel('Name', { exact: true }).fill('web');
      await page.getByLabel('Description').fill('web services');
      await page.getByLabel('Enabled task drivers').fill('raw_exec, exec');
      await page.getByLabel('Allowed node pools').fill('prod-*');
      await page.getByRole('button', { name: 'Create namespace' }).click();
      await page.getByRole('heading', { name: 'Namespace web', exact: true }).waitFor();
      expect((await ui.api('GET', 'namespace/web')).json()).toMatchObject({
        Name: 'web',
        Description: 'web services',
        Capabilities: { EnabledTaskDrivers: ['raw_exec', 'exec'] },
        NodePoolConfiguration: { Default: 'default', Allowed: ['prod-*'], Denied: null },
      });

      await page.getByLabel('Denied node pools').fill('dev');
      await page.getByRole('button', { name: 'Save namespace' }).click();
      await expect(page.getByRole('alert').textContent()).resolves.toContain('only one of Allowed and Denied');
      await page.getByLabel('Allowed node pools').fill('');
      await page.getByRole('button', { name: 'Save namespace' }).click();
      await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
      expect((await ui.api('GET', 'namespace/web')).json()).toMatchObject({
        NodePoolConfiguration: { Allowed: null, Denied: ['dev'] },
      });

      await page.getByRole('button', { name: 'Delete namespace web' }).click();
      await page.getByRole('button', { name: 'Confirm delete' }).click();
      await page.getByRole('heading', { name: 'Namespaces', exact: true }).waitFor();
      expect((await ui.api('GET', 'namespace/web')).status).toBe(404);

      await ui.open(page, 'namespaces/default');
      await page.getByText('The default namespace cannot be deleted.').waitFor();
      await context.close();
    },
    caseTimeoutMs,
  );

  it(
    'lists registered nodes live, shows a node, and drains it and changes its eligibility',
    async () => {
      const intro = (await ui.api('PUT', 'acl/identity/client-introduction-token', { NodePool: 'edge' })).json() as {
        JWT: string;
      };
      const id = randomUUID();
      const node = {
        ID: id,
        SecretID: randomUUID(),
        Name: 'edge-1',
        Datacenter: 'dc1',
        NodePool: 'edge',
        HTTPAddr: '10.0.0.9:4646',
        Attributes: { 'kernel.name': 'linux', 'os.name': 'debian', 'cpu.arch': 'amd64' },
        NodeResources: {
          Cpu: { CpuShares: 4000, TotalCpuCores: 2 },
          Memory: { MemoryMB: 4096 },
          Disk: { DiskMB: 20000 },
        },
        Drivers: { raw_exec: { Detected: true, Healthy: true, HealthDescription: 'Healthy' } },
      };
      const { context, page } = await ui.signedIn();
      await page.getByRole('link', { name: 'Nodes', exact: true }).click();
      await page.getByText('No nodes: start a client agent').waitFor();
      await liveBy(page, 'event stream');
      const registered = await fetch(`${ui.product.schedulerUrl}/v1/client/register`, {
        method: 'POST',
        headers: { 'X-Nomad-Token': intro.JWT, 'Content-Type': 'application/json' },
        body: JSON.stringify({ Node: node }),
      });
      expect(registered.status).toBe(200);
      // The node appears without a reload, in the pool its registration created.
      await page.getByRole('link', { name: id.slice(0, 8) }).click();
      await page.getByRole('heading', { name: `Node ${id.slice(0, 8)}`, exact: true }).waitFor();
      const detail = (text: string) =>
        page.getByRole('region', { name: 'Node' }).locator('dd', { hasText: text }).waitFor();
      await detail('edge-1');
      await detail('4000 MHz, 2 cores');
      await page.getByRole('region', { name: 'Drivers' }).getByRole('cell', { name: 'raw_exec' }).waitFor();
      await page.getByRole('region', { name: 'Attributes' }).getByRole('cell', { name: 'debian' }).waitFor();
      await screenshot(page, 'node');

      await page.getByRole('button', { name: 'Mark ineligible' }).click();
      await page.getByRole('button', { name: 'Mark eligible' }).waitFor();
      expect((await ui.api('GET', `node/${id}`)).json()).toMatchObject({ SchedulingEligibility: 'ineligible' });

      await page.getByLabel('Drain deadline').fill('90m');
      await page.getByRole('button', { name: 'Drain', exact: true }).click();
      await page.getByRole('button', { name: 'Cancel drain' }).waitFor();
      expect((await ui.api('GET', `node/${id}`)).json()).toMatchObject({ DrainStrategy: { Deadline: 90 * 60 * 1e9 } });
      // Eligible while draining: the service refuses, and the page shows its words.
      await page.getByRole('button', { name: 'Mark eligible' }).click();
      await page.getByRole('alert').waitFor();
      await page.getByRole('button', { name: 'Cancel drain' }).click();
      await page.getByRole('button', { name: 'Drain', exact: true }).waitFor();
      expect((await ui.api('GET', `node/${id}`)).json()).toMatchObject({
        DrainStrategy: null,
        SchedulingEligibility: 'eligible',
      });

      // A change made elsewhere reaches the open page through the Node topic.
      await ui.api('PUT', `node/${id}/eligibility`, { Eligibility: 'ineligible' });
      await page.getByRole('button', { name: 'Mark eligible' }).waitFor();

      await ui.open(page, 'node-pools/edge');
      await page
        .getByRole('region', { name: 'Nodes in the pool' })
        .getByRole('link', { name: id.slice(0, 8) })
        .waitFor();
      await context.close();
    },
    caseTimeoutMs,
  );
});
