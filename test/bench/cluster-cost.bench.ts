/**
 * What a cluster of nodes costs on AWS (issue 40): the simulated fleet (packages/agent/src/fleet/) registers NODES
 * nodes (default 1,000: the units per operation do not change with the count, and 10,000 boots one at a time take an
 * hour on DynamoDB Local here; NODES=10000 runs them) over HTTP with the scheduler service, as `npm start` serves it,
 * on DynamoDB Local; each node boots as the agent does (register, one allocation read, `ready` with its driver
 * event). Then every node heartbeats
 * twice, the sweep runs with nothing late, a sample of nodes is let go late and swept `down`, and one blocking
 * allocation poll waits. DynamoDB reports each call's capacity units (`ReturnConsumedCapacity`, capacity-meter.ts);
 * each HTTP request is one Lambda invocation. cluster-bill.ts turns the units into a monthly bill for 100, 1,000 and
 * 10,000 nodes, for the design as built and the two before it (docs/performance.md), and the registration storm into
 * its busiest partition key's share and the rate at which that key would reach DynamoDB's 1,000 write units/s.
 * The registration's write units per boot also drive mass-boot.ts: what the provisioned table would do if the whole
 * fleet booted at once (DynamoDB Local never throttles).
 * Run: `npx tsx test/bench/cluster-cost.bench.ts` (NODES=n; BENCH_SMOKE=1: 40 nodes; PARTS=registration: the
 * registration storm and the mass-boot model only, for `NODES=10000`).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { Fleet } from '../../packages/agent/src/fleet/fleet.ts';
import { ProtocolClient } from '../../packages/agent/src/protocol.ts';
import { ManualClock } from '../../packages/core/src/lib/clock.ts';
import { schedulerNodeListener } from '../../packages/core/src/scheduler/composition/scheduler-app.ts';
import { schedulerFor } from '../../packages/core/src/scheduler/composition/scheduler-core.ts';
import { sweepLeaseKey } from '../../packages/core/src/scheduler/cluster/nodes/sweep-lease.ts';
import { sweepScheduler } from '../../packages/core/src/scheduler/sweep.ts';
import { storeClientOptions } from '../../packages/core/src/storage/store-client.ts';
import { localClientConfig } from '../../packages/local/src/dynamodb-local.ts';
import { startBenchDynamo, startBenchScheduler } from './bench-service.ts';
import { CapacityMeter, type Usage } from './capacity-meter.ts';
import {
  asBuilt,
  baseTtlSeconds,
  beatsPerSecond,
  type MeasuredCosts,
  monthlyBill,
  previous,
  prices,
  sweepPeriodSeconds,
  withBlockingPolls,
  worstDetectionSeconds,
} from './cluster-bill.ts';
import { massBoot } from './mass-boot.ts';
import { figure, sized, smoke } from './summary.ts';

const bench = 'cluster-cost';
const nodes = sized('NODES', 1_000, 40);
const lateSample = Math.min(50, Math.max(1, Math.floor(nodes / 10)));
const registrationOnly = process.env.PARTS === 'registration';
/**
 * Boots a second the service takes in AWS: every boot is two commits at the scheduler's one index, and a commit (read
 * the index, plan, transact) takes 20–25 ms there, so 40–50 commits a second.
 */
const awsBootsPerSecond = 22;
/** The stage's write capacity (`stacks/stage-config.ts`, outside dev): provisioned, 90% target, 1 to 4,000 units. */
const stageWrite = { min: 1, max: 4000, target: 0.9 };

const dynamo = await startBenchDynamo();
const keyDir = mkdtempSync(path.join(tmpdir(), 'keyhaven-bench-'));
const client = new DynamoDBClient({ ...localClientConfig(dynamo.endpoint), ...storeClientOptions() });
const meter = new CapacityMeter();
meter.attach(client);
const clock = new ManualClock(Date.now());
const servers: Array<{ close(): void }> = [];
let fleetClient: ProtocolClient | undefined;

/** The route a client-protocol request is for: the operation its calls are charged to. */
function operationOf(method: string, url: string): string {
  if (url.startsWith('/v1/client/register')) return 'register';
  if (/^\/v1\/client\/node\/[^/]+\/status/.test(url)) return 'heartbeat';
  if (/^\/v1\/client\/node\/[^/]+\/events/.test(url)) return 'events';
  if (/^\/v1\/client\/node\/[^/]+\/allocations/.test(url)) return 'allocations';
  return `${method} other`;
}

