import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { inject } from 'vitest';
import { type LocalRuntime, startLocal } from '../../packages/local/src/start-local.ts';

/**
 * The console's browser tests: the product as `npm start` runs it (`startLocal`: both services and the console at
 * `/ui/` on the secrets port), on free loopback ports over the run's DynamoDB Local, driven by Debian's chromium
 * through playwright-core (no browser download; ENVIRONMENT.md).
 */
export interface ConsoleProduct {
  runtime: LocalRuntime;
  rootToken: string;
  /** `http://127.0.0.1:<port>`: the secrets service and the console (at `/ui/`). */
  secretsUrl: string;
  schedulerUrl: string;
  consoleUrl: string;
  stop(): Promise<void>;
}

export async function startConsoleProduct(): Promise<ConsoleProduct> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'keyhaven-console-'));
  const rootToken = `root-${randomBytes(6).toString('hex')}`;
  const runtime = await startLocal({
    dataDir,
    dynamoDbEndpoint: inject('dynamoEndpoint'),
    tableName: `console-${randomBytes(6).toString('hex')}`,
    secretsPort: 0,
    schedulerPort: 0,
    devRootToken: rootToken,
    sweepIntervalMs: 500,
    log: { info() {}, error() {} },
  });
  return {
    runtime,
    rootToken,
    secretsUrl: runtime.secretsUrl,
    schedulerUrl: runtime.schedulerUrl,
    consoleUrl: `${runtime.secretsUrl}/ui/`,
    async stop() {
      await runtime.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Chromium with the flags this closed network needs (no background connections, no first-run, no sandbox as root). */
export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-dev-shm-usage',
    ],
  });
}

/** A new tab at a laptop's width (or a phone's), with every request it makes recorded for the origin check. */
export async function newConsolePage(
  browser: Browser,
  size: 'laptop' | 'phone' = 'laptop',
): Promise<{ context: BrowserContext; page: Page; requests: string[] }> {
  const context = await browser.newContext({
    viewport: size === 'phone' ? { width: 390, height: 844 } : { width: 1366, height: 860 },
  });
  const page = await context.newPage();
  const requests: string[] = [];
  page.on('request', (request) => requests.push(request.url()));
  return { context, page, requests };
}

/** Signs in to one service with a token through the sign-in page, and waits for the home page to say so. */
export async function signInWithToken(
  page: Page,
  product: ConsoleProduct,
  service: 'secrets' | 'scheduler',
  token: string,
): Promise<void> {
  await page.goto(`${product.consoleUrl}sign-in?service=${service}`);
  await page.getByRole('textbox', { name: 'Token', exact: true }).fill(token);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.locator(`.signed-in[data-service="${service}"]`).waitFor();
}

const screenshotDir = path.resolve('docs/screenshots');

/** Saves a screenshot of the page for the README (`docs/screenshots/<name>.png`). */
export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(screenshotDir, { recursive: true });
  await page.screenshot({ path: path.join(screenshotDir, `${name}.png`), fullPage: false });
}

/**
 * Aborts every request of the context that is not to a loopback address (the tests' network is loopback only; a
 * page from a real part, such as oidc-provider's login form, may name a font on the internet). Returns the aborted URLs.
 */
