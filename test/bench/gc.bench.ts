/**
 * What the garbage collection costs (`scheduler/cluster/system/gc.ts`, as `PUT /v1/system/gc` requests it:
 * `forced-gc.ts`): JOBS terminal batch jobs (default 1,000; smoke 20), each of count 1: one submitted over HTTP, placed
 * by the evaluation worker on a seeded node and reported `complete` by it (so it is dead, with its version, summary,
 * evaluation and allocation and the allocation's two links), and its items copied under new IDs for the others
 * (each signed again as its kind; that path's cost is the plan-apply bench's, and at ~100 DynamoDB Local calls a job
 * it would take half an hour here). Then the forced collection as the
 * product runs it: `PUT /v1/system/gc` (its answer timed), and the request run (`sweep.ts` `runRequestedGc`, what the
 * table stream's consumer calls), again while jobs are left (a run deletes at most 2,000 items), timed and metered
 * (`capacity-meter.ts`: DynamoDB's consumed units per call). The baseline, in the same run on the same DynamoDB Local:
 * exactly the items the collection deleted (the table scanned before and after), copied to a table of their own and
 * deleted there with raw `BatchWriteItem` calls of 25, PARALLEL (default 4) at a time — the floor of deleting those
 * items, with no reads, no conditions, no index and no events.
 * Run: `npx tsx test/bench/gc.bench.ts` (JOBS=n, PARALLEL=n; BENCH_SMOKE=1: 20 jobs).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type AttributeValue, BatchWriteItemCommand, DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import {
  Allocations,
  allocationKind,
  allocationLinkKind,
} from '../../packages/core/src/scheduler/cluster/allocations/store.ts';
import { Evaluations, evaluationKind } from '../../packages/core/src/scheduler/cluster/evaluations/store.ts';
import { jobKind, jobVersionKind } from '../../packages/core/src/scheduler/cluster/jobs/store.ts';
import { forcedGcPending } from '../../packages/core/src/scheduler/cluster/system/forced-gc.ts';
import { jobPk, jobSummaryPk, jobVersionPk } from '../../packages/core/src/scheduler/keys.ts';
import { runRequestedGc } from '../../packages/core/src/scheduler/sweep.ts';
import { EvaluationWorker } from '../../packages/core/src/scheduler/worker/evaluation-worker.ts';
import type { ItemKind } from '../../packages/core/src/storage/item-mac.ts';
import type { Item, Key, Write } from '../../packages/core/src/storage/store.ts';
import { storeClientOptions } from '../../packages/core/src/storage/store-client.ts';
import { localClientConfig } from '../../packages/local/src/dynamodb-local.ts';
import { ensureTable } from '../../packages/local/src/table.ts';
import { startBenchDynamo, startBenchScheduler } from './bench-service.ts';
import { seedReadyNodes } from './seed-nodes.ts';
import { CapacityMeter } from './capacity-meter.ts';
import { collectGarbage, figure, sized } from './summary.ts';

const bench = 'gc';
const count = sized('JOBS', 1000, 20);
const parallel = sized('PARALLEL', 4, 4);
const nodeCount = 5;

/** A copied job's IDs. */
interface Ids {
  job: string;
  evaluation: string;
  allocation: string;
}

type RawItem = Record<string, AttributeValue>;

const dynamo = await startBenchDynamo();
const keyDir = mkdtempSync(path.join(tmpdir(), 'keyhaven-bench-'));
const client = new DynamoDBClient({ ...localClientConfig(dynamo.endpoint), ...storeClientOptions() });
const meter = new CapacityMeter();
meter.attach(client);

/** Every item of `table`, by its key. */
async function scan(table: string): Promise<Map<string, RawItem>> {
  const items = new Map<string, RawItem>();
  let start: RawItem | undefined;
  do {
    const out = await client.send(new ScanCommand({ TableName: table, ExclusiveStartKey: start }));
    for (const item of out.Items ?? []) items.set(`${item.pk?.S}\u0000${item.sk?.S}`, item);
    start = out.LastEvaluatedKey;
  } while (start);
  return items;
}

