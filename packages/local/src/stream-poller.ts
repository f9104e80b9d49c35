import { appendFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { AttributeValue, _Record as StreamsRecord } from '@aws-sdk/client-dynamodb-streams';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
} from '@aws-sdk/client-dynamodb-streams';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { Item } from '@keyhaven/core/storage/store.ts';
import type { TableChange } from '@keyhaven/core/entry-points/table-changes.ts';
import { type LocalCredentials, localClientConfig } from './dynamodb-local.ts';

export interface StreamPollerOptions {
  endpoint: string;
  /** The access key the table lives under (DynamoDB Local's, made per data folder); default the shared test key. */
  credentials?: LocalCredentials;
  tableName: string;
  /** Each batch of changes, in stream order, as the core's `TableChange` (what Lambda's adapter gives it in AWS). */
  onChanges(changes: TableChange[]): Promise<void>;
  /** Pause between polls; default 250. */
  intervalMs?: number;
  /** Default: console.error. Called once per parked record and once per run of failed polls, never per retry. */
  onError?(error: unknown): void;
  /**
   * Retries of a single record whose `onChanges` keeps failing before it is parked (Lambda's `retryAttempts`);
   * default 10, as the table stream's event source mapping in the stacks. A failing batch of several records
   * is split in two first (Lambda's `bisectBatchOnError`), which does not count as a retry.
   */
  maxRetries?: number;
  /** Parked records, one JSON line each (the local stand-in for the stream's dead-letter queue). */
  deadLetterFile?: string;
}

/** A change `onChanges` refused `maxRetries + 1` times, set aside so the rest of its shard goes on. */
export interface ParkedRecord {
  parkedAt: string;
  streamArn: string;
  shardId: string;
  sequenceNumber: string | undefined;
  attempts: number;
  error: string;
  change: TableChange;
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
   * Changes onChanges has not accepted yet, in stream order, as the batches to offer next (a failed batch is
   * replaced by its two halves), with the iterator that follows the last of them.
   */
  pending?: { batches: Batch[]; next?: string };
}

interface Batch {
  records: TableChange[];
  /** Failed offers of this batch; only counted for a single record, since a larger batch is split instead. */
  failures: number;
}

/**
 * Reads the table's stream like the Lambda event source mapping: in order per shard, parents before
 * children, and at least once. A batch whose onChanges throws is split in two and each half offered again on
 * the next polls; a single record that still fails after `maxRetries` retries is parked (written to the
 * dead-letter file, reported once) and the shard goes on after it.
 */
export function startStreamPoller(options: StreamPollerOptions): StreamPoller {
  const config = localClientConfig(options.endpoint, options.credentials);
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
      const records = (result.Records ?? []).map((record) => toTableChange(record, current.keyNames));
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
        await options.onChanges(batch.records);
        batches.shift();
      } catch (error) {
        if (batch.records.length > 1) {
          const half = Math.ceil(batch.records.length / 2);
          batches.splice(
            0,
            1,
            { records: batch.records.slice(0, half), failures: 0 },
            { records: batch.records.slice(half), failures: 0 },
          );
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
    const change = batch.records[0] as TableChange;
    const entry: ParkedRecord = {
      parkedAt: new Date().toISOString(),
      streamArn: arn,
      shardId,
      sequenceNumber: change.sequenceNumber,
      attempts: batch.failures,
      error: error instanceof Error ? error.message : String(error),
      change,
    };
    parked.push(entry);
    let where = 'kept in memory only';
    if (options.deadLetterFile) {
      try {
        await appendFile(options.deadLetterFile, `${JSON.stringify(entry, binaryAsBase64)}\n`, { mode: 0o600 });
        where = `written to ${options.deadLetterFile}`;
      } catch (writeError) {
        where = `not written to ${options.deadLetterFile} (${String(writeError)}); kept in memory only`;
      }
    }
    onError(
      new Error(
        `stream record ${entry.sequenceNumber} (${change.eventName}) in shard ${shardId} failed ${entry.attempts} times and was parked, ${where}; the shard goes on: ${entry.error}`,
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

/**
 * A Streams API record as the core's change. DynamoDB Local names its TTL deletions `UNKNOWN_TO_SDK_VERSION`, puts
 * every indexed attribute in Keys and sets no userIdentity: they are reported as real DynamoDB reports them (a REMOVE
 * by the DynamoDB service, with the table's key only).
 */
function toTableChange(record: StreamsRecord, keyNames: string[]): TableChange {
  const data = record.dynamodb ?? {};
  const isKnownEvent = record.eventName === 'INSERT' || record.eventName === 'MODIFY' || record.eventName === 'REMOVE';
  const isLocalTtlDeletion = !isKnownEvent && data.OldImage !== undefined && data.NewImage === undefined;
  const keys = data.Keys && isLocalTtlDeletion ? pick(data.Keys, keyNames) : data.Keys;
  const byTtl = record.userIdentity
    ? record.userIdentity.Type === 'Service' && record.userIdentity.PrincipalId === 'dynamodb.amazonaws.com'
    : isLocalTtlDeletion;
  return {
    eventName: isLocalTtlDeletion ? 'REMOVE' : (record.eventName as TableChange['eventName']),
    ...(keys && { keys: image(keys) }),
    ...(data.OldImage && { oldImage: image(data.OldImage) as Item }),
    ...(data.NewImage && { newImage: image(data.NewImage) as Item }),
    byTtl,
    ...(data.SequenceNumber && { sequenceNumber: data.SequenceNumber }),
  };
}

function pick<T>(values: Record<string, T>, names: string[]): Record<string, T> {
  return Object.fromEntries(Object.entries(values).filter(([name]) => names.includes(name)));
}

const image = (attributes: Record<string, AttributeValue>) =>
  unmarshall(typed(attributes) as Parameters<typeof unmarshall>[0], { wrapNumbers: Number });

/** DynamoDB Local writes an empty map as `{}`, with no type; the only value that can be empty is a map. */
function typed(image: Record<string, AttributeValue>): Record<string, AttributeValue> {
  return Object.fromEntries(Object.entries(image).map(([name, value]) => [name, typedValue(value)]));
}

function typedValue(value: AttributeValue): AttributeValue {
  if (Object.keys(value).length === 0) return { M: {} };
  if (value.M) return { M: typed(value.M) };
  if (value.L) return { L: value.L.map(typedValue) };
  return value;
}

/** Binary values in a dead-letter line, as base64 (JSON has no bytes). */
const binaryAsBase64 = (_key: string, value: unknown) =>
  value instanceof Uint8Array ? Buffer.from(value).toString('base64') : value;
