/**
 * Where the rest of the code takes the store from. `Store` is the DynamoDB implementation for now, which still
 * accepts DynamoDB's inputs (marked deprecated) for code not yet moved to `intent.ts`'s operations (issue 27 §1).
 */
export { ConditionFailed, itemKey } from './condition-failed.ts';
export { DynamoStore as Store, type TransactItem } from './dynamodb-store.ts';
export type { Change, Condition, Item, Key, ListOptions, Write } from './intent.ts';
