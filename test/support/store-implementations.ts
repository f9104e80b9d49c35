import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { inject } from 'vitest';
import { DynamoStore } from '../../packages/core/src/storage/dynamodb-store.ts';
import type { Store } from '../../packages/core/src/storage/intent.ts';
import { MemoryStore } from '../../packages/core/src/storage/memory-store.ts';
import { storeClientOptions } from '../../packages/core/src/storage/store-client.ts';
import { localClientConfig } from '../../packages/local/src/dynamodb-local.ts';
import { ensureTable } from '../../packages/local/src/table.ts';

/**
 * The two stores a suite runs over with `describe.each`: a fresh table in the run's DynamoDB Local, its client
 * configured as the services configure theirs (`storage/store-client.ts`), and the in-memory store.
 */
export const storeImplementations: Array<[string, () => Promise<Store>]> = [
  [
    'DynamoDB',
    async () => {
      const client = new DynamoDBClient({ ...localClientConfig(inject('dynamoEndpoint')), ...storeClientOptions() });
      const tableName = `test-${randomUUID()}`;
      await ensureTable(client, tableName);
      return new DynamoStore(client, tableName);
    },
  ],
  ['memory', async () => new MemoryStore()],
];
