import { mkdtemp, rm, stat } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  CreateTableCommand,
  DeleteItemCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  DynamoDBClient,
  GetItemCommand,
  ListTablesCommand,
  PutItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import type { TableChange } from '@keyhaven/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tableDefinition } from '../../core/src/storage/table-definition.ts';
import type { DynamoDbLocal } from './dynamodb-local.ts';
import { localClientConfig, startDynamoDbLocal } from './dynamodb-local.ts';
import { startStreamPoller } from './stream-poller.ts';
import { ensureTable } from './table.ts';

const START_TIMEOUT = 60_000;

describe('on one in-memory DynamoDB Local', () => {
  let db: DynamoDbLocal;
  let client: DynamoDBClient;
  let tableCount = 0;
  const newTableName = () => `local_test_${++tableCount}`;

  beforeAll(async () => {
    db = await startDynamoDbLocal({});
    client = new DynamoDBClient(localClientConfig(db.endpoint));
  }, START_TIMEOUT);

  afterAll(async () => {
    client?.destroy();
    await db?.stop();
  }, 10_000);

  async function expectTableAsDefined(tableName: string) {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
    expect(Table?.TableStatus).toBe('ACTIVE');
    expect(Table?.BillingModeSummary?.BillingMode).toBe('PAY_PER_REQUEST');
    expect(Table?.KeySchema).toEqual([
      { AttributeName: 'pk', KeyType: 'HASH' },
      { AttributeName: 'sk', KeyType: 'RANGE' },
    ]);
    const attributes = Object.fromEntries(
      Table?.AttributeDefinitions?.map((a) => [a.AttributeName, a.AttributeType]) ?? [],
    );
    expect(attributes).toEqual({
      pk: 'S',
      sk: 'S',
      duePk: 'S',
      dueSk: 'S',
    });
    const indexes = Table?.GlobalSecondaryIndexes?.map((index) => ({
      name: index.IndexName,
      status: index.IndexStatus,
      keys: index.KeySchema?.map((key) => `${key.AttributeName}:${key.KeyType}`),
      projection: index.Projection?.ProjectionType,
    }));
    expect(indexes?.sort((a, b) => String(a.name).localeCompare(String(b.name)))).toEqual([
      { name: 'due', status: 'ACTIVE', keys: ['duePk:HASH', 'dueSk:RANGE'], projection: 'ALL' },
    ]);
    expect(Table?.StreamSpecification).toEqual({ StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' });
    expect(Table?.LatestStreamArn).toMatch(new RegExp(`table/${tableName}/stream/`));
    const { TimeToLiveDescription } = await client.send(new DescribeTimeToLiveCommand({ TableName: tableName }));
    expect(TimeToLiveDescription).toEqual({ TimeToLiveStatus: 'ENABLED', AttributeName: 'expiresAt' });
    return Table;
  }

  it('ensureTable creates the table as defined and is idempotent', async () => {
    const tableName = newTableName();
    await ensureTable(client, tableName);
    const first = await expectTableAsDefined(tableName);
    await client.send(new PutItemCommand({ TableName: tableName, Item: { pk: { S: 'p' }, sk: { S: 's' } } }));

    await ensureTable(client, tableName);
    const second = await expectTableAsDefined(tableName);
    expect(second?.LatestStreamArn).toBe(first?.LatestStreamArn);
    expect(second?.ItemCount).toBe(1);
  }, 30_000);

  it('ensureTable adds missing indexes, the stream and TTL to an existing table', async () => {
    const tableName = newTableName();
    await client.send(
      new CreateTableCommand({
        TableName: tableName,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [
          { AttributeName: 'pk', AttributeType: 'S' },
          { AttributeName: 'sk', AttributeType: 'S' },
        ],
        KeySchema: [
          { AttributeName: 'pk', KeyType: 'HASH' },
          { AttributeName: 'sk', KeyType: 'RANGE' },
        ],
      }),
    );
    await ensureTable(client, tableName);
    await expectTableAsDefined(tableName);
  }, 30_000);

  describe('stream poller', () => {
    const key = { pk: { S: 'item#1' }, sk: { S: 'meta' } };

    async function pollerOn(tableName: string, onChanges: (changes: TableChange[]) => Promise<void>) {
      const errors: unknown[] = [];
      const poller = startStreamPoller({
        endpoint: db.endpoint,
        tableName,
        intervalMs: 50,
        onChanges,
        onError: (error) => errors.push(error),
      });
      await poller.ready;
      return { poller, errors };
    }

    it('delivers INSERT, MODIFY and REMOVE in order, only for writes after it started', async () => {
      const tableName = newTableName();
      await ensureTable(client, tableName);
      await client.send(
        new PutItemCommand({ TableName: tableName, Item: { pk: { S: 'before' }, sk: { S: 'start' } } }),
      );
      const received: TableChange[] = [];
      const { poller, errors } = await pollerOn(tableName, async (records) => {
        received.push(...records);
      });
      try {
        const bytes = new Uint8Array([1, 2, 3]);
        await client.send(
          new PutItemCommand({ TableName: tableName, Item: { ...key, n: { N: '1' }, b: { B: bytes } } }),
        );
        await client.send(
          new UpdateItemCommand({
            TableName: tableName,
            Key: key,
            UpdateExpression: 'SET n = :n',
            ExpressionAttributeValues: { ':n': { N: '2' } },
          }),
        );
        await client.send(new DeleteItemCommand({ TableName: tableName, Key: key }));
        await waitFor(() => received.length >= 3);
        await sleep(200); // nothing more may arrive

        expect(errors).toEqual([]);
        expect(received.map((change) => change.eventName)).toEqual(['INSERT', 'MODIFY', 'REMOVE']);
        const [insert, modify, remove] = received;
        const keys = { pk: 'item#1', sk: 'meta' };
        expect(insert).toMatchObject({ keys, newImage: { ...keys, n: 1, b: bytes }, byTtl: false });
        expect(insert?.oldImage).toBeUndefined();
        expect(modify).toMatchObject({ keys, oldImage: { n: 1 }, newImage: { n: 2 }, byTtl: false });
        expect(remove).toMatchObject({ keys, oldImage: { n: 2 }, byTtl: false });
        expect(remove?.newImage).toBeUndefined();

        const sequence = received.map((change) => BigInt(change.sequenceNumber ?? '0'));
        expect(sequence[0]! < sequence[1]! && sequence[1]! < sequence[2]!).toBe(true);
      } finally {
        await poller.stop();
      }
    }, 30_000);

    it('offers a batch again when onChanges throws, without a log line for a failure that passes', async () => {
      const tableName = newTableName();
      await ensureTable(client, tableName);
      const calls: TableChange[][] = [];
      const { poller, errors } = await pollerOn(tableName, async (records) => {
        calls.push(records);
        if (calls.length === 1) throw new Error('handler failed');
      });
      try {
        await client.send(new PutItemCommand({ TableName: tableName, Item: { ...key, n: { N: '1' } } }));
        await waitFor(() => calls.length >= 2);
        await sleep(300); // an accepted batch is not offered again

        expect(errors).toEqual([]);
        expect(calls).toHaveLength(2);
        expect(calls[1]).toEqual(calls[0]);
        expect(calls[0]?.map((change) => [change.eventName, change.newImage?.n])).toEqual([['INSERT', 1]]);
      } finally {
        await poller.stop();
      }
    }, 30_000);

    it('reports a TTL deletion as a REMOVE by the DynamoDB service', async () => {
      const tableName = newTableName();
      await ensureTable(client, tableName);
      const received: TableChange[] = [];
      const { poller } = await pollerOn(tableName, async (records) => {
        received.push(...records);
      });
      try {
        // DynamoDB Local's TTL job only deletes items that carry every indexed attribute.
        const indexed = Object.fromEntries(
          tableDefinition.globalIndexes.flatMap((index) => [
            [index.partitionKey, { S: 'x' }],
            [index.sortKey, { S: 'x' }],
          ]),
        );
        const expiresAt = { N: String(Math.floor(Date.now() / 1000) - 10) };
        await client.send(new PutItemCommand({ TableName: tableName, Item: { ...key, ...indexed, expiresAt } }));
        await waitFor(() => received.length >= 2, 20_000);

        const [, deletion] = received;
        expect(deletion?.eventName).toBe('REMOVE');
        expect(deletion?.byTtl).toBe(true);
        expect(deletion?.keys).toEqual({ pk: 'item#1', sk: 'meta' });
        expect(deletion?.oldImage).toMatchObject({ pk: 'item#1', sk: 'meta', expiresAt: Number(expiresAt.N) });
        const item = await client.send(new GetItemCommand({ TableName: tableName, Key: key }));
        expect(item.Item).toBeUndefined();
      } finally {
        await poller.stop();
      }
    }, 30_000);
  });
});

describe('startDynamoDbLocal', () => {
  it(
    'stop() ends the process and frees its port',
    async () => {
      const db = await startDynamoDbLocal({ port: 0 });
      const port = Number(new URL(db.endpoint).port);
      expect(await canConnect(port)).toBe(true);
      await db.stop();
      expect(await canConnect(port)).toBe(false);
      await db.stop(); // a second stop is harmless
    },
    START_TIMEOUT,
  );

  it(
    'keeps data in dataDir across a restart on the same port',
    async () => {
      const dataDir = await mkdtemp(join(tmpdir(), 'dynamodb-local-'));
      const item = { pk: { S: 'kept' }, sk: { S: 'row' }, value: { N: '42' } };
      try {
        const first = await startDynamoDbLocal({ dataDir });
        const port = Number(new URL(first.endpoint).port);
        const firstClient = new DynamoDBClient(localClientConfig(first.endpoint, first.credentials));
        await ensureTable(firstClient, 'persisted');
        await firstClient.send(new PutItemCommand({ TableName: 'persisted', Item: item }));
        firstClient.destroy();
        await first.stop();

        const second = await startDynamoDbLocal({ dataDir, port });
        const secondClient = new DynamoDBClient(localClientConfig(second.endpoint, second.credentials));
        // Any other access key (the old shared `local` one, a guess) is another, empty database.
        const strangerClient = new DynamoDBClient(localClientConfig(second.endpoint));
        try {
          expect(second.endpoint).toBe(`http://127.0.0.1:${port}`);
          expect(second.credentials).toEqual(first.credentials);
          expect(second.credentials.accessKeyId).not.toBe('local');
          expect((await stat(join(dataDir, 'access-key'))).mode & 0o777).toBe(0o600);
          const { Item } = await secondClient.send(
            new GetItemCommand({ TableName: 'persisted', Key: { pk: item.pk, sk: item.sk } }),
          );
          expect(Item).toEqual(item);
          expect((await strangerClient.send(new ListTablesCommand({}))).TableNames).toEqual([]);
        } finally {
          strangerClient.destroy();
          secondClient.destroy();
          await second.stop();
        }
      } finally {
        await rm(dataDir, { recursive: true, force: true });
      }
    },
    START_TIMEOUT,
  );

  it('explains what is missing when java is not on PATH', async () => {
    const path = process.env.PATH;
    process.env.PATH = '/nonexistent';
    try {
      await expect(startDynamoDbLocal({})).rejects.toThrow(
        'DynamoDB Local needs Java 17 or newer on PATH (apt-get install openjdk-17-jre-headless)',
      );
    } finally {
      process.env.PATH = path;
    }
  });
});

async function waitFor(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await sleep(25);
  }
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
