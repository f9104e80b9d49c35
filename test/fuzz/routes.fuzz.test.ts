import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type Core, createCore } from '../../packages/core/src/composition/secrets-core.ts';
import { createSecretsApp } from '../../packages/core/src/http/secrets-app.ts';
import { silentLogger } from '../../packages/core/src/lib/log.ts';
import type { SchedulerRoute } from '../../packages/core/src/scheduler/http/route.ts';
import {
  createSchedulerApp,
  schedulerRoutes as schedulerTable,
} from '../../packages/core/src/scheduler/composition/scheduler-app.ts';
import { allSecretsFamilies, backendsOf } from '../../packages/core/src/secrets/families.ts';
import { initialize } from '../../packages/core/src/secrets/sys/init.ts';
import { fileKeySource } from '../../packages/core/src/storage/keyring.ts';
import { localClientConfig } from '../../packages/local/src/dynamodb-local.ts';
import { ensureTable } from '../../packages/local/src/table.ts';
import { mountsToEnable, type Route, secretsRoutes } from '../support/secrets-routes.ts';

/**
 * Property-based fuzz of every route of both services, in process against the apps a Lambda serves (on the
 * run's DynamoDB Local, real clock): the secrets routes come from the backends' path tables, the scheduler's
 * from its router. Requests carry wrong types, huge and negative numbers, long and empty names, unicode and NUL,
 * path traversal, odd methods, and missing, bad or valid tokens. No answer may be a 5xx other than a 502 (an
 * upstream the fuzzed config points at cannot be reached; counted apart), and after every request the service
 * still answers a known-good request. Bounded and seeded; the figures are printed.
 */

const SEED = Number(process.env.FUZZ_SEED ?? 20261123);
const RUNS = Number(process.env.FUZZ_RUNS ?? 2_000);
/** A bound on each service's run on a slow machine; the count of requests sent is printed. */
const TIME_LIMIT_MS = Number(process.env.FUZZ_TIME_LIMIT_MS ?? 25_000);

/** Field names the scheduler's bodies use (Nomad's), so that generated bodies reach the validation. */
const schedulerFields = [
  'Name',
  'Description',
  'Type',
  'Policies',
  'Roles',
  'Rules',
  'Global',
  'ExpirationTTL',
  'ExpirationTime',
  'AccessorID',
  'SecretID',
  'ID',
  'AuthMethodName',
  'LoginToken',
  'Selector',
  'BindType',
  'BindName',
  'Config',
  'TokenLocality',
  'MaxTokenTTL',
  'Default',
  'TokenNameFormat',
  'ClientNonce',
  'RedirectURI',
  'Code',
  'State',
  'JobACL',
  'Namespace',
];

function schedulerRoutes(table: readonly SchedulerRoute[]): Route[] {
  const byPath = new Map<string, Set<string>>();
  for (const route of table) {
    const methods = byPath.get(route.path) ?? new Set<string>();
    for (const method of route.methods) methods.add(method);
    byPath.set(route.path, methods);
  }
  return [...byPath].map(([routePath, methods]) => ({
    service: 'scheduler' as const,
    name: `${[...methods].join('|')} ${routePath}`,
    segments: routePath.replace(/^\/v1\//, '').split('/'),
    methods: [...methods],
    fields: schedulerFields,
  }));
}

// ---- generators -------------------------------------------------------------------------------------------------

const nastyStrings = fc.oneof(
  fc.constantFrom(
    '',
    ' ',
    '.',
    '..',
    '../..',
    '../../sys/mounts',
    '%2e%2e',
    '..%2f..',
    '/',
    '//',
    '\\',
    '\u0000',
    'a\u0000b',
    '\uFEFF',
    '\uD83D\uDE00',
    '\u202E',
    'null',
    'undefined',
    'true',
    '0',
    '-1',
    '1e309',
    'NaN',
    '*',
    '+',
    '?',
    '#',
    '%',
    '%00',
    '<script>',
    '$' + '{jndi:x}',
    '{{.Name}}',
    'ldap://127.0.0.1:1',
    'http://127.0.0.1:1/x',
    'https://',
    'cn=x,dc=y',
    '\bnot a dn',
    'root',
    'default',
    'management',
    'client',
    'jwt',
    'oidc',
    'service',
    'batch',
    '1h',
    '-1h',
    '99999999h',
    '0s',
    '5ms',
    'ÿ',
    'ä/ö',
  ),
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.integer({ min: 200, max: 5_000 }).map((length) => 'n'.repeat(length)),
  fc.constantFrom(300, 1_100, 2_000, 3_000, 70_000).map((length) => 'x'.repeat(length)),
);

const nastyNumbers = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: true }),
  fc.constantFrom(
    0,
    -0,
    -1,
    1,
    2 ** 31,
    2 ** 53,
    2 ** 53 + 2,
    -(2 ** 53),
    Number.MAX_VALUE,
    -Number.MAX_VALUE,
    1e-300,
    0.5,
    1e21,
  ),
  fc.constantFrom(
    '9007199254740993',
    '-9007199254740993',
    '99999999999999999999999',
    '1e3',
    '0x10',
    ' 5',
    '5 ',
    '-0',
    '+1',
    '1.5',
  ),
);

