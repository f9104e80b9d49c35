/**
 * An authenticated read (token lookup + policy check + kv read) at concurrency 16, against the raw DynamoDB
 * `GetItem` rate on the same DynamoDB Local and table, and against two sequential raw `GetItem`s (the token's
 * item, then the data: the floor for "one table round trip per request beyond the data itself"). Cases: service token and batch token through the Hono
 * app in process (what a Lambda runs), then the same over real HTTP through the local runtime (`npm start`'s
 * code, its own table on the same DynamoDB Local). Prints requests/s, p50, p99, DynamoDB calls per request
 * and the ratio to the raw rate. Figures only: nothing is asserted.
 * Run: `npm run bench` (BENCH_SECONDS=n per case, BENCH_CONCURRENCY=n).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { createCore } from '../../packages/core/src/core.ts';
import { createSecretsApp } from '../../packages/core/src/http/secrets-app.ts';
import { jsonLogger } from '../../packages/core/src/lib/log.ts';
import { allSecretsFamilies, backendsOf } from '../../packages/core/src/secrets/families.ts';
import { initialize } from '../../packages/core/src/secrets/sys/init.ts';
import { fileKeySource } from '../../packages/core/src/storage/keyring.ts';
import { localClientConfig, startDynamoDbLocal } from '../../packages/local/src/dynamodb-local.ts';
import { startLocal } from '../../packages/local/src/runtime.ts';
import { ensureTable } from '../../packages/local/src/table.ts';

const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 16);
const warmupSeconds = 1;
const jvmWarmupSeconds = Number(process.env.BENCH_WARMUP_SECONDS ?? 8);
const readPolicy = 'path "secret/bench/*" { capabilities = ["read"] }';

interface Figures {
  name: string;
  requests: number;
  failures: number;
  perSecond: number;
  p50: number;
  p99: number;
  dynamoCallsPerRequest?: number;
}

/** `concurrency` workers call `once` back to back for `durationSeconds`; latencies in ms. */
async function measure(name: string, once: () => Promise<boolean>, countCalls?: () => number, durationSeconds = seconds): Promise<Figures> {
  const drive = async (durationSeconds: number, latencies: number[] | undefined) => {
    const until = performance.now() + durationSeconds * 1000;
    let failures = 0;
    const worker = async () => {
      while (performance.now() < until) {
        const started = performance.now();
        const ok = await once();
        latencies?.push(performance.now() - started);
        if (!ok) failures++;
      }
    };
    const started = performance.now();
    await Promise.all(Array.from({ length: concurrency }, worker));
    return { failures, elapsed: (performance.now() - started) / 1000 };
  };
  await drive(warmupSeconds, undefined);
  const latencies: number[] = [];
  const callsBefore = countCalls?.() ?? 0;
  const { failures, elapsed } = await drive(durationSeconds, latencies);
  const calls = (countCalls?.() ?? 0) - callsBefore;
  latencies.sort((a, b) => a - b);
  const at = (quantile: number) => latencies[Math.min(latencies.length - 1, Math.floor(quantile * latencies.length))] ?? Number.NaN;
  return {
    name,
    requests: latencies.length,
    failures,
    perSecond: latencies.length / elapsed,
    p50: at(0.5),
    p99: at(0.99),
    ...(countCalls ? { dynamoCallsPerRequest: calls / latencies.length } : {}),
  };
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

function print(rows: Figures[], raw: Figures, floor: Figures) {
  const header = ['case', 'req/s', 'p50 ms', 'p99 ms', 'ddb calls/req', 'vs raw GetItem', 'vs 2x GetItem', 'failed'];
  const lines = rows.map((row) => [
    row.name,
    row.perSecond.toFixed(0),
    row.p50.toFixed(2),
    row.p99.toFixed(2),
    row.dynamoCallsPerRequest === undefined ? '–' : row.dynamoCallsPerRequest.toFixed(2),
    (row.perSecond / raw.perSecond).toFixed(2),
    (row.perSecond / floor.perSecond).toFixed(2),
    String(row.failures),
  ]);
  const widths = header.map((title, column) => Math.max(title.length, ...lines.map((line) => (line[column] as string).length)));
  const format = (cells: string[]) => cells.map((cell, column) => (column === 0 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0))).join('  ');
  console.log(format(header));
  console.log(widths.map((width) => '-'.repeat(width)).join('  '));
  for (const line of lines) console.log(format(line));
}