/** Raw `BatchWriteItem` calls of 25 (what DynamoDB leaves unprocessed sent again), `parallel` at a time. */
async function batchWrite(table: string, requests: Array<Record<string, unknown>>): Promise<void> {
  const chunks: Array<typeof requests> = [];
  for (let start = 0; start < requests.length; start += 25) chunks.push(requests.slice(start, start + 25));
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(parallel, chunks.length) }, async () => {
      while (next < chunks.length) {
        let pending = chunks[next++] as never[];
        while (pending.length > 0) {
          const out = await client.send(new BatchWriteItemCommand({ RequestItems: { [table]: pending } }));
          pending = (out.UnprocessedItems?.[table] ?? []) as never[];
        }
      }
    }),
  );
}

try {
  const { core, tableName, scheduler, app, root } = await startBenchScheduler(client, keyDir);
  const rawTable = `bench-raw-${randomUUID()}`;
  await ensureTable(client, rawTable);
  const call = async (method: string, url: string, body: unknown, token = root.SecretID) => {
    const response = await app.request(url, {
      method,
      headers: { 'X-Nomad-Token': token, 'Content-Type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    if (response.status !== 200) throw new Error(`${method} ${url}: ${response.status} ${text}`);
    return text;
  };

  // A few ready nodes, stored as registration stores them; their secrets report their allocations.
  const secrets = await seedReadyNodes(core, scheduler, nodeCount, 47);

  // One batch job through the product's path: submitted, placed by the worker, reported complete by its node.
  const seedStarted = performance.now();
  const template = 'done-0';
  const job = {
    ID: template,
    Type: 'batch',
    TaskGroups: [
      {
        Name: 'work',
        Count: 1,
        Tasks: [{ Name: 'run', Driver: 'raw_exec', Config: { command: 'true' }, Resources: { CPU: 10, MemoryMB: 10 } }],
      },
    ],
  };
  const evalId = JSON.parse(await call('PUT', '/v1/jobs', { Job: job })).EvalID as string;
  if ((await new EvaluationWorker(scheduler).runEvaluations([evalId])).get(evalId) !== 'complete')
    throw new Error('the template job was not placed');
  const [alloc] = await scheduler.allocations.ofJob('default', template);
  if (!alloc) throw new Error('the template job has no allocation');
  await call(
    'PUT',
    `/v1/client/node/${alloc.NodeID}/allocations`,
    { Allocs: [{ ID: alloc.ID, ClientStatus: 'complete' }] },
    secrets.get(alloc.NodeID),
  );
  // Its items as the product wrote them (with the key each is at, and its kind when it is signed) ...
  const at = async (key: Key) => (await core.store.get(key.pk, key.sk)) as Item;
  const templateItems: Array<{ item: Item; key: (id: Ids) => Key; kind?: ItemKind }> = [
    {
      item: await at({ pk: jobPk('default'), sk: template }),
      key: (id) => ({ pk: jobPk('default'), sk: id.job }),
      kind: jobKind,
    },
    ...(await core.store.list(jobVersionPk('default', template))).map((item) => ({
      item,
      key: (id: Ids) => ({ pk: jobVersionPk('default', id.job), sk: item.sk }),
      kind: jobVersionKind,
    })),
    {
      item: await at({ pk: jobSummaryPk('default'), sk: template }),
      key: (id) => ({ pk: jobSummaryPk('default'), sk: id.job }),
    },
    { item: await at(Evaluations.key(evalId)), key: (id) => Evaluations.key(id.evaluation), kind: evaluationKind },
    {
      item: await at(Allocations.key(alloc.NodeID, alloc.ID)),
      key: (id) => Allocations.key(alloc.NodeID, id.allocation),
      kind: allocationKind,
    },
    {
      item: await at(Allocations.jobLinkKey('default', template, alloc.ID)),
      key: (id) => Allocations.jobLinkKey('default', id.job, id.allocation),
      kind: allocationLinkKind,
    },
    {
      item: await at(Allocations.idLinkKey(alloc.ID)),
      key: (id) => Allocations.idLinkKey(id.allocation),
      kind: allocationLinkKind,
    },
  ];
  // ... copied under new IDs, each at its own key and signed again as its kind: JOBS - 1 more finished jobs, as if
  // each had been through the same path (the path's cost is the plan-apply bench's, not this one's).
  const copies: Write[] = [];
  for (let position = 1; position < count; position++) {
    const ids: Ids = { job: `done-${position}`, evaluation: randomUUID(), allocation: randomUUID() };
    for (const { item, key, kind } of templateItems) {
      const { pk: _pk, sk: _sk, mac: _mac, ...rest } = item;
      const text = JSON.stringify(rest)
        .replaceAll(template, ids.job)
        .replaceAll(evalId, ids.evaluation)
        .replaceAll(alloc.ID, ids.allocation);
      const copy = { ...JSON.parse(text), ...key(ids) } as Item;
      copies.push({ put: kind ? core.store.signed(kind, copy) : copy, when: { absent: true } });
    }
  }
  for (let start = 0; start < copies.length; start += 98) await core.store.transact(copies.slice(start, start + 98));
  const dead = (await scheduler.jobs.list('default')).filter((job) => job.Status === 'dead').length;
  if (dead !== count) throw new Error(`${dead} of ${count} jobs dead`);
  console.log(`seeded ${count} finished batch jobs in ${((performance.now() - seedStarted) / 1000).toFixed(1)} s`);
  const before = await scan(tableName);

  // The product's path: the request answered at once, then its runs until every job is reaped.
  collectGarbage();
  meter.reset();
  const answerStarted = performance.now();
  await meter.during('request', () => call('PUT', '/v1/system/gc', undefined));
  const answerMs = performance.now() - answerStarted;
  let runs = 0;
  let skipped = 0;
  const started = performance.now();
  for (;;) {
    runs += await meter.during('gc', () => runRequestedGc(core));
    // Outside the timing: whether jobs are left (a run deletes at most 2,000 items), and if so the next request.
    const paused = performance.now();
    const left = (await scheduler.jobs.list('default')).length;
    if (left === 0 || runs > count) break;
    await call('PUT', '/v1/system/gc', undefined);
    skipped += performance.now() - paused;
  }
  const seconds = (performance.now() - started - skipped) / 1000;
  if (await forcedGcPending(core.store)) throw new Error('a request is left');
  const after = await scan(tableName);
  const deleted = [...before].filter(([key]) => !after.has(key)).map(([, item]) => item);
  const usage = meter.usageOf('gc');
  console.log(
    `PUT /v1/system/gc answered in ${answerMs.toFixed(1)} ms; ${runs} runs reaped ${count} jobs (${deleted.length} ` +
      `items) in ${seconds.toFixed(2)} s: ${usage.calls} DynamoDB calls, ${usage.readUnits.toFixed(1)} read units, ` +
      `${usage.writeUnits.toFixed(1)} write units, ${usage.cancelled} transactions cancelled`,
  );

  // The baseline: the same items in a table of their own, deleted with raw BatchWriteItem.
  await batchWrite(
    rawTable,
    deleted.map((Item) => ({ PutRequest: { Item } })),
  );
  collectGarbage();
  const rawStarted = performance.now();
  await meter.during('raw', () =>
    batchWrite(
      rawTable,
      deleted.map((item) => ({ DeleteRequest: { Key: { pk: item.pk, sk: item.sk } } })),
    ),
  );
  const rawSeconds = (performance.now() - rawStarted) / 1000;
  const raw = meter.usageOf('raw');
  const rawLeft = (await scan(rawTable)).size;
  if (rawLeft !== 0) throw new Error(`${rawLeft} items left in the raw table`);
  console.log(
    `raw BatchWriteItem: the same ${deleted.length} items deleted in ${rawSeconds.toFixed(2)} s: ${raw.calls} calls, ` +
      `${raw.writeUnits.toFixed(1)} write units`,
  );

  figure(bench, 'gc: terminal jobs reaped/s', count / seconds, 'report');
  figure(bench, 'gc: raw BatchWriteItem jobs deleted/s', count / rawSeconds, '—', 'the same items, no reads');
  figure(bench, 'gc / raw BatchWriteItem', rawSeconds / seconds, 'report');
  figure(bench, 'gc: DynamoDB calls per job', usage.calls / count, 'report');
  figure(bench, 'gc: write units per job', usage.writeUnits / count, 'report');
  figure(bench, 'gc: read units per job', usage.readUnits / count, 'report');
  figure(bench, 'PUT /v1/system/gc answer ms', answerMs, 'report');
} finally {
  client.destroy();
  await dynamo.stop();
  rmSync(keyDir, { recursive: true, force: true });
}
