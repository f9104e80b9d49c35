import { request } from 'node:http';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ConsoleProduct,
  launchBrowser,
  newConsolePage,
  signInWithToken,
  startConsoleProduct,
} from '../support/console.ts';

/**
 * The console page as npm start serves it beside the secrets API (docs/security.md, "Web console"): every spelling of
 * a path under `/ui/` gets the page and never reaches the API, only GET and HEAD are answered there, text from the API
 * stays text, and the Content-Security-Policy stops an inline script even if one got into the page.
 */
let product: ConsoleProduct;
let browser: Browser;

beforeAll(async () => {
  [product, browser] = await Promise.all([startConsoleProduct(), launchBrowser()]);
});
afterAll(async () => {
  await browser?.close();
  await product?.stop();
});

/** One raw HTTP request with the path exactly as written (fetch would resolve its dot segments first). */
function raw(
  method: string,
  path: string,
  body?: string,
): Promise<{ status: number; type: string; csp: string; text: string }> {
  const { hostname, port } = new URL(product.secretsUrl);
  return new Promise((resolve, reject) => {
    // One connection per request: an answer that does not read the request's body closes nothing for the next one.
    const call = request(
      {
        agent: false,
        host: hostname,
        port,
        method,
        path,
        headers: { 'X-Vault-Token': product.rootToken, 'Content-Type': 'application/json' },
      },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          text += chunk;
        });
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            type: String(response.headers['content-type'] ?? ''),
            csp: String(response.headers['content-security-policy'] ?? ''),
            text,
          }),
        );
      },
    );
    call.on('error', reject);
    call.end(body);
  });
}

const escapes = [
  '/ui/../v1/sys/mounts',
  '/ui/%2e%2e/v1/sys/mounts',
  '/ui/..%2fv1/sys/mounts',
  '/ui//../v1/sys/mounts',
  '/ui/./../v1/sys/mounts',
  '/ui/..\\v1/sys/mounts',
];

describe('the console under /ui/ never reaches the API', () => {
  it.each(escapes)('GET %s with the root token serves the page with its CSP, not the mount table', async (path) => {
    const answer = await raw('GET', path);
    expect(answer.status).toBe(200);
    expect(answer.type).toContain('text/html');
    expect(answer.csp).toContain("script-src 'self'");
    expect(answer.text).toContain('<div id="app">');
    expect(answer.text).not.toContain('secret/');
  });

  it('answers only GET and HEAD: a write spelled through /ui/.. is 405 and mounts nothing', async () => {
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
      const answer = await raw(method, '/ui/../v1/sys/mounts/evil', JSON.stringify({ type: 'kv' }));
      expect(`${method} ${answer.status} ${answer.text}`).toBe(`${method} 405 the console answers GET and HEAD only\n`);
      expect(answer.text).toContain('GET and HEAD only');
    }
    expect((await raw('HEAD', '/ui/')).status).toBe(200);
    const mounts = await fetch(`${product.secretsUrl}/v1/sys/mounts`, {
      headers: { 'X-Vault-Token': product.rootToken, 'Content-Type': 'application/json' },
    });
    expect(Object.keys(((await mounts.json()) as { data: Record<string, unknown> }).data)).not.toContain('evil/');
  });
});

describe('text from the API stays text, and the CSP stops inline script', () => {
  it('shows a kv v1 secret whose key and value are markup as text, runs none of it, and blocks an inline script and handler injected into the page', async () => {
    const key = '<img src=x onerror="window.__xss=\'key\'">';
    const value = '<script>window.__xss="value"</script><img src=x onerror="window.__xss=\'value-img\'">';
    const written = await fetch(`${product.secretsUrl}/v1/kv/xss`, {
      method: 'POST',
      headers: { 'X-Vault-Token': product.rootToken, 'Content-Type': 'application/json' },
      body: JSON.stringify({ [key]: value }),
    });
    expect(written.status).toBe(204);

    const { context, page } = await newConsolePage(browser);
    const violations: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error' && /Content Security Policy/.test(message.text())) violations.push(message.text());
    });
    await signInWithToken(page, product, 'secrets', product.rootToken);
    await page.goto(`${product.consoleUrl}vault/secrets/kv/xss`);
    await page.getByRole('button', { name: /^Reveal/ }).click();
    const shown = (await page.locator('main').textContent()) ?? '';
    expect(shown).toContain(key);
    expect(shown).toContain(value);
    await expect(page.evaluate(() => document.querySelectorAll('main img, main script').length)).resolves.toBe(0);

    // As if an injection had got past the rendering: an inline handler and an inline script element.
    await page.evaluate(() => {
      document.body.insertAdjacentHTML(
        'beforeend',
        '<img id="injected" src="/ui/no-such.png" onerror="window.__xss=\'handler\'">',
      );
      const script = document.createElement('script');
      script.textContent = 'window.__xss = "inline"';
      document.body.append(script);
    });
    await expect.poll(() => violations.length).toBeGreaterThanOrEqual(2);
    await expect(page.evaluate(() => (window as unknown as { __xss?: string }).__xss)).resolves.toBeUndefined();
    await context.close();
  });
});
