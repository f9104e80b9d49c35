/**
 * Lease storm: LEASES kv leases (default 20,000; LEASES=100000 for the figure) expiring within one minute,
 * swept the way the token sweep job does it (`inRounds` of functions/jobs/rounds.ts around `sweepLeases`, a run
 * started every 60 s as EventBridge does), while a reader does authenticated kv reads (a policy-scoped token,
 * concurrency 4). Prints the sweep's revocations per second, the time until none is left, that none was dropped,
 * and the read p50/p99 before the storm and during it, in one run.
 *
 * Then a second run: MESH_LEASES mesh leases (default LEASES/10) on a mount whose Consul server (the emulator) is
 * stopped, so every revocation fails and is retried with backoff (10, 20, 40, 80, 160 s) until the sixth failure
 * marks it irrevocable, as Vault does. The service's clock runs 20× fast there so the backoff passes in seconds.
 *
 * The leases are the items `LeaseManager.register` records (built by its `itemFor`), written in BatchWriteItem, not
 * through HTTP: 100,000 reads through the app take longer than the storm. The sweep runs at its pace (`sweepRate`,
 * `KEYHAVEN_SWEEP_PER_SECOND` to try another). Everything (DynamoDB Local, the app, the sweep, the reader) shares one
 * process and the machine's two cores; in AWS the sweep is its own Lambda. The load average is printed beside the
 * read figures, and calm reads are taken again after the storm, since other work on the machine moves them.
 * Run: `npx tsx test/bench/lease-storm.bench.ts` (npx, so Node 24 runs it). BENCH_SMOKE=1 (benches-smoke.test.ts):
 * 200 kv and 20 mesh leases, 1 s of calm reads, a job run every second and the mesh clock at 400×.
 */
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { BatchWriteCommand, DynamoDBDocumentClient, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { inRounds } from '../../functions/jobs/rounds.ts';
import type { Core } from '../../packages/core/src/composition/secrets-core.ts';
import type { Clock } from '../../packages/core/src/lib/clock.ts';
import { leaseQueues, sweepLeases } from '../../packages/core/src/secrets/framework/lease-sweep.ts';
import type { LeaseItem } from '../../packages/core/src/secrets/leases/lease-manager.ts';
import { allShards, nextDue } from '../../packages/core/src/storage/due.ts';
import type { DynamoStore } from '../../packages/core/src/storage/dynamodb-store.ts';
import { startConsulEmulator } from '../emulators/consul.ts';
import { type BenchService, startBenchService } from './bench-service.ts';
import { figure, sized } from './summary.ts';

/** The store's DynamoDB client as a document client, for the bench's own queries and batch writes. */
const documentClient = (core: Core) =>
  DynamoDBDocumentClient.from((core.store as DynamoStore).client, { marshallOptions: { removeUndefinedValues: true } });

const leaseCount = sized('LEASES', 20_000, 200);
const meshLeaseCount = sized('MESH_LEASES', Math.max(100, Math.round(leaseCount / 10)), 20);
/** Seconds of calm reads before and after the storm; wall ms between job runs (EventBridge: a minute); the mesh run's clock speed. */
const calmMs = sized('BENCH_CALM_SECONDS', 15, 1) * 1000;
const jobIntervalMs = sized('BENCH_JOB_INTERVAL_MS', 60_000, 1_000);
const meshClockSpeed = sized('BENCH_MESH_CLOCK_SPEED', 20, 400);

/** The system clock, moved forward by `skip` and running `speed` times as fast from the start. */
class BenchClock implements Clock {
  private readonly start = Date.now();
  private offset = 0;
  speed = 1;
  private base = this.start;
  private baseWall = this.start;
  now(): number {
    return this.base + (Date.now() - this.baseWall) * this.speed + this.offset;
  }
  skip(seconds: number) {
    this.offset += seconds * 1000;
  }
  setSpeed(speed: number) {
    this.base = this.now() - this.offset;
    this.baseWall = Date.now();
    this.speed = speed;
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const percentile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;

/** Authenticated reads at concurrency 4 until `until()` says stop; latencies in ms. */
async function readWhile(service: BenchService, token: string, keepGoing: () => boolean): Promise<number[]> {
  const latencies: number[] = [];
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (keepGoing()) {
        const begin = performance.now();
        const response = await service.app.request('/v1/secret/app/plain', { headers: { 'X-Secrets-Token': token } });
        await response.text();
        if (response.status !== 200) throw new Error(`read: ${response.status}`);
        latencies.push(performance.now() - begin);
      }
    }),
  );
  return latencies.sort((a, b) => a - b);
}
const describeReads = (latencies: number[]) =>
  `p50 ${percentile(latencies, 0.5).toFixed(1)} ms, p99 ${percentile(latencies, 0.99).toFixed(1)} ms (${latencies.length} reads)`;

