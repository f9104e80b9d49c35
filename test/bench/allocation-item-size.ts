/**
 * Not a bench: what one stored allocation item weighs, field by field. It places the bench's job
 * (`bench-job.ts`, COUNT allocations over NODES seeded nodes, as `plan-apply.bench.ts` does) through the product's
 * path, reads the allocation items back raw (DynamoDB JSON, as the table holds them) and prints, for the median
 * item, each top-level attribute's bytes as DynamoDB JSON text and by DynamoDB's item-size rule (`dynamoSize`), and the
 * same for the parts of `Metrics` and `AllocatedResources`; both as the item is stored and as the same allocation was
 * stored whole before the compact form (`packages/core/src/scheduler/cluster/allocations/item-form.ts`). Then a raw
 * write probe of both forms (PROBE copies, default 3,000; ROUNDS, default 3): DynamoDB Local's items a second.
 * Run: `npx tsx test/bench/allocation-item-size.ts` (NODES, default 200; COUNT, default 400; PROBE; ROUNDS).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type AttributeValue, BatchWriteItemCommand, DynamoDBClient, QueryCommand } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { allocationOfItem } from '../../packages/core/src/scheduler/cluster/allocations/item-form.ts';
import { allocNodePk } from '../../packages/core/src/scheduler/keys.ts';
import { EvaluationWorker } from '../../packages/core/src/scheduler/worker/evaluation-worker.ts';
import type { Item } from '../../packages/core/src/storage/store.ts';
import { storeClientOptions } from '../../packages/core/src/storage/store-client.ts';
import { localClientConfig } from '../../packages/local/src/dynamodb-local.ts';
import { ensureTable } from '../../packages/local/src/table.ts';
import { startBenchDynamo, startBenchScheduler } from './bench-service.ts';
import { seedReadyNodes } from './seed-nodes.ts';
import { serviceJobSpec } from './bench-job.ts';

const nodeCount = Number(process.env.NODES ?? 200);
const count = Number(process.env.COUNT ?? 400);

/** DynamoDB's size of a value (its documented rule: strings by UTF-8 bytes, numbers by digits, 3 + 1 per entry for maps and lists). */
function dynamoSize(value: AttributeValue): number {
  if (value.S !== undefined) return Buffer.byteLength(value.S);
  if (value.N !== undefined) return Math.ceil(value.N.replace(/^-|\.|e.*$/gi, '').replace(/^0+/, '').length / 2) + 1;
  if (value.BOOL !== undefined || value.NULL !== undefined) return 1;
  if (value.L) return 3 + value.L.reduce((sum, entry) => sum + 1 + dynamoSize(entry), 0);
  if (value.M)
    return (
      3 +
      Object.entries(value.M).reduce((sum, [name, entry]) => sum + 1 + Buffer.byteLength(name) + dynamoSize(entry), 0)
    );
  return JSON.stringify(value).length;
}

const jsonBytes = (name: string, value: AttributeValue) => Buffer.byteLength(JSON.stringify({ [name]: value })) - 2;

function table(title: string, attributes: Record<string, AttributeValue>): void {
  const rows = Object.entries(attributes)
    .map(([name, value]) => ({
      name,
      json: jsonBytes(name, value),
      dynamo: Buffer.byteLength(name) + dynamoSize(value),
    }))
    .sort((a, b) => b.json - a.json);
  console.log(`\n${title}`);
  console.log('| attribute | DynamoDB JSON bytes | DynamoDB size bytes |\n|---|---|---|');
  for (const row of rows) console.log(`| ${row.name} | ${row.json} | ${row.dynamo} |`);
  const json = Buffer.byteLength(JSON.stringify(attributes));
  const dynamo = rows.reduce((sum, row) => sum + row.dynamo, 0);
  console.log(`| **all** | **${json}** | **${dynamo}** |`);
}

