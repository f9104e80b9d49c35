export { startDynamoDbLocal, localClientConfig } from './dynamodb-local.ts';
export { ensureTable } from './table.ts';
export { startLocal, type LocalRuntime } from './runtime.ts';
