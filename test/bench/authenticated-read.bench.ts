/**
 * An authenticated read (token lookup + policy check + kv read) at concurrency 16, against the raw DynamoDB
 * `GetItem` rate on the same DynamoDB Local and table, and against two sequential raw `GetItem`s (the token's
 * item, then the data: the floor for "one table round trip per request beyond the data itself").
 * Cases: service, batch and orphan batch tokens through the web-object form of the service in process
 * (`createSecretsApp`'s `app.request`, the same pipeline a Lambda runs, behind web Request/Response objects), then
 * service and batch tokens over real HTTP through the local runtime (`npm start`'s code, its own table on the
 * same DynamoDB Local), driven by the lightest client there is (`raw-http-client.ts`: keep-alive sockets, a
 * prebuilt request, nothing read but the status and the body's length), since it runs on this thread beside the
 * server. An authenticated read fetches the token's item and the data in one BatchGetItem (the read-ahead in `secrets/framework/authorise.ts`), so it makes one
 * DynamoDB call, as the raw GetItem does. Prints requests/s, p50, p99, DynamoDB calls per request, this process's
 * CPU per request and its CPU use while the case ran (all its threads; 100% is one core: DynamoDB Local's JVM is
 * another process on the same two cores), and the ratios.
 * The raw baselines use the SDK's client as anyone gets it; the service runs on its client as the runtimes configure
 * it (`storage/store-client.ts`; the store drops the logger and User-Agent middleware), and one more raw GetItem on that
 * client shows the service's cost beyond the call itself.
 *
 * DynamoDB Local keeps speeding up for a minute or more under load and this machine's load drifts, so the
 * cases run interleaved: several rounds, each giving every case an equal slice, figures summed over rounds.
 * The secrets are read from a kv version 1 mount at `kv/` on both sides (`npm start` mounts `secret/` as kv v2,
 * as `vault server -dev` does, and `kv/` as v1).
 * Figures only: nothing is asserted. BENCH_SMOKE=1 runs a second or two per case (benches-smoke.test.ts).
 * Run: `npm run bench` (BENCH_SECONDS=n per case in total, BENCH_ROUNDS=n, BENCH_CONCURRENCY=n).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BatchGetItemCommand, DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { createCore } from '../../packages/core/src/composition/secrets-core.ts';
import { createSecretsApp } from '../../packages/core/src/http/secrets-app.ts';
import { jsonLogger } from '../../packages/core/src/lib/log.ts';
import { allSecretsFamilies, backendsOf } from '../../packages/core/src/secrets/families.ts';
import { initialize } from '../../packages/core/src/secrets/sys/init.ts';
import { fileKeySource } from '../../packages/core/src/storage/keyring.ts';
import { localClientConfig } from '../../packages/local/src/dynamodb-local.ts';
import { startLocal } from '../../packages/local/src/start-local.ts';
import { ensureTable } from '../../packages/local/src/table.ts';
import { storeClientOptions } from '../../packages/core/src/storage/store-client.ts';
import { startBenchDynamo } from './bench-service.ts';
import { rawHttpGet } from './raw-http-client.ts';
import { collectGarbage, figure, sized } from './summary.ts';

const seconds = sized('BENCH_SECONDS', 10, 0.5);
const rounds = sized('BENCH_ROUNDS', 10, 1);
const concurrency = sized('BENCH_CONCURRENCY', 16, 4);
const warmupSeconds = sized('BENCH_WARMUP_SECONDS', 10, 0.5);
const readPolicy = 'path "kv/bench/*" { capabilities = ["read"] }';

interface Case {
  name: string;
  once: () => Promise<boolean>;
  /** DynamoDB calls so far, when the case's calls go through the counted client. */
  calls?: () => number;
  latencies: number[];
  elapsedSeconds: number;
  failures: number;
  callCount: number;
  /** This process's CPU time (all its threads) while the case ran, µs. */
  cpuMicros: number;
}

const newCase = (name: string, once: () => Promise<boolean>, calls?: () => number): Case => ({
  name,
  once,
  ...(calls ? { calls } : {}),
  latencies: [],
  elapsedSeconds: 0,
  failures: 0,
  callCount: 0,
  cpuMicros: 0,
});