const dynamo = await startBenchDynamo();
const keyDir = mkdtempSync(path.join(tmpdir(), 'keyhaven-size-'));
const client = new DynamoDBClient({ ...localClientConfig(dynamo.endpoint), ...storeClientOptions() });
try {
  const { core, tableName, scheduler, app, root } = await startBenchScheduler(client, keyDir);
  await seedReadyNodes(core, scheduler, nodeCount, 41);
  const response = await app.request('/v1/jobs', {
    method: 'PUT',
    headers: { 'X-Nomad-Token': root.SecretID, 'Content-Type': 'application/json' },
    body: JSON.stringify({ Job: serviceJobSpec('sized', count) }),
  });
  if (response.status !== 200) throw new Error(`submit: ${response.status} ${await response.text()}`);
  await new EvaluationWorker(scheduler).runDue();
  const allocs = await scheduler.allocations.ofJob('default', 'sized');
  const items: Array<Record<string, AttributeValue>> = [];
  for (const nodeId of new Set(allocs.map((alloc) => alloc.NodeID))) {
    const out = await client.send(
      new QueryCommand({
        TableName: tableName,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': { S: allocNodePk(nodeId) } },
      }),
    );
    items.push(...((out.Items ?? []) as Array<Record<string, AttributeValue>>));
  }
  const sizes = items.map((item) => Buffer.byteLength(JSON.stringify(item))).sort((a, b) => a - b);
  console.log(
    `${items.length} allocation items: DynamoDB JSON bytes min ${sizes[0]}, median ${sizes[sizes.length >> 1]}, max ${sizes[sizes.length - 1]}`,
  );
  const median = items.find((item) => Buffer.byteLength(JSON.stringify(item)) === sizes[sizes.length >> 1]);
  if (!median) throw new Error('no allocation items');
  // The same allocation as items were stored before the compact form (`item-form.ts`): the allocation whole, Job null.
  const stored = unmarshall(median, { wrapNumbers: Number }) as Item;
  const whole = marshall(
    { pk: stored.pk, sk: stored.sk, ...allocationOfItem(stored), Job: null, mac: stored.mac },
    { removeUndefinedValues: true, allowImpreciseNumbers: true },
  );
  for (const [title, item] of [
    ['the median item, stored whole (before the compact form)', whole],
    ['the same allocation as stored now', median],
  ] as const) {
    table(title, item);
    if (item.Metrics?.M) table('its Metrics', item.Metrics.M);
    if (item.AllocatedResources?.M) table('its AllocatedResources', item.AllocatedResources.M);
  }
  // The raw probe: PROBE copies of each form of the median item (each in a partition of its own, as allocations of
  // many nodes are), written with BatchWriteItem calls of 25, four at a time, each form to a fresh table of its own;
  // ROUNDS rounds, which form goes first alternating, so both see the same load.
  const probe = Number(process.env.PROBE ?? 3000);
  const rounds = Number(process.env.ROUNDS ?? 3);
  const rates: Record<string, number[]> = { whole: [], compact: [] };
  for (let round = 0; round < rounds; round++)
    for (const [form, item] of round % 2 === 0
      ? ([
          ['whole', whole],
          ['compact', median],
        ] as const)
      : ([
          ['compact', median],
          ['whole', whole],
        ] as const)) {
      const probeTable = `size-probe-${randomUUID()}`;
      await ensureTable(client, probeTable);
      const batches: Array<Array<Record<string, AttributeValue>>> = [];
      for (let start = 0; start < probe; start += 25)
        batches.push(
          Array.from({ length: Math.min(25, probe - start) }, (_, at) => ({
            ...item,
            pk: { S: `${item.pk?.S}-${start + at}` },
          })),
        );
      const started = performance.now();
      let next = 0;
      await Promise.all(
        Array.from({ length: 4 }, async () => {
          while (next < batches.length) {
            let pending = (batches[next++] ?? []).map((Item) => ({ PutRequest: { Item } }));
            while (pending.length > 0) {
              const out = await client.send(new BatchWriteItemCommand({ RequestItems: { [probeTable]: pending } }));
              pending = (out.UnprocessedItems?.[probeTable] ?? []) as typeof pending;
            }
          }
        }),
      );
      rates[form]?.push(probe / ((performance.now() - started) / 1000));
    }
  for (const [form, list] of Object.entries(rates))
    console.log(`raw probe, ${form} items: ${list.map((rate) => rate.toFixed(0)).join(', ')} items/s`);
} finally {
  client.destroy();
  await dynamo.stop();
  rmSync(keyDir, { recursive: true, force: true });
}
