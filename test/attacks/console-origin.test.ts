import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lambdaHandler } from '../../packages/core/src/http/lambda-handler.ts';
import { schedulerFront, schedulerNodeListener } from '../../packages/core/src/scheduler/composition/scheduler-app.ts';
import { type SchedulerHarness, startScheduler } from '../support/scheduler-harness.ts';
import { gatewayEvent } from './lambda-event.ts';

/**
 * The scheduler answers CORS for the web console's origin only (docs/security.md, "Web console"): a page on any other
 * origin, or one that spells the console's origin nearly right, may send a request as it always could but gets no
 * `Access-Control-Allow-Origin`, so its script cannot read the answer; credentials mode is never allowed (the console
 * sends its token in a header, never a cookie). Both ways the service is served: npm start's node listener (over a
 * loopback socket) and the Lambda adapter.
 */
const consoleOrigin = 'https://console.example';
let s: SchedulerHarness;
let management: string;
let server: Server | undefined;
type Answer = { status: number; headers: Record<string, string | undefined>; text: string };
const adapters: Record<string, (method: string, path: string, headers: Record<string, string>) => Promise<Answer>> = {};

beforeAll(async () => {
  s = await startScheduler();
  management = await s.bootstrap();
  const options = { core: async () => s.core, consoleOrigins: () => [consoleOrigin] };
  const listening = createServer(schedulerNodeListener({ ...options, trustedProxies: [] }));
  server = listening;
  await new Promise<void>((resolve) => listening.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(listening.address() as AddressInfo).port}`;
  adapters.node = async (method, path, headers) => {
    const response = await fetch(`${base}${path}`, { method, headers });
    return { status: response.status, headers: Object.fromEntries(response.headers), text: await response.text() };
  };
  const lambda = lambdaHandler(schedulerFront(options), []);
  adapters.lambda = async (method, path, headers) => {
    // API Gateway's payload 2.0 gives header names in lower case.
    const lower = Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
    const event = gatewayEvent(method, path, { host: 'api.example', ...lower }, { domainName: 'api.example' });
    const result = await lambda(event);
    const answered = Object.fromEntries(
      Object.entries(result.headers ?? {}).map(([name, value]) => [name.toLowerCase(), String(value)]),
    );
    return { status: result.statusCode ?? 0, headers: answered, text: String(result.body ?? '') };
  };
});
afterAll(async () => {
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  await s?.close();
});

const preflight = (origin: string) => ({
  Origin: origin,
  'Access-Control-Request-Method': 'POST',
  'Access-Control-Request-Headers': 'x-nomad-token, content-type',
});
const strangers = [
  'https://evil.example',
  'null',
  'http://console.example',
  'https://console.example.evil.example',
  'https://evil.example/https://console.example',
  'https://console.example:8443',
  'HTTPS://CONSOLE.EXAMPLE',
];

describe.each(['node', 'lambda'])('scheduler CORS through the %s adapter', (name) => {
  const call = (method: string, path: string, headers: Record<string, string>) =>
    (adapters[name] as NonNullable<(typeof adapters)['node']>)(method, path, headers);

  it('answers the console origin: its preflight and its reads name it, allow the token header, and never credentials', async () => {
    const allowed = await call('OPTIONS', '/v1/acl/token/self', preflight(consoleOrigin));
    expect(allowed.status).toBeLessThan(300);
    expect(allowed.headers['access-control-allow-origin']).toBe(consoleOrigin);
    expect(allowed.headers['access-control-allow-headers']?.toLowerCase()).toContain('x-nomad-token');
    expect(allowed.headers['access-control-allow-credentials']).toBeUndefined();
    const read = await call('GET', '/v1/acl/token/self', { Origin: consoleOrigin, 'X-Nomad-Token': management });
    expect(read.status).toBe(200);
    expect(read.headers['access-control-allow-origin']).toBe(consoleOrigin);
    expect(read.headers['access-control-allow-credentials']).toBeUndefined();
  });

  it.each(strangers)(
    'gives a page at %s no Access-Control-Allow-Origin, on a preflight or on a read with a stolen token',
    async (origin) => {
      const refused = await call('OPTIONS', '/v1/acl/token/self', preflight(origin));
      expect(refused.headers['access-control-allow-origin']).toBeUndefined();
      expect(refused.headers['access-control-allow-credentials']).toBeUndefined();
      const read = await call('GET', '/v1/acl/token/self', { Origin: origin, 'X-Nomad-Token': management });
      expect(read.headers['access-control-allow-origin']).toBeUndefined();
      // What a login answers (a new token's secret) is unreadable to such a page too.
      const login = await call('POST', '/v1/acl/login', { Origin: origin, 'Content-Type': 'application/json' });
      expect(login.headers['access-control-allow-origin']).toBeUndefined();
    },
  );
});
