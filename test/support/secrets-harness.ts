import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { inject } from 'vitest';
import { type Core, type CoreStorage, createCore } from '../../packages/core/src/composition/secrets-core.ts';
import { createSecretsApp } from '../../packages/core/src/http/secrets-app.ts';
import { ManualClock } from '../../packages/core/src/lib/clock.ts';
import { type Logger, silentLogger } from '../../packages/core/src/lib/log.ts';
import { allSecretsFamilies, backendsOf } from '../../packages/core/src/secrets/families.ts';
import type { Backend } from '../../packages/core/src/secrets/framework/backend.ts';
import { initialize } from '../../packages/core/src/secrets/sys/init.ts';
import { fileKeySource, type KeySource } from '../../packages/core/src/storage/keyring.ts';
import { MemoryStore } from '../../packages/core/src/storage/memory-store.ts';
import type { Store } from '../../packages/core/src/storage/store.ts';
import { localClientConfig } from '../../packages/local/src/dynamodb-local.ts';
import { ensureTable } from '../../packages/local/src/table.ts';
import { guardItemKinds } from './item-kind-guard.ts';

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

/** A secrets service for tests, on whichever store (`startSecrets`: DynamoDB Local; `startSecretsInMemory`: memory). */
export interface SecretsService {
  core: Core;
  clock: ManualClock;
  rootToken: string;
  /** A request through the same app a Lambda serves (no network), e.g. `call('LIST', '/v1/secret/')`. */
  call(method: string, path: string, options?: CallOptions): Promise<CallResult>;
  /** The audit file every harness writes (a `file` device, hashed): the lines so far. */
  auditLines(): string[];
  /** Secrets and tokens this harness has seen in requests and answers, which the audit file must never show. */
  secretsSeen(): Set<string>;
  close(): Promise<void>;
}

/** A secrets service on its own table in DynamoDB Local. */
export interface SecretsHarness extends SecretsService {
  tableName: string;
  client: DynamoDBClient;
}

type HarnessOptions = {
  extraBackends?: Backend[];
  /** The backends served instead of every family's (a test observing the real backends through a wrapper). */
  backends?: Backend[];
  log?: Logger;
  keySource?: KeySource;
  clientIp?: string;
  audit?: false;
  /** The store of `startSecretsInMemory` (default a fresh MemoryStore): a test may wrap one to watch its calls. */
  store?: Store;
};

/**
 * A secrets service on its own fresh table in the run's DynamoDB Local, with a clock the test moves.
 * Extra backends (test fixtures) can be registered next to the real families.
 */
export async function startSecrets(options: HarnessOptions = {}): Promise<SecretsHarness> {
  const client = new DynamoDBClient(localClientConfig(inject('dynamoEndpoint')));
  const tableName = `test-${randomUUID()}`;
  await ensureTable(client, tableName);
  const service = await secretsOn({ dynamodb: client, tableName }, options, () => client.destroy());
  return { ...service, tableName, client };
}

/**
 * The same service over the in-memory store (`storage/memory-store.ts`, held to DynamoDB's behaviour by
 * `test/storage/store-contract.test.ts`): for handler and domain tests that do not test DynamoDB itself.
 */
export function startSecretsInMemory(options: HarnessOptions = {}): Promise<SecretsService> {
  return secretsOn({ store: options.store ?? new MemoryStore() }, options, () => {});
}

