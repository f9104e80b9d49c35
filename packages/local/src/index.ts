export { localClientConfig, startDynamoDbLocal } from './dynamodb-local.ts';
export { type LocalRuntime, startLocal } from './start-local.ts';
export { ensureTable } from './table.ts';
