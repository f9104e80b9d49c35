import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { type CryptoKey, SignJWT } from 'jose';
import { type Core, type CoreOptions, createCore } from '../../packages/core/src/composition/secrets-core.ts';
import { createSecretsApp } from '../../packages/core/src/http/secrets-app.ts';
import type { WebApp } from '../../packages/core/src/http/web-app.ts';
import type { Clock } from '../../packages/core/src/lib/clock.ts';
import { silentLogger } from '../../packages/core/src/lib/log.ts';
import {
  createSchedulerApp,
  type SchedulerAppOptions,
} from '../../packages/core/src/scheduler/composition/scheduler-app.ts';
import { schedulerFor } from '../../packages/core/src/scheduler/composition/scheduler-core.ts';
import { backendsOf, type SecretsFamily } from '../../packages/core/src/secrets/families.ts';
import { initialize } from '../../packages/core/src/secrets/sys/init.ts';
import { fileKeySource } from '../../packages/core/src/storage/keyring.ts';
import { storeClientOptions } from '../../packages/core/src/storage/store-client.ts';
import { localClientConfig, startDynamoDbLocal } from '../../packages/local/src/dynamodb-local.ts';
import { ensureTable } from '../../packages/local/src/table.ts';

export interface BenchService {
  core: Core;
  app: WebApp;
  rootToken: string;
  /** The DynamoDB Local endpoint the core's table is on. */
  dynamoEndpoint: string;
  /** A root request through the app, as status and parsed body. */
  // biome-ignore lint/suspicious/noExplicitAny: benchmarks read arbitrary response JSON
  request(method: string, url: string, body?: unknown): Promise<{ status: number; body: any }>;
  /** The same, throwing on an error status, for set-up steps that must succeed. */
  call(method: string, url: string, body?: unknown): Promise<Record<string, unknown> | undefined>;
  stop(): Promise<void>;
}

/**
 * A DynamoDB Local for one bench: its own JVM, or the one at `BENCH_DYNAMODB_ENDPOINT` (the smoke test passes the
 * test run's, since a JVM start takes seconds on this machine); each bench makes its own tables, so sharing is safe.
 */
export async function startBenchDynamo(): Promise<{ endpoint: string; stop(): Promise<void> }> {
  const shared = process.env.BENCH_DYNAMODB_ENDPOINT;
  if (shared) return { endpoint: shared, stop: async () => {} };
  return startDynamoDbLocal({});
}

/**
 * A core on a fresh table of `client` (its name beside it), its keyring's key in `keyDir`, with no engines and no log
 * unless `options` say.
 */
export async function benchCore(
  client: DynamoDBClient,
  keyDir: string,
  options: Partial<Pick<CoreOptions, 'backends' | 'clock' | 'log'>> = {},
): Promise<{ core: Core; tableName: string }> {
  const tableName = `bench-${randomUUID()}`;
  await ensureTable(client, tableName);
  const core = await createCore({
    dynamodb: client,
    tableName,
    keySource: fileKeySource(path.join(keyDir, 'keyring.key')),
    backends: [],
    log: silentLogger,
    ...options,
  });
  return { core, tableName };
}

/**
 * The scheduler on a fresh table of `client` (`benchCore`): its core and table, its domain, the app a Lambda runs
 * (with `app`'s settings), and the management token the app's ACL bootstrap answered.
 */
export async function startBenchScheduler(
  client: DynamoDBClient,
  keyDir: string,
  options: { clock?: Clock; app?: Omit<SchedulerAppOptions, 'core'> } = {},
) {
  const { core, tableName } = await benchCore(client, keyDir, options.clock ? { clock: options.clock } : {});
  const scheduler = schedulerFor(core);
  const app = createSchedulerApp({ core: async () => core, ...options.app });
  const root = (await (await app.request('/v1/acl/bootstrap', { method: 'POST' })).json()) as { SecretID: string };
  return { core, tableName, scheduler, app, root };
}

