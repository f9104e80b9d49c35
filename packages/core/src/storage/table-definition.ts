/**
 * The one table, described once: `packages/local` creates it on DynamoDB Local from this object and
 * `stacks/Storage.ts` deploys the same keys, indexes, TTL and stream.
 */
export const tableDefinition = {
  partitionKey: 'pk',
  sortKey: 'sk',
  /** Epoch seconds; DynamoDB deletes the item some time after it. The backstop, never the guarantee. */
  timeToLiveAttribute: 'expiresAt',
  streamViewType: 'NEW_AND_OLD_IMAGES',
  globalIndexes: [
    /** Secondary lookups by a unique reference: token accessor, lease owner token. */
    { indexName: 'gsi1', partitionKey: 'gsi1pk', sortKey: 'gsi1sk' },
    /** Ownership trees: a token's children. */
    { indexName: 'gsi2', partitionKey: 'gsi2pk', sortKey: 'gsi2sk' },
    /** Work that falls due: expiring leases and tokens, rotations. `duePk` is a queue, `dueSk` `<epoch>#<id>`. */
    { indexName: 'due', partitionKey: 'duePk', sortKey: 'dueSk' },
  ],
} as const;

export type TableDefinition = typeof tableDefinition;
