import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
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
const auditDir = mkdtempSync(path.join(tmpdir(), 'keyhaven-ui-audit-'));

const api = (method: string, apiPath: string, body?: unknown, token?: string) =>
  secretsCall(product, method, apiPath, body, token);

beforeAll(async () => {
  [product, browser] = await Promise.all([startConsoleProduct(), launchBrowser()]);
});
afterAll(async () => {
  await browser?.close();
  await product?.stop();
  rmSync(auditDir, { recursive: true, force: true });
});

const said = (page: Page, text: string) => page.getByRole('status').filter({ hasText: text }).first().waitFor();

/** A kv v1 secret with a ttl, read once: the read makes a lease under `kv/<path>/`. */
async function leasedRead(secretPath: string): Promise<string> {
  await api('POST', `kv/${secretPath}`, { value: 'x', ttl: '1h' });
  const read = await api('GET', `kv/${secretPath}`);
  expect(read.body.lease_id).toMatch(new RegExp(`^kv/${secretPath}/`));
  return read.body.lease_id;
}

describe('leases', () => {
  it('lists by prefix, looks one up, renews it with an increment, revokes it, and revokes a prefix after asking', async () => {
    const lease = await leasedRead('app/db');
    const bulk = [await leasedRead('bulk/one'), await leasedRead('bulk/two')];
    const { context, page } = await newConsolePage(browser);
    await signInWithToken(page, product, 'secrets', product.rootToken);
    await page.getByRole('link', { name: 'Leases', exact: true }).click();
    await page.getByRole('textbox', { name: 'Prefix' }).fill('kv/app/');
    await page.getByRole('button', { name: 'List' }).click();
    await page.getByRole('link', { name: 'db/', exact: true }).click();
    await page.getByRole('link', { name: lease.split('/').pop() as string }).click();
    const panel = page.getByRole('region', { name: 'Lease' });
    await panel.getByText(lease).waitFor();
    await screenshot(page, 'leases');

    await panel.getByLabel('Increment').fill('3h');
    await panel.getByRole('button', { name: 'Renew' }).click();
    await said(page, 'Renewed');
    expect((await api('PUT', 'sys/leases/lookup', { lease_id: lease })).body.data.ttl).toBeGreaterThan(3 * 3600 - 60);

    await panel.getByRole('button', { name: 'Revoke lease' }).click();
    await panel.getByRole('button', { name: 'Confirm' }).click();
    await said(page, `Lease ${lease} revoked.`);
    expect((await api('PUT', 'sys/leases/lookup', { lease_id: lease })).status).toBe(404);

    await page.getByRole('textbox', { name: 'Prefix' }).fill('kv/bulk');
    await page.getByRole('button', { name: 'List' }).click();
    await page.getByRole('link', { name: 'one/', exact: true }).waitFor();
    await page.getByRole('button', { name: 'Revoke every lease under this prefix' }).click();
    await page.getByRole('button', { name: 'Confirm' }).click();
    await said(page, 'Every lease under kv/bulk/ revoked.');
    await page.getByText('No leases under this prefix.').waitFor();
    for (const id of bulk) expect((await api('PUT', 'sys/leases/lookup', { lease_id: id })).status).toBe(404);
    await context.close();
  });
});

