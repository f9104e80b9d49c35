/**
 * Plan apply's throughput (issue 41, "Speed"): a service job of count COUNT (default 10,000) placed over NODES
 * simulated nodes (default 5,000) and durably written, through the product's real path on DynamoDB Local: the job
 * registered over HTTP (`PUT /v1/jobs`, its evaluation queued), the evaluation worker
 * (`scheduler/worker/evaluation-worker.ts`: snapshot, reconciler, placement, plan) and plan apply
 * (`cluster/evaluations/plan-apply.ts`: transactions conditional on each touched node's allocation version, the
 * index and the events with them). The figure is allocations placed and written per second, from the submit to the
 * evaluation complete, beside a baseline measured in the same run on the same DynamoDB Local: the same allocation
 * items (each allocation and its two links, as plan apply wrote them) written with raw `BatchWriteItem` calls of 25,
 * PARALLEL (default 4) at a time, to a table of their own — the floor of writing those bytes, with no placement, no
 * conditions, no index and no events. Then `PUT /v1/job/:id/plan` (the dry run) for a job of count PLAN_COUNT
 * (default 1,000) over the same nodes, now holding the first job's allocations.
 *
 * The nodes are seeded directly, as registration stores them (`ClusterNodes.nodeWrite` and `beatItem`, the fleet's
 * seeded nodes of `packages/agent/src/fleet/seeded-nodes.ts`, marked ready), in transactions of 50 nodes: 5,000
 * registrations over HTTP would be the cluster-cost bench's work, not this one's.
 * Run: `npx tsx test/bench/plan-apply.bench.ts` (NODES, COUNT, PLAN_COUNT, PARALLEL). BENCH_SMOKE=1: 20 nodes,
 * count 60, plan 20.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BatchWriteItemCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { seededNode } from '../../packages/agent/src/fleet/seeded-nodes.ts';
import { registeredNode } from '../../packages/core/src/scheduler/cluster/nodes/model.ts';
import { META_PK, NODE_COUNT_SK } from '../../packages/core/src/scheduler/keys.ts';
import { capacityOf } from '../../packages/core/src/scheduler/placement/resources.ts';
import { EvaluationWorker } from '../../packages/core/src/scheduler/worker/evaluation-worker.ts';
import type { Item, Write } from '../../packages/core/src/storage/store.ts';
import { storeClientOptions } from '../../packages/core/src/storage/store-client.ts';
import { localClientConfig } from '../../packages/local/src/dynamodb-local.ts';
import { ensureTable } from '../../packages/local/src/table.ts';
import { startBenchDynamo, startBenchScheduler } from './bench-service.ts';
import { collectGarbage, figure, sized } from './summary.ts';
import { serviceJobSpec } from './bench-job.ts';

const bench = 'plan-apply';
const nodeCount = sized('NODES', 5000, 20);
const count = sized('COUNT', 10_000, 60);
const planCount = sized('PLAN_COUNT', 1000, 20);
const parallel = sized('PARALLEL', 4, 4);
/** RAW=0 leaves out the raw baseline (minutes at the goal's size) when only the plan's figures are wanted. */
const rawBaseline = process.env.RAW !== '0';

/** Runs `task` over `items` with at most `width` at once. */
async function inParallel<T>(items: T[], width: number, task: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, items.length) }, async () => {
      while (next < items.length) await task(items[next++] as T);
    }),
  );
}

const dynamo = await startBenchDynamo();
const keyDir = mkdtempSync(path.join(tmpdir(), 'keyhaven-bench-'));
const client = new DynamoDBClient({ ...localClientConfig(dynamo.endpoint), ...storeClientOptions() });
/** DynamoDB requests sent through the product's client (each plan's count is a figure that no load changes). */
let requestsSent = 0;
client.middlewareStack.add(
  (next) => async (args) => {
    requestsSent++;
    return next(args);
  },
  { step: 'initialize', name: 'benchRequestCount' },
);