const leafValues = fc.oneof(nastyStrings, nastyNumbers, fc.boolean(), fc.constant(null));

const jsonValues: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, leafValues, leafValues, tie('array'), tie('object')),
  array: fc.array(tie('value'), { maxLength: 4 }),
  object: fc.dictionary(fc.oneof(nastyStrings, fc.constantFrom('Name', 'name', 'ttl', 'policies')), tie('value'), {
    maxKeys: 4,
  }),
})).value;

function body(fields: string[]): fc.Arbitrary<string | undefined> {
  const named =
    fields.length > 0 ? fc.subarray(fields, { maxLength: Math.min(6, fields.length) }) : fc.constant([] as string[]);
  const object = named.chain((names) =>
    fc
      .tuple(...names.map(() => jsonValues))
      .map((values) => Object.fromEntries(names.map((name, index) => [name, values[index]]))),
  );
  return fc.oneof(
    { weight: 6, arbitrary: object.map((value) => JSON.stringify(value)) },
    { weight: 1, arbitrary: jsonValues.map((value) => JSON.stringify(value) ?? 'null') },
    {
      weight: 1,
      arbitrary: fc.constantFrom('', '{', '{"a":', 'not json', '[]', 'null', '"x"', '\u0000', '{"__proto__":{"x":1}}'),
    },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );
}

const segment = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom('app', 'x', 'web', 'fuzz', 'a-b_c.d', 'check-out', 'library', 'config') },
  { weight: 3, arbitrary: nastyStrings.filter((text) => text !== '') },
  { weight: 1, arbitrary: fc.uuid() },
);