/** Every lease item left in the table, over all shards. */
async function leasesLeft(core: Core): Promise<LeaseItem[]> {
  const pages = await Promise.all(
    allShards('leases').map(async (pk) => {
      const items: LeaseItem[] = [];
      let start: Record<string, unknown> | undefined;
      do {
        const out = await documentClient(core).send(
          new QueryCommand({
            TableName: (core.store as DynamoStore).tableName,
            KeyConditionExpression: 'pk = :pk',
            ExpressionAttributeValues: { ':pk': pk },
            ExclusiveStartKey: start,
          }),
        );
        items.push(...((out.Items ?? []) as LeaseItem[]));
        start = out.LastEvaluatedKey;
      } while (start);
      return items;
    }),
  );
  return pages.flat();
}

/**
 * Writes `count` leases on `mountPath`, expiring 1–60 s from now, as `LeaseManager.register` would record them: the
 * item comes from its own builder (`LeaseManager.itemFor`), written 25 a BatchWriteItem with 8 in flight (what
 * register's single-item transaction costs per lease would take longer than the storm). Returns the rate.
 */
async function seed(
  core: Core,
  mountPath: string,
  count: number,
  secret: (index: number) => { type: string; internal: Record<string, unknown> },
) {
  const mount = await core.mounts.resolve(mountPath);
  if (!mount) throw new Error(`no mount at ${mountPath}`);
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < count) {
        const batch: LeaseItem[] = [];
        for (; batch.length < 25 && next < count; next++) {
          batch.push(
            core.leases.itemFor(
              mount,
              `storm/${next % 50}`,
              { ...secret(next), ttl: 1 + (next % 60), renewable: true },
              undefined,
            ).item,
          );
        }
        let pending: Record<string, unknown>[] = batch.map((Item) => ({ PutRequest: { Item } }));
        for (let attempt = 0; pending.length > 0; attempt++) {
          if (attempt > 0) await sleep(Math.min(1000, 20 * 2 ** attempt));
          const out = await documentClient(core).send(
            new BatchWriteCommand({ RequestItems: { [(core.store as DynamoStore).tableName]: pending as never } }),
          );
          pending = (out.UnprocessedItems?.[(core.store as DynamoStore).tableName] ?? []) as Record<string, unknown>[];
        }
      }
    }),
  );
  return count / ((performance.now() - started) / 1000);
}

/**
 * The token sweep job at its normal cadence: a run every 60 s (wall; `jobIntervalMs`), each `inRounds` of `sweepLeases` within its
 * 50 s, until `done()`. Returns the wall seconds from the first run and the revocations counted.
 */
async function jobCadence(core: Core, done: () => Promise<boolean>) {
  const started = performance.now();
  const totals = { leases: 0, failed: 0, runs: 0 };
  for (;;) {
    const runStart = Date.now();
    const counts = await inRounds(
      () => sweepLeases(core),
      () => nextDue(core, leaseQueues(core)),
    );
    totals.leases += counts.leases;
    totals.failed += counts.failed;
    totals.runs++;
    if (await done()) break;
    await sleep(Math.max(0, runStart + jobIntervalMs - Date.now()));
  }
  return { seconds: (performance.now() - started) / 1000, ...totals };
}

