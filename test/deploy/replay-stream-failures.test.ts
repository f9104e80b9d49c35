import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import {
  type AttributeValue,
  DeleteItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  ScanCommand,
} from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Core, createCore } from '../../packages/core/src/composition/secrets-core.ts';
import { createSecretsApp } from '../../packages/core/src/http/secrets-app.ts';
import { silentLogger } from '../../packages/core/src/lib/log.ts';
import { allSecretsFamilies, backendsOf } from '../../packages/core/src/secrets/families.ts';
import { initialize } from '../../packages/core/src/secrets/sys/init.ts';
import { fileKeySource } from '../../packages/core/src/storage/keyring.ts';
import { type LambdaEmulator, startLambdaEmulator } from '../emulators/lambda.ts';
import { deployedEnvironment, ttlRemoval } from './lambda-events.ts';

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, '../..');

const streamFunction = 'test-keyhaven-Job-table-stream';
let lambda: LambdaEmulator;

/**
 * The replay tool as an operator runs it: its own process, invoking the stream function (the real handler, behind the
 * Lambda Invoke emulator) and marking the table; its report is its last line.
 */
const lastLine = (stdout: string) => JSON.parse(stdout.trim().split('\n').at(-1) ?? '');
async function replay(...args: string[]): Promise<{ code: number; report: unknown; stderr: string }> {
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      ['--import', 'tsx', 'functions/jobs/replay-stream-failures.ts', ...args],
      {
        cwd: root,
        env: { ...process.env, KEYHAVEN_LAMBDA_ENDPOINT: lambda.endpoint },
      },
    );
    return { code: 0, report: lastLine(stdout), stderr };
  } catch (error) {
    const failed = error as {
      code: number;
      stdout: string;
      stderr: string;
      message: string;
    };
    if (typeof failed.code !== 'number') throw error;
    return {
      code: failed.code,
      report: failed.stdout ? lastLine(failed.stdout) : undefined,
      stderr: failed.stderr,
    };
  }
}

/** An item as Lambda writes it into an event: binary values as base64 strings. */
const asLambdaJson = (item: Record<string, AttributeValue>): unknown =>
  JSON.parse(
    JSON.stringify(item, (_key, value) =>
      value instanceof Uint8Array ? Buffer.from(value).toString('base64') : value,
    ),
  );

/** A failure object as Lambda's S3 on-failure destination writes it: the invocation record and the whole event. */
function failureObject(tableName: string, records: unknown[]) {
  const sequences = records.map(
    (record) => (record as { dynamodb: { SequenceNumber: string } }).dynamodb.SequenceNumber,
  );
  return {
    requestContext: {
      requestId: 'c9b8fa9f-5a7f-4f1b-9d63-0c0f1b7a1d2e',
      functionArn: 'arn:aws:lambda:us-east-1:123456789012:function:test-keyhaven-Job-table-stream',
      condition: 'RetryAttemptsExhausted',
      approximateInvokeCount: 11,
    },
    responseContext: {
      statusCode: 200,
      executedVersion: '$LATEST',
      functionError: 'Unhandled',
    },
    version: '1.0',
    timestamp: '2026-11-26T12:00:00.000Z',
    DDBStreamBatchInfo: {
      shardId: 'shardId-00000001764158400000-abcdef01',
      startSequenceNumber: sequences[0],
      endSequenceNumber: sequences.at(-1),
      approximateArrivalOfFirstRecord: '2026-11-26T11:00:00Z',
      approximateArrivalOfLastRecord: '2026-11-26T11:00:00Z',
      batchSize: records.length,
      streamArn: `arn:aws:dynamodb:us-east-1:123456789012:table/${tableName}/stream/2026-11-22T00:00:00.000`,
    },
    payload: JSON.stringify({ Records: records }),
  };
}