/** `concurrency` workers call `once` back to back for `durationSeconds`, adding to the case's figures. */
async function drive(target: Case, durationSeconds: number, record = true): Promise<void> {
  const until = performance.now() + durationSeconds * 1000;
  const callsBefore = target.calls?.() ?? 0;
  const worker = async () => {
    while (performance.now() < until) {
      const started = performance.now();
      const ok = await target.once();
      if (!record) continue;
      target.latencies.push(performance.now() - started);
      if (!ok) target.failures++;
    }
  };
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  await Promise.all(Array.from({ length: concurrency }, worker));
  if (!record) return;
  target.elapsedSeconds += (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  target.cpuMicros += cpu.user + cpu.system;
  target.callCount += (target.calls?.() ?? 0) - callsBefore;
}

/**
 * Warms every case up, then runs them interleaved, round after round; before each slice a full garbage collection, so
 * that no case pays for the garbage the case before it left.
 */
async function measureAll(cases: Case[]): Promise<void> {
  for (const each of cases) await drive(each, warmupSeconds / cases.length, false);
  for (let round = 0; round < rounds; round++) {
    for (const each of cases) {
      collectGarbage();
      await drive(each, seconds / rounds);
    }
  }
}

/** Counts every DynamoDB call a client sends. */
function counting(client: DynamoDBClient): () => number {
  let calls = 0;
  client.middlewareStack.add(
    (next) => async (args) => {
      calls++;
      return next(args);
    },
    { step: 'initialize', name: 'benchCallCounter' },
  );
  return () => calls;
}

const perSecond = (each: Case) => each.latencies.length / each.elapsedSeconds;

function print(cases: Case[], raw: Case, floor: Case) {
  const header = [
    'case',
    'req/s',
    'p50 ms',
    'p99 ms',
    'ddb calls/req',
    'CPU µs/req',
    'CPU busy',
    'vs raw GetItem',
    'vs 2x GetItem',
    'failed',
  ];
  const lines = cases.map((each) => {
    const sorted = [...each.latencies].sort((a, b) => a - b);
    const at = (quantile: number) =>
      sorted[Math.min(sorted.length - 1, Math.floor(quantile * sorted.length))] ?? Number.NaN;
    return [
      each.name,
      perSecond(each).toFixed(0),
      at(0.5).toFixed(2),
      at(0.99).toFixed(2),
      each.calls ? (each.callCount / each.latencies.length).toFixed(2) : '–',
      (each.cpuMicros / each.latencies.length).toFixed(0),
      `${((100 * each.cpuMicros) / 1e6 / each.elapsedSeconds).toFixed(0)}%`,
      (perSecond(each) / perSecond(raw)).toFixed(2),
      (perSecond(each) / perSecond(floor)).toFixed(2),
      String(each.failures),
    ];
  });
  const widths = header.map((title, column) =>
    Math.max(title.length, ...lines.map((line) => (line[column] as string).length)),
  );
  const format = (cells: string[]) =>
    cells
      .map((cell, column) => (column === 0 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0)))
      .join('  ');
  console.log(format(header));
  console.log(widths.map((width) => '-'.repeat(width)).join('  '));
  for (const line of lines) console.log(format(line));
}

