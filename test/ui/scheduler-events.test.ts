import { connect, createServer, type Server, type Socket } from 'node:net';
import type { Browser, Page } from 'playwright-core';
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
 * The live event view in Chromium: roles created elsewhere (through the API with fetch) appear as they are written;
 * when the stream is cut (Pause then Resume, the Reconnect control, the connection dropped under it by a TCP relay
 * in front of the scheduler) the page reconnects with the last index it saw and every event still appears exactly
 * once; leaving the page aborts it.
 */
let product: ConsoleProduct;
let browser: Browser;
let management = '';

async function api(method: string, path: string, body?: unknown): Promise<{ status: number; body: { ID?: string } }> {
  const response = await fetch(`${product.schedulerUrl}/v1/${path}`, {
    method,
    headers: { 'X-Nomad-Token': management, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : {} };
}

/** Creates a role through the API, as another client would; answers its ID (the event's key). */
async function createRole(name: string): Promise<string> {
  const created = await api('POST', 'acl/role', { Name: name, Policies: [{ Name: 'jobs' }] });
  expect(created.status).toBe(200);
  return created.body.ID as string;
}

beforeAll(async () => {
  [product, browser] = await Promise.all([startConsoleProduct(), launchBrowser()]);
  const bootstrap = await fetch(`${product.schedulerUrl}/v1/acl/bootstrap`, { method: 'POST' });
  management = ((await bootstrap.json()) as { SecretID: string }).SecretID;
  expect((await api('POST', 'acl/policy/jobs', { Rules: 'namespace "default" { policy = "read" }' })).status).toBe(200);
});
afterAll(async () => {
  await browser?.close();
  await product?.stop();
});

const events = (page: Page) => page.getByRole('list', { name: 'Events, newest first' }).getByRole('listitem');
/** The event rows whose key is `key`. */
const rowsOf = (page: Page, key: string) => events(page).filter({ has: page.locator('code', { hasText: key }) });
const lastIndex = async (page: Page) => Number(await page.getByTestId('last-index').textContent());
const live = (page: Page) => page.getByRole('status').getByText('Live', { exact: true }).waitFor();

describe('the live event view', () => {
  it('shows a role created elsewhere, and after each cut resumes from the last index with every event once', async () => {
    const { context, page } = await newConsolePage(browser);
    const streams: string[] = [];
    page.on('request', (request) => {
      if (request.url().includes('/v1/event/stream')) streams.push(request.url());
    });
    await signInWithToken(page, product, 'scheduler', management);
    await page.getByRole('link', { name: 'Event stream' }).click();
    await live(page);
    expect(new URL(streams[0] as string).searchParams.get('topic')).toBe('*:*');

    const first = await createRole('watchers-a');
    await rowsOf(page, first).waitFor();
    await expect(rowsOf(page, first).textContent()).resolves.toContain('ACLRoleUpserted');
    await expect(events(page).first().textContent()).resolves.toContain(first); // newest first
    const afterFirst = await lastIndex(page);
    await screenshot(page, 'events');

    // Paused: the stream is cut; a role written meanwhile arrives on resume, from the last index seen.
    await page.getByRole('button', { name: 'Pause' }).click();
    await page.getByRole('status').getByText('Paused', { exact: true }).waitFor();
    const second = await createRole('watchers-b');
    const before = streams.length;
    await page.getByRole('button', { name: 'Resume' }).click();
    await rowsOf(page, second).waitFor();
    await expect.poll(() => streams.length).toBeGreaterThan(before);
    expect(new URL(streams[before] as string).searchParams.get('index')).toBe(String(afterFirst));

    // Reconnect: the open stream is aborted and a new one asks for what follows the last index.
    const afterSecond = await lastIndex(page);
    expect(afterSecond).toBeGreaterThan(afterFirst);
    const beforeReconnect = streams.length;
    await page.getByRole('button', { name: 'Reconnect' }).click();
    await expect.poll(() => streams.length).toBeGreaterThan(beforeReconnect);
    await live(page);
    expect(new URL(streams[beforeReconnect] as string).searchParams.get('index')).toBe(String(afterSecond));
    const third = await createRole('watchers-c');
    await rowsOf(page, third).waitFor();

    // Every role's event exactly once, none repeated by a reconnect.
    for (const id of [first, second, third]) await expect(rowsOf(page, id).count()).resolves.toBe(1);
    const heads = await events(page).locator('.event-head').allTextContents();
    expect(heads.length).toBeGreaterThanOrEqual(3);
    expect(new Set(heads).size).toBe(heads.length);
    await context.close();
  });

  it('reconnects by itself after the connection drops, from the last index, and shows what was written meanwhile once', async () => {
    // A TCP relay on loopback in front of the scheduler, which the test can cut: the page is pointed at it through
    // its config.json (and, since the relay's origin is not the scheduler's, the test context bypasses the CSP).
    const target = new URL(product.schedulerUrl);
    const sockets = new Set<Socket>();
    let refusing = false;
    const relay: Server = createServer((client) => {
      if (refusing) return void client.destroy();
      const upstream = connect(Number(target.port), target.hostname);
      for (const socket of [client, upstream]) {
        sockets.add(socket);
        socket.on('close', () => sockets.delete(socket));
        socket.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
    const relayUrl = `http://127.0.0.1:${(relay.address() as { port: number }).port}`;
    const context = await browser.newContext({ bypassCSP: true, viewport: { width: 1366, height: 860 } });
    await context.route('**/ui/config.json', (route) =>
      route.fulfill({ json: { secretsUrl: '', schedulerUrl: relayUrl } }),
    );
    const page = await context.newPage();
    const streams: string[] = [];
    page.on('request', (request) => {
      if (request.url().startsWith(`${relayUrl}/v1/event/stream`)) streams.push(request.url());
    });
    try {
      await signInWithToken(page, product, 'scheduler', management);
      await page.goto(`${product.consoleUrl}scheduler/events`);
      await live(page);
      const before = await createRole('relay-a');
      await rowsOf(page, before).waitFor();
      const seen = await lastIndex(page);
      const opened = streams.length;

      refusing = true;
      for (const socket of sockets) socket.destroy();
      await page.getByRole('status').getByText('Stream dropped; reconnecting…').waitFor();
      const during = await createRole('relay-b');
      refusing = false;
      await rowsOf(page, during).waitFor({ timeout: 15_000 });
      const retries = streams.slice(opened).map((url) => new URL(url).searchParams.get('index'));
      expect(retries.length).toBeGreaterThan(0);
      expect(new Set(retries)).toEqual(new Set([String(seen)]));
      for (const id of [before, during]) await expect(rowsOf(page, id).count()).resolves.toBe(1);
    } finally {
      await context.close();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => relay.close(() => resolve()));
    }
  });

  it('filters by topic and key, shows an event’s JSON, and aborts the stream when leaving the page', async () => {
    const id = await createRole('filtered-role');
    await createRole('other-role');
    const { context, page } = await newConsolePage(browser, 'phone');
    const aborted: string[] = [];
    page.on('requestfailed', (request) => {
      if (request.url().includes('/v1/event/stream')) aborted.push(request.failure()?.errorText ?? '');
    });
    await signInWithToken(page, product, 'scheduler', management);
    await page.goto(`${product.consoleUrl}scheduler/events`);
    await live(page);
    await page.getByLabel('Topic').selectOption('ACLRole');
    await page.getByLabel('Key').fill('filtered-role');
    await page.getByRole('button', { name: 'Apply filter' }).click();
    // The unfiltered list (both roles) is cleared when the filtered stream starts; wait for that stream's one event
    // rather than for a row the old list may still show.
    await expect.poll(() => events(page).count(), { timeout: 15_000 }).toBe(1);
    await rowsOf(page, id).waitFor();
    await live(page);
    await expect(events(page).count()).resolves.toBe(1);
    await events(page).first().getByText('Details').click();
    await expect(events(page).first().locator('pre').textContent()).resolves.toContain('"Name": "filtered-role"');
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);

    await page.getByRole('link', { name: 'ACL roles' }).click();
    await page.getByRole('heading', { name: 'ACL roles', exact: true }).waitFor();
    await expect.poll(() => aborted.length).toBeGreaterThan(0);
    expect(aborted.at(-1)).toContain('ABORTED');
    await context.close();
  });
});
