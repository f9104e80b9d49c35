export { type Core, createCore } from './core.ts';
export { createSecretsApp } from './http/secrets-app.ts';
export { createSchedulerApp } from './scheduler/scheduler-app.ts';
export { onTableChange, sweepExpired, type TableChange } from './jobs.ts';
export { allSecretsFamilies, backendsOf, type SecretsFamily } from './secrets/families.ts';
export { initialize, isInitialized } from './secrets/sys/init.ts';
export { coreFromEnvironment, dynamoDbClient, tableName } from './runtime.ts';
export { fileKeySource } from './storage/keyring.ts';
export { tableDefinition } from './storage/table-definition.ts';