/** A parameter's value, URL-encoded (a NUL or slash inside a name is sent encoded), or raw for traversal. */
const encodedSegment = fc
  .tuple(segment, fc.integer({ min: 0, max: 9 }))
  .map(([text, coin]) => (coin === 0 ? text.replace(/[?#\s]/g, '_') : encodeURIComponent(text)));

function pathFor(route: Route): fc.Arbitrary<string> {
  return fc
    .tuple(
      ...route.segments.map((part) => {
        if (!part.startsWith(':')) return fc.constant([part]);
        if (part.endsWith('+')) return fc.array(encodedSegment, { minLength: 1, maxLength: 3 });
        if (part.endsWith('*')) return fc.array(encodedSegment, { maxLength: 3 });
        return fc.oneof(
          { weight: 9, arbitrary: encodedSegment.map((text) => [text]) },
          { weight: 1, arbitrary: fc.constant(['']) },
        );
      }),
    )
    .map((parts) => parts.flat().join('/'));
}

const oddMethods = fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS', 'LIST', 'FOO', 'get');

const queries = fc.oneof(
  { weight: 4, arbitrary: fc.constant('') },
  {
    weight: 2,
    arbitrary: fc
      .dictionary(
        fc.constantFrom('list', 'index', 'wait', 'prefix', 'filter', 'namespace', 'topic', 'stale', 'x', 'ttl'),
        fc.oneof(nastyStrings, nastyNumbers.map(String)),
        {
          maxKeys: 3,
        },
      )
      .map((query) => {
        // A valid blocking query must not block the fuzz: its wait is kept tiny.
        if (query.index !== undefined && /^\s*\d+\s*$/.test(query.index)) query.wait = '5ms';
        return `?${new URLSearchParams(query).toString()}`;
      }),
  },
);

type TokenKind = 'none' | 'bad' | 'valid';
const tokenKinds = fc.constantFrom<TokenKind>('none', 'bad', 'valid', 'valid');
const badTokens = fc.oneof(
  nastyStrings,
  fc.constantFrom('hvs.', 's.x', 'Bearer', '00000000-0000-0000-0000-000000000000'),
);

interface FuzzRequest {
  method: string;
  url: string;
  body: string | undefined;
  token: TokenKind;
  badToken: string;
  header: 'primary' | 'vault' | 'bearer';
}

function requestsFor(routes: Route[]): fc.Arbitrary<{ route: Route; request: FuzzRequest }> {
  return fc.constantFrom(...routes).chain((route) =>
    fc
      .record({
        method: fc.oneof(
          { weight: 4, arbitrary: fc.constantFrom(...route.methods) },
          { weight: 1, arbitrary: oddMethods },
        ),
        path: pathFor(route),
        query: queries,
        body: body(route.fields),
        token: tokenKinds,
        badToken: badTokens,
        header: fc.constantFrom<FuzzRequest['header']>('primary', 'primary', 'vault', 'bearer'),
      })
      .map(({ method, path: routePath, query, body: text, token, badToken, header }) => {
        const listQuery = method === 'GET?list' ? (query ? '&list=true' : '?list=true') : '';
        return {
          route,
          request: {
            method: method === 'GET?list' ? 'GET' : method,
            url: `/v1/${routePath}${query}${listQuery}`,
            body: text,
            token,
            badToken,
            header,
          },
        };
      }),
  );
}

// ---- the services -----------------------------------------------------------------------------------------------

interface Figures {
  requests: number;
  statuses: Map<number, number>;
  byRoute: Map<string, number>;
  /** One example per route and status. */
  serverErrors: string[];
  serverErrorCount: number;
  slowest: { ms: number; what: string };
}

const newFigures = (): Figures => ({
  requests: 0,
  statuses: new Map(),
  byRoute: new Map(),
  serverErrors: [],
  serverErrorCount: 0,
  slowest: { ms: 0, what: '' },
});

const serverErrorSeen = new WeakMap<Figures, Set<string>>();

function recordServerError(figures: Figures, route: Route, status: number, request: FuzzRequest, text: string) {
  figures.serverErrorCount++;
  const seen = serverErrorSeen.get(figures) ?? new Set<string>();
  serverErrorSeen.set(figures, seen);
  const key = `${status} ${route.name}`;
  if (seen.has(key)) return;
  seen.add(key);
  figures.serverErrors.push(`${key}: ${describeRequest(request)} -> ${text.slice(0, 200)}`);
}

/** The request, with long runs of one character shown as `x×2000`. */
function describeRequest(request: FuzzRequest): string {
  const short = (text: string) => text.replace(/(.)\1{19,}/gu, (run, char: string) => `${char}×${[...run].length}`);
  const body = request.body === undefined ? '' : ` body=${JSON.stringify(short(request.body))}`;
  const url = short(request.url);
  return `${request.method} ${url} token=${request.token}${request.token === 'bad' ? `(${JSON.stringify(request.badToken.slice(0, 40))})` : ''}${body}`;
}

async function send(
  fetch: (request: Request) => Response | Promise<Response>,
  request: FuzzRequest,
  tokenHeader: string,
  validToken: string,
): Promise<{ status: number; text: string }> {
  const headers = new Headers();
  const token = request.token === 'valid' ? validToken : request.token === 'bad' ? request.badToken : undefined;
  if (token !== undefined) {
    // Headers refuse some characters (NUL, newlines): such a token cannot be sent over HTTP either.
    const value = [...token].map((char) => (char < ' ' || char > '~' ? '?' : char)).join('');
    if (request.header === 'bearer') headers.set('Authorization', `Bearer ${value}`);
    else headers.set(request.header === 'vault' ? 'X-Vault-Token' : tokenHeader, value);
  }
  const method = request.method.toUpperCase();
  const hasBody = request.body !== undefined && method !== 'GET' && method !== 'HEAD';
  if (hasBody) headers.set('content-type', 'application/json');
  const response = await fetch(
    new Request(`http://127.0.0.1${request.url}`, {
      method: request.method,
      headers,
      ...(hasBody ? { body: request.body } : {}),
      signal: AbortSignal.timeout(20_000),
    }),
  );
  // An accepted event stream never ends: its first line is enough.
  if (request.url.startsWith('/v1/event/stream') && response.status === 200 && response.body) {
    const reader = response.body.getReader();
    const first = await reader.read();
    await reader.cancel();
    return { status: response.status, text: new TextDecoder().decode(first.value ?? new Uint8Array()) };
  }
  return { status: response.status, text: await response.text() };
}

async function fuzz(
  name: string,
  routes: Route[],
  fetch: (request: Request) => Response | Promise<Response>,
  tokenHeader: string,
  tokens: { valid(): string; afterRequest?(request: FuzzRequest): Promise<void> },
  knownGood: () => Promise<string | undefined>,
): Promise<Figures> {
  const figures = newFigures();
  const started = Date.now();
  const property = fc.asyncProperty(requestsFor(routes), async ({ route, request }) => {
    const began = Date.now();
    const { status, text } = await send(fetch, request, tokenHeader, tokens.valid());
    const ms = Date.now() - began;
    await tokens.afterRequest?.(request);
    figures.requests++;
    figures.statuses.set(status, (figures.statuses.get(status) ?? 0) + 1);
    figures.byRoute.set(route.name, (figures.byRoute.get(route.name) ?? 0) + 1);
    if (ms > figures.slowest.ms) figures.slowest = { ms, what: describeRequest(request) };
    // Recorded, not thrown: one run lists every route that answered a 5xx (the test fails on them below).
    if (status >= 500 && status !== 502) recordServerError(figures, route, status, request, text);
    const broken = await knownGood();
    if (broken) throw new Error(`after ${describeRequest(request)}: the known-good request ${broken}`);
  });
  const details = await fc.check(property, {
    seed: SEED,
    numRuns: RUNS,
    interruptAfterTimeLimit: TIME_LIMIT_MS,
    endOnFailure: true,
  });
  const histogram = [...figures.statuses]
    .sort(([a], [b]) => a - b)
    .map(([status, count]) => `${status}:${count}`)
    .join(' ');
  const unreached = routes.filter((route) => !figures.byRoute.has(route.name));
  console.log(
    [
      `${name} fuzz: ${figures.requests} requests over ${routes.length} routes in ${Date.now() - started} ms (seed ${SEED}, ${details.numRuns} runs${details.interrupted ? ', stopped by the time bound' : ''})`,
      `  statuses: ${histogram}`,
      `  slowest: ${figures.slowest.ms} ms ${figures.slowest.what}`,
      ...(unreached.length
        ? [`  routes not reached by the random run (sent one request each below): ${unreached.length}`]
        : []),
      ...figures.serverErrors.map((line) => `  5xx: ${line}`),
      ...(figures.serverErrorCount > figures.serverErrors.length
        ? [`  (${figures.serverErrorCount} 5xx answers in all)`]
        : []),
    ].join('\n'),
  );
  // Every route gets a request even when the random run was cut short: one each, with a nasty parameter.
  for (const route of unreached) {
    const sample = fc.sample(requestsFor([route]), { seed: SEED, numRuns: 1 })[0];
    if (!sample) continue;
    const { status, text } = await send(fetch, sample.request, tokenHeader, tokens.valid());
    figures.requests++;
    figures.statuses.set(status, (figures.statuses.get(status) ?? 0) + 1);
    figures.byRoute.set(route.name, 1);
    if (status >= 500 && status !== 502) recordServerError(figures, route, status, sample.request, text);
  }
  if (details.failed) {
    const counterexample = details.counterexample?.[0] as { request: FuzzRequest } | undefined;
    throw new Error(
      `${name} fuzz failed (seed ${SEED}, path ${details.counterexamplePath}): ${counterexample ? describeRequest(counterexample.request) : ''}\n${String(details.errorInstance)}`,
    );
  }
  return figures;
}

// ---- setup ------------------------------------------------------------------------------------------------------

let client: DynamoDBClient;
let keyDir: string;

beforeAll(() => {
  client = new DynamoDBClient(localClientConfig(inject('dynamoEndpoint')));
  keyDir = mkdtempSync(path.join(tmpdir(), 'keyhaven-fuzz-'));
});

afterAll(() => {
  client.destroy();
  rmSync(keyDir, { recursive: true, force: true });
});

async function newCore(withBackends: boolean): Promise<Core> {
  const tableName = `fuzz-${randomUUID()}`;
  await ensureTable(client, tableName);
  return createCore({
    dynamodb: client,
    tableName,
    keySource: fileKeySource(path.join(keyDir, `${tableName}.key`)),
    backends: withBackends ? backendsOf(allSecretsFamilies) : [],
    log: silentLogger,
  });
}

describe('fuzz of every route', () => {
  it('the secrets service: no 5xx, and it still answers', async () => {
    const core = await newCore(true);
    const rootToken = await initialize(core);
    // Every backend but the built-ins, where the route table below mounts it (both derived from the family list).
    for (const { table, path: mountPath, type } of mountsToEnable(backendsOf(allSecretsFamilies))) {
      await core.mounts.enable(table, mountPath, { type, description: 'fuzz' });
    }
    const app = createSecretsApp({ core: async () => core, clientIp: () => '127.0.0.1' });
    const fetch = (request: Request) => app.fetch(request);
    // A token the fuzz never holds, for the known-good request.
    const created = await app.request('/v1/auth/token/create-orphan', {
      method: 'POST',
      headers: { 'X-Secrets-Token': rootToken, 'Content-Type': 'application/json' },
      body: JSON.stringify({ policies: ['root'], display_name: 'fuzz-check' }),
    });
    expect(created.status).toBe(200);
    const checkToken = ((await created.json()) as { auth: { client_token: string } }).auth.client_token;
    const knownGood = async () => {
      const health = await app.request('/v1/sys/health');
      if (health.status !== 200) return `GET sys/health answered ${health.status}`;
      const self = await app.request('/v1/auth/token/lookup-self', { headers: { 'X-Secrets-Token': checkToken } });
      if (self.status !== 200) return `GET auth/token/lookup-self answered ${self.status}: ${await self.text()}`;
      return undefined;
    };

    // The fuzz's valid token may revoke itself (revoke-self is a route like any other): then it gets a new one.
    let validToken = rootToken;
    const tokens = {
      valid: () => validToken,
      async afterRequest(request: FuzzRequest) {
        if (request.token !== 'valid' || !/revoke/.test(request.url)) return;
        const self = await app.request('/v1/auth/token/lookup-self', { headers: { 'X-Secrets-Token': validToken } });
        if (self.status === 200) return;
        const fresh = await app.request('/v1/auth/token/create-orphan', {
          method: 'POST',
          headers: { 'X-Secrets-Token': checkToken, 'Content-Type': 'application/json' },
          body: JSON.stringify({ policies: ['root'], display_name: 'fuzz' }),
        });
        validToken = ((await fresh.json()) as { auth: { client_token: string } }).auth.client_token;
      },
    };

    const routes = secretsRoutes(backendsOf(allSecretsFamilies));
    const figures = await fuzz('secrets', routes, fetch, 'X-Secrets-Token', tokens, knownGood);
    expect(figures.serverErrors).toEqual([]);
    expect(routes.filter((route) => !figures.byRoute.has(route.name))).toEqual([]);
    expect(await knownGood()).toBeUndefined();
  }, 180_000);

  it('the scheduler service: no 5xx, and it still answers', async () => {
    const core = await newCore(false);
    const app = createSchedulerApp({
      core: async () => core,
      clientIp: () => '127.0.0.1',
      heartbeatMs: 200,
      eventPollMs: 50,
    });
    const fetch = (request: Request) => app.fetch(request);
    const bootstrap = await app.request('/v1/acl/bootstrap', { method: 'POST' });
    expect(bootstrap.status).toBe(200);
    const management = ((await bootstrap.json()) as { SecretID: string }).SecretID;
    const created = await app.request('/v1/acl/token', {
      method: 'POST',
      headers: { 'X-Scheduler-Token': management, 'Content-Type': 'application/json' },
      body: JSON.stringify({ Name: 'fuzz-check', Type: 'management' }),
    });
    expect(created.status).toBe(200);
    const checkToken = ((await created.json()) as { SecretID: string }).SecretID;
    const knownGood = async () => {
      const health = await app.request('/v1/agent/health');
      if (health.status !== 200) return `GET agent/health answered ${health.status}`;
      const self = await app.request('/v1/acl/token/self', { headers: { 'X-Scheduler-Token': checkToken } });
      if (self.status !== 200) return `GET acl/token/self answered ${self.status}: ${await self.text()}`;
      return undefined;
    };

    const routes = schedulerRoutes(schedulerTable);
    const figures = await fuzz('scheduler', routes, fetch, 'X-Scheduler-Token', { valid: () => management }, knownGood);
    expect(figures.serverErrors).toEqual([]);
    expect(routes.filter((route) => !figures.byRoute.has(route.name))).toEqual([]);
    expect(await knownGood()).toBeUndefined();
  }, 180_000);
});