describe('tokens', () => {
  it("creates a child within the signed-in token's policies, shows it once hidden, copies it, and revokes it by accessor", async () => {
    await api('PUT', 'sys/policies/acl/reader', { policy: 'path "secret/data/*" { capabilities = ["read"] }' });
    const { context, page } = await newConsolePage(browser);
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: product.secretsUrl });
    await signInWithToken(page, product, 'secrets', product.rootToken);
    await page.getByRole('link', { name: 'Tokens', exact: true }).click();
    await page.getByRole('region', { name: 'This token' }).getByText('root').first().waitFor();

    const form = page.getByRole('form', { name: 'Create a child token' });
    await form.getByLabel('reader').check();
    await form.getByLabel('TTL').fill('30m');
    await form.getByLabel('Display name').fill('ci');
    await form.getByRole('button', { name: 'Create token' }).click();
    const created = page.getByRole('status', { name: 'New token' });
    await created.waitFor();
    await expect(created.locator('.secret-value code').textContent()).resolves.toBe('••••••••');
    await screenshot(page, 'tokens');
    await created.getByRole('button', { name: 'Reveal new token' }).click();
    await created.getByRole('button', { name: 'Hide new token' }).waitFor();
    const child = (await created.locator('.secret-value code').textContent()) as string;
    const answer = await api('GET', 'auth/token/lookup-self', undefined, child);
    expect(answer.status, JSON.stringify({ child, answer })).toBe(200);
    const looked = answer.body.data;
    expect(looked.policies).toEqual(['default', 'reader']);
    expect(looked.display_name).toBe('token-ci');
    expect(looked.ttl).toBeGreaterThan(1700);
    await created.getByRole('button', { name: 'Copy token' }).click();
    await said(page, 'Copied.');
    await expect(page.evaluate(() => navigator.clipboard.readText())).resolves.toBe(child);

    const lookup = page.getByRole('form', { name: 'Look up by accessor' });
    await lookup.getByLabel('Accessor').fill(looked.accessor);
    await lookup.getByRole('button', { name: 'Look up' }).click();
    await lookup.getByText('token-ci').waitFor();
    await lookup.getByRole('button', { name: 'Revoke this token' }).click();
    await said(page, `The token with accessor ${looked.accessor} is revoked.`);
    expect((await api('GET', 'auth/token/lookup-self', undefined, child)).status).toBe(403);

    const other = (await api('POST', 'auth/token/create', { policies: ['reader'] })).body.auth.client_token;
    const revoke = page.getByRole('form', { name: 'Revoke a token' });
    await revoke.getByLabel('Token to revoke').fill(other);
    await revoke.getByRole('button', { name: 'Revoke token' }).click();
    await said(page, 'The token and its children are revoked.');
    expect((await api('GET', 'auth/token/lookup-self', undefined, other)).status).toBe(403);
    await context.close();
  });

  it('renews the signed-in token, and a token with a limited policy sees its capabilities per path', async () => {
    await api('PUT', 'sys/policies/acl/app-reader', {
      policy: 'path "secret/data/app/*" { capabilities = ["read", "list"] }',
    });
    const token = (
      await api('POST', 'auth/token/create', { policies: ['app-reader'], ttl: '10m', explicit_max_ttl: '2h' })
    ).body.auth.client_token;
    const { context, page } = await newConsolePage(browser, 'phone');
    await signInWithToken(page, product, 'secrets', token);
    await page.getByRole('link', { name: 'Tokens', exact: true }).click();
    await page.getByRole('button', { name: 'Renew this token' }).click();
    await said(page, 'Renewed.');
    expect((await api('GET', 'auth/token/lookup-self', undefined, token)).body.data.last_renewal_time).toBeGreaterThan(
      0,
    );

    await page.getByRole('link', { name: 'Capabilities', exact: true }).click();
    const paths = ['secret/data/app/db', 'secret/data/other', 'sys/mounts'];
    await page.getByLabel('Paths').fill(paths.join('\n'));
    await page.getByRole('button', { name: 'Check' }).click();
    const expected = (await api('POST', 'sys/capabilities-self', { paths }, token)).body.data;
    expect(expected['secret/data/app/db']).toEqual(['list', 'read']);
    for (const checked of paths) {
      await expect(
        page
          .getByRole('row', { name: new RegExp(`^${checked}`) })
          .locator('.badge')
          .allTextContents(),
      ).resolves.toEqual(expected[checked]);
    }
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await context.close();
  });
});

describe('audit devices', () => {
  it("refuses an executable mode with the API's message, enables a file device in a temp dir, lists it, and disables it", async () => {
    const { context, page } = await newConsolePage(browser);
    await signInWithToken(page, product, 'secrets', product.rootToken);
    await page.getByRole('link', { name: 'Audit devices', exact: true }).click();
    await page.getByText('No audit devices are enabled.').waitFor();
    const file = path.join(auditDir, 'audit.log');
    const form = page.getByRole('form', { name: 'Enable a file audit device' });
    await form.getByLabel('Device path').fill('ui-file');
    await form.getByLabel('File path').fill(file);
    await form.getByLabel('Other options').fill('mode=0755');
    await form.getByRole('button', { name: 'Enable device' }).click();
    await page.getByRole('alert').filter({ hasText: '"mode" must not be executable' }).waitFor();
    expect((await api('GET', 'sys/audit')).body.data).toEqual({});

    await form.getByLabel('Other options').fill('mode=0600');
    await form.getByRole('button', { name: 'Enable device' }).click();
    await said(page, 'Audit device ui-file/ enabled.');
    await page
      .getByRole('row', { name: /ui-file\// })
      .getByText(`file_path=${file}`)
      .waitFor();
    expect((await api('GET', 'sys/audit')).body.data['ui-file/']).toMatchObject({
      type: 'file',
      options: { file_path: file, mode: '0600' },
    });
    await api('GET', 'auth/token/lookup-self');
    expect(existsSync(file) && readFileSync(file, 'utf8')).toContain('auth/token/lookup-self');

    await page.getByRole('button', { name: 'Disable ui-file/' }).click();
    await page.getByRole('button', { name: 'Confirm' }).click();
    await said(page, 'Audit device ui-file/ disabled.');
    await page.getByText('No audit devices are enabled.').waitFor();
    expect((await api('GET', 'sys/audit')).body.data).toEqual({});
    await context.close();
  });
});