async function secretsOn(storage: CoreStorage, options: HarnessOptions, release: () => void): Promise<SecretsService> {
  const keyDir = mkdtempSync(path.join(tmpdir(), 'keyhaven-key-'));
  // Far ahead of the wall clock: DynamoDB Local's own TTL deletes items whose `expiresAt` is in the real
  // past, which would race the sweep the tests drive. Tests exercise the TTL backstop through onTableChange.
  const clock = new ManualClock(Date.UTC(2100, 0, 1));
  const core = await createCore({
    ...storage,
    keySource: options.keySource ?? fileKeySource(path.join(keyDir, 'keyring.key')),
    backends: [...(options.backends ?? backendsOf(allSecretsFamilies)), ...(options.extraBackends ?? [])],
    clock,
    log: options.log ?? silentLogger,
  });
  guardItemKinds(core.store);
  const rootToken = await initialize(core);
  await core.mounts.enable('secret', 'secret', { type: 'kv' });
  // Every test's traffic goes through a hashed file audit device; `close` checks no secret it saw is in the file.
  const auditFile = path.join(keyDir, 'audit.log');
  if (options.audit !== false)
    await core.audit.devices.enable('harness', { type: 'file', options: { file_path: auditFile } });
  const app = createSecretsApp({ core: async () => core, clientIp: () => options.clientIp ?? '127.0.0.1' });
  const secrets = new Set<string>();
  const auditLines = () =>
    existsSync(auditFile)
      ? readFileSync(auditFile, 'utf8')
          .split('\n')
          .filter((line) => line !== '')
      : [];
  return {
    core,
    clock,
    rootToken,
    async call(method, url, { token, body, headers } = {}) {
      const response = await app.request(url, {
        method,
        // JSON, as Vault's clients send it: a text body is refused (`front/cross-origin.ts`).
        headers: {
          ...(body === undefined || body instanceof Blob || hasContentType(headers)
            ? {}
            : { 'Content-Type': 'application/json' }),
          ...(token ? { 'X-Secrets-Token': token } : {}),
          ...headers,
        },
        ...(body === undefined
          ? {}
          : { body: typeof body === 'string' || body instanceof Blob ? body : JSON.stringify(body) }),
      });
      const text = await response.text();
      const parsed = text ? JSON.parse(text) : undefined;
      if (token) secrets.add(token);
      collectSecrets(body, secrets);
      collectSecrets(parsed, secrets);
      return { status: response.status, body: parsed };
    },
    auditLines,
    secretsSeen: () => secrets,
    async close() {
      const lines = auditLines().join('\n');
      const leaked = [...secrets].filter((secret) => lines.includes(secret));
      if (leaked.length > 0)
        throw new Error(
          `the audit log shows ${leaked.length} secret(s) in plain text: ${leaked.slice(0, 3).join(', ')}`,
        );
      release();
      rmSync(keyDir, { recursive: true, force: true });
    },
  };
}

const secretKey =
  /^(client_token|token|accessor|password|current_password|last_password|new_password|secret|secret_id|client_secret|private_key|private_key_data|key_data|access_token|secret_key|access_key|bindpass|credentials)$/i;

/** Values a test would never want in an audit log: tokens, accessors, passwords, keys (at least 8 characters, so never a common word). */
function collectSecrets(value: unknown, into: Set<string>, key = ''): void {
  if (typeof value === 'string') {
    const isToken = /^hv[sbr]\.[\w.-]{8,}$/.test(value);
    // Mount accessors (`kv_1a2b3c4d`, `system_builtin`) name mounts, not tokens: audit entries show them as Vault's do.
    const isMountAccessor = key === 'accessor' && /^[a-z]+_[\w-]+$/.test(value);
    if (
      (isToken || secretKey.test(key)) &&
      !isMountAccessor &&
      value.length >= 8 &&
      !/^hmac-sha256:/.test(value) &&
      !/^\d+$/.test(value)
    )
      into.add(value);
    return;
  }
  if (typeof value === 'string' || value === null || typeof value !== 'object') return;
  if (typeof (value as { then?: unknown }).then === 'function') return;
  for (const [childKey, child] of Object.entries(value))
    collectSecrets(child, into, Array.isArray(value) ? key : childKey);
}

/** Whether the test gave a Content-Type of its own, in any spelling. */
function hasContentType(headers: Record<string, string> | undefined): boolean {
  return Object.keys(headers ?? {}).some((name) => name.toLowerCase() === 'content-type');
}