const clock = new BenchClock();
const service = await startBenchService(['system', 'kv', 'mesh'], { clock });
const consul = await startConsulEmulator();
try {
  const { core, call } = service;
  await call('POST', '/v1/sys/mounts/secret', { type: 'kv' });
  await call('PUT', '/v1/sys/policies/acl/reader', { policy: 'path "secret/app/*" { capabilities = ["read"] }' });
  const reader = (await call('POST', '/v1/auth/token/create', { policies: ['reader'], ttl: '1000h' })) as {
    auth: { client_token: string };
  };
  const token = reader.auth.client_token;
  await call('POST', '/v1/secret/app/plain', { value: 'v' });
  console.log(
    `machine: 2 cores, shared with other work; leases ${leaseCount.toLocaleString('en')} kv, ${meshLeaseCount.toLocaleString('en')} mesh`,
  );

  // Run 1: kv leases.
  const seedRate = await seed(core, 'secret/', leaseCount, () => ({ type: 'kv', internal: {} }));
  console.log(`seeded ${leaseCount} kv leases through LeaseManager.register at ${seedRate.toFixed(0)}/s`);
  const calmUntil = Date.now() + calmMs;
  const calm = await readWhile(service, token, () => Date.now() < calmUntil);
  console.log(
    `reads before the storm: ${describeReads(calm)}; load average ${loadavg()
      .map((load) => load.toFixed(1))
      .join(' ')} (2 cores)`,
  );
  clock.skip(61); // every lease has expired
  let storming = true;
  const during = readWhile(service, token, () => storming);
  const kv = await jobCadence(core, async () => (await nextDue(core, leaseQueues(core))) === undefined);
  storming = false;
  const stormReads = await during;
  const left = await leasesLeft(core);
  console.log(
    `kv storm: ${kv.leases} revoked by the sweep in ${kv.seconds.toFixed(1)} s (${(kv.leases / kv.seconds).toFixed(0)} leases/s), ` +
      `${kv.runs} job run(s), ${kv.failed} failed attempts; left in the table: ${left.length} (dropped: ${leaseCount - kv.leases - left.length})`,
  );
  console.log(`reads during the storm: ${describeReads(stormReads)}`);
  console.log(
    `read p99 during/before: ${(percentile(stormReads, 0.99) / percentile(calm, 0.99)).toFixed(2)}×; load average ${loadavg()
      .map((load) => load.toFixed(1))
      .join(' ')} (2 cores)`,
  );
  // The machine is shared: calm reads again after the storm show how much the other load moved meanwhile.
  const calmAgainUntil = Date.now() + calmMs;
  const calmAgain = await readWhile(service, token, () => Date.now() < calmAgainUntil);
  console.log(`reads after the storm (calm again): ${describeReads(calmAgain)}`);
  figure(
    'lease-storm',
    'kv storm: revocations/s',
    kv.leases / kv.seconds,
    '—',
    `${leaseCount} leases, sweep pace ${process.env.KEYHAVEN_SWEEP_PER_SECOND ?? 200}/s`,
  );
  figure('lease-storm', 'kv storm: leases dropped', leaseCount - kv.leases - left.length, '0');
  figure(
    'lease-storm',
    'read p99 during storm / before',
    percentile(stormReads, 0.99) / percentile(calm, 0.99),
    '<= 1.2 (lease-storm issue)',
    `after the storm: ${(percentile(stormReads, 0.99) / percentile(calmAgain, 0.99)).toFixed(2)}`,
  );

  // Run 2: mesh leases whose server is down.
  const bootstrap = (await consul.request('PUT', '/v1/acl/bootstrap')).json as { SecretID: string };
  await call('POST', '/v1/sys/mounts/mesh', { type: 'mesh' });
  await call('POST', '/v1/mesh/config/access', { address: consul.address, token: bootstrap.SecretID });
  const meshRate = await seed(core, 'mesh/', meshLeaseCount, () => ({
    type: 'token',
    internal: { role: 'web', accessor: randomBytes(16).toString('hex'), namespace: '', partition: '' },
  }));
  console.log(`seeded ${meshLeaseCount} mesh leases at ${meshRate.toFixed(0)}/s; the mesh server is now stopped`);
  await consul.stop();
  clock.skip(61);
  clock.setSpeed(meshClockSpeed);
  let failing = true;
  const duringMesh = readWhile(service, token, () => failing);
  const mesh = await jobCadence(core, async () => (await nextDue(core, leaseQueues(core))) === undefined);
  failing = false;
  const meshReads = await duringMesh;
  const meshLeft = (await leasesLeft(core)).filter(
    (lease) => lease.mountUuid !== undefined && lease.leaseId.startsWith('mesh/'),
  );
  const irrevocable = meshLeft.filter((lease) => lease.irrevocable && lease.revocationAttempts === 6).length;
  console.log(
    `mesh storm (server down, clock ${meshClockSpeed}×): ${mesh.failed} failed attempts in ${mesh.seconds.toFixed(1)} s (${(mesh.failed / mesh.seconds).toFixed(0)} attempts/s), ` +
      `${mesh.runs} job run(s); ${irrevocable} of ${meshLeaseCount} irrevocable after 6 attempts, ${meshLeft.length - irrevocable} still queued, ` +
      `dropped: ${meshLeaseCount - meshLeft.length}`,
  );
  figure(
    'lease-storm',
    'mesh storm: leases dropped',
    meshLeaseCount - meshLeft.length,
    '0',
    `${irrevocable} of ${meshLeaseCount} irrevocable after 6 attempts`,
  );
  console.log(
    `reads during the mesh storm: ${describeReads(meshReads)}; load average ${loadavg()
      .map((load) => load.toFixed(1))
      .join(' ')}`,
  );
} finally {
  await consul.close();
  await service.stop();
}
