import { Writable } from 'node:stream';
import { DeleteItemCommand, type DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Core, createCore } from '../../packages/core/src/composition/secrets-core.ts';
import { createSecretsApp } from '../../packages/core/src/http/secrets-app.ts';
import { silentLogger } from '../../packages/core/src/lib/log.ts';
import { streamNotServedHere } from '../../packages/core/src/scheduler/composition/scheduler-app.ts';
import { allSecretsFamilies, backendsOf } from '../../packages/core/src/secrets/families.ts';
import { initialize } from '../../packages/core/src/secrets/sys/init.ts';
import { fileKeySource } from '../../packages/core/src/storage/keyring.ts';
import {
  deployedEnvironment,
  engineJob,
  httpApiEvent,
  invoke,
  lambdaContext,
  scheduledEvent,
  standInAwsLambda,
  ttlRemoval,
} from './lambda-events.ts';

const streamMetadata = standInAwsLambda();

describe('functions/scheduler/* and functions/jobs/* with their real event shapes', () => {
  let client: DynamoDBClient;
  let tableName: string;
  let core: Core;
  let schedulerToken: string;

  beforeAll(async () => {
    const env = await deployedEnvironment();
    ({ client, tableName } = env);
    process.env.KEYHAVEN_STREAM_LIMIT_MS = '800';
    process.env.KEYHAVEN_JOB_RUN_MS = '0';
    core = await createCore({
      dynamodb: client,
      tableName,
      keySource: fileKeySource(env.keyFile),
      backends: backendsOf(allSecretsFamilies),
      log: silentLogger,
    });
  });
  afterAll(() => client?.destroy());

  it('scheduler api: bootstraps ACLs and answers ACL reads from an HTTP API v2 event', async () => {
    const { handler } = await import('../../functions/scheduler/api.ts');
    const bootstrap = await invoke(
      handler,
      httpApiEvent('POST', '/v1/acl/bootstrap', { routeKey: 'ANY /v1/{proxy+}' }),
    );
    expect(bootstrap.status).toBe(200);
    schedulerToken = bootstrap.body.SecretID;
    expect(schedulerToken).toEqual(expect.any(String));
    const self = await invoke(
      handler,
      httpApiEvent('GET', '/v1/acl/token/self', { headers: { 'x-scheduler-token': schedulerToken } }),
    );
    expect(self.status).toBe(200);
    expect(self.body).toMatchObject({ Type: 'management', AccessorID: bootstrap.body.AccessorID });
    const denied = await invoke(
      handler,
      httpApiEvent('GET', '/v1/acl/roles', { headers: { 'x-scheduler-token': 'not-a-token' } }),
    );
    expect(denied.status).toBe(403);
    expect(typeof denied.body).toBe('string');
    // The buffered function never streams (issue 39 §2): the stream's route is refused however it is spelled.
    for (const path of ['/v1/event/stream', '/v1/event/%73tream']) {
      const stream = await invoke(
        handler,
        httpApiEvent('GET', path, { headers: { 'x-scheduler-token': schedulerToken } }),
      );
      expect({ path, status: stream.status, body: stream.body }).toEqual({
        path,
        status: 400,
        body: streamNotServedHere,
      });
    }
  });

  it('scheduler client address: X-Forwarded-For only from a trusted proxy (CloudFront), else the connection', async () => {
    const { clientIpOf } = await import('../../functions/scheduler/app.ts');
    const cloudFront = ['130.176.0.0/16'];
    const viaCloudFront = httpApiEvent('GET', '/v1/acl/token/self', {
      headers: { 'x-forwarded-for': '203.0.113.9, 130.176.1.10' },
    });
    viaCloudFront.requestContext.http.sourceIp = '130.176.1.10';
    expect(clientIpOf(viaCloudFront, cloudFront)).toBe('203.0.113.9');
    // Without trusted proxies configured the header is never read, even from CloudFront's address.
    expect(clientIpOf(viaCloudFront, [])).toBe('130.176.1.10');
    const forged = httpApiEvent('GET', '/v1/acl/token/self', {
      headers: { 'x-forwarded-for': '10.0.0.1, 203.0.113.9, 130.176.1.10' },
    });
    forged.requestContext.http.sourceIp = '130.176.1.10';
    expect(clientIpOf(forged, cloudFront)).toBe('203.0.113.9');
    // Anyone calling the API URL directly may send X-Forwarded-For: it names nobody.
    const directForged = httpApiEvent('GET', '/v1/acl/token/self', { headers: { 'x-forwarded-for': '10.0.0.1' } });
    expect(clientIpOf(directForged, cloudFront)).toBe('198.51.100.7');
    const direct = httpApiEvent('GET', '/v1/acl/token/self');
    delete direct.headers['x-forwarded-for'];
    expect(clientIpOf(direct, cloudFront)).toBe('198.51.100.7');
    expect(clientIpOf(undefined, cloudFront)).toBe('');
  });

  it('scheduler event stream: streams NDJSON through the response stream and ends before its time limit', async () => {
    const { handler } = await import('../../functions/scheduler/event-stream.ts');
    const chunks: Buffer[] = [];
    const sink = new Writable({
      write(chunk, _encoding, callback) {
        chunks.push(Buffer.from(chunk));
        callback();
      },
    });
    const finished = new Promise<void>((resolve) => sink.on('finish', () => resolve()));
    const event = httpApiEvent('GET', '/v1/event/stream?topic=ACLToken', {
      headers: { 'x-scheduler-token': schedulerToken },
    });
    await (handler as unknown as (event: unknown, stream: Writable, context: unknown) => Promise<void>)(
      event,
      sink,
      lambdaContext,
    );
    await finished;
    const lines = Buffer.concat(chunks)
      .toString('utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines[0]).toEqual({});
    expect(streamMetadata.at(-1)).toMatchObject({ statusCode: 200 });
  });

  it('sweep and the engine jobs: one run per EventBridge scheduled event, reporting what they did', async () => {
    const job = async (name: string) =>
      (await import(`../../functions/jobs/${name}.ts`)).handler as (event: unknown) => Promise<unknown>;
    expect(await (await job('sweep'))(scheduledEvent('SweepScheduleRule'))).toEqual({
      tokens: 0,
      leases: 0,
      failed: 0,
    });
    expect(await (await engineJob('ldap'))(scheduledEvent('ldapScheduleRule'))).toEqual({
      leases: 0,
      rotated: 0,
      failed: 0,
    });
    expect(await (await engineJob('cloud'))(scheduledEvent('cloudScheduleRule'))).toEqual({
      leases: 0,
      rotated: 0,
      failed: 0,
    });
    expect(await (await engineJob('mesh'))(scheduledEvent('meshScheduleRule'))).toEqual({ leases: 0, failed: 0 });
  });

  it('table stream: a TTL removal of a token is revoked; a bad record is reported as the batch item failure', async () => {
    const rootToken = await initialize(core);
    const secrets = createSecretsApp({ core: async () => core, clientIp: () => '127.0.0.1' });
    const lookup = () => secrets.request('/v1/auth/token/lookup-self', { headers: { 'X-Secrets-Token': rootToken } });
    expect((await lookup()).status).toBe(200);

    // DynamoDB's TTL deletes the token's item; the stream then carries its old image.
    const scanned = await client.send(
      new ScanCommand({
        TableName: tableName,
        FilterExpression: 'sk = :token',
        ExpressionAttributeValues: { ':token': { S: 'token' } },
      }),
    );
    const tokenItem = scanned.Items?.[0];
    expect(tokenItem?.pk?.S).toMatch(/^token#/);
    await client.send(
      new DeleteItemCommand({ TableName: tableName, Key: { pk: tokenItem?.pk ?? { S: '' }, sk: { S: 'token' } } }),
    );
    const removal = (sequence: string, oldImage: unknown) => ttlRemoval(tableName, sequence, oldImage);
    const { handler } = await import('../../functions/jobs/table-stream.ts');
    const good: DynamoDBStreamEvent = { Records: [removal('100', tokenItem)] };
    expect(await handler(good)).toEqual({ batchItemFailures: [] });
    expect((await lookup()).status).toBe(403);

    const malformed = { pk: { NOPE: 'x' }, sk: { S: 'token' } };
    const batch: DynamoDBStreamEvent = {
      Records: [removal('200', tokenItem), removal('201', malformed), removal('202', tokenItem)],
    };
    expect(await handler(batch)).toEqual({ batchItemFailures: [{ itemIdentifier: '201' }] });
  });
});
