import { createHash } from 'node:crypto';
import { type Clock, epochSeconds } from '../lib/clock.ts';
import type { Store } from './store.ts';

/**
 * The due queue (GSI `due`): items that fall due at an epoch second sort by `dueSk = <padded epoch>#<what>`,
 * so a sweep asks one query per partition for everything due up to now.
 *
 * A busy queue is sharded, so no index partition takes every write (DynamoDB allows about 1,000 writes/s per
 * partition key): a writer puts an item on `<queue>#<shard>`, the shard a hash of the item's id (`shardedQueue`),
 * and readers query every shard of the queue in parallel, plus the bare queue name, which unsharded writers (the
 * scheduler's token queue, the directory's rotations) and data written before sharding still use.
 */
export const dueKey = (epochSeconds: number, what: string) => `${String(epochSeconds).padStart(12, '0')}#${what}`;

/** When DynamoDB's TTL may delete an item the sweep should have handled long before: an hour's grace. */
export const ttlBackstop = (epochSeconds: number) => epochSeconds + 3600;

/** How many partitions a sharded key (a due queue, the leases) spreads over: 16,000 writes/s before one throttles. */
export const shardCount = 16;

/** The shard of an id, 0 to `shardCount - 1`: the first 32 bits of its SHA-1, so the same id always lands alike. */
export const shardOf = (id: string) => createHash('sha1').update(id).digest().readUInt32BE(0) % shardCount;

/** `<key>#<two-digit shard>`: the partition a sharded key writes an id under. */
export const shardKey = (key: string, id: string) => `${key}#${String(shardOf(id)).padStart(2, '0')}`;

/** Every partition of a sharded key, the bare key first (unsharded writers, data from before sharding). */
export const allShards = (key: string) => [
  key,
  ...Array.from({ length: shardCount }, (_, shard) => `${key}#${String(shard).padStart(2, '0')}`),
];

/** The queue partition an item with this id is written to. */
export const shardedQueue = shardKey;

/** What reading the due queue needs: the table, and the clock that says what "now" is. */
export interface DueSource {
  store: Store;
  clock: Clock;
}

/** Up to `limit` items of one queue partition whose time has come, earliest first. */
export const dueInPartition = (source: DueSource, partition: string, limit: number) =>
  source.store.list(partition, { index: 'due', range: { to: dueKey(epochSeconds(source.clock), '~') }, limit });

/** Up to `limit` items of a queue (every shard) whose time has come, earliest first. */
export async function dueItems(source: DueSource, queue: string, limit: number) {
  const pages = await Promise.all(allShards(queue).map((partition) => dueInPartition(source, partition, limit)));
  return pages
    .flat()
    .sort((a, b) => (String(a.dueSk) < String(b.dueSk) ? -1 : 1))
    .slice(0, limit);
}

/** When the earliest item of these queues (every shard) falls due (epoch seconds; past if something is due now), if any. */
export async function nextDue(source: DueSource, queues: string[]): Promise<number | undefined> {
  const heads = await Promise.all(
    queues.flatMap(allShards).map((partition) => source.store.list(partition, { index: 'due', limit: 1 })),
  );
  const times = heads.flatMap((items) => items.slice(0, 1).map((item) => Number.parseInt(String(item.dueSk), 10)));
  return times.length > 0 ? Math.min(...times) : undefined;
}
