import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type Core, createCore } from '../../packages/core/src/composition/secrets-core.ts';
import { type SecretsRegionOptions, writeReason } from '../../packages/core/src/http/forward-writes.ts';
import { createSecretsApp } from '../../packages/core/src/http/secrets-app.ts';
import type { WebApp } from '../../packages/core/src/http/web-app.ts';
import { secretsFront } from '../../packages/core/src/http/secrets-front.ts';
import { secretsLambda } from '../../packages/core/src/http/secrets-lambda.ts';
import { silentLogger } from '../../packages/core/src/lib/log.ts';
import { allSecretsFamilies, backendsOf } from '../../packages/core/src/secrets/families.ts';
import { maxBodyBytes } from '../../packages/core/src/secrets/framework/pipeline.ts';
import { fileKeySource } from '../../packages/core/src/storage/keyring.ts';
import { ensureTable } from '../../packages/local/src/table.ts';
import { type SecretsHarness, startSecrets } from '../support/secrets-harness.ts';
import { startTableReplicator, type TableReplicator } from '../support/table-replicator.ts';

/**
 * The secrets service in two regions on two tables in the run's DynamoDB Local: us-east-1 (authoritative, the
 * harness) and eu-west-1, fed only by the replicator. eu-west-1 forwards every write (and every read that writes)
 * to us-east-1 and answers other reads from its own table.
 */
