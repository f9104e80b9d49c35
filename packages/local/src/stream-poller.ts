import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { AttributeValue, _Record as StreamsRecord } from '@aws-sdk/client-dynamodb-streams';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
} from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBRecord, AttributeValue as LambdaAttributeValue } from 'aws-lambda';
import { setTimeout as sleep } from 'node:timers/promises';
import { localClientConfig } from './dynamodb-local.ts';

export interface StreamPollerOptions {
  endpoint: string;
  tableName: string;
  onRecords(records: DynamoDBRecord[]): Promise<void>;
  /** Pause between polls; default 250. */
  intervalMs?: number;
  /** Default: console.error. */
  onError?(error: unknown): void;
}

export interface StreamPoller {
  /** Resolves once the shards open at start are positioned at LATEST: writes after this are delivered. */
  ready: Promise<void>;
  /** Ends the loop; resolves once the poll in flight has finished. */
  stop(): Promise<void>;
}

interface Shard {
  parentId?: string;
  iterator?: string;
  /** A batch onRecords has not accepted yet, with the iterator that follows it. */
  pending?: { records: DynamoDBRecord[]; next?: string };
}

/** The TTL deleter as real DynamoDB reports it in stream records. */
const TTL_IDENTITY = { type: 'Service', principalId: 'dynamodb.amazonaws.com' };

/**
 * Reads the table's stream like the Lambda event source mapping: in order per shard, parents before
 * children, and at least once (a batch whose onRecords throws is offered again on the next poll).
 */
export function startStreamPoller(options: StreamPollerOptions): StreamPoller {
  const config = localClientConfig(options.endpoint);
  const tables = new DynamoDBClient(config);
  const streams = new DynamoDBStreamsClient(config);
  const intervalMs = options.intervalMs ?? 250;
  const onError = options.onError ?? ((error: unknown) => console.error('stream poller:', error));

  let stream: { arn: string; keyNames: string[] } | undefined;
  const shards = new Map<string, Shard>(); // unfinished shards, in discovery order
  const finished = new Set<string>();
  let markReady = () => {};
  const ready = new Promise<void>((resolve) => {
    markReady = resolve;
  });
  const wake = new AbortController();

  async function findStream() {
    const { Table } = await tables.send(new DescribeTableCommand({ TableName: options.tableName }));
    if (!Table?.LatestStreamArn) throw new Error(`Table ${options.tableName} has no stream`);
    const keyNames = (Table.KeySchema ?? []).flatMap((key) => key.AttributeName ?? []);
    return { arn: Table.LatestStreamArn, keyNames };
  }

  /** Adds shards not seen before: at start positioned at LATEST, later ones read from TRIM_HORIZON. */
  async function discoverShards(arn: string, atStart: boolean) {
    let exclusiveStartShardId: string | undefined;
    do {
      const { StreamDescription } = await streams.send(
        new DescribeStreamCommand({ StreamArn: arn, ExclusiveStartShardId: exclusiveStartShardId }),
      );
      for (const { ShardId, ParentShardId, SequenceNumberRange } of StreamDescription?.Shards ?? []) {
        if (!ShardId || shards.has(ShardId) || finished.has(ShardId)) continue;
        if (atStart && SequenceNumberRange?.EndingSequenceNumber) {
          finished.add(ShardId); // closed before we started: nothing after LATEST
          continue;
        }
        const shard: Shard = { parentId: ParentShardId };
        if (atStart) shard.iterator = await shardIterator(arn, ShardId, 'LATEST');
        shards.set(ShardId, shard);
      }
      exclusiveStartShardId = StreamDescription?.LastEvaluatedShardId;
    } while (exclusiveStartShardId);
  }

  async function shardIterator(arn: string, shardId: string, type: 'LATEST' | 'TRIM_HORIZON') {
    const request = new GetShardIteratorCommand({ StreamArn: arn, ShardId: shardId, ShardIteratorType: type });
    return (await streams.send(request)).ShardIterator;
  }

  async function pollShard(shardId: string, shard: Shard, current: { arn: string; keyNames: string[] }) {
    if (!shard.pending) {
      shard.iterator ??= await shardIterator(current.arn, shardId, 'TRIM_HORIZON');
      const result = await streams.send(new GetRecordsCommand({ ShardIterator: shard.iterator }));
      const records = (result.Records ?? []).map((record) => toLambdaRecord(record, current));
      shard.pending = { records, next: result.NextShardIterator };
    }
    if (shard.pending.records.length > 0) await options.onRecords(shard.pending.records);
    const next = shard.pending.next;
    shard.pending = undefined;
    if (next) {
      shard.iterator = next;
    } else {
      shards.delete(shardId); // closed and read to its end: its children may start
      finished.add(shardId);
    }
  }

  async function poll() {
    const atStart = !stream;
    stream ??= await findStream();
    await discoverShards(stream.arn, atStart);
    markReady();
    for (const [shardId, shard] of shards) {
      if (wake.signal.aborted) return;
      if (shard.parentId && shards.has(shard.parentId)) continue;
      try {
        await pollShard(shardId, shard, stream);
      } catch (error) {
        onError(error);
      }
    }
  }

  const loop = (async () => {
    while (!wake.signal.aborted) {
      await poll().catch(onError);
      await sleep(intervalMs, undefined, { signal: wake.signal }).catch(() => {});
    }
  })();

  return {
    ready,
    async stop() {
      wake.abort();
      await loop;
      markReady();
      tables.destroy();
      streams.destroy();
    },
  };
}

