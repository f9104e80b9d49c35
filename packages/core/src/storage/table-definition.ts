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
  /**
   * Lookups that must be strongly consistent (accessor -> token, a token's children and leases) are items
   * in the owner's partition instead of indexes, so the only index is the queue of work falling due.
   * (DynamoDB Local's TTL also stalls on items missing an index key; with one index every expiring item has it.)
   */
  globalIndexes: [
    /** Work that falls due: expiring leases and tokens, rotations. `duePk` is a queue, `dueSk` `<epoch>#<id>`. */
    { indexName: 'due', partitionKey: 'duePk', sortKey: 'dueSk' },
  ],
} as const;