export async function loopbackOnly(context: BrowserContext): Promise<string[]> {
  const aborted: string[] = [];
  await context.route(
    (url) => !['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname),
    (route) => {
      aborted.push(route.request().url());
      return route.abort();
    },
  );
  return aborted;
}

/** One call to the secrets API (root token unless given), to check through the API what a page did. */
export async function secretsCall(
  product: ConsoleProduct,
  method: string,
  apiPath: string,
  body?: unknown,
  token = product.rootToken,
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary response JSON
): Promise<{ status: number; body: any }> {
  const response = await fetch(`${product.secretsUrl}/v1/${apiPath}`, {
    method,
    headers: { 'X-Vault-Token': token, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

/** One answer of the scheduler API, read as text once (and as JSON on demand). */
export interface SchedulerAnswer {
  status: number;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary response JSON
  json: () => any;
}

/** A node as its agent registers it: the fields the fixture needs to register it and beat for it. */
interface BeatingNode {
  ID: string;
  SecretID: string;
}

/**
 * The scheduler pages' shared fixture: the product and Chromium, the management token from the ACL bootstrap, the
 * API as another client calls it, a signed-in tab, and (when asked) nodes registered over the client protocol that
 * keep beating as their agents would (the product's sweep runs on the real clock), plus namespaces made up front.
 */
export interface SchedulerConsole {
  product: ConsoleProduct;
  browser: Browser;
  management: string;
  /** One call to the scheduler API (`/v1/<apiPath>`), with the management token unless given. */
  api(method: string, apiPath: string, body?: unknown, token?: string): Promise<SchedulerAnswer>;
  /** A new tab signed in to the scheduler with `token` (the management token unless given). */
  signedIn(
    token?: string,
    size?: 'laptop' | 'phone',
  ): Promise<{ context: BrowserContext; page: Page; requests: string[] }>;
  /** Opens a console path under `scheduler/`. */
  open(page: Page, consolePath: string): Promise<unknown>;
  stop(): Promise<void>;
}

export async function startSchedulerConsole(
  options: {
    /** Registered and made ready before the tests; beaten every 5 s for as long as the fixture runs (read anew each beat, so a test may add one). */
    nodes?: BeatingNode[];
    namespaces?: string[];
  } = {},
): Promise<SchedulerConsole> {
  const [product, browser] = await Promise.all([startConsoleProduct(), launchBrowser()]);
  const bootstrap = await fetch(`${product.schedulerUrl}/v1/acl/bootstrap`, { method: 'POST' });
  const management = ((await bootstrap.json()) as { SecretID: string }).SecretID;
  const api = async (method: string, apiPath: string, body?: unknown, token = management) => {
    const response = await fetch(`${product.schedulerUrl}/v1/${apiPath}`, {
      method,
      headers: { 'X-Nomad-Token': token, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, text, json: () => JSON.parse(text) };
  };
  const expectOk = async (answer: Promise<SchedulerAnswer>, what: string) => {
    const { status, text } = await answer;
    if (status !== 200) throw new Error(`${what}: ${status} ${text}`);
  };
  const nodes = options.nodes ?? [];
  if (nodes.length > 0) {
    const intro = (await api('PUT', 'acl/identity/client-introduction-token', {})).json() as { JWT: string };
    for (const node of nodes) {
      await expectOk(api('POST', 'client/register', { Node: node }, intro.JWT), `registering node ${node.ID}`);
      await expectOk(api('PUT', `client/node/${node.ID}/status`, { Status: 'ready' }, node.SecretID), 'node ready');
    }
  }
  for (const name of options.namespaces ?? [])
    await expectOk(api('PUT', `namespace/${encodeURIComponent(name)}`, { Name: name }), `namespace ${name}`);
  const beating =
    nodes.length === 0
      ? undefined
      : setInterval(() => {
          for (const node of nodes)
            void api('PUT', `client/node/${node.ID}/status`, { Status: 'ready' }, node.SecretID).catch(() => undefined);
        }, 5_000);
  return {
    product,
    browser,
    management,
    api,
    async signedIn(token = management, size = 'laptop') {
      const opened = await newConsolePage(browser, size);
      await signInWithToken(opened.page, product, 'scheduler', token);
      return opened;
    },
    open: (page, consolePath) => page.goto(`${product.consoleUrl}scheduler/${consolePath}`),
    async stop() {
      clearInterval(beating);
      await browser.close();
      await product.stop();
    },
  };
}

/** Waits until the page's updates badge says it is live by `how`. */
export const liveBy = (page: Page, how: 'event stream' | 'blocking queries') =>
  page.getByRole('status', { name: 'Updates' }).getByText(`Live (${how})`).waitFor();
