import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ConsoleProduct,
  launchBrowser,
  newConsolePage,
  screenshot,
  secretsCall,
  signInWithToken,
  startConsoleProduct,
} from '../support/console.ts';

let product: ConsoleProduct;
let browser: Browser;

const api = (method: string, apiPath: string, body?: unknown, token?: string) =>
  secretsCall(product, method, apiPath, body, token);

beforeAll(async () => {
  [product, browser] = await Promise.all([startConsoleProduct(), launchBrowser()]);
});
afterAll(async () => {
  await browser?.close();
  await product?.stop();
});

/** Waits until the page says `text` in a status line (what a screen reader announces). */
const said = (page: Page, text: string) => page.getByRole('status').filter({ hasText: text }).first().waitFor();
/** Waits until a table row about `name` says `state`. */
const rowSays = (page: Page, name: RegExp, state: string) =>
  page.getByRole('row', { name }).filter({ hasText: state }).waitFor();

describe('the kv browser, version 2 (secret/)', () => {
  it('creates a secret, reads it hidden then revealed, writes a new version, refuses a stale check-and-set', async () => {
    const { context, page } = await newConsolePage(browser);
    await signInWithToken(page, product, 'secrets', product.rootToken);
    await page.getByRole('link', { name: 'Secrets', exact: true }).click();
    // Each mount links to its browser: kv here, the engines on their own pages.
    const hrefs = Object.fromEntries(
      await Promise.all(
        ['secret/', 'kv/', 'ldap/', 'cloud/', 'mesh/'].map(async (name) => [
          name,
          await page.getByRole('link', { name, exact: true }).getAttribute('href'),
        ]),
      ),
    );
    expect(hrefs).toEqual({
      'secret/': '/ui/vault/secrets/secret/',
      'kv/': '/ui/vault/secrets/kv/',
      'ldap/': '/ui/vault/ldap/ldap/',
      'cloud/': '/ui/vault/cloud/cloud/',
      'mesh/': '/ui/vault/mesh/mesh/',
    });
    await page.getByRole('link', { name: 'secret/', exact: true }).click();
    await page.getByRole('heading', { name: 'secret/' }).waitFor();
    await page.getByRole('link', { name: 'Create secret' }).click();
    await page.getByLabel('Path of the secret').fill('app/db');
    await page.getByLabel('Key 1').fill('username');
    await page.getByLabel('Value 1').fill('app-user');
    await page.getByRole('button', { name: 'Add row' }).click();
    await page.getByLabel('Key 2').fill('password');
    await page.getByLabel('Value 2').fill('s3cr3t-one');
    await page.getByRole('button', { name: 'Save', exact: true }).click();

    await page.getByRole('heading', { name: /Version 1/ }).waitFor();
    expect((await api('GET', 'secret/data/app/db')).body.data.data).toEqual({
      username: 'app-user',
      password: 's3cr3t-one',
    });
    // Hidden until revealed.
    const main = page.locator('main');
    await expect(main.textContent()).resolves.not.toContain('s3cr3t-one');
    await page.getByRole('button', { name: 'Reveal password' }).click();
    await expect(main.textContent()).resolves.toContain('s3cr3t-one');
    await expect(main.textContent()).resolves.not.toContain('app-user');
    await screenshot(page, 'kv-secret');

    // A new version, edited as JSON.
    await page.getByRole('button', { name: 'Create new version' }).click();
    await page.getByRole('button', { name: 'JSON' }).click();
    await page.getByLabel('Secret data (JSON)').fill(JSON.stringify({ username: 'app-user', password: 's3cr3t-two' }));
    await page.getByRole('button', { name: 'Save new version' }).click();
    await said(page, 'Version 2 saved.');
    const read = (await api('GET', 'secret/data/app/db')).body.data;
    expect(read.metadata.version).toBe(2);
    expect(read.data.password).toBe('s3cr3t-two');

    // Check-and-set against version 1 while 2 is current: the API's message, and nothing written.
    await page.getByRole('button', { name: 'Create new version' }).click();
    await page.getByLabel('Value 2').fill('s3cr3t-stale');
    await page.getByLabel('Check-and-set').check();
    await page.getByLabel('Only if the current version is').fill('1');
    await page.getByRole('button', { name: 'Save new version' }).click();
    await page
      .getByRole('alert')
      .filter({ hasText: 'check-and-set parameter did not match the current version' })
      .waitFor();
    expect((await api('GET', 'secret/data/app/db')).body.data.metadata.version).toBe(2);
    // The right version goes through.
    await page.getByLabel('Only if the current version is').fill('2');
    await page.getByRole('button', { name: 'Save new version' }).click();
    await said(page, 'Version 3 saved.');
    expect((await api('GET', 'secret/data/app/db')).body.data.data.password).toBe('s3cr3t-stale');
    await context.close();
  });

  it('deletes the latest version, undeletes it, destroys a chosen one, and edits the metadata', async () => {
    await api('POST', 'secret/data/team/api', { data: { key: 'v1' } });
    await api('POST', 'secret/data/team/api', { data: { key: 'v2' } });
    const { context, page } = await newConsolePage(browser);
    await signInWithToken(page, product, 'secrets', product.rootToken);
    await page.goto(`${product.consoleUrl}vault/secrets/secret/team/`);
    await page.getByRole('link', { name: 'api', exact: true }).click();
    await page.getByRole('heading', { name: /Version 2/ }).waitFor();

    await page.getByRole('button', { name: 'Delete latest version' }).click();
    await said(page, 'Version 2 deleted.');
    await page.getByRole('heading', { name: /Version 2 deleted/ }).waitFor();
    const deleted = await api('GET', 'secret/data/team/api');
    expect(deleted.status).toBe(404);
    expect(deleted.body.data.metadata.deletion_time).not.toBe('');

    await page.getByRole('button', { name: 'Undelete version 2' }).click();
    await said(page, 'Version 2 undeleted.');
    expect((await api('GET', 'secret/data/team/api')).body.data.data).toEqual({ key: 'v2' });

    await page.getByRole('tab', { name: 'Versions' }).click();
    await page.getByLabel('Choose version 1').check();
    await page.getByRole('button', { name: 'Destroy chosen' }).click();
    await page.getByRole('button', { name: 'Confirm' }).click();
    await said(page, 'Version 1 destroyed.');
    await rowSays(page, /Version 1/, 'destroyed');
    expect((await api('GET', 'secret/metadata/team/api')).body.data.versions['1'].destroyed).toBe(true);
    await page.getByLabel('Choose version 2').check();
    await page.getByRole('button', { name: 'Delete chosen', exact: true }).click();
    await rowSays(page, /Version 2/, 'deleted');
    expect((await api('GET', 'secret/data/team/api')).status).toBe(404);
    await page.getByLabel('Choose version 2').check();
    await page.getByRole('button', { name: 'Undelete chosen' }).click();
    await rowSays(page, /Version 2/, 'current');
    await screenshot(page, 'kv-versions');

    await page.getByRole('tab', { name: 'Metadata' }).click();
    await page.getByLabel('Max versions').fill('5');
    await page.getByLabel('Require check-and-set').check();
    await page.getByLabel('Custom metadata').fill('owner=team-a');
    await page.getByRole('button', { name: 'Save metadata' }).click();
    await said(page, 'Metadata saved.');
    const metadata = (await api('GET', 'secret/metadata/team/api')).body.data;
    expect(metadata).toMatchObject({ max_versions: 5, cas_required: true, custom_metadata: { owner: 'team-a' } });

    // With cas_required the editor always sends check-and-set (at the current version): the write goes through.
    await page.getByRole('tab', { name: 'Secret' }).click();
    await page.getByRole('button', { name: 'Create new version' }).click();
    await expect(page.getByLabel(/Check-and-set/).isChecked()).resolves.toBe(true);
    await page.getByLabel('Value 1').fill('v3');
    await page.getByRole('button', { name: 'Save new version' }).click();
    await said(page, 'Version 3 saved.');
    expect((await api('GET', 'secret/data/team/api')).body.data.data).toEqual({ key: 'v3' });
    await context.close();
  });
});

