/**
 * What the deployment watcher's sweep costs (`cluster/deployments/watcher.ts` `checkDue`, run by the minute sweep for
 * the deployments due on the watcher's queue: progress deadlines, writes whose own check did not run): DEPLOYMENTS
 * active deployments (default 1,000; smoke 20), each of a rolling service job of count 1 submitted over HTTP and placed
 * by the evaluation worker on a few large seeded nodes (its allocation pending, its progress deadline hours away).
 * The placements leave each due now, so the first sweep checks each once; the next finds nothing due. Both timed and
 * metered (`capacity-meter.ts`: DynamoDB's consumed units per call). Run: `npx tsx test/bench/deployment-sweep.bench.ts`
 * (DEPLOYMENTS=n; BENCH_SMOKE=1: 20).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { isActive } from '../../packages/core/src/scheduler/cluster/deployments/model.ts';
import { EvaluationWorker } from '../../packages/core/src/scheduler/worker/evaluation-worker.ts';
import { storeClientOptions } from '../../packages/core/src/storage/store-client.ts';
import { localClientConfig } from '../../packages/local/src/dynamodb-local.ts';
import { startBenchDynamo, startBenchScheduler } from './bench-service.ts';
import { seedReadyNodes } from './seed-nodes.ts';
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
  await seedReadyNodes(core, scheduler, nodeCount, 43);

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

  // The placements put each deployment on the watcher's queue, due now (no check ran after them): the first sweep
  // checks each once and moves it to its progress deadline. Then a sweep with nothing due. Both timed and metered.
  const sweep = async (label: string, expected: number) => {
    collectGarbage();
    meter.reset();
    const started = performance.now();
    const outcomes = await meter.during(label, () => scheduler.deploymentWatcher.checkDue(count));
    const seconds = (performance.now() - started) / 1000;
    const changed = [...outcomes.values()].filter((outcome) => outcome !== undefined).length;
    if (outcomes.size !== expected || changed !== 0)
      throw new Error(`the ${label} checked ${outcomes.size} of ${expected} and changed ${changed}`);
    const usage = meter.usageOf(label);
    console.log(
      `${label} over ${count} active deployments, ${expected} due: ${seconds.toFixed(2)} s, ${usage.calls} DynamoDB calls, ` +
        `${usage.readUnits.toFixed(1)} read units, ${usage.writeUnits.toFixed(1)} write units`,
    );
    return { seconds, usage };
  };
  const first = await sweep('first sweep', count);
  figure(bench, 'first sweep after placement: ms per deployment', (first.seconds * 1000) / count, 'report');
  figure(bench, 'first sweep after placement: DynamoDB calls per deployment', first.usage.calls / count, 'report');
  const idle = await sweep('idle sweep', 0);
  figure(bench, 'idle sweep: ms in all', idle.seconds * 1000, 'report');
  figure(bench, 'idle sweep: DynamoDB calls in all', idle.usage.calls, 'report');
  figure(bench, 'idle sweep: read units in all', idle.usage.readUnits, 'report');
} finally {
  client.destroy();
  await dynamo.stop();
  rmSync(keyDir, { recursive: true, force: true });
}
