import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ConsoleProduct,
  launchBrowser,
  newConsolePage,
  secretsCall,
  signInWithToken,
  startConsoleProduct,
} from '../support/console.ts';

/**
 * Issue 37 §3: the console cannot be steered by a link. Attacker: whoever gets a signed-in person (root, say) to open
 * a crafted console URL. The engine pages put the mount segment of the console URL into API paths unencoded, so
 * `/ui/sign-in?service=secrets&next=/ui/vault/ldap/sys%252Fmounts%252Fvictim%2523/role/readonly` (accepted by the
 * sign-in page's `next`) made the page send `GET /v1/sys/mounts/victim` (the `#` ended the path), and its Delete
 * button `DELETE /v1/sys/mounts/victim` with the person's token. Now every API path is built by one helper
 * (`packages/ui/src/api.ts`'s `api` tagged template: each value one encoded segment, `segments()` for values that
 * span several, `.`, `..` and empty segments refused; `call` takes only what it builds), so a value from a URL can
 * neither add segments, end the path nor climb out of it.
 *
 * Proved with the concrete link and by a walk of every console route (read from the console's own route
 * definitions) with hostile values in each parameter (`%2F`, `%23`, `%3F` and `..` spellings aimed at
 * `sys/mounts/victim`), in Chromium, recording every request each page sends: none reaches the victim mount's path,
 * none carries an injected query, none holds a dot segment, and the mount is still there.
 */

const source = path.resolve(import.meta.dirname, '../../packages/ui/src');

/** Every console route pattern, from the console's sources: the literal ones and the engine pages each engine makes. */
function consoleRoutes(): string[] {
  const files = readdirSync(source, { recursive: true, encoding: 'utf8' }).filter((file) => /\.tsx?$/.test(file));
  const patterns = new Set<string>();
  for (const file of files) {
    const text = readFileSync(path.join(source, file), 'utf8');
    for (const match of text.matchAll(/pattern: '(\/ui\/[^']*)'/g)) patterns.add(match[1] as string);
  }
  for (const kind of ['ldap', 'cloud', 'mesh']) {
    // engines/config-page.tsx and engines/role-list.tsx: the configuration, and each collection's create and items.
    patterns.add(`/ui/vault/${kind}/:mount`);
    const engine = readFileSync(path.join(source, 'engines', kind, 'engine.tsx'), 'utf8');
    for (const match of engine.matchAll(/^ {2}segment: '([a-z-]+)'/gm)) {
      patterns.add(`/ui/vault/${kind}/:mount/create/${match[1]}`);
      patterns.add(`/ui/vault/${kind}/:mount/${match[1]}/*name`);
    }
  }
  return [...patterns];
}

/** Console URL segments (as they appear in the address bar) each aimed at `sys/mounts/victim`. */
const hostileSegments = [
  'sys%2Fmounts%2Fvictim%23',
  'sys%2Fmounts%2Fvictim%3Fy%3D1',
  '%2E%2E%2F%2E%2E%2Fsys%2Fmounts%2Fvictim',
  '%2E%2E',
];
/** For a `*rest` parameter, several segments: dot segments that climb to the victim. */
const hostileRests = ['x/%2E%2E/%2E%2E/%2E%2E/sys/mounts/victim', 'sys%2Fmounts%2Fvictim%23/x'];

function urlsFor(pattern: string): string[] {
  if (!pattern.includes(':') && !pattern.includes('*')) return [pattern];
  const hasRest = pattern.includes('*');
  const values = hasRest ? [...hostileSegments, ...hostileRests] : hostileSegments;
  return values.map((value) =>
    pattern
      .split('/')
      .map((part) => {
        if (part.startsWith(':')) return hostileSegments.includes(value) ? value : hostileSegments[0];
        if (part.startsWith('*')) return value;
        return part;
      })
      .join('/'),
  );
}

