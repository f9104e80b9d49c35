import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { inject } from 'vitest';
import { type Core, createCore } from '../../packages/core/src/core.ts';
import type { Backend } from '../../packages/core/src/http/backend.ts';
import { createSecretsApp } from '../../packages/core/src/http/secrets-app.ts';
import { ManualClock } from '../../packages/core/src/lib/clock.ts';
import { type Logger, silentLogger } from '../../packages/core/src/lib/log.ts';
import { allSecretsFamilies, backendsOf } from '../../packages/core/src/secrets/families.ts';
import { initialize } from '../../packages/core/src/secrets/sys/init.ts';
import { type KeySource, fileKeySource } from '../../packages/core/src/storage/keyring.ts';
import { localClientConfig } from '../../packages/local/src/dynamodb-local.ts';
import { ensureTable } from '../../packages/local/src/table.ts';

export interface CallOptions {
  token?: string;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface CallResult {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary response JSON
  body: any;
}

export interface SecretsHarness {
  core: Core;
  clock: ManualClock;
  rootToken: string;
  tableName: string;
  client: DynamoDBClient;
  /** A request through the same app a Lambda serves (no network), e.g. `call('LIST', '/v1/secret/')`. */
  call(method: string, path: string, options?: CallOptions): Promise<CallResult>;
  close(): Promise<void>;
}

/**
 * A secrets service on its own fresh table in the run's DynamoDB Local, with a clock the test moves.
 * Extra backends (test fixtures) can be registered next to the real families.
 */
export async function startSecrets(
  options: { extraBackends?: Backend[]; log?: Logger; keySource?: KeySource; clientIp?: string } = {},
): Promise<SecretsHarness> {
  const client = new DynamoDBClient(localClientConfig(inject('dynamoEndpoint')));
  const tableName = `test-${randomUUID()}`;
  await ensureTable(client, tableName);
  const keyDir = mkdtempSync(path.join(tmpdir(), 'keyhaven-key-'));
  // Far ahead of the wall clock: DynamoDB Local's own TTL deletes items whose `expiresAt` is in the real
  // past, which would race the sweep the tests drive. Tests exercise the TTL backstop through onTableChange.
  const clock = new ManualClock(Date.UTC(2100, 0, 1));
  const core = await createCore({
    dynamodb: client,
    tableName,
    keySource: options.keySource ?? fileKeySource(path.join(keyDir, 'keyring.key')),
    backends: [...backendsOf(allSecretsFamilies), ...(options.extraBackends ?? [])],
    clock,
    log: options.log ?? silentLogger,
  });
  const rootToken = await initialize(core);
  await core.mounts.enable('secret', 'secret', { type: 'kv' });
  const app = createSecretsApp({ core: async () => core, clientIp: () => options.clientIp ?? '127.0.0.1' });
  return {
    core,
    clock,
    rootToken,
    tableName,
    client,
    async call(method, url, { token, body, headers } = {}) {
      const response = await app.request(url, {
        method,
        headers: { ...(token ? { 'X-Secrets-Token': token } : {}), ...headers },
        ...(body === undefined ? {} : { body: typeof body === 'string' || body instanceof Blob ? body : JSON.stringify(body) }),
      });
      const text = await response.text();
      return { status: response.status, body: text ? JSON.parse(text) : undefined };
    },
    async close() {
      client.destroy();
      rmSync(keyDir, { recursive: true, force: true });
    },
  };
}
