/**
 * Where the rest of the code takes the store from: `Store` is `intent.ts`'s interface, implemented on DynamoDB by
 * `DynamoStore` (dynamodb-store.ts) and in memory by `MemoryStore` (memory-store.ts).
 */
export { ConditionFailed, itemKey } from './condition-failed.ts';
export { DynamoStore } from './dynamodb-store.ts';
export type { Change, Condition, Item, Key, ListOptions, Store, Write } from './intent.ts';