try {
  const { core, scheduler, app, root } = await startBenchScheduler(client, keyDir);
  const rawTable = `bench-raw-${randomUUID()}`;
  await ensureTable(client, rawTable);
  const call = async (method: string, url: string, body: unknown) => {
    const response = await app.request(url, {
      method,
      headers: { 'X-Nomad-Token': root.SecretID, 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    if (response.status !== 200) throw new Error(`${method} ${url}: ${response.status} ${text}`);
    return JSON.parse(text) as Record<string, unknown>;
  };

  // 1. The fleet, stored as registration stores it, every node ready.
  const seedStarted = performance.now();
  const now = core.clock.now();
  const writes: Write[][] = [];
  for (let start = 0; start < nodeCount; start += 50) {
    const chunk: Write[] = [];
    for (let position = start; position < Math.min(nodeCount, start + 50); position++) {
      const input = seededNode(position, { seed: 41 });
      const node = { ...registeredNode(input as never, undefined, 1, now), Status: 'ready' as const };
      const secretHash = scheduler.nodes.secretHash(node.ID, input.SecretID as string);
      chunk.push(scheduler.nodes.nodeWrite(node, undefined), {
        put: scheduler.nodes.beatItem(node, secretHash, 1, now + 3_600_000, undefined, undefined),
        when: { absent: true },
      });
    }
    writes.push(chunk);
  }
  await inParallel(writes, 4, (chunk) => core.store.transact(chunk));
  await core.store.put({ pk: META_PK, sk: NODE_COUNT_SK, value: nodeCount });
  const stored = await scheduler.nodes.list();
  if (stored.length !== nodeCount) throw new Error(`${stored.length} of ${nodeCount} nodes stored`);
  console.log(`seeded ${nodeCount} ready nodes in ${((performance.now() - seedStarted) / 1000).toFixed(1)} s`);

  // 2. The product's path: submit, the worker runs the evaluation, plan apply writes the allocations.
  const worker = new EvaluationWorker(scheduler);
  collectGarbage();
  const started = performance.now();
  const submitted = await call('PUT', '/v1/jobs', { Job: serviceJobSpec('c10k', count) });
  const outcomes = await worker.runDue();
  const applySeconds = (performance.now() - started) / 1000;
  const outcome = outcomes.get(submitted.EvalID as string);
  const allocs = await scheduler.allocations.ofJob('default', 'c10k');
  const placed = allocs.filter((alloc) => alloc.DesiredStatus === 'run').length;
  if (outcome !== 'complete' || placed !== count)
    throw new Error(`evaluation ${outcome}: ${placed} of ${count} allocations placed`);
  // No node over-committed: each node's allocations fit its CPU and memory (what plan apply's conditions protect).
  const perNode = new Map<string, { cpu: number; memory: number }>();
  for (const alloc of allocs) {
    const used = perNode.get(alloc.NodeID) ?? { cpu: 0, memory: 0 };
    used.cpu += 100;
    used.memory += 256;
    perNode.set(alloc.NodeID, used);
  }
  const overCommitted = stored.filter((node) => {
    const used = perNode.get(node.ID);
    const capacity = capacityOf(node);
    return used !== undefined && (used.cpu > capacity.cpu || used.memory > capacity.memoryMB);
  }).length;
  if (overCommitted > 0) throw new Error(`${overCommitted} nodes over-committed`);
  const productRate = count / applySeconds;
  console.log(
    `product path: count ${count} over ${nodeCount} nodes placed and written in ${applySeconds.toFixed(2)} s ` +
      `(${productRate.toFixed(0)} allocations/s) on ${perNode.size} nodes; index now ${await scheduler.state.currentIndex()}`,
  );

  // 3. The baseline: the same allocation items, raw BatchWriteItem of 25, PARALLEL at a time, in a table of their own.
  let rawRate = Number.NaN;
  if (rawBaseline) {
    const items: Item[] = allocs.flatMap((alloc) =>
      scheduler.allocations.created(alloc).map((write) => (write as { put: Item }).put),
    );
    const requests: Item[][] = [];
    for (let start = 0; start < items.length; start += 25) requests.push(items.slice(start, start + 25));
    collectGarbage();
    const rawStarted = performance.now();
    await inParallel(requests, parallel, async (batch) => {
      let pending = batch.map((item) => ({
        PutRequest: { Item: marshall(item, { removeUndefinedValues: true, allowImpreciseNumbers: true }) },
      }));
      while (pending.length > 0) {
        const out = await client.send(new BatchWriteItemCommand({ RequestItems: { [rawTable]: pending } }));
        pending = (out.UnprocessedItems?.[rawTable] ?? []) as typeof pending;
      }
    });
    const rawSeconds = (performance.now() - rawStarted) / 1000;
    rawRate = count / rawSeconds;
    console.log(
      `raw BatchWriteItem: the same ${items.length} items (${count} allocations and their links) in ${rawSeconds.toFixed(2)} s ` +
        `(${rawRate.toFixed(0)} allocations/s, ${parallel} requests at a time)`,
    );
  }

  // 4. The dry run: `PUT /v1/job/:id/plan` for a job of count PLAN_COUNT, over the same nodes.
  // Three calls: the process's first (its caches empty) and two warm ones.
  const planRuns: number[] = [];
  const planRequests: number[] = [];
  let planned = 0;
  for (let round = 0; round < 3; round++) {
    collectGarbage();
    const sentBefore = requestsSent;
    const planStarted = performance.now();
    const plan = await call('PUT', '/v1/job/c1k/plan', { Job: serviceJobSpec('c1k', planCount), Diff: true });
    planRuns.push(performance.now() - planStarted);
    planRequests.push(requestsSent - sentBefore);
    const updates = (plan.Annotations as { DesiredTGUpdates: Record<string, { Place: number }> }).DesiredTGUpdates;
    planned = updates.web?.Place ?? 0;
    if (plan.FailedTGAllocs !== null) throw new Error(`plan could not place: ${JSON.stringify(plan.FailedTGAllocs)}`);
  }
  if (planned !== planCount) throw new Error(`plan placed ${planned} of ${planCount}`);
  const planMs = Math.min(...planRuns);
  console.log(
    `plan: count ${planCount} over ${nodeCount} nodes: ${planRuns.map((ms) => ms.toFixed(0)).join(' ms, ')} ms; ` +
      `DynamoDB requests ${planRequests.join(', ')}`,
  );

  figure(
    bench,
    'plan apply: allocations placed and written/s',
    productRate,
    '≥ 1,000/s',
    `count ${count} over ${nodeCount} nodes, submit to evaluation complete`,
  );
  if (rawBaseline) {
    figure(bench, 'plan apply: raw BatchWriteItem allocations/s', rawRate, '—', 'the same items, no conditions');
    figure(bench, 'plan apply / raw BatchWriteItem', productRate / rawRate, '≥ 0.5');
  }
  figure(bench, 'job plan ms', planMs, '< 1,000 ms', `count ${planCount} over ${nodeCount} nodes, the fastest of 3`);
  figure(bench, 'job plan ms, first call', planRuns[0] as number, '—', 'the process’s caches empty');
  figure(bench, 'job plan DynamoDB requests, warm', planRequests[2] as number, '—', 'the third call');
} finally {
  client.destroy();
  await dynamo.stop();
  rmSync(keyDir, { recursive: true, force: true });
}
