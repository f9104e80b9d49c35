/**
 * The cost of one connected event-stream subscriber: the stream function (the scheduler app, as its Lambda runs it)
 * holds `GET /v1/event/stream` open while its broker polls the event buffer; the events are written by another
 * core on the same table (another Lambda), so delivery waits for the poll, as in AWS. Two phases of PHASE_SECONDS
 * (default 30): no traffic, then 10 events/s. Prints the table reads per minute (each poll is one strongly
 * consistent Query of at most 4 KB: 1 read request unit), delivery p50/p99, this process's memory, and dollars per
 * subscriber-month at on-demand prices for the function's memory sizes.
 * Run: `tsx test/bench/stream-cost.bench.ts` (PHASE_SECONDS=n, POLL_MS=n, default 200 as deployed; BENCH_SMOKE=1:
 * 2 s phases).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createCore } from '../../packages/core/src/composition/secrets-core.ts';
import { silentLogger } from '../../packages/core/src/lib/log.ts';
import { publishEvents } from '../../packages/core/src/scheduler/composition/scheduler-core.ts';
import { createSchedulerApp } from '../../packages/core/src/scheduler/composition/scheduler-app.ts';
import { fileKeySource } from '../../packages/core/src/storage/keyring.ts';
import { localClientConfig } from '../../packages/local/src/dynamodb-local.ts';
import { ensureTable } from '../../packages/local/src/table.ts';
import { startBenchDynamo } from './bench-service.ts';
import { figure, sized, smoke } from './summary.ts';

const phaseSeconds = sized('PHASE_SECONDS', 30, 2);
const pollMs = Number(process.env.POLL_MS ?? 200);
/** us-east-1 on-demand list prices (2026): Lambda per GB-second (x86, arm64), per request; DynamoDB per read unit. */
const prices = {
  lambdaX86GbSecond: 0.0000166667,
  lambdaArmGbSecond: 0.0000133334,
  lambdaRequest: 0.2 / 1e6,
  readUnit: 0.125 / 1e6,
};
const secondsPerMonth = 30.44 * 86_400;
/** A stream ends 14 minutes in (the function's 15-minute limit) and the client reconnects: invocations a month. */
const invocationsPerMonth = secondsPerMonth / (14 * 60);
const percentile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;

