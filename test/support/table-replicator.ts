import { setTimeout as sleep } from 'node:timers/promises';
import {
  type AttributeValue,
  DeleteItemCommand,
  DescribeTableCommand,
  DynamoDBClient,
  PutItemCommand,
} from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type _Record as StreamRecord,
} from '@aws-sdk/client-dynamodb-streams';
import { localClientConfig } from '../../packages/local/src/dynamodb-local.ts';

/**
 * A stand-in for DynamoDB global tables' replication, for two "regions" in DynamoDB Local: reads the source
 * table's stream (from its start, in order per shard, parents before children, as `stream-poller.ts` does) and
 * applies each change to the replica table `delayMs` after it was read: INSERT and MODIFY put the new image,
 * REMOVE deletes the key. Like a global table, the replica ends up with the source's items, later.
 */
export interface TableReplicator {
  /** Hold changes back (a replica lagging as long as the test needs); they are applied in order on resume. */
  pause(): void;
  resume(): void;
  /** Resolves once every change made to the source before the call has been applied to the replica. */
  caughtUp(timeoutMs?: number): Promise<void>;
  /** Changes applied so far. */
  applied(): number;
  stop(): Promise<void>;
}

export function startTableReplicator(options: {
  endpoint: string;
  source: string;
  replica: string;
  delayMs?: number;
  pollMs?: number;
}): TableReplicator {
  const config = localClientConfig(options.endpoint);
  const tables = new DynamoDBClient(config);
  const streams = new DynamoDBStreamsClient(config);
  const delayMs = options.delayMs ?? 0;
  const pollMs = options.pollMs ?? 50;
  const iterators = new Map<string, string | undefined>(); // open shards -> next iterator
  const parents = new Map<string, string | undefined>();
  const finished = new Set<string>();
  const queue: Array<{ dueAt: number; record: StreamRecord }> = [];
  let paused = false;
  let stopped = false;
  let appliedCount = 0;
  /** Bumped after every pass that read every open shard to its current end. */
  let passes = 0;
  let failure: unknown;

  async function streamArn(): Promise<string> {
    const { Table } = await tables.send(new DescribeTableCommand({ TableName: options.source }));
    if (!Table?.LatestStreamArn) throw new Error(`table ${options.source} has no stream`);
    return Table.LatestStreamArn;
  }

  async function discover(arn: string) {
    let start: string | undefined;
    do {
      const { StreamDescription } = await streams.send(
        new DescribeStreamCommand({ StreamArn: arn, ExclusiveStartShardId: start }),
      );
      for (const shard of StreamDescription?.Shards ?? []) {
        if (!shard.ShardId || iterators.has(shard.ShardId) || finished.has(shard.ShardId)) continue;
        const { ShardIterator } = await streams.send(
          new GetShardIteratorCommand({ StreamArn: arn, ShardId: shard.ShardId, ShardIteratorType: 'TRIM_HORIZON' }),
        );
        iterators.set(shard.ShardId, ShardIterator);
        parents.set(shard.ShardId, shard.ParentShardId);
      }
      start = StreamDescription?.LastEvaluatedShardId;
    } while (start);
  }

  async function readShards() {
    for (const [shardId, iterator] of iterators) {
      const parent = parents.get(shardId);
      if (parent && iterators.has(parent)) continue; // the parent's changes go first
      let next = iterator;
      while (next) {
        const { Records, NextShardIterator } = await streams.send(new GetRecordsCommand({ ShardIterator: next }));
        for (const record of Records ?? []) queue.push({ dueAt: Date.now() + delayMs, record });
        next = NextShardIterator;
        if (!Records?.length) break;
      }
      if (next) iterators.set(shardId, next);
      else {
        iterators.delete(shardId);
        finished.add(shardId);
      }
    }
  }

  async function apply(record: StreamRecord) {
    const change = record.dynamodb;
    if (record.eventName === 'REMOVE') {
      await tables.send(new DeleteItemCommand({ TableName: options.replica, Key: change?.Keys }));
    } else {
      await tables.send(new PutItemCommand({ TableName: options.replica, Item: repaired(change?.NewImage ?? {}) }));
    }
    appliedCount++;
  }

  /** DynamoDB Local's stream shows an empty map (`{ M: {} }`) as `{}`, which PutItem refuses: put the map back. */
  function repaired(item: Record<string, AttributeValue>): Record<string, AttributeValue> {
    const fix = (value: AttributeValue): AttributeValue => {
      if (Object.keys(value).length === 0) return { M: {} };
      if (value.M) return { M: Object.fromEntries(Object.entries(value.M).map(([key, inner]) => [key, fix(inner)])) };
      if (value.L) return { L: value.L.map(fix) };
      return value;
    };
    return Object.fromEntries(Object.entries(item).map(([key, value]) => [key, fix(value)]));
  }

  const loop = (async () => {
    const arn = await streamArn();
    while (!stopped) {
      await discover(arn);
      await readShards();
      while (!paused && queue[0] && queue[0].dueAt <= Date.now()) {
        const next = queue.shift();
        if (next) await apply(next.record);
      }
      passes++;
      await sleep(pollMs);
    }
  })().catch((error: unknown) => {
    failure = error;
  });

  return {
    pause: () => {
      paused = true;
    },
    resume: () => {
      paused = false;
    },
    applied: () => appliedCount,
    async caughtUp(timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      // Two full passes after the call: the first may have started before the last change was written.
      const target = passes + 2;
      while (passes < target || queue.length > 0) {
        if (failure) throw failure;
        if (paused) throw new Error('the replicator is paused: it will not catch up');
        if (Date.now() > deadline)
          throw new Error(`replica ${options.replica} did not catch up within ${timeoutMs} ms`);
        await sleep(pollMs);
      }
    },
    async stop() {
      stopped = true;
      await loop;
      tables.destroy();
      streams.destroy();
    },
  };
}