describe('the kv browser, version 1 (kv/)', () => {
  it('creates a secret with a ttl and reads it: hidden values, and the lease it is read under', async () => {
    const { context, page } = await newConsolePage(browser, 'phone');
    await signInWithToken(page, product, 'secrets', product.rootToken);
    await page.goto(`${product.consoleUrl}vault/secrets/kv/`);
    await page.getByText('kv version 1').waitFor();
    await page.getByRole('link', { name: 'Create secret' }).click();
    await page.getByLabel('Path of the secret').fill('svc/token');
    await page.getByLabel('Key 1').fill('token');
    await page.getByLabel('Value 1').fill('v1-value');
    await page.getByRole('button', { name: 'Add row' }).click();
    await page.getByLabel('Key 2').fill('ttl');
    await page.getByLabel('Value 2').fill('1h');
    // Enter in the path field submits the form (keyboard use).
    await page.getByLabel('Path of the secret').press('Enter');
    await page.getByRole('heading', { name: 'Lease' }).waitFor();
    expect((await api('GET', 'kv/svc/token')).body.data).toEqual({ token: 'v1-value', ttl: '1h' });
    await expect(page.locator('main').textContent()).resolves.not.toContain('v1-value');
    await page.getByRole('button', { name: 'Reveal token' }).click();
    await expect(page.locator('main').textContent()).resolves.toContain('v1-value');
    const lease = await page.getByRole('link', { name: /^kv\/svc\/token\// }).textContent();
    expect((await api('PUT', 'sys/leases/lookup', { lease_id: lease })).body.data.ttl).toBeGreaterThan(3500);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await context.close();
  });
});