const total = (operations: string[]): Usage =>
  operations
    .map((operation) => meter.usageOf(operation))
    .reduce(
      (sum, usage) => ({
        calls: sum.calls + usage.calls,
        readUnits: sum.readUnits + usage.readUnits,
        writeUnits: sum.writeUnits + usage.writeUnits,
        cancelled: sum.cancelled + usage.cancelled,
      }),
      { calls: 0, readUnits: 0, writeUnits: 0, cancelled: 0 },
    );
const requests = new Map<string, number>();
const per = (value: number, count: number) => (count === 0 ? 0 : value / count);
const money = (value: number) => `$${value.toFixed(2)}`;

try {
  const { core, app, root } = await startBenchScheduler(client, keyDir, { clock });
  const minted = await app.request('/v1/acl/identity/client-introduction-token', {
    method: 'PUT',
    headers: { 'X-Nomad-Token': root.SecretID, 'Content-Type': 'application/json' },
    body: JSON.stringify({ TTL: '30m' }),
  });
  if (minted.status !== 200) throw new Error(`introduction token refused: ${minted.status} ${await minted.text()}`);
  const introToken = ((await minted.json()) as { JWT: string }).JWT;

  // The service over HTTP, each request charged to its route (one request: one Lambda invocation in AWS).
  const listener = schedulerNodeListener({ core: async () => core });
  const server = createServer((request, response) => {
    const operation = operationOf(request.method ?? 'GET', request.url ?? '/');
    requests.set(operation, (requests.get(operation) ?? 0) + 1);
    meter.during(operation, () => listener(request, response));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fleetClient = new ProtocolClient({ servers: [url], maxSockets: 64, timeoutMs: 120_000 });
  const fleet = new Fleet({
    client: fleetClient,
    count: nodes,
    seed: 40,
    introToken,
    concurrency: 16,
    // Each boot is two commits at the scheduler's one index: more at once only lose races for it, and DynamoDB Local
    // makes concurrent transactions on one item wait for its lock (seconds) where DynamoDB cancels them at once.
    bootConcurrency: 1,
    now: () => clock.now(),
  });

  // 1. Registration: the whole fleet boots.
  const started = performance.now();
  // A long run (NODES=10000) says how far it got each minute.
  const progress = setInterval(() => {
    const seconds = (performance.now() - started) / 1000;
    const ready = fleet.statusCounts().ready;
    console.log(
      `registration: ${ready} of ${nodes} ready after ${seconds.toFixed(0)} s (${(ready / seconds).toFixed(1)}/s)`,
    );
  }, 60_000);
  await fleet.registerAll().finally(() => clearInterval(progress));
  const registerSeconds = (performance.now() - started) / 1000;
  const counts = fleet.statusCounts();
  if (counts.ready !== nodes)
    throw new Error(`only ${counts.ready} of ${nodes} nodes came up: ${JSON.stringify([...fleet.stats.failures])}`);
  const bootOperations = ['register', 'events', 'allocations', 'heartbeat'];
  const boot = total(bootOperations);
  const registerOnly = meter.usageOf('register');
  const busiest = meter.busiestKey(bootOperations);
  const heaviest = meter.heaviestKey(bootOperations);
  const registrationsPerSecondAtKeyLimit = per(1000, heaviest.units / nodes);
  console.log(
    `registration: ${nodes} nodes in ${registerSeconds.toFixed(1)} s (${(nodes / registerSeconds).toFixed(0)}/s on DynamoDB Local); per node booted: ` +
      `${per(boot.writeUnits, nodes).toFixed(1)} write units, ${per(boot.readUnits, nodes).toFixed(1)} read units, ` +
      `${per(boot.calls, nodes).toFixed(1)} DynamoDB calls, ${bootOperations.reduce((sum, op) => sum + (requests.get(op) ?? 0), 0) / nodes} requests; ` +
      `the register call alone ${per(registerOnly.writeUnits, nodes).toFixed(1)} WU, ${per(registerOnly.readUnits, nodes).toFixed(1)} RU, ` +
      `${per(registerOnly.cancelled, nodes).toFixed(2)} cancelled transactions per node (lost races for the index)`,
  );
  console.log(
    `registration: busiest partition key ${busiest.key} takes ${(busiest.share * 100).toFixed(1)}% of a boot's writes; ` +
      `heaviest ${heaviest.key} ${per(heaviest.units, nodes).toFixed(1)} write units per node booted: ` +
      `it reaches 1,000 WU/s at ${registrationsPerSecondAtKeyLimit.toFixed(0)} boots/s`,
  );
  const bootRequests = Object.fromEntries(bootOperations.map((op) => [op, requests.get(op) ?? 0]));

  // A mass boot of 10,000 nodes on the provisioned table, from this boot's write units: from the floor (a new stage),
  // and from what the fleet's own heartbeats keep provisioned (every agent restarted at once).
  const writeUnitsPerBoot = per(boot.writeUnits, nodes);
  const fleetSize = 10_000;
  const heartbeatUnits = Math.ceil(beatsPerSecond(fleetSize, asBuilt.staggerShare(fleetSize)) / stageWrite.target);
  const boots = [
    { name: 'from the floor', startUnits: stageWrite.min },
    { name: "from the heartbeats' capacity", startUnits: heartbeatUnits },
  ].map((scenario) => ({
    ...scenario,
    result: massBoot({
      nodes: fleetSize,
      writeUnitsPerBoot,
      bootsPerSecond: awsBootsPerSecond,
      startUnits: scenario.startUnits,
      minUnits: stageWrite.min,
      maxUnits: stageWrite.max,
      target: stageWrite.target,
    }),
  }));
  const unthrottledSeconds = fleetSize / awsBootsPerSecond;
  for (const { name, startUnits, result } of boots)
    console.log(
      `mass boot of ${fleetSize} nodes at ${awsBootsPerSecond} boots/s (${result.neededUnits.toFixed(0)} WU/s), provisioned ${name} (${startUnits} WU): ` +
        `${(result.seconds / 60).toFixed(1)} min (unthrottled ${(unthrottledSeconds / 60).toFixed(1)} min), ${result.throttledBoots} boot attempts throttled at the service's pace, ` +
        `autoscaling caught up ${result.caughtUpAtSecond === undefined ? 'never' : `at ${(result.caughtUpAtSecond / 60).toFixed(1)} min`}, peak ${result.peakUnits} WU`,
    );
  console.log(
    `mass boot on demand: no throttling up to 4,000 WU/s on a new on-demand table; the boot's writes cost ` +
      `${money(fleetSize * writeUnitsPerBoot * prices.writeRequestUnit)}`,
  );
  const fromFloor = boots[0]?.result as ReturnType<typeof massBoot>;
  figure(
    bench,
    'mass boot of 10,000 from the provisioned floor: minutes',
    fromFloor.seconds / 60,
    `${(unthrottledSeconds / 60).toFixed(1)} (the index's pace, no throttling)`,
    `${fromFloor.throttledBoots} boot attempts throttled at the service's pace`,
  );
  if (registrationOnly) {
    figure(bench, 'registration: busiest partition key share', busiest.share, '—', busiest.key);
    figure(
      bench,
      'node boots/s before a partition key reaches 1,000 WU/s',
      registrationsPerSecondAtKeyLimit,
      "above the index's ~25 boots/s on AWS (no throttling)",
      heaviest.key,
    );
    await fleet.stop();
  } else {
    // 2. Heartbeats that change nothing: every node beats twice (the first beat past the sweep's lease runs the sweep).
    const leaseTaken = async () => Number((await core.store.get(sweepLeaseKey.pk, sweepLeaseKey.sk))?.taken ?? 0);
    clock.advance(sweepPeriodSeconds(nodes));
    const takenBeforeBeats = await leaseTaken();
    meter.reset();
    requests.clear();
    const cpuBefore = process.cpuUsage();
    await fleet.beatAll();
    await fleet.beatAll();
    const cpu = process.cpuUsage(cpuBefore);
    const beats = requests.get('heartbeat') ?? 0;
    // The agents read their allocation map only when a beat's `AllocIndex` moved: with no placements, never.
    const allocationReadsWhileBeating = requests.get('allocations') ?? 0;
    if (allocationReadsWhileBeating !== 0)
      throw new Error(`${allocationReadsWhileBeating} allocation reads during beats with no allocation change`);
    const beat = meter.usageOf('heartbeat');
    const leaseTakes = (await leaseTaken()) - takenBeforeBeats;
    const beatBusiest = meter.busiestKey(['heartbeat']);
    const cpuMsPerRequest = per((cpu.user + cpu.system) / 1000, beats);
    console.log(
      `heartbeat: ${beats} beats, per beat ${per(beat.writeUnits, beats).toFixed(2)} write units, ${per(beat.readUnits, beats).toFixed(2)} read units, ` +
        `${per(beat.calls, beats).toFixed(2)} DynamoDB calls, ${cpuMsPerRequest.toFixed(2)} ms CPU (service and fleet in one process); ` +
        `busiest key ${beatBusiest.key} ${(beatBusiest.share * 100).toFixed(1)}% of beat writes; ` +
        `${allocationReadsWhileBeating} allocation reads (AllocIndex did not move); the sweep's lease taken ${leaseTakes} times in ${beats} beats`,
    );

    // 3. The sweep with nothing late, at this fleet's size: the sweep a heartbeat runs once the lease has lapsed (the
    // lease's write, the node expiry; what every period repeats), and the whole minute job.
    clock.advance(sweepPeriodSeconds(nodes));
    meter.reset();
    await meter.during('sweep', () => schedulerFor(core).nodeSweep.sweepIfDue());
    const sweep = meter.usageOf('sweep');
    clock.advance(sweepPeriodSeconds(nodes));
    meter.reset();
    await meter.during('sweep', () => sweepScheduler(core));
    const job = meter.usageOf('sweep');
    console.log(
      `sweep (nothing late, ${nodes} nodes): a heartbeat's sweep past the lease ${sweep.readUnits.toFixed(1)} read units, ` +
        `${sweep.writeUnits.toFixed(1)} write units (the lease), ${sweep.calls} DynamoDB calls; the minute job ` +
        `${job.readUnits.toFixed(1)} read units, ${job.writeUnits.toFixed(1)} write units, ${job.calls} calls`,
    );

    // 4. A sample let go late: the clock passes every deadline, all but the sample beat again, the sweep marks it down.
    const maxTtlMs = 2 * baseTtlSeconds(nodes) * 1000;
    clock.advance(maxTtlMs + 11_000);
    const alive = [...Array(nodes).keys()].slice(lateSample);
    await fleet.beatSome(alive);
    meter.reset();
    await meter.during('sweep', () => sweepScheduler(core));
    const down = meter.usageOf('sweep');
    console.log(
      `sweep marking ${lateSample} late nodes down: ${per(down.writeUnits - sweep.writeUnits, lateSample).toFixed(1)} write units and ` +
        `${per(down.readUnits - sweep.readUnits, lateSample).toFixed(1)} read units per node marked down`,
    );

    // 5. One blocking allocation poll: how many reads a second of waiting costs.
    meter.reset();
    const waitSeconds = smoke ? 1 : 3;
    const pollNode = fleet.ids[lateSample] as string;
    const current = await fleetClient.allocations(pollNode, fleet.credentialOf(lateSample), 0, 0);
    meter.reset();
    await fleetClient.allocations(pollNode, fleet.credentialOf(lateSample), current.Index, waitSeconds * 1000);
    const poll = meter.usageOf('allocations');
    const allocationPollReadsPerSecond = per(poll.readUnits, waitSeconds);
    console.log(`blocking allocation poll: ${poll.readUnits} read units over a ${waitSeconds} s wait`);

    // Storage per node: every item of the table, over the nodes; the beat items are what a sweep reads per node.
    const scanned = await core.store.scan();
    const bytesPerNode = per(
      scanned.reduce((sum, item) => sum + JSON.stringify(item).length, 0),
      nodes,
    );
    const beatItems = scanned.filter((item) => String(item.pk).startsWith('sched#node-beat'));
    const beatItemBytes = per(
      beatItems.reduce((sum, item) => sum + JSON.stringify(item).length, 0),
      beatItems.length,
    );
    const sweepUnitsPerNode = beatItemBytes / 4096 / 2;
    console.log(
      `beat item ${beatItemBytes.toFixed(0)} bytes: an eventually consistent sweep reads ${sweepUnitsPerNode.toFixed(3)} units per node; ` +
        `${bytesPerNode.toFixed(0)} bytes stored per node in all`,
    );

    const costs: MeasuredCosts = {
      heartbeat: {
        readUnits: per(beat.readUnits, beats),
        writeUnits: per(beat.writeUnits, beats),
        dynamoCalls: per(beat.calls, beats),
      },
      registration: {
        readUnits: per(boot.readUnits, nodes),
        writeUnits: per(boot.writeUnits, nodes),
        dynamoCalls: per(boot.calls, nodes),
        requests: Object.values(bootRequests).reduce((sum, count) => sum + count, 0) / nodes,
      },
      sweep: {
        readUnitsPerNode: sweepUnitsPerNode,
        fixedReadUnits: Math.max(0, sweep.readUnits - sweepUnitsPerNode * nodes),
        writeUnits: sweep.writeUnits,
        dynamoCalls: sweep.calls,
      },
      minuteJobReadUnits: Math.max(0, job.readUnits - sweep.readUnits),
      allocationPollReadsPerSecond,
      bytesPerNode,
      cpuMsPerRequest,
    };
    const bills = new Map<string, number>();
    for (const design of [withBlockingPolls, previous, asBuilt]) {
      console.log(`\n${design.name}`);
      for (const size of [100, 1000, 10_000]) {
        const bill = monthlyBill(size, design, costs);
        bills.set(`${design.name}|${size}`, bill.total);
        const nomadWorst = worstDetectionSeconds(size, 0);
        const ours = worstDetectionSeconds(size, design.sweepPeriodSeconds(size), design.staggerShare(size));
        console.log(
          `  ${String(size).padStart(6)} nodes: ${money(bill.total).padStart(10)}/month; ${beatsPerSecond(size, design.staggerShare(size)).toFixed(1)} beats/s; ` +
            `worst detection ${ours.toFixed(0)} s (Nomad ${nomadWorst.toFixed(0)} s)`,
        );
        for (const line of bill.lines) console.log(`           ${money(line.dollars).padStart(10)}  ${line.item}`);
      }
    }
    console.log('');
    figure(bench, 'heartbeat write units per beat', costs.heartbeat.writeUnits, '1 (one small item)');
    figure(bench, 'registration: busiest partition key share', busiest.share, '—', busiest.key);
    figure(
      bench,
      'node boots/s before a partition key reaches 1,000 WU/s',
      registrationsPerSecondAtKeyLimit,
      "above the index's ~25 boots/s on AWS (no throttling)",
      heaviest.key,
    );
    figure(
      bench,
      '10,000 nodes $/month with held allocation polls (before)',
      bills.get(`${withBlockingPolls.name}|10000`) ?? 0,
      '≤ 210',
    );
    figure(bench, '10,000 nodes $/month before', bills.get(`${previous.name}|10000`) ?? 0, '≤ 210');
    figure(bench, '10,000 nodes $/month as built', bills.get(`${asBuilt.name}|10000`) ?? 0, '≤ 210');
    figure(
      bench,
      '100 nodes $/month with held allocation polls (before)',
      bills.get(`${withBlockingPolls.name}|100`) ?? 0,
      '≤ 10',
    );
    figure(bench, '100 nodes $/month before', bills.get(`${previous.name}|100`) ?? 0, '≤ 10');
    figure(bench, '100 nodes $/month as built', bills.get(`${asBuilt.name}|100`) ?? 0, '≤ 10');
    figure(
      bench,
      '100 nodes worst failure detection s, before / Nomad',
      worstDetectionSeconds(100, previous.sweepPeriodSeconds(100)) / worstDetectionSeconds(100, 0),
      '≤ 1',
    );
    figure(
      bench,
      '100 nodes worst failure detection s, as built / Nomad',
      worstDetectionSeconds(100, asBuilt.sweepPeriodSeconds(100), asBuilt.staggerShare(100)) /
        worstDetectionSeconds(100, 0),
      '≤ 1',
    );
    figure(bench, "the sweep's lease taken per beat", per(leaseTakes, beats), 'well under 1');
    await fleet.stop();
  }
} finally {
  fleetClient?.close();
  for (const server of servers) server.close();
  client.destroy();
  await dynamo.stop();
  rmSync(keyDir, { recursive: true, force: true });
}
