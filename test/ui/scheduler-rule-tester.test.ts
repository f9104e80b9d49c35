import { type CryptoKey, exportSPKI, generateKeyPair, SignJWT } from 'jose';
import type { Browser, Locator } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ConsoleProduct,
  launchBrowser,
  newConsolePage,
  screenshot,
  signInWithToken,
  startConsoleProduct,
} from '../support/console.ts';

/**
 * The binding-rule tester in Chromium: rules created in the console's pages, then a pasted set of claims shows
 * one rule matching, another not matching with the term that fails, and the roles and policies the token would get;
 * a JWT pasted and decoded in the browser gives the same answer a real login with that JWT gets.
 */
let product: ConsoleProduct;
let browser: Browser;
let management = '';
let privateKey: CryptoKey;

async function api(method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${product.schedulerUrl}/v1/${path}`, {
    method,
    headers: { 'X-Nomad-Token': management, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text.startsWith('{') || text.startsWith('[') ? JSON.parse(text) : text };
}

beforeAll(async () => {
  [product, browser] = await Promise.all([startConsoleProduct(), launchBrowser()]);
  const bootstrap = await fetch(`${product.schedulerUrl}/v1/acl/bootstrap`, { method: 'POST' });
  management = ((await bootstrap.json()) as { SecretID: string }).SecretID;
  const keys = await generateKeyPair('EdDSA', { extractable: true });
  privateKey = keys.privateKey;
  expect((await api('POST', 'acl/policy/jobs', { Rules: 'namespace "default" { policy = "read" }' })).status).toBe(200);
  expect((await api('POST', 'acl/policy/nodes', { Rules: 'node { policy = "read" }' })).status).toBe(200);
  expect((await api('POST', 'acl/role', { Name: 'team-eng', Policies: [{ Name: 'jobs' }] })).status).toBe(200);
  const method = await api('POST', 'acl/auth-method', {
    Name: 'corp',
    Type: 'JWT',
    MaxTokenTTL: '1h',
    Config: {
      JWTValidationPubKeys: [await exportSPKI(keys.publicKey)],
      ClaimMappings: { sub: 'user' },
      ListClaimMappings: { groups: 'groups' },
    },
  });
  expect(method.status).toBe(200);
});
afterAll(async () => {
  await browser?.close();
  await product?.stop();
});

const badge = (rule: Locator) => rule.locator('h3 .badge');

describe('the binding-rule tester', () => {
  it('shows a rule created in the console matching pasted claims, another not matching with its failing term, and the roles and policies', async () => {
    const { context, page } = await newConsolePage(browser);
    await signInWithToken(page, product, 'scheduler', management);
    const createRule = async (description: string, selector: string, bindType: string, bindName: string) => {
      await page.goto(`${product.consoleUrl}scheduler/binding-rules/new?method=corp`);
      await page.getByLabel('Description').fill(description);
      await page.getByLabel('Selector').fill(selector);
      await page.getByLabel('Bind type').selectOption(bindType);
      await page.getByLabel('Bind name').fill(bindName);
      await page.getByRole('button', { name: 'Create binding rule' }).click();
      await page.getByRole('heading', { name: 'ACL binding rule', exact: true }).waitFor();
    };
    await createRule('engineers', '"eng" in list.groups and value.user != "mallory"', 'role', 'team-eng');
    await createRule('operators', '"ops" in list.groups and value.user == "ada"', 'policy', 'nodes');
    expect(((await api('GET', 'acl/binding-rules')).body as unknown[]).length).toBe(2);

    await page.getByRole('link', { name: 'Test the rules of corp' }).click();
    await page.getByRole('heading', { name: 'Binding-rule tester' }).waitFor();
    await expect(page.getByLabel('Auth method').inputValue()).resolves.toBe('corp');
    await page.getByLabel('Claims (JSON)').fill(JSON.stringify({ sub: 'ada', groups: ['eng', 'sales'] }));
    await page.getByRole('button', { name: 'Evaluate' }).click();

    const engineers = page.getByRole('article', { name: 'Rule engineers' });
    const operators = page.getByRole('article', { name: 'Rule operators' });
    await engineers.waitFor();
    await expect(badge(engineers).textContent()).resolves.toBe('matched');
    await expect(badge(operators).textContent()).resolves.toBe('not matched');
    await expect(operators.locator('li.term-failed').textContent()).resolves.toContain('"ops" in list.groups');
    await expect(operators.locator('li.term-held').textContent()).resolves.toContain('value.user == "ada"');
    await expect(operators.locator('.why').textContent()).resolves.toBe(
      'Not matched because "ops" in list.groups fails.',
    );
    const outcome = page.getByRole('region', { name: 'What the login would get' });
    await expect(outcome.textContent()).resolves.toContain('Token typeclient');
    await expect(outcome.getByRole('link', { name: 'team-eng' }).isVisible()).resolves.toBe(true);
    await expect(outcome.textContent()).resolves.toContain('Policies—');
    await expect(outcome.textContent()).resolves.toContain('1 of 2 rules of corp matched');
    await outcome.evaluate((element) => element.scrollIntoView());
    await screenshot(page, 'binding-rule-tester');
    await context.close();
  });

  it('decodes a pasted JWT in the browser (unverified, said so) and shows what a real login with it gets, at a phone width', async () => {
    const now = Math.floor(Date.now() / 1000);
    const jwt = await new SignJWT({ sub: 'ada', groups: ['eng', 'ops'] })
      .setProtectedHeader({ alg: 'EdDSA' })
      .setIssuedAt(now)
      .setExpirationTime(now + 600)
      .sign(privateKey);
    const { context, page } = await newConsolePage(browser, 'phone');
    await signInWithToken(page, product, 'scheduler', management);
    await page.goto(`${product.consoleUrl}scheduler/binding-rules/test?method=corp`);
    await page.getByRole('tab', { name: 'Decode a JWT' }).click();
    await expect(page.getByRole('main').textContent()).resolves.toContain('is not verified');
    await page.getByLabel('JWT', { exact: true }).fill(jwt);
    await page.getByRole('button', { name: 'Decode payload' }).click();
    await expect(page.getByLabel('Claims (JSON)').inputValue()).resolves.toContain('"ops"');
    await page.getByRole('button', { name: 'Evaluate' }).click();
    const outcome = page.getByRole('region', { name: 'What the login would get' });
    await outcome.waitFor();
    await expect(badge(page.getByRole('article', { name: 'Rule operators' })).textContent()).resolves.toBe('matched');
    await expect(outcome.getByRole('link', { name: 'team-eng' }).isVisible()).resolves.toBe(true);
    await expect(outcome.getByRole('link', { name: 'nodes' }).isVisible()).resolves.toBe(true);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);

    // The real login with the same JWT: the token it mints has exactly the roles and policies shown.
    const login = await fetch(`${product.schedulerUrl}/v1/acl/login`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ AuthMethodName: 'corp', LoginToken: jwt }),
    });
    expect(login.status).toBe(200);
    const token = (await login.json()) as { Type: string; Policies: string[]; Roles: Array<{ Name: string }> };
    expect(token).toMatchObject({ Type: 'client', Policies: ['nodes'] });
    expect(token.Roles.map((role) => role.Name)).toEqual(['team-eng']);

    // A JWT that is not one is refused in the page, before anything is sent.
    await page.getByRole('tab', { name: 'Decode a JWT' }).click();
    await page.getByLabel('JWT', { exact: true }).fill('not-a-jwt');
    await page.getByRole('button', { name: 'Decode payload' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toContain('three dot-separated parts');
    await context.close();
  });
});