/** What is wrong with a request the page sent, if anything. */
function problemOf(url: string, method: string): string | undefined {
  const parsed = new URL(url);
  if (!parsed.pathname.startsWith('/v1/')) return undefined;
  if (/^\/v1\/sys\/mounts\/victim(\/|$)/.test(parsed.pathname)) return `${method} reached the victim mount: ${url}`;
  if (parsed.searchParams.has('y')) return `${method} carries an injected query: ${url}`;
  if (/(^|\/)(\.|\.\.|%2e|%2e%2e|\.%2e|%2e\.)(\/|$)/i.test(parsed.pathname))
    return `${method} has a dot segment: ${url}`;
  return undefined;
}

describe('the console builds every API path from encoded segments: a crafted link cannot steer it', () => {
  let product: ConsoleProduct;
  let browser: Browser;

  beforeAll(async () => {
    [product, browser] = await Promise.all([startConsoleProduct(), launchBrowser()]);
    expect((await secretsCall(product, 'POST', 'sys/mounts/victim', { type: 'kv' })).status).toBe(204);
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await product?.stop();
  });

  const victimMounted = async () =>
    Object.keys((await secretsCall(product, 'GET', 'sys/mounts')).body.data).includes('victim/');

  /** A signed-in tab recording the method and URL of every request it sends. */
  async function signedIn(): Promise<{ page: Page; sent: Array<{ method: string; url: string }> }> {
    const { page } = await newConsolePage(browser);
    page.setDefaultTimeout(10_000);
    const sent: Array<{ method: string; url: string }> = [];
    page.on('request', (request) => sent.push({ method: request.method(), url: request.url() }));
    await signInWithToken(page, product, 'secrets', product.rootToken);
    return { page, sent };
  }

  it("the issue's sign-in link sends nothing to sys/mounts/victim, and its Delete leaves the mount", async () => {
    const { page } = await newConsolePage(browser);
    page.setDefaultTimeout(10_000);
    const sent: Array<{ method: string; url: string }> = [];
    page.on('request', (request) => sent.push({ method: request.method(), url: request.url() }));
    page.on('dialog', (dialog) => void dialog.accept());
    const next = '/ui/vault/ldap/sys%2Fmounts%2Fvictim%23/role/readonly';
    await page.goto(`${product.consoleUrl}sign-in?service=secrets&next=${encodeURIComponent(next)}`);
    await page.getByRole('textbox', { name: 'Token', exact: true }).fill(product.rootToken);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.waitForURL((url) => url.pathname.startsWith('/ui/vault/ldap/'));
    await page.waitForLoadState('networkidle');
    const remove = page.getByRole('button', { name: 'Delete' });
    if ((await remove.count()) > 0) {
      await remove.first().click();
      await page.waitForLoadState('networkidle');
    }
    const problems = sent.flatMap(({ method, url }) => problemOf(url, method) ?? []);
    expect(problems).toEqual([]);
    // The page did ask the API, for the mount spelt as one segment (which the service refuses: `%2F`).
    expect(sent.some(({ url }) => url.includes('/v1/sys%2Fmounts%2Fvictim%23/role/readonly'))).toBe(true);
    expect(await victimMounted()).toBe(true);
    await page.close();
  });

  it('a walk of every console route with hostile segments sends no request past its own path', async () => {
    const routes = consoleRoutes();
    // Every route the console declares is walked (an engine's configuration and collections included).
    expect(routes.length).toBeGreaterThan(40);
    const { page, sent } = await signedIn();
    page.on('dialog', (dialog) => void dialog.dismiss());
    const problems: string[] = [];
    let visited = 0;
    for (const pattern of routes) {
      for (const target of urlsFor(pattern)) {
        sent.length = 0;
        await page.goto(`${product.secretsUrl}${target}`);
        // A page that streams (events) or waits on a blocking query never goes idle: what it sent by then is checked.
        await page.waitForLoadState('networkidle', { timeout: 3_000 }).catch(() => undefined);
        visited++;
        for (const { method, url } of sent) {
          const problem = problemOf(url, method);
          if (problem) problems.push(`${target}: ${problem}`);
        }
      }
    }
    console.log(`console-links: ${routes.length} routes, ${visited} pages visited with hostile segments`);
    expect(problems).toEqual([]);
    expect(await victimMounted()).toBe(true);
    await page.close();
  }, 600_000);
});