describe('replaying the TTL backstop failures bucket (functions/jobs/replay-stream-failures.ts)', () => {
  let client: DynamoDBClient;
  let tableName: string;
  let core: Core;

  beforeAll(async () => {
    const env = await deployedEnvironment();
    ({ client, tableName } = env);
    core = await createCore({
      dynamodb: client,
      tableName,
      keySource: fileKeySource(env.keyFile),
      backends: backendsOf(allSecretsFamilies),
      log: silentLogger,
    });
    // The deployed stream function, as Lambda would run it for `aws lambda invoke` (the environment above).
    const { handler } = await import('../../functions/jobs/table-stream.ts');
    lambda = await startLambdaEmulator({ [streamFunction]: handler as (event: unknown) => Promise<unknown> });
  });
  afterAll(async () => {
    await lambda?.stop();
    client?.destroy();
  });

  it('a table writer whose token TTL removed while the backstop failed: the replay revokes its child once; a second replay changes nothing', async () => {
    const rootToken = await initialize(core);
    const secrets = createSecretsApp({
      core: async () => core,
      clientIp: () => '127.0.0.1',
    });
    const call = (token: string, url: string, body?: unknown) =>
      secrets.request(url, {
        method: body === undefined ? 'GET' : 'POST',
        headers: {
          'X-Secrets-Token': token,
          'content-type': 'application/json',
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    const created = await call(rootToken, '/v1/auth/token/create', {
      policies: ['root'],
      ttl: '1h',
    });
    const parent = (await created.json()).auth?.client_token;
    expect(created.status).toBe(200);
    const child = (
      await (
        await call(parent, '/v1/auth/token/create', {
          policies: ['default'],
          ttl: '1h',
        })
      ).json()
    ).auth.client_token;
    expect((await call(child, '/v1/auth/token/lookup-self')).status).toBe(200);

    // DynamoDB's TTL removed the parent's item; the stream function failed on the batch until Lambda gave up and
    // wrote it to the failures bucket. The child token is still alive: the revocation the record implies never ran.
    const key = {
      pk: { S: `token#${core.keyring.hash(parent)}` },
      sk: { S: 'token' },
    };
    const parentItem = (await client.send(new GetItemCommand({ TableName: tableName, Key: key }))).Item;
    expect(parentItem).toBeDefined();
    await client.send(new DeleteItemCommand({ TableName: tableName, Key: key }));
    const object = failureObject(tableName, [
      ttlRemoval(tableName, '4100000000000000000001', asLambdaJson(parentItem ?? {})),
    ]);
    const synced = mkdtempSync(path.join(tmpdir(), 'keyhaven-failures-'));
    const folder = path.join(synced, 'mapping-id/shardId-00000001764158400000-abcdef01/2026/11/26');
    mkdirSync(folder, { recursive: true });
    writeFileSync(path.join(folder, '2026-11-26T12.00.00-0d8f1a2b'), JSON.stringify(object));
    expect((await call(child, '/v1/auth/token/lookup-self')).status).toBe(200);

    const first = await replay(streamFunction, tableName, synced);
    expect(first).toMatchObject({
      code: 0,
      report: { replayed: 1, alreadyReplayed: 0, refused: [] },
    });
    expect((await call(child, '/v1/auth/token/lookup-self')).status).toBe(403);
    expect((await call(parent, '/v1/auth/token/lookup-self')).status).toBe(403);
    const tableAfterFirst = (await client.send(new ScanCommand({ TableName: tableName, ConsistentRead: true }))).Items;
    expect(tableAfterFirst?.filter((item) => item.pk?.S === 'stream-replays')).toHaveLength(1);

    const second = await replay(streamFunction, tableName, synced);
    expect(second).toMatchObject({
      code: 0,
      report: { replayed: 0, alreadyReplayed: 1, refused: [] },
    });
    const tableAfterSecond = (await client.send(new ScanCommand({ TableName: tableName, ConsistentRead: true }))).Items;
    expect(tableAfterSecond).toEqual(tableAfterFirst);
    expect(lambda.invocations.map((invocation) => invocation.functionName)).toEqual([streamFunction]);
  });

  it('a record the stream function fails on again is reported, left unmarked for the next run; exit 1', async () => {
    const synced = mkdtempSync(path.join(tmpdir(), 'keyhaven-failures-'));
    const malformed = ttlRemoval(tableName, '4200000000000000000001', { pk: { NOPE: 'x' }, sk: { S: 'token' } });
    writeFileSync(path.join(synced, 'bad-record'), JSON.stringify(failureObject(tableName, [malformed])));
    const result = await replay(streamFunction, tableName, synced);
    expect(result).toMatchObject({
      code: 1,
      report: {
        replayed: 0,
        alreadyReplayed: 0,
        refused: [
          {
            key: 'bad-record',
            reason:
              'record event-4200000000000000000001 failed again: the stream function reported it failed (its log says why)',
          },
        ],
      },
    });
    const marks = (await client.send(new ScanCommand({ TableName: tableName, ConsistentRead: true }))).Items?.filter(
      (item) => item.pk?.S === 'stream-replays',
    );
    expect(marks?.map((item) => item.sk?.S)).not.toContain('event-4200000000000000000001');
  });

  it('an object that is not a stream failure record with its payload is refused, naming the object and what is wrong; exit 1', async () => {
    const synced = mkdtempSync(path.join(tmpdir(), 'keyhaven-failures-'));
    const pointersOnly = {
      ...failureObject(tableName, [ttlRemoval(tableName, '1', {})]),
      payload: undefined,
    };
    writeFileSync(path.join(synced, 'pointers-only'), JSON.stringify(pointersOnly));
    writeFileSync(path.join(synced, 'not-json'), '{');
    writeFileSync(
      path.join(synced, 'not-a-stream'),
      JSON.stringify({ KinesisBatchInfo: {}, payload: '{"Records":[]}' }),
    );
    const result = await replay(streamFunction, tableName, synced);
    expect(result.code).toBe(1);
    expect(result.report).toEqual({
      replayed: 0,
      alreadyReplayed: 0,
      refused: [
        {
          key: 'not-a-stream',
          reason: 'not-a-stream: not a DynamoDB stream failure record (no DDBStreamBatchInfo)',
        },
        { key: 'not-json', reason: 'not-json: not JSON' },
        {
          key: 'pointers-only',
          reason: expect.stringMatching(/^pointers-only: no payload, only the batch's pointers/),
        },
      ],
    });
    const usage = await replay(streamFunction, tableName);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(
      /^usage: node --import tsx functions\/jobs\/replay-stream-failures.ts <stream function> <table> <directory/,
    );
  });
});