describe('secrets service in a replica region, over a replicated table', () => {
  let authoritative: SecretsHarness;
  let authoritativeApp: WebApp;
  let replicator: TableReplicator;
  let replica: WebApp;
  let unconfigured: WebApp;
  let replicaCore: () => Promise<Core>;
  let replicaRegions: SecretsRegionOptions;
  let keyDir: string;
  const forwards: string[] = [];

  const call = async (app: WebApp, method: string, url: string, token: string, body?: unknown) => {
    const response = await app.request(url, {
      method,
      headers: { 'X-Secrets-Token': token, 'Content-Type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined };
  };
  const inReplica = (method: string, url: string, body?: unknown, token = authoritative.rootToken) =>
    call(replica, method, url, token, body);

  beforeAll(async () => {
    keyDir = mkdtempSync(path.join(tmpdir(), 'keyhaven-regions-'));
    const keyFile = path.join(keyDir, 'keyring.key');
    authoritative = await startSecrets({ keySource: fileKeySource(keyFile), audit: false });
    authoritativeApp = createSecretsApp({ core: async () => authoritative.core, clientIp: () => '127.0.0.1' });
    expect(
      (
        await call(authoritativeApp, 'POST', '/v1/sys/mounts/kv2', authoritative.rootToken, {
          type: 'kv',
          options: { version: '2' },
        })
      ).status,
    ).toBe(204);
    const replicaTable = `test-replica-${randomUUID()}`;
    await ensureTable(authoritative.client, replicaTable);
    replicator = startTableReplicator({
      endpoint: inject('dynamoEndpoint'),
      source: authoritative.tableName,
      replica: replicaTable,
      delayMs: 150,
    });
    await replicator.caughtUp();
    // The same key file: in AWS, the replica of the multi-Region key unwraps the replicated data key.
    const core = await createCore({
      dynamodb: authoritative.client,
      tableName: replicaTable,
      keySource: fileKeySource(keyFile),
      backends: backendsOf(allSecretsFamilies),
      clock: authoritative.clock,
      log: silentLogger,
    });
    const regions = { region: 'eu-west-1', authoritativeRegion: 'us-east-1' };
    replicaCore = async () => core;
    replicaRegions = {
      ...regions,
      authoritativeUrl: 'https://secrets.us-east-1.example',
      forwardFetch: async (input, init) => {
        const request = new Request(input, init);
        forwards.push(
          `${request.method} ${new URL(request.url).pathname} from ${request.headers.get('x-keyhaven-forwarded-from')}`,
        );
        return authoritativeApp.fetch(request);
      },
    };
    replica = createSecretsApp({ core: replicaCore, clientIp: () => '127.0.0.1', regions: replicaRegions });
    unconfigured = createSecretsApp({ core: async () => core, clientIp: () => '127.0.0.1', regions });
  }, 30_000);
  afterAll(async () => {
    replicator.resume();
    await replicator?.stop();
    await authoritative.close();
    rmSync(keyDir, { recursive: true, force: true });
  });

  it('forwards a write; a kv version 2 read is answered locally, lagging (404, then the old version) until the change replicates', async () => {
    replicator.pause();
    expect((await inReplica('POST', '/v1/kv2/data/app', { data: { colour: 'red' } })).status).toBe(200);
    expect(forwards).toEqual(['POST /v1/kv2/data/app from eu-west-1']);
    expect((await call(authoritativeApp, 'GET', '/v1/kv2/data/app', authoritative.rootToken)).body.data.data).toEqual({
      colour: 'red',
    });
    expect((await inReplica('GET', '/v1/kv2/data/app')).status).toBe(404);
    replicator.resume();
    await replicator.caughtUp();
    expect((await inReplica('GET', '/v1/kv2/data/app')).body.data.data).toEqual({ colour: 'red' });

    replicator.pause();
    expect((await inReplica('POST', '/v1/kv2/data/app', { data: { colour: 'blue' } })).status).toBe(200);
    expect((await inReplica('GET', '/v1/kv2/data/app')).body.data.data).toEqual({ colour: 'red' });
    replicator.resume();
    await replicator.caughtUp();
    const converged = await inReplica('GET', '/v1/kv2/data/app');
    expect(converged.body.data).toMatchObject({ data: { colour: 'blue' }, metadata: { version: 2 } });
    expect(forwards).toHaveLength(2);
  });

  it('forwards a write sent with no Content-Type (as the Vault CLI sends it) without giving it one the other region refuses', async () => {
    // A string body would be re-sent as text/plain, which the authoritative region answers with 415.
    const response = await replica.request('/v1/kv2/data/untyped', {
      method: 'POST',
      headers: { 'X-Secrets-Token': authoritative.rootToken },
      body: new TextEncoder().encode(JSON.stringify({ data: { sent: 'bare' } })),
    });
    expect(response.status).toBe(200);
    expect(forwards.at(-1)).toBe('POST /v1/kv2/data/untyped from eu-west-1');
    expect(
      (await call(authoritativeApp, 'GET', '/v1/kv2/data/untyped', authoritative.rootToken)).body.data.data,
    ).toEqual({ sent: 'bare' });
  });

  it('forwards a kv version 1 read (a secret written with a ttl is read under a lease): fresh even while the replica lags', async () => {
    replicator.pause();
    expect((await inReplica('PUT', '/v1/secret/leased', { password: 'p1', ttl: '1h' })).status).toBe(204);
    const read = await inReplica('GET', '/v1/secret/leased');
    expect(read.status).toBe(200);
    expect(read.body.data.password).toBe('p1');
    expect(read.body.lease_duration).toBe(3600);
    expect(forwards.slice(-2)).toEqual([
      'PUT /v1/secret/leased from eu-west-1',
      'GET /v1/secret/leased from eu-west-1',
    ]);
    replicator.resume();
  });

  it('forwards every request of a token with limited uses, so each use is spent once, in the authoritative region', async () => {
    await replicator.caughtUp();
    const created = await inReplica('POST', '/v1/auth/token/create', { num_uses: 2, policies: ['root'] });
    expect(created.status).toBe(200);
    const limited = created.body.auth.client_token as string;
    await replicator.caughtUp();
    const before = forwards.length;
    expect((await inReplica('GET', '/v1/kv2/data/app', undefined, limited)).status).toBe(200);
    expect((await inReplica('GET', '/v1/kv2/data/app', undefined, limited)).status).toBe(200);
    expect(forwards.length).toBe(before + 2);
    // Both uses were spent in us-east-1: the token is gone there, and so (once replicated) here.
    expect((await inReplica('GET', '/v1/kv2/data/app', undefined, limited)).status).toBe(403);
    await replicator.caughtUp();
    expect((await inReplica('GET', '/v1/kv2/data/app', undefined, limited)).status).toBe(403);
  });

  it('counts a read that issues credentials as a write, and a role or config read as a read', async () => {
    expect(
      (await call(authoritativeApp, 'POST', '/v1/sys/mounts/mesh', authoritative.rootToken, { type: 'mesh' })).status,
    ).toBe(204);
    const core = authoritative.core;
    expect(await writeReason(core, 'GET', '/v1/mesh/creds/web', undefined)).toBe('the read issues credentials');
    expect(await writeReason(core, 'GET', '/v1/mesh/roles/web', undefined)).toBeUndefined();
    expect(await writeReason(core, 'LIST', '/v1/kv2/metadata/', undefined)).toBeUndefined();
    expect(await writeReason(core, 'GET', '/v1/secret/leased', undefined)).toBe(
      'a kv version 1 read may issue a lease',
    );
    expect(await writeReason(core, 'GET', '/v1/sys/mounts', undefined)).toBeUndefined();
    expect(await writeReason(core, 'POST', '/v1/auth/jwt/login', undefined)).toBe('POST is a write');
  });

  it('without a URL for the authoritative region, refuses a write with 503 naming the region, and still answers reads', async () => {
    const refused = await call(unconfigured, 'POST', '/v1/kv2/data/other', authoritative.rootToken, {
      data: { a: 'b' },
    });
    expect(refused.status).toBe(503);
    expect(refused.body.errors[0]).toContain('us-east-1');
    expect((await call(unconfigured, 'GET', '/v1/kv2/data/app', authoritative.rootToken)).status).toBe(200);
  });

  it('refuses an oversized write here with 413 and forwards nothing, through the node app and the Lambda adapter alike', async () => {
    const before = forwards.length;
    const big = JSON.stringify({ data: { blob: 'x'.repeat(maxBodyBytes) } });
    const viaApp = await replica.request('/v1/kv2/data/big', {
      method: 'POST',
      headers: { 'X-Secrets-Token': authoritative.rootToken, 'Content-Type': 'application/json' },
      body: big,
    });
    expect(viaApp.status).toBe(413);
    const lambda = secretsLambda(secretsFront({ core: replicaCore, regions: replicaRegions }));
    const viaLambda = await lambda({
      version: '2.0',
      rawPath: '/v1/kv2/data/big',
      rawQueryString: '',
      headers: { 'x-secrets-token': authoritative.rootToken, 'content-type': 'application/json' },
      requestContext: { http: { method: 'POST', path: '/v1/kv2/data/big', sourceIp: '198.51.100.7' } },
      body: big,
      isBase64Encoded: false,
    } as unknown as APIGatewayProxyEventV2);
    expect(viaLambda.statusCode).toBe(413);
    expect(JSON.parse(viaLambda.body ?? '').errors[0]).toContain(`larger than ${maxBodyBytes} bytes`);
    expect(forwards).toHaveLength(before);
    expect((await call(authoritativeApp, 'GET', '/v1/kv2/data/big', authoritative.rootToken)).status).toBe(404);
  });
});
