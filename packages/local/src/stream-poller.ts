import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { AttributeValue, _Record as StreamsRecord } from '@aws-sdk/client-dynamodb-streams';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
} from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBRecord, AttributeValue as LambdaAttributeValue } from 'aws-lambda';
import { appendFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { localClientConfig } from './dynamodb-local.ts';

export interface StreamPollerOptions {
  endpoint: string;
  tableName: string;
  onRecords(records: DynamoDBRecord[]): Promise<void>;
  /** Pause between polls; default 250. */
  intervalMs?: number;
  /** Default: console.error. Called once per parked record and once per run of failed polls, never per retry. */
  onError?(error: unknown): void;
  /**
   * Retries of a single record whose `onRecords` keeps failing before it is parked (Lambda's `retryAttempts`);
   * default 10, as the table stream's event source mapping in the stacks. A failing batch of several records
   * is split in two first (Lambda's `bisectBatchOnError`), which does not count as a retry.
   */
  maxRetries?: number;
  /** Parked records, one JSON line each (the local stand-in for the stream's dead-letter queue). */
  deadLetterFile?: string;
}

/** A record `onRecords` refused `maxRetries + 1` times, set aside so the rest of its shard goes on. */
export interface ParkedRecord {
  parkedAt: string;
  streamArn: string;
  shardId: string;
  sequenceNumber: string | undefined;
  attempts: number;
  error: string;
  record: DynamoDBRecord;
}

export interface StreamPoller {
  /** Resolves once the shards open at start are positioned at LATEST: writes after this are delivered. */
  ready: Promise<void>;
  /** Ends the loop; resolves once the poll in flight has finished. */
  stop(): Promise<void>;
  /** The records parked since start, oldest first. */
  parked(): readonly ParkedRecord[];
}

interface Shard {
  parentId?: string;
  iterator?: string;
  /**
   * Records onRecords has not accepted yet, in stream order, as the batches to offer next (a failed batch is
   * replaced by its two halves), with the iterator that follows the last of them.
   */
  pending?: { batches: Batch[]; next?: string };
}

interface Batch {
  records: DynamoDBRecord[];
  /** Failed offers of this batch; only counted for a single record, since a larger batch is split instead. */
  failures: number;
}

/** The TTL deleter as real DynamoDB reports it in stream records. */
const TTL_IDENTITY = { type: 'Service', principalId: 'dynamodb.amazonaws.com' };

/**
 * Reads the table's stream like the Lambda event source mapping: in order per shard, parents before
 * children, and at least once. A batch whose onRecords throws is split in two and each half offered again on
 * the next polls; a single record that still fails after `maxRetries` retries is parked (written to the
 * dead-letter file, reported once) and the shard goes on after it.
 */
export function startStreamPoller(options: StreamPollerOptions): StreamPoller {
  const config = localClientConfig(options.endpoint);
  const tables = new DynamoDBClient(config);
  const streams = new DynamoDBStreamsClient(config);
  const intervalMs = options.intervalMs ?? 250;
  const onError = options.onError ?? ((error: unknown) => console.error('stream poller:', error));
  const maxRetries = options.maxRetries ?? 10;
  const parked: ParkedRecord[] = [];
  let pollFailing = false;

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
      shard.pending = { batches: records.length > 0 ? [{ records, failures: 0 }] : [], next: result.NextShardIterator };
    }
    await offer(shardId, shard.pending.batches, current.arn);
    if (shard.pending.batches.length > 0) return; // a batch failed: offered again on the next poll
    const next = shard.pending.next;
    shard.pending = undefined;
    if (next) {
      shard.iterator = next;
    } else {
      shards.delete(shardId); // closed and read to its end: its children may start
      finished.add(shardId);
    }
  }

  /** Offers the batches in order until one fails; that one is split or counted (and maybe parked) for the next poll. */
  async function offer(shardId: string, batches: Batch[], arn: string) {
    while (batches.length > 0 && !wake.signal.aborted) {
      const batch = batches[0] as Batch;
      try {
        await options.onRecords(batch.records);
        batches.shift();
      } catch (error) {
        if (batch.records.length > 1) {
          const half = Math.ceil(batch.records.length / 2);
          batches.splice(0, 1, { records: batch.records.slice(0, half), failures: 0 }, { records: batch.records.slice(half), failures: 0 });
          return;
        }
        batch.failures++;
        if (batch.failures <= maxRetries) return;
        batches.shift();
        await park(shardId, arn, batch, error);
      }
    }
  }

  async function park(shardId: string, arn: string, batch: Batch, error: unknown) {
    const record = batch.records[0] as DynamoDBRecord;
    const entry: ParkedRecord = {
      parkedAt: new Date().toISOString(),
      streamArn: arn,
      shardId,
      sequenceNumber: record.dynamodb?.SequenceNumber,
      attempts: batch.failures,
      error: error instanceof Error ? error.message : String(error),
      record,
    };
    parked.push(entry);
    let where = 'kept in memory only';
    if (options.deadLetterFile) {
      try {
        await appendFile(options.deadLetterFile, `${JSON.stringify(entry)}\n`, { mode: 0o600 });
        where = `written to ${options.deadLetterFile}`;
      } catch (writeError) {
        where = `not written to ${options.deadLetterFile} (${String(writeError)}); kept in memory only`;
      }
    }
    onError(
      new Error(
        `stream record ${entry.sequenceNumber} (${record.eventName}) in shard ${shardId} failed ${entry.attempts} times and was parked, ${where}; the shard goes on: ${entry.error}`,
      ),
    );
  }

  async function poll() {
    let failed = false;
    const report = (error: unknown) => {
      failed = true;
      if (!pollFailing && !wake.signal.aborted) onError(error);
    };
    try {
      const atStart = !stream;
      stream ??= await findStream();
      await discoverShards(stream.arn, atStart);
      markReady();
      for (const [shardId, shard] of shards) {
        if (wake.signal.aborted) return;
        if (shard.parentId && shards.has(shard.parentId)) continue;
        await pollShard(shardId, shard, stream).catch(report); // one shard that cannot be read does not hold up the others
      }
    } catch (error) {
      report(error);
    }
    // Only the first failure of a run is reported: a stream that cannot be read for a while is one line, not one per poll.
    pollFailing = failed;
  }

  const loop = (async () => {
    while (!wake.signal.aborted) {
      await poll();
      await sleep(intervalMs, undefined, { signal: wake.signal }).catch(() => {});
    }
  })();

  return {
    ready,
    parked: () => parked,
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
  // DynamoDB Local writes an empty map as `{}`, with no type; the only value that can be empty is a map.
  if (Object.keys(value).length === 0) return { M: {} };
  if (value.B) return { B: base64(value.B) };
  if (value.BS) return { BS: value.BS.map(base64) };
  if (value.M) return { M: toLambdaImage(value.M) };
  if (value.L) return { L: value.L.map(toLambdaValue) };
  return value as LambdaAttributeValue; // S, N, SS, NS, BOOL and NULL look the same in both
}

function base64(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('base64');
}
