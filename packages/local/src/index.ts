export { localClientConfig, startDynamoDbLocal } from './dynamodb-local.ts';
export { type LocalRuntime, startLocal } from './runtime.ts';
export { ensureTable } from './table.ts';
