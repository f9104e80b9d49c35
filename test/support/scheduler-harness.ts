import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { inject } from 'vitest';
import { type Core, type CoreStorage, createCore } from '../../packages/core/src/composition/secrets-core.ts';
import { ManualClock } from '../../packages/core/src/lib/clock.ts';
import { type Logger, silentLogger } from '../../packages/core/src/lib/log.ts';
import { type Scheduler, schedulerFor } from '../../packages/core/src/scheduler/composition/scheduler-core.ts';
import {
  createSchedulerApp,
  type SchedulerAppOptions,
} from '../../packages/core/src/scheduler/composition/scheduler-app.ts';
import { fileKeySource } from '../../packages/core/src/storage/keyring.ts';
import { MemoryStore } from '../../packages/core/src/storage/memory-store.ts';
import { localClientConfig } from '../../packages/local/src/dynamodb-local.ts';
import { ensureTable } from '../../packages/local/src/table.ts';
import { guardItemKinds } from './item-kind-guard.ts';

export interface SchedulerCallOptions {
  token?: string;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface SchedulerCallResult {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary response JSON
  body: any;
  text: string;
  headers: Headers;
}

export interface StreamReader {
  /** The next NDJSON line, parsed; rejects after `timeoutMs`. */
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary event JSON
  next(timeoutMs?: number): Promise<any>;
  /** The next line that is not a `{}` heartbeat. */
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary event JSON
  nextEvents(timeoutMs?: number): Promise<any>;
  /** True once the server ended the stream. */
  ended(timeoutMs?: number): Promise<boolean>;
  close(): Promise<void>;
}

/** A scheduler service for tests, on whichever store (`startScheduler`: DynamoDB Local; `startSchedulerInMemory`: memory). */
export interface SchedulerService {
  core: Core;
  clock: ManualClock;
  scheduler: Scheduler;
  /** The key file that wraps this table's data key (a Lambda entry point given it opens the same keyring). */
  keyFile: string;
  fetch: (request: Request) => Response | Promise<Response>;
  call(method: string, path: string, options?: SchedulerCallOptions): Promise<SchedulerCallResult>;
  /** Bootstraps ACLs and returns the management secret. */
  bootstrap(): Promise<string>;
  stream(path: string, token?: string): Promise<{ status: number; text?: string; reader?: StreamReader }>;
  /** Opens a stream that must be accepted. */
  open(path: string, token?: string): Promise<StreamReader>;
  close(): Promise<void>;
}

/** A scheduler service on its own table in DynamoDB Local. */
export interface SchedulerHarness extends SchedulerService {
  tableName: string;
  client: DynamoDBClient;
}

type SchedulerHarnessOptions = Partial<Omit<SchedulerAppOptions, 'core'>> & {
  /** Where the core logs (nowhere by default). */
  log?: Logger;
};

/**
 * A scheduler service on its own fresh table in the run's DynamoDB Local, with a clock the test moves.
 * `share` reuses another harness's table (two regions over one replicated table).
 */
export async function startScheduler(
  options: SchedulerHarnessOptions & { share?: SchedulerHarness } = {},
): Promise<SchedulerHarness> {
  const { share, ...appOptions } = options;
  const client = share?.client ?? new DynamoDBClient(localClientConfig(inject('dynamoEndpoint')));
  const tableName = share?.tableName ?? `test-${randomUUID()}`;
  if (!share) await ensureTable(client, tableName);
  const service = await schedulerOn({ dynamodb: client, tableName }, appOptions, share, () => {
    if (!share) client.destroy();
  });
  return Object.assign(service, { tableName, client });
}

/**
 * The same service over the in-memory store (`storage/memory-store.ts`, held to DynamoDB's behaviour by
 * `test/storage/store-contract.test.ts`): for handler and domain tests that do not test DynamoDB itself.
 */
export function startSchedulerInMemory(options: SchedulerHarnessOptions = {}): Promise<SchedulerService> {
  return schedulerOn({ store: new MemoryStore() }, options, undefined, () => {});
}

async function schedulerOn(
  storage: CoreStorage,
  appOptions: SchedulerHarnessOptions,
  share: SchedulerService | undefined,
  release: () => void,
): Promise<SchedulerService> {
  const { log, ...serviceOptions } = appOptions;
  const keyDir = mkdtempSync(path.join(tmpdir(), 'keyhaven-sched-key-'));
  const keyFile = share?.keyFile ?? path.join(keyDir, 'keyring.key');
  const clock = share?.clock ?? new ManualClock(Date.UTC(2026, 0, 1));
  const core =
    share?.core ??
    (await createCore({
      ...storage,
      keySource: fileKeySource(keyFile),
      backends: [],
      clock,
      log: log ?? silentLogger,
    }));
  if (!share) guardItemKinds(core.store);
  const schedulerOptions = { heartbeatMs: 200, eventPollMs: 50, indexPollMs: 50, ...serviceOptions };
  const scheduler = schedulerFor(core, schedulerOptions);
  const app = createSchedulerApp({ core: async () => core, clientIp: () => '127.0.0.1', ...schedulerOptions });
  const request = (method: string, url: string, { token, body, headers }: SchedulerCallOptions = {}) =>
    app.request(url, {
      method,
      // JSON, as Nomad's clients send it: a text body is refused (`front/cross-origin.ts`).
      headers: {
        ...(body === undefined || hasContentType(headers) ? {} : { 'Content-Type': 'application/json' }),
        ...(token ? { 'X-Scheduler-Token': token } : {}),
        ...headers,
      },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
  const harness: SchedulerService = {
    core,
    clock,
    scheduler,
    keyFile,
    fetch: (req) => app.fetch(req),
    async call(method, url, callOptions = {}) {
      const response = await request(method, url, callOptions);
      const text = await response.text();
      let body: unknown = text;
      if ((response.headers.get('content-type') ?? '').includes('json') && text) body = JSON.parse(text);
      return { status: response.status, body, text, headers: response.headers };
    },
    async bootstrap() {
      const out = await harness.call('POST', '/v1/acl/bootstrap');
      if (out.status !== 200) throw new Error(`bootstrap failed: ${out.status} ${out.text}`);
      return out.body.SecretID as string;
    },
    async stream(url, token) {
      const response = await request('GET', url, token ? { token } : {});
      if (response.status !== 200 || !response.body) return { status: response.status, text: await response.text() };
      return { status: 200, reader: lineReader(response.body) };
    },
    async open(url, token) {
      const out = await harness.stream(url, token);
      if (!out.reader) throw new Error(`stream refused: ${out.status} ${out.text}`);
      return out.reader;
    },
    async close() {
      release();
      rmSync(keyDir, { recursive: true, force: true });
    },
  };
  return harness;
}

function lineReader(body: ReadableStream<Uint8Array>): StreamReader {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let done = false;
  let pending: Promise<ReadableStreamReadResult<Uint8Array>> | undefined;
  const readLine = async (timeoutMs: number): Promise<string | undefined> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const newline = buffer.indexOf('\n');
      if (newline >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        return line;
      }
      if (done) return undefined;
      pending ??= reader.read();
      const timeout = new Promise<'timeout'>((resolve) =>
        setTimeout(() => resolve('timeout'), Math.max(0, deadline - Date.now())),
      );
      const result = await Promise.race([pending, timeout]);
      if (result === 'timeout') throw new Error(`no stream line within ${timeoutMs} ms`);
      pending = undefined;
      if (result.done) done = true;
      else buffer += decoder.decode(result.value, { stream: true });
    }
  };
  const out: StreamReader = {
    async next(timeoutMs = 5000) {
      const line = await readLine(timeoutMs);
      if (line === undefined) throw new Error('the stream ended');
      return JSON.parse(line);
    },
    async nextEvents(timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const line = await out.next(Math.max(1, deadline - Date.now()));
        if (line.Index !== undefined) return line;
      }
    },
    async ended(timeoutMs = 5000) {
      try {
        for (;;) if ((await readLine(timeoutMs)) === undefined) return true;
      } catch {
        return false;
      }
    },
    async close() {
      await reader.cancel().catch(() => undefined);
    },
  };
  return out;
}

/** Whether the test gave a Content-Type of its own, in any spelling. */
function hasContentType(headers: Record<string, string> | undefined): boolean {
  return Object.keys(headers ?? {}).some((name) => name.toLowerCase() === 'content-type');
}
