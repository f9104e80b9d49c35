import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lambdaHandler } from '../../packages/core/src/http/lambda-handler.ts';
import { secretsFront } from '../../packages/core/src/http/secrets-front.ts';
import { type ConsoleProduct, launchBrowser, startConsoleProduct } from '../support/console.ts';
import { type SecretsService, startSecretsInMemory } from '../support/secrets-harness.ts';
import { gatewayEvent } from './lambda-event.ts';

/**
 * Issue 37 §4: a browser on another origin cannot change either service's state, and DNS rebinding cannot reach the
 * loopback listeners. Attacker: any web page the developer opens while `npm start` runs (or while signed in to a
 * deployed console). It used to bootstrap a fresh local scheduler with a management secret of its choosing by a
 * cross-site `POST /v1/acl/bootstrap` with `Content-Type: text/plain` (a CORS simple request: no preflight, and the
 * endpoint needs no token). Now a request that is not a read, carrying `Sec-Fetch-Site: cross-site`/`same-site` or
 * an `Origin` that is neither the console's nor the request's own, is refused with 403 on both services
 * (`front/cross-origin.ts`, so on every adapter), and the local listeners answer only their own host names
 * (`packages/local/src/host-check.ts`). The console's own origin still writes to both. Behind that, a write whose
 * body is declared as `text/plain` or `multipart/form-data` (the simple types besides the form) is a 415.
 */

interface Answer {
  status: number;
  text: string;
}

/** A request with exactly these headers (node's client adds none of Origin, Sec-Fetch-Site or Content-Type). */
function send(url: string, method: string, headers: Record<string, string>, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const outgoing = request(
      { host: target.hostname, port: target.port, path: `${target.pathname}${target.search}`, method, headers },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          text += chunk;
        });
        response.on('end', () => resolve({ status: response.statusCode ?? 0, text }));
      },
    );
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}