console.log(
  `authenticated read benchmark: concurrency ${concurrency}, ${seconds} s per case in ${rounds} interleaved rounds ` +
    `after ${warmupSeconds} s of warm-up; Node ${process.version}`,
);
const dynamo = await startBenchDynamo();
const keyDir = mkdtempSync(path.join(tmpdir(), 'keyhaven-bench-'));
// The raw baselines' client: the SDK as anyone gets it (its default middleware, its own hashing).
const client = new DynamoDBClient(localClientConfig(dynamo.endpoint));
const calls = counting(client);
// The service's client, configured as the runtimes configure theirs (`storeClientOptions`, and the store drops the
// logger and User-Agent middleware): a raw GetItem on it too shows the service's cost beyond the call itself.
const storeClient = new DynamoDBClient({ ...localClientConfig(dynamo.endpoint), ...storeClientOptions() });
const storeCalls = counting(storeClient);
let local: Awaited<ReturnType<typeof startLocal>> | undefined;
let exitCode = 0;
try {
  // ---- in process: the web-object app (the pipeline a Lambda runs), on its own table --------------------------------------
  const tableName = `bench-${randomUUID()}`;
  await ensureTable(storeClient, tableName);
  const core = await createCore({
    dynamodb: storeClient,
    tableName,
    keySource: fileKeySource(path.join(keyDir, 'keyring.key')),
    backends: backendsOf(allSecretsFamilies),
    log: jsonLogger(() => {}), // formats every line as in production, writes nowhere
  });
  const rootToken = await initialize(core);
  await core.mounts.enable('secret', 'kv', { type: 'kv' });
  const app = createSecretsApp({ core: async () => core, clientIp: () => '127.0.0.1' });
  const call = async (method: string, url: string, token: string, body?: unknown) => {
    const response = await app.request(url, {
      method,
      headers: { 'X-Secrets-Token': token, 'Content-Type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    if (response.status >= 300) throw new Error(`${method} ${url}: ${response.status} ${text}`);
    return text ? JSON.parse(text) : undefined;
  };
  const tokenFor = async (url: string, body: Record<string, unknown>): Promise<string> =>
    (await call('POST', url, rootToken, { policies: ['bench-read'], ttl: '1h', ...body })).auth.client_token;
  await call('POST', '/v1/kv/bench/db', rootToken, { username: 'app', password: 'bench-password' });
  await call('PUT', '/v1/sys/policies/acl/bench-read', rootToken, { policy: readPolicy });
  const serviceToken = await tokenFor('/v1/auth/token/create', {});
  const batchToken = await tokenFor('/v1/auth/token/create', { type: 'batch' });
  // An orphan batch token has no parent to check: no table read at all to authenticate.
  const orphanBatch = await tokenFor('/v1/auth/token/create-orphan', { type: 'batch' });

  const mount = await core.mounts.find('secret', 'kv');
  if (!mount) throw new Error('kv/ is not mounted');
  // The items an authenticated read fetches, read the way the store reads them (a consistent GetItem, its key as
  // attribute values: the lightest call the SDK makes).
  const getItem =
    (key: Record<string, string>, via = client) =>
    async () => {
      const Key = { pk: { S: key.pk as string }, sk: { S: key.sk as string } };
      return (
        (await via.send(new GetItemCommand({ TableName: tableName, Key, ConsistentRead: true }))).Item !== undefined
      );
    };
  const rawData = getItem({ pk: `mount#${mount.uuid}`, sk: 'bench/db' });
  const rawDataStoreClient = getItem({ pk: `mount#${mount.uuid}`, sk: 'bench/db' }, storeClient);
  const rawToken = getItem({ pk: `token#${core.keyring.hash(serviceToken)}`, sk: 'token' });
  // What an authenticated read sends (the read-ahead): the token's item and the data in one BatchGetItem.
  const rawBatch = async () => {
    const Keys = [
      { pk: { S: `token#${core.keyring.hash(serviceToken)}` }, sk: { S: 'token' } },
      { pk: { S: `mount#${mount.uuid}` }, sk: { S: 'bench/db' } },
    ];
    const out = await client.send(
      new BatchGetItemCommand({ RequestItems: { [tableName]: { Keys, ConsistentRead: true } } }),
    );
    return out.Responses?.[tableName]?.length === 2;
  };
  const appRead = (token: string) => async () => {
    const response = await app.request('/v1/kv/bench/db', { headers: { 'X-Secrets-Token': token } });
    await response.arrayBuffer();
    return response.status === 200;
  };

  // ---- over HTTP: the local runtime's listener, its own table on the same DynamoDB Local -----------------
  local = await startLocal({
    dataDir: keyDir,
    dynamoDbEndpoint: dynamo.endpoint,
    tableName: `bench-http-${randomUUID()}`,
    secretsPort: 0,
    schedulerPort: 0,
    log: jsonLogger(() => {}),
  });
  const base = local.secretsUrl;
  const httpCall = async (method: string, url: string, token: string, body?: unknown) => {
    const response = await fetch(`${base}${url}`, {
      method,
      headers: { 'X-Secrets-Token': token, 'Content-Type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    if (response.status >= 300) throw new Error(`${method} ${url}: ${response.status} ${text}`);
    return text ? JSON.parse(text) : undefined;
  };
  const localRoot = local.rootToken as string;
  await httpCall('POST', '/v1/kv/bench/db', localRoot, { username: 'app', password: 'bench-password' });
  await httpCall('PUT', '/v1/sys/policies/acl/bench-read', localRoot, { policy: readPolicy });
  const httpToken = async (body: Record<string, unknown>): Promise<string> =>
    (await httpCall('POST', '/v1/auth/token/create', localRoot, { policies: ['bench-read'], ttl: '1h', ...body })).auth
      .client_token;
  const httpService = await httpToken({});
  const httpBatch = await httpToken({ type: 'batch' });
  // The load generator shares the two cores and this thread with the server, so it is the lightest client there is
  // (raw-http-client.ts): a prebuilt request on keep-alive sockets, reading only the status and Content-Length.
  const httpRead = (token: string) => {
    const get = rawHttpGet(new URL('/v1/kv/bench/db', base), { 'X-Secrets-Token': token });
    return async () => (await get()) === 200;
  };

  const raw = newCase('raw GetItem (the data item)', rawData, calls);
  const rawStoreClient = newCase("raw GetItem on the store's client", rawDataStoreClient, storeCalls);
  const floor = newCase(
    'raw GetItem x2 (token item, then data)',
    async () => (await rawToken()) && (await rawData()),
    calls,
  );
  const appService = newCase('kv read, service token (app.request)', appRead(serviceToken), storeCalls);
  const appBatch = newCase('kv read, batch token (app.request)', appRead(batchToken), storeCalls);
  const viaHttpService = newCase('kv read, service token (HTTP, npm start)', httpRead(httpService));
  const viaHttpBatch = newCase('kv read, batch token (HTTP, npm start)', httpRead(httpBatch));
  const cases = [
    raw,
    rawStoreClient,
    floor,
    newCase('raw BatchGetItem (token item and data)', rawBatch, calls),
    appService,
    appBatch,
    newCase('kv read, orphan batch token (app.request)', appRead(orphanBatch), storeCalls),
    viaHttpService,
    viaHttpBatch,
  ];
  for (const each of cases)
    if (!(await each.once())) throw new Error(`${each.name}: the request failed before measuring`);
  await measureAll(cases);

  console.log('');
  print(cases, raw, floor);
  console.log('');
  console.log(
    'Target (issue 2): each authenticated read at least 0.5 of the raw GetItem rate; issue 28: over HTTP at least 0.7.',
  );
  const ratio = (each: Case) => perSecond(each) / perSecond(raw);
  figure(
    'authenticated-read',
    'kv read, service token, app.request / raw GetItem',
    ratio(appService),
    '>= 0.5 (issue 2)',
  );
  figure('authenticated-read', 'kv read, batch token, app.request / raw GetItem', ratio(appBatch), '>= 0.5 (issue 2)');
  figure('authenticated-read', 'kv read, service token, HTTP / raw GetItem', ratio(viaHttpService), '>= 0.7');
  figure('authenticated-read', 'kv read, batch token, HTTP / raw GetItem', ratio(viaHttpBatch), '>= 0.7');
  figure(
    'authenticated-read',
    "kv read, service token, HTTP / raw GetItem on the store's client",
    perSecond(viaHttpService) / perSecond(rawStoreClient),
    '—',
    "the same call on a client configured as the service's",
  );
  if (cases.some((each) => each.failures > 0)) {
    console.log('Some requests failed (see "failed"): the figures above are not valid.');
    exitCode = 1;
  }
} catch (error) {
  console.error('benchmark failed:', error);
  exitCode = 1;
} finally {
  await local?.stop();
  client.destroy();
  storeClient.destroy();
  await dynamo.stop();
  rmSync(keyDir, { recursive: true, force: true });
}
process.exit(exitCode);
