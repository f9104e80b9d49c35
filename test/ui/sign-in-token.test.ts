import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ConsoleProduct,
  launchBrowser,
  newConsolePage,
  screenshot,
  signInWithToken,
  startConsoleProduct,
} from '../support/console.ts';

let product: ConsoleProduct;
let browser: Browser;

beforeAll(async () => {
  [product, browser] = await Promise.all([startConsoleProduct(), launchBrowser()]);
});
afterAll(async () => {
  await browser?.close();
  await product?.stop();
});

describe('the console at /ui/ with a token', () => {
  it('is served by npm start beside the secrets API with a strict CSP, and loads nothing from any other origin', async () => {
    const response = await fetch(product.consoleUrl);
    expect(response.status).toBe(200);
    const csp = response.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain(`connect-src 'self' ${product.schedulerUrl}`);
    expect(csp).toContain("frame-ancestors 'none'");
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    const config = await (await fetch(`${product.consoleUrl}config.json`)).json();
    expect(config).toEqual({ secretsUrl: '', schedulerUrl: product.schedulerUrl });
    // A deep link (an OIDC callback) gets the page too; the API beside it is untouched.
    expect(
      (await fetch(`${product.consoleUrl}vault/auth/jwt/oidc/callback?code=x`)).headers.get('content-type'),
    ).toContain('text/html');
    expect((await fetch(`${product.secretsUrl}/v1/sys/health`)).status).toBe(200);

    const { context, page, requests } = await newConsolePage(browser);
    await page.goto(product.consoleUrl);
    await expect(page.getByRole('heading', { name: 'Keyhaven console' }).isVisible()).resolves.toBe(true);
    await expect(page.locator('body').textContent()).resolves.not.toContain('Loading the Keyhaven console');
    const origins = new Set(requests.map((url) => new URL(url).origin));
    expect([...origins]).toEqual([product.secretsUrl]);
    await context.close();
  });

  it('signs in to the secrets service with a token, shows who is signed in, and a wrong token gets the API message', async () => {
    const { context, page } = await newConsolePage(browser);
    await page.goto(`${product.consoleUrl}sign-in?service=secrets`);
    await page.getByRole('textbox', { name: 'Token', exact: true }).fill('not-a-token');
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toContain('permission denied');
    await signInWithToken(page, product, 'secrets', product.rootToken);
    await expect(page.locator('.signed-in[data-service="secrets"]').textContent()).resolves.toContain('root');
    await expect(page.evaluate(() => Object.keys(sessionStorage))).resolves.toEqual(['keyhaven.secrets.session']);
    await expect(context.cookies()).resolves.toEqual([]);
    await screenshot(page, 'home');
    // Sign out forgets the pasted token and does not revoke it: it still works against the API.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('link', { name: 'Sign in to the secrets service' }).waitFor();
    await expect(page.evaluate(() => sessionStorage.length)).resolves.toBe(0);
    const still = await fetch(`${product.secretsUrl}/v1/auth/token/lookup-self`, {
      headers: { 'X-Vault-Token': product.rootToken },
    });
    expect(still.status).toBe(200);
    await context.close();
  });

  it('signs in to the scheduler service across origins: CORS answers the console origin only', async () => {
    const bootstrap = await fetch(`${product.schedulerUrl}/v1/acl/bootstrap`, { method: 'POST' });
    const management = ((await bootstrap.json()) as { SecretID: string }).SecretID;
    const consoleOrigin = new URL(product.consoleUrl).origin;
    const preflight = (origin: string) =>
      fetch(`${product.schedulerUrl}/v1/acl/token/self`, {
        method: 'OPTIONS',
        headers: {
          Origin: origin,
          'Access-Control-Request-Method': 'GET',
          'Access-Control-Request-Headers': 'x-nomad-token',
        },
      });
    const allowed = await preflight(consoleOrigin);
    expect(allowed.headers.get('access-control-allow-origin')).toBe(consoleOrigin);
    expect(allowed.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('x-nomad-token');
    expect(allowed.headers.get('access-control-allow-credentials')).toBeNull();
    const other = await preflight('http://127.0.0.1:1');
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    const read = await fetch(`${product.schedulerUrl}/v1/acl/token/self`, {
      headers: { Origin: 'https://evil.example', 'X-Nomad-Token': management },
    });
    expect(read.headers.get('access-control-allow-origin')).toBeNull();

    const { context, page } = await newConsolePage(browser);
    await signInWithToken(page, product, 'scheduler', management);
    await expect(page.locator('.signed-in[data-service="scheduler"]').textContent()).resolves.toContain(
      'Bootstrap Token',
    );
    await context.close();
  });

  it('works at a phone width', async () => {
    const { context, page } = await newConsolePage(browser, 'phone');
    await signInWithToken(page, product, 'secrets', product.rootToken);
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    expect(width).toBeLessThanOrEqual(390);
    await context.close();
  });
});