console.log(`authenticated read benchmark: concurrency ${concurrency}, ${seconds} s per case after ${warmupSeconds} s warm-up; Node ${process.version}`);
const dynamo = await startDynamoDbLocal({});
const keyDir = mkdtempSync(path.join(tmpdir(), 'keyhaven-bench-'));
const client = new DynamoDBClient(localClientConfig(dynamo.endpoint));
const calls = counting(client);
let local: Awaited<ReturnType<typeof startLocal>> | undefined;
let exitCode = 0;
try {
  // ---- in process: the Hono app a Lambda runs, on its own table --------------------------------------
  const tableName = `bench-${randomUUID()}`;
  await ensureTable(client, tableName);
  const core = await createCore({
    dynamodb: client,
    tableName,
    keySource: fileKeySource(path.join(keyDir, 'keyring.key')),
    backends: backendsOf(allSecretsFamilies),
    log: jsonLogger(() => {}), // formats every line as in production, writes nowhere
  });
  const rootToken = await initialize(core);
  await core.mounts.enable('secret', 'secret', { type: 'kv' });
  const app = createSecretsApp({ core: async () => core, clientIp: () => '127.0.0.1' });
  const call = async (method: string, url: string, token: string, body?: unknown) => {
    const response = await app.request(url, {
      method,
      headers: { 'X-Secrets-Token': token },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    if (response.status >= 300) throw new Error(`${method} ${url}: ${response.status} ${text}`);
    return text ? JSON.parse(text) : undefined;
  };
  await call('POST', '/v1/secret/bench/db', rootToken, { username: 'app', password: 'bench-password' });
  await call('PUT', '/v1/sys/policies/acl/bench-read', rootToken, { policy: readPolicy });
  const serviceToken: string = (await call('POST', '/v1/auth/token/create', rootToken, { policies: ['bench-read'], ttl: '1h' })).auth.client_token;
  const batchToken: string = (await call('POST', '/v1/auth/token/create', rootToken, { policies: ['bench-read'], ttl: '1h', type: 'batch' })).auth.client_token;
  // An orphan batch token has no parent to check: no table read at all to authenticate.
  const orphanBatch: string = (await call('POST', '/v1/auth/token/create-orphan', rootToken, { policies: ['bench-read'], ttl: '1h', type: 'batch' }))
    .auth.client_token;

  const mount = await core.mounts.find('secret', 'secret');
  if (!mount) throw new Error('secret/ is not mounted');
  const documents = DynamoDBDocumentClient.from(client);
  // The same item the kv read fetches, read the way the store reads it (consistent GetItem).
  const rawGet = async () => {
    const out = await documents.send(new GetCommand({ TableName: tableName, Key: { pk: `mount#${mount.uuid}`, sk: 'bench/db' }, ConsistentRead: true }));
    return out.Item !== undefined;
  };
  const appRead = (token: string) => async () => {
    const response = await app.request('/v1/secret/bench/db', { headers: { 'X-Secrets-Token': token } });
    await response.arrayBuffer();
    return response.status === 200;
  };
  if (!(await rawGet()) || !(await appRead(serviceToken)()) || !(await appRead(batchToken)()) || !(await appRead(orphanBatch)())) {
    throw new Error('a read failed before measuring');
  }

  // DynamoDB Local's JVM speeds up severalfold over its first seconds of load (JIT): warm it with every kind
  // of request before measuring anything, so the first case is not measured against a cold server.
  console.log(`warming DynamoDB Local up for ${jvmWarmupSeconds} s…`);
  await measure('warm-up', async () => (await Promise.all([rawGet(), appRead(serviceToken)(), appRead(batchToken)()])).every(Boolean), undefined, jvmWarmupSeconds);
  // Raw GetItem is measured before and after the app cases: this machine's load drifts, and the ratio uses both.
  const rawBefore = await measure('raw GetItem (same item)', rawGet, calls);
  const rows = [rawBefore];
  // The floor for a request that needs one round trip beyond the data: the token's item, then the data.
  const tokenItem = { pk: `token#${core.keyring.hash(serviceToken)}`, sk: 'token' };
  const rawToken = async () => (await documents.send(new GetCommand({ TableName: tableName, Key: tokenItem, ConsistentRead: true }))).Item !== undefined;
  const floor = await measure('raw GetItem x2 (token item, then data)', async () => (await rawToken()) && (await rawGet()), calls);
  rows.push(floor);
  rows.push(await measure('kv read, service token (app.request)', appRead(serviceToken), calls));
  rows.push(await measure('kv read, batch token (app.request)', appRead(batchToken), calls));
  rows.push(await measure('kv read, orphan batch token (app.request)', appRead(orphanBatch), calls));
  const rawAfter = await measure('raw GetItem (again)', rawGet, calls);
  rows.push(rawAfter);
  const raw = { ...rawBefore, name: 'raw GetItem (mean)', perSecond: (rawBefore.perSecond + rawAfter.perSecond) / 2 };

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
    const response = await fetch(`${base}${url}`, { method, headers: { 'X-Secrets-Token': token }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    const text = await response.text();
    if (response.status >= 300) throw new Error(`${method} ${url}: ${response.status} ${text}`);
    return text ? JSON.parse(text) : undefined;
  };
  const localRoot = local.rootToken as string;
  await httpCall('POST', '/v1/secret/bench/db', localRoot, { username: 'app', password: 'bench-password' });
  await httpCall('PUT', '/v1/sys/policies/acl/bench-read', localRoot, { policy: readPolicy });
  const httpService: string = (await httpCall('POST', '/v1/auth/token/create', localRoot, { policies: ['bench-read'], ttl: '1h' })).auth.client_token;
  const httpBatch: string = (await httpCall('POST', '/v1/auth/token/create', localRoot, { policies: ['bench-read'], ttl: '1h', type: 'batch' })).auth.client_token;
  const httpRead = (token: string) => async () => {
    const response = await fetch(`${base}/v1/secret/bench/db`, { headers: { 'X-Secrets-Token': token } });
    await response.arrayBuffer();
    return response.status === 200;
  };
  rows.push(await measure('kv read, service token (HTTP, npm start)', httpRead(httpService)));
  rows.push(await measure('kv read, batch token (HTTP, npm start)', httpRead(httpBatch)));

  console.log('');
  print(rows, raw, floor);
  console.log('');
  console.log(`Ratios are to the mean raw GetItem rate, ${raw.perSecond.toFixed(0)} req/s, and to two sequential GetItems.`);
  console.log('Target (issue 2): each authenticated read at least 0.5 of the raw GetItem rate.');
  if (rows.some((row) => row.failures > 0)) {
    console.log('Some requests failed (see "failed"): the figures above are not valid.');
    exitCode = 1;
  }
} catch (error) {
  console.error('benchmark failed:', error);
  exitCode = 1;
} finally {
  await local?.stop();
  client.destroy();
  await dynamo.stop();
  rmSync(keyDir, { recursive: true, force: true });
}
process.exit(exitCode);