const dynamo = await startBenchDynamo();
const keyDir = mkdtempSync(path.join(tmpdir(), 'keyhaven-bench-'));
const streamClient = new DynamoDBClient(localClientConfig(dynamo.endpoint));
const writerClient = new DynamoDBClient(localClientConfig(dynamo.endpoint));
let reads = 0;
streamClient.middlewareStack.add(
  (next, context) => async (args) => {
    if (context.commandName === 'QueryCommand' || context.commandName === 'GetItemCommand') reads++;
    return next(args);
  },
  { step: 'initialize', name: 'countReads' },
);
try {
  const tableName = `bench-${randomUUID()}`;
  await ensureTable(streamClient, tableName);
  const keySource = fileKeySource(path.join(keyDir, 'k'));
  const streamCore = await createCore({
    dynamodb: streamClient,
    tableName,
    keySource,
    backends: [],
    log: silentLogger,
  });
  const writerCore = await createCore({
    dynamodb: writerClient,
    tableName,
    keySource,
    backends: [],
    log: silentLogger,
  });
  const writerApp = createSchedulerApp({ core: async () => writerCore });
  const root = (await (await writerApp.request('/v1/acl/bootstrap', { method: 'POST' })).json()) as {
    SecretID: string;
  };
  const app = createSchedulerApp({ core: async () => streamCore, heartbeatMs: 10_000, eventPollMs: pollMs });

  const sentAt = new Map<number, number>();
  const latencies: number[] = [];
  const response = await app.request('/v1/event/stream?topic=Node', {
    headers: { 'X-Scheduler-Token': root.SecretID },
  });
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  const reading = (async () => {
    for (;;) {
      const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      for (let newline = buffer.indexOf('\n'); newline >= 0; newline = buffer.indexOf('\n')) {
        const line = JSON.parse(buffer.slice(0, newline)) as { Index?: number };
        buffer = buffer.slice(newline + 1);
        const sent = line.Index === undefined ? undefined : sentAt.get(line.Index);
        if (sent !== undefined) latencies.push(performance.now() - sent);
      }
    }
  })();
  await new Promise((resolve) => setTimeout(resolve, smoke ? 500 : 2000)); // connected, first poll done

  const phase = async (rate: number) => {
    reads = 0;
    const started = performance.now();
    let writes = 0;
    while (performance.now() - started < phaseSeconds * 1000) {
      if (rate === 0) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        continue;
      }
      const wait = started + (writes * 1000) / rate - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      const before = performance.now();
      const index = await publishEvents(writerCore, [
        {
          Topic: 'Node',
          Type: 'NodeEvent',
          Key: `n${writes}`,
          Namespace: '',
          FilterKeys: null,
          Payload: { Node: { ID: `n${writes}` } },
        },
      ]);
      sentAt.set(index, before);
      writes++;
    }
    return (reads * 60_000) / (performance.now() - started);
  };
  const idleReadsPerMinute = await phase(0);
  const busyReadsPerMinute = await phase(10);
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const memory = process.memoryUsage();
  await reader.cancel().catch(() => undefined);
  await reading;
  latencies.sort((a, b) => a - b);

  console.log(
    `event stream, one subscriber, broker poll every ${pollMs} ms, ${phaseSeconds} s per phase; machine: 2 cores, shared`,
  );
  console.log(
    `table reads per minute: idle ${idleReadsPerMinute.toFixed(0)}, at 10 events/s ${busyReadsPerMinute.toFixed(0)}`,
  );
  console.log(
    `delivery at 10 events/s (written by another core): p50 ${percentile(latencies, 0.5).toFixed(0)} ms, p99 ${percentile(latencies, 0.99).toFixed(0)} ms (${latencies.length} events)`,
  );
  console.log(
    `this process: rss ${(memory.rss / 2 ** 20).toFixed(0)} MB, heap used ${(memory.heapUsed / 2 ** 20).toFixed(0)} MB (bench harness and SDK included)`,
  );
  console.log(
    `prices: Lambda $${prices.lambdaX86GbSecond}/GB-s x86, $${prices.lambdaArmGbSecond}/GB-s arm64, $0.20 per million requests; DynamoDB on-demand $0.125 per million read units (us-east-1)`,
  );
  console.log('duration: the whole month (the function runs while the subscriber is connected, traffic or not)');
  const monthly = (perMinute: number, mb: number) => {
    const reads = perMinute * (secondsPerMonth / 60) * prices.readUnit;
    const gbSeconds = (mb / 1024) * secondsPerMonth;
    const requests = invocationsPerMonth * prices.lambdaRequest;
    return {
      reads,
      x86: gbSeconds * prices.lambdaX86GbSecond + requests,
      arm: gbSeconds * prices.lambdaArmGbSecond + requests,
    };
  };
  for (const [label, perMinute] of [
    ['idle', idleReadsPerMinute],
    ['10 events/s', busyReadsPerMinute],
  ] as const) {
    for (const mb of [512, 256, 128]) {
      const { reads: readsCost, x86, arm } = monthly(perMinute, mb);
      console.log(
        `  ${label.padEnd(11)} ${String(mb).padStart(3)} MB: reads $${readsCost.toFixed(2)} + duration $${x86.toFixed(2)} x86 / $${arm.toFixed(2)} arm64 = $${(readsCost + x86).toFixed(2)} / $${(readsCost + arm).toFixed(2)} per subscriber-month`,
      );
    }
  }
  // The goal's question: an idle subscriber-month at Lambda's smallest memory, and the floor of any Lambda that
  // holds the stream open (billed duration for the whole connection, even with no table reads at all).
  const idle128 = monthly(idleReadsPerMinute, 128);
  const floor = monthly(0, 128);
  console.log(
    `idle subscriber-month at 128 MB (Lambda's minimum memory): $${(idle128.reads + idle128.arm).toFixed(2)} arm64, $${(idle128.reads + idle128.x86).toFixed(2)} x86, ` +
      `with delivery p99 ${percentile(latencies, 0.99).toFixed(0)} ms at 10 events/s`,
  );
  console.log(
    `floor for a Lambda holding the stream open (128 MB for ${(secondsPerMonth / 86_400).toFixed(2)} days, no reads): $${floor.arm.toFixed(2)} arm64, $${floor.x86.toFixed(2)} x86 ` +
      `per subscriber-month: under $3 is ${floor.arm < 3 ? 'possible' : 'impossible with this shape'}`,
  );
  figure('stream-cost', 'idle subscriber table reads/min', idleReadsPerMinute, '—', `poll every ${pollMs} ms`);
  figure(
    'stream-cost',
    'idle subscriber-month at 128 MB, arm64 $',
    idle128.reads + idle128.arm,
    '< 3 (event stream cost issue)',
    `floor with no reads $${floor.arm.toFixed(2)}`,
  );
} finally {
  streamClient.destroy();
  writerClient.destroy();
  await dynamo.stop();
  rmSync(keyDir, { recursive: true, force: true });
}