/** The secrets app a Lambda runs, with the given families, on its own DynamoDB Local: what the benchmarks drive. */
export async function startBenchService(
  families: SecretsFamily[],
  options: {
    clock?: Clock;
    /** Called with the service's DynamoDB client before its first call: where a bench adds its own middleware. */
    observe?: (client: DynamoDBClient) => void;
  } = {},
): Promise<BenchService> {
  const dynamo = await startBenchDynamo();
  const keyDir = mkdtempSync(path.join(tmpdir(), 'keyhaven-bench-'));
  // Configured as the runtimes configure the services' clients (`storage/store-client.ts`).
  const client = new DynamoDBClient({ ...localClientConfig(dynamo.endpoint), ...storeClientOptions() });
  options.observe?.(client);
  const stop = async () => {
    client.destroy();
    await dynamo.stop();
    rmSync(keyDir, { recursive: true, force: true });
  };
  try {
    const { core } = await benchCore(client, keyDir, {
      backends: backendsOf(families),
      ...(options.clock ? { clock: options.clock } : {}),
    });
    const rootToken = await initialize(core);
    const app = createSecretsApp({ core: async () => core, clientIp: () => '127.0.0.1' });
    const request = async (method: string, url: string, body?: unknown) => {
      const response = await app.request(url, {
        method,
        headers: { 'X-Secrets-Token': rootToken, 'Content-Type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await response.text();
      return { status: response.status, body: text ? JSON.parse(text) : undefined };
    };
    const call = async (method: string, url: string, body?: unknown) => {
      const response = await request(method, url, body);
      if (response.status >= 300)
        throw new Error(`${method} ${url}: ${response.status} ${JSON.stringify(response.body)}`);
      return response.body as Record<string, unknown> | undefined;
    };
    return { core, app, rootToken, dynamoEndpoint: dynamo.endpoint, request, call, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * The event API Gateway's HTTP API delivers for `POST /v1/auth/jwt/login` with `body`: what the login benches send
 * the secrets Lambda's adapter (built lean, with no per-call ids or dates, since its cost counts against the login).
 */
export const jwtLoginEvent = (body: string): APIGatewayProxyEventV2 =>
  ({
    version: '2.0',
    routeKey: 'ANY /v1/auth/jwt/{proxy+}',
    rawPath: '/v1/auth/jwt/login',
    rawQueryString: '',
    headers: {
      host: 'abc123.execute-api.us-east-1.amazonaws.com',
      'content-type': 'application/json',
      'content-length': String(body.length),
      'x-forwarded-for': '198.51.100.7',
    },
    requestContext: {
      http: {
        method: 'POST',
        path: '/v1/auth/jwt/login',
        protocol: 'HTTP/1.1',
        sourceIp: '198.51.100.7',
        userAgent: 'bench',
      },
    },
    body,
    isBase64Encoded: false,
  }) as unknown as APIGatewayProxyEventV2;

/** The identity provider the login benches stand in for: the issuer their JWTs name and the role's bound issuer. */
export const benchIssuer = 'https://ci.example';

/** The JWT role the login benches log in with: `sub` is the user, `groups` the groups, 1 h tokens of `tokenType`. */
export const benchJwtRole = (tokenType: string) => ({
  role_type: 'jwt',
  user_claim: 'sub',
  bound_audiences: 'keyhaven',
  groups_claim: 'groups',
  token_policies: 'reader',
  token_ttl: '1h',
  token_type: tokenType,
});

/** A JWT for bench user number `user`, signed with `alg`, valid for two hours, that `benchJwtRole` accepts. */
export const benchJwt = (alg: string, user: number, privateKey: CryptoKey) =>
  new SignJWT({ iss: benchIssuer, aud: 'keyhaven', sub: `user-${user}`, groups: ['builders'] })
    .setProtectedHeader({ alg })
    .setIssuedAt()
    .setExpirationTime('2h')
    .sign(privateKey);
