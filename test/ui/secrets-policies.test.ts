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

const said = (page: Page, text: string) => page.getByRole('status').filter({ hasText: text }).first().waitFor();

// Line 3 lacks its closing bracket: HCL stops at line 4, where `}` cannot end the list.
const broken = ['# app readers', 'path "secret/data/app/*" {', '  capabilities = ["read", "list"', '}', ''].join('\n');
const fixed = ['# app readers', 'path "secret/data/app/*" {', '  capabilities = ["read", "list"]', '}', ''].join('\n');

describe('the policies pages', () => {
  it("shows the server's own parse error at its line and column, and selects that line in the editor", async () => {
    const refused = await api('PUT', 'sys/policies/acl/probe', { policy: broken });
    expect(refused.status).toBe(400);
    const message: string = refused.body.errors[0];
    const [, line, column] = /At (\d+):(\d+)/.exec(message) ?? [];
    expect(Number(line)).toBeGreaterThan(1);

    const { context, page } = await newConsolePage(browser);
    await signInWithToken(page, product, 'secrets', product.rootToken);
    await page.getByRole('link', { name: 'Policies', exact: true }).click();
    await page.getByLabel('New policy name').fill('app-readers');
    await page.getByRole('button', { name: 'Create policy' }).click();
    const editor = page.getByLabel('Policy (HCL or JSON)');
    await editor.fill(broken);
    await page.getByRole('button', { name: 'Create policy' }).click();

    await page.getByRole('alert').filter({ hasText: message }).waitFor();
    await said(page, `line ${line}, column ${column}`);
    const selection = await editor.evaluate((area: HTMLTextAreaElement) => ({
      focused: document.activeElement === area,
      selected: area.value.slice(area.selectionStart, area.selectionEnd),
    }));
    expect(selection).toEqual({ focused: true, selected: broken.split('\n')[Number(line) - 1] });
    await expect(page.locator('.gutter .marked').textContent()).resolves.toBe(line);
    expect((await api('GET', 'sys/policies/acl/app-readers')).status).toBe(404);
    await screenshot(page, 'policy-editor-error');

    // Fixed, it is created; then edited; then deleted.
    await editor.fill(fixed);
    await page.getByRole('button', { name: 'Create policy' }).click();
    await said(page, 'Policy app-readers created.');
    expect((await api('GET', 'sys/policies/acl/app-readers')).body.data.policy).toBe(fixed);
    await expect(page.locator('.gutter .marked').count()).resolves.toBe(0);

    const edited = fixed.replace('"read", "list"', '"read"');
    await editor.fill(edited);
    await page.getByRole('button', { name: 'Save policy' }).click();
    await said(page, 'Policy app-readers saved.');
    expect((await api('GET', 'sys/policies/acl/app-readers')).body.data.policy).toBe(edited);

    await page.getByRole('link', { name: 'All policies' }).click();
    await page.getByRole('link', { name: 'app-readers' }).click();
    await expect(editor.inputValue()).resolves.toBe(edited);
    await page.getByRole('button', { name: 'Delete policy' }).click();
    await page.getByRole('button', { name: 'Confirm' }).click();
    await page.getByRole('heading', { name: 'ACL policies' }).waitFor();
    expect((await api('GET', 'sys/policies/acl/app-readers')).status).toBe(404);
    await expect(page.getByRole('link', { name: 'app-readers' }).count()).resolves.toBe(0);
    await context.close();
  });

  it('shows a policy the server refuses for what it says (an unknown key) with the line it names', async () => {
    const text = [
      'path "secret/*" {',
      '  capabilities = ["read"]',
      '}',
      'paths "kv/*" {',
      '  capabilities = ["read"]',
      '}',
    ].join('\n');
    const refused = await api('PUT', 'sys/policies/acl/probe', { policy: text });
    expect(refused.status).toBe(400);
    const { context, page } = await newConsolePage(browser, 'phone');
    await signInWithToken(page, product, 'secrets', product.rootToken);
    await page.goto(`${product.consoleUrl}vault/policies/typo?new`);
    await page.getByLabel('Policy (HCL or JSON)').fill(text);
    await page.getByRole('button', { name: 'Create policy' }).click();
    await page.getByRole('alert').filter({ hasText: refused.body.errors[0] }).waitFor();
    await expect(page.locator('.gutter .marked').textContent()).resolves.toBe('4');
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await context.close();
  });

  it("a token with a limited policy sees the mounts page refused with the API's own 403", async () => {
    await api('PUT', 'sys/policies/acl/limited', { policy: 'path "secret/data/app/*" { capabilities = ["read"] }' });
    const token = (await api('POST', 'auth/token/create', { policies: ['limited'] })).body.auth.client_token;
    const direct = await api('GET', 'sys/mounts', undefined, token);
    expect(direct.status).toBe(403);

    const { context, page } = await newConsolePage(browser);
    await signInWithToken(page, product, 'secrets', token);
    await page.getByRole('link', { name: 'Secrets', exact: true }).click();
    const alert = page.getByRole('alert').first();
    await alert.waitFor();
    const shown = await alert.textContent();
    expect(shown).toContain('Permission denied');
    expect(shown).toContain('HTTP 403');
    for (const message of direct.body.errors) expect(shown).toContain(message);
    // Beside the 403, the mounts the token's policies touch, as `sys/internal/ui/mounts` answers them for it.
    const visible = await api('GET', 'sys/internal/ui/mounts', undefined, token);
    expect(Object.keys(visible.body.data.secret)).toContain('secret/');
    expect(Object.keys(visible.body.data.secret)).not.toContain('kv/');
    await page.getByText('The mounts this token has some access to').waitFor();
    await expect(page.getByRole('link', { name: 'secret/', exact: true }).count()).resolves.toBe(1);
    await expect(page.getByRole('link', { name: 'kv/', exact: true }).count()).resolves.toBe(0);
    // The kv browser resolves the mount through sys/internal/ui/mounts/<path> (allowed), and the list is the API's 403.
    await page.getByRole('link', { name: 'secret/', exact: true }).click();
    await page.getByRole('heading', { name: 'secret/' }).waitFor();
    const listRefused = await api('GET', 'secret/metadata/?list=true', undefined, token);
    expect(listRefused.status).toBe(403);
    await page.getByRole('alert').filter({ hasText: 'HTTP 403' }).waitFor();
    await context.close();
  });
});
