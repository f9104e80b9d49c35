/**
 * The event stream under load: 100 subscribers on `GET /v1/event/stream?topic=Node` (the web-object app in process,
 * what a Lambda or `npm start` runs) while Node events are published at a steady rate. Prints events/s
 * delivered (summed over subscribers) and p50/p99 delivery latency (publish call start to the line reaching a
 * subscriber). Figures only: nothing is asserted.
 * Run: `tsx test/bench/event-stream.bench.ts` (BENCH_SECONDS, BENCH_RATE writes/s, BENCH_SUBSCRIBERS; BENCH_SMOKE=1:
 * 2 s, 10 writes/s, 5 subscribers).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { publishEvents } from '../../packages/core/src/scheduler/composition/scheduler-core.ts';
import { localClientConfig } from '../../packages/local/src/dynamodb-local.ts';
import { startBenchDynamo, startBenchScheduler } from './bench-service.ts';
import { figure, sized } from './summary.ts';

const seconds = sized('BENCH_SECONDS', 10, 2);
const rate = sized('BENCH_RATE', 50, 10);
const subscribers = sized('BENCH_SUBSCRIBERS', 100, 5);

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? 0;

async function main() {
  const dynamo = await startBenchDynamo();
  const keyDir = mkdtempSync(path.join(tmpdir(), 'keyhaven-bench-'));
  const client = new DynamoDBClient(localClientConfig(dynamo.endpoint));
  try {
    const { core, app, root } = await startBenchScheduler(client, keyDir, {
      app: { heartbeatMs: 10_000, eventPollMs: 200 },
    });
    const sentAt = new Map<number, number>();
    const latencies: number[] = [];
    let delivered = 0;
    let stopping = false;
    const readers = await Promise.all(
      Array.from({ length: subscribers }, async () => {
        const response = await app.request('/v1/event/stream?topic=Node', {
          headers: { 'X-Scheduler-Token': root.SecretID },
        });
        const reader = (response.body as ReadableStream<Uint8Array>).getReader();
        const decoder = new TextDecoder();
        let buffer = '';
        const done = (async () => {
          while (!stopping) {
            const { value, done } = await reader.read();
            if (done) return;
            buffer += decoder.decode(value, { stream: true });
            let newline = buffer.indexOf('\n');
            while (newline >= 0) {
              const line = JSON.parse(buffer.slice(0, newline)) as { Index?: number; Events?: unknown[] };
              buffer = buffer.slice(newline + 1);
              if (line.Index !== undefined) {
                delivered += line.Events?.length ?? 0;
                const sent = sentAt.get(line.Index);
                if (sent !== undefined) latencies.push(performance.now() - sent);
              }
              newline = buffer.indexOf('\n');
            }
          }
        })();
        return { reader, done };
      }),
    );
    const started = performance.now();
    let writes = 0;
    while (performance.now() - started < seconds * 1000) {
      const due = started + (writes * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      const before = performance.now();
      const index = await publishEvents(core, [
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
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const elapsed = (performance.now() - started) / 1000;
    stopping = true;
    for (const { reader } of readers) await reader.cancel().catch(() => undefined);
    latencies.sort((a, b) => a - b);
    console.log(
      JSON.stringify({
        case: 'event stream, in-process app',
        subscribers,
        writesPerSecond: Math.round(writes / (seconds || 1)),
        eventsDeliveredPerSecond: Math.round(delivered / elapsed),
        expectedDeliveries: writes * subscribers,
        delivered,
        p50Ms: Math.round(percentile(latencies, 50)),
        p99Ms: Math.round(percentile(latencies, 99)),
      }),
    );
    figure(
      'event-stream',
      'event stream delivered / expected',
      delivered / (writes * subscribers),
      '1',
      `${subscribers} subscribers, ${rate} writes/s`,
    );
    figure(
      'event-stream',
      'event stream delivery p99 ms',
      percentile(latencies, 99),
      '—',
      `p50 ${Math.round(percentile(latencies, 50))} ms`,
    );
  } finally {
    client.destroy();
    await dynamo.stop();
    rmSync(keyDir, { recursive: true, force: true });
  }
}

await main();
