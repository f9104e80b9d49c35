import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { TableChange } from '../../packages/core/src/entry-points/table-changes.ts';
import { localClientConfig } from '../../packages/local/src/dynamodb-local.ts';
import { type ParkedRecord, startStreamPoller } from '../../packages/local/src/stream-poller.ts';
import { ensureTable } from '../../packages/local/src/table.ts';

/**
 * The local table-stream poller on the run's real DynamoDB Local: the record shapes DynamoDB Local writes, and
 * what happens to a record the consumer keeps refusing (Lambda's event source mapping: bounded retries,
 * bisection, the record parked in a dead-letter file, one log line, the rest of the shard goes on).
 */

const endpoint = inject('dynamoEndpoint');
let client: DynamoDBClient;
let folder: string;

beforeAll(async () => {
  client = new DynamoDBClient(localClientConfig(endpoint));
  folder = await mkdtemp(path.join(tmpdir(), 'stream-poller-'));
});

afterAll(async () => {
  client.destroy();
  await rm(folder, { recursive: true, force: true });
});

async function newTable(): Promise<string> {
  const tableName = `stream-poller-${randomUUID()}`;
  await ensureTable(client, tableName);
  return tableName;
}

const put = (tableName: string, item: Record<string, unknown>) =>
  client.send(new PutItemCommand({ TableName: tableName, Item: item as never }));

async function waitFor(condition: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(20);
  }
}

describe('stream poller on DynamoDB Local', () => {
  it('delivers an item with empty maps (written by DynamoDB Local with no type) and the consumer reads it', async () => {
    const tableName = await newTable();
    const changes: TableChange[] = [];
    const errors: unknown[] = [];
    const poller = startStreamPoller({
      endpoint,
      tableName,
      intervalMs: 50,
      onChanges: async (batch) => {
        changes.push(...batch);
      },
      onError: (error) => errors.push(error),
    });
    try {
      await poller.ready;
      const item = {
        pk: { S: 'token#empty-meta' },
        sk: { S: 'token' },
        meta: { M: {} },
        nested: { M: { inner: { M: {} }, list: { L: [{ M: {} }, { S: 'x' }] } } },
      };
      await put(tableName, item);
      await client.send(
        new PutItemCommand({ TableName: tableName, Item: { ...item, meta: { M: { k: { S: 'v' } } } } }),
      );
      await put(tableName, { pk: { S: 'after' }, sk: { S: 'it' } });
      await waitFor(() => changes.length >= 3, 'three records');

      expect(errors).toEqual([]);
      expect(poller.parked()).toEqual([]);
      expect(changes.map((change) => change.eventName)).toEqual(['INSERT', 'MODIFY', 'INSERT']);
      const plain = { pk: 'token#empty-meta', sk: 'token', meta: {}, nested: { inner: {}, list: [{}, 'x'] } };
      expect(changes[0]?.newImage).toEqual(plain);
      expect(changes[1]?.oldImage).toEqual(plain);
      expect(changes[1]?.newImage).toEqual({ ...plain, meta: { k: 'v' } });
    } finally {
      await poller.stop();
    }
  });

  it('parks a record the consumer keeps refusing after bounded retries, once, and goes on with the shard', async () => {
    const tableName = await newTable();
    const deadLetterFile = path.join(folder, `${tableName}.jsonl`);
    const maxRetries = 3;
    const offers: string[][] = [];
    const accepted: string[] = [];
    const errors: unknown[] = [];
    const poller = startStreamPoller({
      endpoint,
      tableName,
      intervalMs: 30,
      maxRetries,
      deadLetterFile,
      // A consumer that handles a batch as a whole and fails on the poison record, as a real one failing on a
      // shape it cannot read does.
      onChanges: async (batch) => {
        const names = batch.map((change) => String(change.newImage?.pk ?? '?'));
        offers.push(names);
        if (batch.some((change) => change.newImage?.poison)) throw new Error('cannot read this record');
        accepted.push(...names);
      },
      onError: (error) => errors.push(error),
    });
    try {
      await poller.ready;
      const before = ['a', 'b', 'c', 'd', 'e'];
      const after = ['f', 'g', 'h'];
      // One write per call, back to back: the poller sees them in one or a few batches.
      for (const name of before) await put(tableName, { pk: { S: name }, sk: { S: 'x' } });
      await put(tableName, { pk: { S: 'poison' }, sk: { S: 'x' }, poison: { BOOL: true } });
      for (const name of after) await put(tableName, { pk: { S: name }, sk: { S: 'x' } });
      await waitFor(() => accepted.length >= 8, 'every good record accepted');
      // Later writes in the same shard still arrive.
      await put(tableName, { pk: { S: 'later' }, sk: { S: 'x' } });
      await waitFor(() => accepted.includes('later'), 'a record written after the poison one');
      await sleep(200); // nothing is offered again

      expect(accepted).toEqual([...before, ...after, 'later']); // each once, in stream order
      const poisonAlone = offers.filter((names) => names.length === 1 && names[0] === 'poison');
      expect(poisonAlone).toHaveLength(maxRetries + 1);
      const containingPoison = offers.filter((names) => names.includes('poison'));
      console.log(
        `poison record: offered ${containingPoison.length} times (${poisonAlone.length} alone); batches offered ${offers.map((names) => names.length).join(',')}`,
      );

      expect(errors).toHaveLength(1);
      expect(String(errors[0])).toMatch(
        /failed 4 times and was parked, written to .*; the shard goes on: cannot read this record/,
      );
      const lines = (await readFile(deadLetterFile, 'utf8')).trim().split('\n');
      expect(lines).toHaveLength(1);
      const parked = JSON.parse(lines[0] as string) as ParkedRecord;
      expect(parked).toMatchObject({
        shardId: expect.any(String),
        streamArn: expect.stringContaining(`table/${tableName}/stream/`),
        attempts: maxRetries + 1,
        error: 'cannot read this record',
        change: { eventName: 'INSERT', newImage: { pk: 'poison', sk: 'x', poison: true }, byTtl: false },
      });
      expect(parked.sequenceNumber).toBe(parked.change.sequenceNumber);
      expect(poller.parked()).toEqual([parked]);
    } finally {
      await poller.stop();
    }
  });

  it('reports a stream it cannot read once, not once per poll', async () => {
    const errors: unknown[] = [];
    const poller = startStreamPoller({
      endpoint,
      tableName: `no-such-table-${randomUUID()}`,
      intervalMs: 10,
      onChanges: async () => {},
      onError: (error) => errors.push(error),
    });
    try {
      await sleep(500); // tens of polls
      expect(errors).toHaveLength(1);
      expect(String(errors[0])).toMatch(/non-existent table|not found|ResourceNotFound/i);
    } finally {
      await poller.stop();
    }
  });
});