function toLambdaRecord(record: StreamsRecord, stream: { arn: string; keyNames: string[] }): DynamoDBRecord {
  const data = record.dynamodb ?? {};
  // DynamoDB Local names its TTL deletions `UNKNOWN_TO_SDK_VERSION`, puts every indexed attribute in
  // Keys and sets no userIdentity; report them as real DynamoDB does.
  const isKnownEvent = record.eventName === 'INSERT' || record.eventName === 'MODIFY' || record.eventName === 'REMOVE';
  const isLocalTtlDeletion = !isKnownEvent && data.OldImage !== undefined && data.NewImage === undefined;
  const keys = data.Keys && isLocalTtlDeletion ? pick(data.Keys, stream.keyNames) : data.Keys;
  const identity = record.userIdentity
    ? { type: record.userIdentity.Type, principalId: record.userIdentity.PrincipalId }
    : isLocalTtlDeletion
      ? TTL_IDENTITY
      : undefined;
  return {
    eventID: record.eventID,
    eventName: isLocalTtlDeletion ? 'REMOVE' : (record.eventName as DynamoDBRecord['eventName']),
    eventVersion: record.eventVersion,
    eventSource: 'aws:dynamodb',
    awsRegion: record.awsRegion,
    eventSourceARN: stream.arn,
    dynamodb: {
      ...(data.ApproximateCreationDateTime && {
        ApproximateCreationDateTime: Math.floor(data.ApproximateCreationDateTime.getTime() / 1000),
      }),
      ...(keys && { Keys: toLambdaImage(keys) }),
      ...(data.NewImage && { NewImage: toLambdaImage(data.NewImage) }),
      ...(data.OldImage && { OldImage: toLambdaImage(data.OldImage) }),
      SequenceNumber: data.SequenceNumber,
      SizeBytes: data.SizeBytes,
      StreamViewType: data.StreamViewType,
    },
    ...(identity && { userIdentity: identity }),
  };
}

function pick<T>(values: Record<string, T>, names: string[]): Record<string, T> {
  return Object.fromEntries(Object.entries(values).filter(([name]) => names.includes(name)));
}

function toLambdaImage(image: Record<string, AttributeValue>): Record<string, LambdaAttributeValue> {
  return Object.fromEntries(Object.entries(image).map(([name, value]) => [name, toLambdaValue(value)]));
}

/** Lambda events carry binary values as base64 strings, where the SDK gives bytes. */
function toLambdaValue(value: AttributeValue): LambdaAttributeValue {
  if (value.B) return { B: base64(value.B) };
  if (value.BS) return { BS: value.BS.map(base64) };
  if (value.M) return { M: toLambdaImage(value.M) };
  if (value.L) return { L: value.L.map(toLambdaValue) };
  return value as LambdaAttributeValue; // S, N, SS, NS, BOOL and NULL look the same in both
}

function base64(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('base64');
}
