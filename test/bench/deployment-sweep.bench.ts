/**
 * What the deployment watcher's sweep costs (`cluster/deployments/watcher.ts` `checkAll`, run by the minute sweep for
 * what no allocation report triggers: progress deadlines): DEPLOYMENTS active deployments (default 1,000; smoke 20),
 * each of a rolling service job of count 1 submitted over HTTP and placed by the evaluation worker on a few large
 * seeded nodes (its allocation pending: nothing is due). Then one sweep of the watcher with nothing to do, timed and
 * metered (`capacity-meter.ts`: DynamoDB's consumed units per call), and its calls and read units per active
 * deployment. Run: `npx tsx test/bench/deployment-sweep.bench.ts` (DEPLOYMENTS=n; BENCH_SMOKE=1: 20).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { seededNode } from '../../packages/agent/src/fleet/seeded-nodes.ts';
import { isActive } from '../../packages/core/src/scheduler/cluster/deployments/model.ts';
import { registeredNode } from '../../packages/core/src/scheduler/cluster/nodes/model.ts';
import { META_PK, NODE_COUNT_SK } from '../../packages/core/src/scheduler/keys.ts';
import { EvaluationWorker } from '../../packages/core/src/scheduler/worker/evaluation-worker.ts';
import { storeClientOptions } from '../../packages/core/src/storage/store-client.ts';
import { localClientConfig } from '../../packages/local/src/dynamodb-local.ts';
import { startBenchDynamo, startBenchScheduler } from './bench-service.ts';
import { CapacityMeter } from './capacity-meter.ts';
import { collectGarbage, figure, sized } from './summary.ts';

const bench = 'deployment-sweep';
const count = sized('DEPLOYMENTS', 1000, 20);
const nodeCount = 10;

const dynamo = await startBenchDynamo();
const keyDir = mkdtempSync(path.join(tmpdir(), 'keyhaven-bench-'));
const client = new DynamoDBClient({ ...localClientConfig(dynamo.endpoint), ...storeClientOptions() });
const meter = new CapacityMeter();
meter.attach(client);

try {
  const { core, scheduler, app, root } = await startBenchScheduler(client, keyDir);

  // A few ready nodes, stored as registration stores them.
  const now = core.clock.now();
  await core.store.transact(
    Array.from({ length: nodeCount }, (_, position) => {
      const input = seededNode(position, { seed: 43 });
      const node = { ...registeredNode(input as never, undefined, 1, now), Status: 'ready' as const };
      const secretHash = scheduler.nodes.secretHash(node.ID, input.SecretID as string);
      return [
        scheduler.nodes.nodeWrite(node, undefined),
        {
          put: scheduler.nodes.beatItem(node, secretHash, 1, now + 3_600_000, undefined, undefined),
          when: { absent: true as const },
        },
      ];
    }).flat(),
  );
  await core.store.put({ pk: META_PK, sk: NODE_COUNT_SK, value: nodeCount });

  // DEPLOYMENTS rolling jobs, each placed: one active deployment each, its allocation pending.
  const seedStarted = performance.now();
  const worker = new EvaluationWorker(scheduler);
  for (let start = 0; start < count; start += 50) {
    for (let position = start; position < Math.min(count, start + 50); position++) {
      const job = {
        ID: `roll-${position}`,
        TaskGroups: [
          {
            Name: 'web',
            Count: 1,
            // A deadline past the seeding (ten minutes at 1,000 here): the sweep finds nothing due.
            Update: { MaxParallel: 1, ProgressDeadline: 4 * 3600e9, HealthyDeadline: 3600e9 },
            Tasks: [
              { Name: 'server', Driver: 'raw_exec', Config: { command: 'true' }, Resources: { CPU: 10, MemoryMB: 10 } },
            ],
          },
        ],
      };
      const response = await app.request('/v1/jobs', {
        method: 'PUT',
        headers: { 'X-Nomad-Token': root.SecretID, 'Content-Type': 'application/json' },
        body: JSON.stringify({ Job: job }),
      });
      if (response.status !== 200) throw new Error(`register ${job.ID}: ${response.status} ${await response.text()}`);
    }
    await worker.runDue();
  }
  const active = (await scheduler.deployments.list()).filter(isActive).length;
  if (active !== count) throw new Error(`${active} of ${count} deployments active`);
  console.log(`seeded ${count} active deployments in ${((performance.now() - seedStarted) / 1000).toFixed(1)} s`);

  // One sweep of the watcher with nothing due, timed and metered.
  collectGarbage();
  meter.reset();
  const started = performance.now();
  const outcomes = await meter.during('sweep', () => scheduler.deploymentWatcher.checkAll());
  const seconds = (performance.now() - started) / 1000;
  const changed = [...outcomes.values()].filter((outcome) => outcome !== undefined).length;
  if (outcomes.size !== count || changed !== 0)
    throw new Error(`the sweep checked ${outcomes.size} of ${count} and changed ${changed}`);
  const usage = meter.usageOf('sweep');
  console.log(
    `watcher sweep over ${count} active deployments, nothing due: ${seconds.toFixed(2)} s, ${usage.calls} DynamoDB calls, ` +
      `${usage.readUnits.toFixed(1)} read units, ${usage.writeUnits.toFixed(1)} write units`,
  );
  figure(bench, 'deployment sweep: ms per active deployment', (seconds * 1000) / count, 'linear; report');
  figure(bench, 'deployment sweep: DynamoDB calls per active deployment', usage.calls / count, 'report');
  figure(bench, 'deployment sweep: read units per active deployment', usage.readUnits / count, 'report');
} finally {
  client.destroy();
  await dynamo.stop();
  rmSync(keyDir, { recursive: true, force: true });
}