describe('a page on another origin cannot change state, and only the listeners own host names reach them', () => {
  let product: ConsoleProduct;
  let browser: Browser;
  let attackerPage: Server;
  let attackerOrigin: string;
  const chosenSecret = '6f1c2b3a-0000-4000-8000-00000000a77a';
  /** The real bootstrap's management secret. */
  let management = '';

  beforeAll(async () => {
    product = await startConsoleProduct();
    browser = await launchBrowser();
    // The attacker's page, on another port of the same machine: same-site with the listeners, another origin.
    attackerPage = createServer((_request, response) => {
      response.writeHead(200, { 'Content-Type': 'text/html' }).end('<!doctype html><title>a page</title>');
    });
    await new Promise<void>((resolve) => attackerPage.listen(0, '127.0.0.1', resolve));
    attackerOrigin = `http://127.0.0.1:${(attackerPage.address() as AddressInfo).port}`;
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => attackerPage?.close(resolve));
    await product?.stop();
  });

  it('the cross-site text/plain POST /v1/acl/bootstrap from a page in Chromium bootstraps nothing', async () => {
    const page = await browser.newPage();
    await page.goto(`${attackerOrigin}/`);
    const sent = await page.evaluate(
      async ({ url, secret }) => {
        // What any page may send without a preflight: no-cors, a text body. The answer is opaque to it anyway.
        await fetch(url, {
          method: 'POST',
          mode: 'no-cors',
          headers: { 'Content-Type': 'text/plain' },
          body: JSON.stringify({ BootstrapSecret: secret }),
        });
        return true;
      },
      { url: `${product.schedulerUrl}/v1/acl/bootstrap`, secret: chosenSecret },
    );
    expect(sent).toBe(true);
    await page.close();
    // The attacker's secret is no token; the scheduler is still waiting for its real bootstrap.
    expect(
      (await send(`${product.schedulerUrl}/v1/acl/token/self`, 'GET', { 'X-Nomad-Token': chosenSecret })).status,
    ).toBe(403);
    const real = await send(
      `${product.schedulerUrl}/v1/acl/bootstrap`,
      'POST',
      { 'Content-Type': 'application/json' },
      '{}',
    );
    expect(real.status).toBe(200);
    management = JSON.parse(real.text).SecretID;
    expect(management).not.toBe(chosenSecret);
  });

  describe('writes by origin and Fetch Metadata, on both local listeners', () => {
    const secretsWrite = (name: string, headers: Record<string, string>) =>
      send(
        `${product.secretsUrl}/v1/sys/policies/acl/${name}`,
        'PUT',
        { 'X-Vault-Token': product.rootToken, 'Content-Type': 'application/json', ...headers },
        JSON.stringify({ policy: 'path "kv/*" { capabilities = ["read"] }' }),
      );
    const schedulerWrite = (name: string, headers: Record<string, string>) =>
      send(
        `${product.schedulerUrl}/v1/acl/policy/${name}`,
        'POST',
        { 'X-Nomad-Token': management, 'Content-Type': 'application/json', ...headers },
        JSON.stringify({ Name: name, Rules: 'namespace "default" { policy = "read" }' }),
      );
    const secretsPolicy = async (name: string) =>
      (await send(`${product.secretsUrl}/v1/sys/policies/acl/${name}`, 'GET', { 'X-Vault-Token': product.rootToken }))
        .status;
    const schedulerPolicy = async (name: string) =>
      (await send(`${product.schedulerUrl}/v1/acl/policy/${name}`, 'GET', { 'X-Nomad-Token': management })).status;

    beforeAll(async () => {
      // Bootstrapped by the test above, or here when it is run alone.
      if (management) return;
      const real = await send(`${product.schedulerUrl}/v1/acl/bootstrap`, 'POST', {}, '');
      expect(real.status).toBe(200);
      management = JSON.parse(real.text).SecretID;
    });

    const refused: Array<[string, Record<string, string>]> = [
      ['a foreign Origin', { Origin: 'http://evil.example' }],
      ['Origin null', { Origin: 'null' }],
      ['another local port', { Origin: 'http://127.0.0.1:1', 'Sec-Fetch-Site': 'same-site' }],
      ['Sec-Fetch-Site cross-site', { 'Sec-Fetch-Site': 'cross-site' }],
      [
        'cross-site with the console origin spelt nearly',
        { Origin: 'http://127.0.0.1:80', 'Sec-Fetch-Site': 'cross-site' },
      ],
    ];
    it.each(refused)('refuses %s with 403 and writes nothing', async (_case, headers) => {
      const name = `refused-${Math.random().toString(36).slice(2, 8)}`;
      const secrets = await secretsWrite(name, headers);
      expect(secrets.status).toBe(403);
      expect(JSON.parse(secrets.text).errors[0]).toMatch(/may not change state/);
      expect(await secretsPolicy(name)).toBe(404);
      const scheduler = await schedulerWrite(name, headers);
      expect(scheduler.status).toBe(403);
      expect(scheduler.text).toMatch(/may not change state/);
      expect(await schedulerPolicy(name)).toBe(404);
    });

    it('takes the console origin (and its localhost spelling), same-origin requests, and clients that send no Origin', async () => {
      const consoleOrigin = product.secretsUrl;
      const alias = consoleOrigin.replace('127.0.0.1', 'localhost');
      const cases: Array<Record<string, string>> = [
        {},
        { Origin: consoleOrigin, 'Sec-Fetch-Site': 'same-origin' },
        { Origin: consoleOrigin },
        { Origin: alias },
      ];
      for (const [index, headers] of cases.entries()) {
        expect((await secretsWrite(`kept-${index}`, headers)).status, JSON.stringify(headers)).toBe(204);
        expect(await secretsPolicy(`kept-${index}`)).toBe(200);
        // From the console's page the scheduler is another port of the same site: the browser says so.
        const fromPage = headers.Origin ? { ...headers, 'Sec-Fetch-Site': 'same-site' } : headers;
        const scheduler = await schedulerWrite(`kept-${index}`, fromPage);
        expect(scheduler.status, JSON.stringify(headers)).toBe(200);
        expect(await schedulerPolicy(`kept-${index}`)).toBe(200);
      }
    });

    it('refuses a write declared as a type a browser sends without a preflight, even with no Origin at all (415)', async () => {
      // A second line behind the origin rule: were a browser ever to send neither Origin nor Fetch Metadata, the
      // body of its simple request would still be text/plain or multipart, which neither service reads as JSON.
      for (const type of ['text/plain', 'text/plain;charset=UTF-8', 'multipart/form-data; boundary=b']) {
        const name = `typed-${Math.random().toString(36).slice(2, 8)}`;
        const secrets = await secretsWrite(name, { 'Content-Type': type });
        expect(secrets.status, type).toBe(415);
        expect(JSON.parse(secrets.text).errors, type).toEqual([
          `unsupported Content-Type "${type}": send the body as application/json`,
        ]);
        expect(await secretsPolicy(name)).toBe(404);
        const scheduler = await schedulerWrite(name, { 'Content-Type': type });
        expect({ status: scheduler.status, text: scheduler.text }, type).toEqual({
          status: 415,
          text: `unsupported Content-Type "${type}": send the body as application/json`,
        });
        expect(await schedulerPolicy(name)).toBe(404);
      }
      // The form type (curl's default for -d, which Vault also reads) and no type at all are taken.
      for (const [index, headers] of [{ 'Content-Type': 'application/x-www-form-urlencoded' }, {}].entries()) {
        const name = `form-${index}`;
        const bare = { ...headers } as Record<string, string>;
        const secrets = await send(
          `${product.secretsUrl}/v1/sys/policies/acl/${name}`,
          'PUT',
          { 'X-Vault-Token': product.rootToken, ...bare },
          JSON.stringify({ policy: 'path "kv/*" { capabilities = ["read"] }' }),
        );
        expect(secrets.status, JSON.stringify(headers)).toBe(204);
        const scheduler = await send(
          `${product.schedulerUrl}/v1/acl/policy/${name}`,
          'POST',
          { 'X-Nomad-Token': management, ...bare },
          JSON.stringify({ Name: name, Rules: 'namespace "default" { policy = "read" }' }),
        );
        expect(scheduler.status, JSON.stringify(headers)).toBe(200);
        expect(await schedulerPolicy(name)).toBe(200);
      }
    });

    it('leaves reads alone: a page cannot read their answers anyway (no CORS for it)', async () => {
      const read = await send(`${product.secretsUrl}/v1/sys/health`, 'GET', {
        Origin: 'http://evil.example',
        'Sec-Fetch-Site': 'cross-site',
      });
      expect(read.status).toBe(200);
    });
  });

  it('answers only its own host names: a rebound DNS name gets 403 on both listeners, for reads too', async () => {
    for (const base of [product.secretsUrl, product.schedulerUrl]) {
      const port = new URL(base).port;
      const health = base === product.secretsUrl ? '/v1/sys/health' : '/v1/agent/health';
      for (const host of [
        `evil.example:${port}`,
        'evil.example',
        `127.0.0.1.evil.example:${port}`,
        `localhost.:${port}`,
      ]) {
        const answer = await send(`${base}${health}`, 'GET', { Host: host });
        expect(answer.status, `${base} ${host}`).toBe(403);
        expect(answer.text).toContain('does not answer to the host');
      }
      // Loopback names on any port: a relay or port forward in front of the listener keeps its own.
      for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `LOCALHOST:${port}`, '[::1]:1', 'localhost']) {
        expect((await send(`${base}${health}`, 'GET', { Host: host })).status, `${base} ${host}`).toBe(200);
      }
    }
    // The console's own pages too: a rebound name cannot load them and read what they show.
    expect((await send(`${product.secretsUrl}/ui/`, 'GET', { Host: 'evil.example' })).status).toBe(403);
  });
});

describe('the same rule on the Lambda adapter (a deployed service)', () => {
  let h: SecretsService;
  beforeAll(async () => {
    h = await startSecretsInMemory();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('refuses a cross-site write and takes a same-origin one', async () => {
    const lambda = lambdaHandler(secretsFront({ core: async () => h.core }), []);
    const write = (name: string, headers: Record<string, string>) =>
      lambda(
        gatewayEvent(
          'PUT',
          `/v1/sys/policies/acl/${name}`,
          { host: 'vault.example', 'x-vault-token': h.rootToken, 'content-type': 'application/json', ...headers },
          { body: JSON.stringify({ policy: 'path "kv/*" { capabilities = ["read"] }' }), domainName: 'vault.example' },
        ),
      );
    expect(
      (await write('from-evil', { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' })).statusCode,
    ).toBe(403);
    expect((await h.call('GET', '/v1/sys/policies/acl/from-evil', { token: h.rootToken })).status).toBe(404);
    expect(
      (await write('from-console', { origin: 'https://vault.example', 'sec-fetch-site': 'same-origin' })).statusCode,
    ).toBe(204);
    expect((await h.call('GET', '/v1/sys/policies/acl/from-console', { token: h.rootToken })).status).toBe(200);
  });
});
