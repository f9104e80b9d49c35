import { setTimeout as sleep } from 'node:timers/promises';
import type {
  AttributeDefinition,
  CreateTableCommandInput,
  DynamoDBClient,
  GlobalSecondaryIndex,
  TableDescription,
} from '@aws-sdk/client-dynamodb';
import {
  CreateTableCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  ResourceInUseException,
  ResourceNotFoundException,
  UpdateTableCommand,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import { tableDefinition } from '../../core/src/storage/table-definition.ts';

const ACTIVE_TIMEOUT_MS = 60_000;

type IndexDefinition = (typeof tableDefinition.globalIndexes)[number];

/**
 * Creates the table from `tableDefinition`, or brings an existing one up to it: adds missing indexes,
 * enables the stream and TTL. Resolves once the table and its indexes are ACTIVE.
 */
export async function ensureTable(client: DynamoDBClient, tableName: string): Promise<void> {
  let table = await describe(client, tableName);
  if (!table) {
    try {
      await client.send(new CreateTableCommand(createTableInput(tableName)));
    } catch (error) {
      if (!(error instanceof ResourceInUseException)) throw error; // created concurrently
    }
    table = await waitUntilActive(client, tableName);
  }

  const existing = new Set(table.GlobalSecondaryIndexes?.map((index) => index.IndexName));
  // DynamoDB creates one index per UpdateTable call.
  for (const index of tableDefinition.globalIndexes.filter((index) => !existing.has(index.indexName))) {
    await client.send(
      new UpdateTableCommand({
        TableName: tableName,
        AttributeDefinitions: indexAttributes(index),
        GlobalSecondaryIndexUpdates: [{ Create: globalIndex(index) }],
      }),
    );
    table = await waitUntilActive(client, tableName);
  }

  if (!table.StreamSpecification?.StreamEnabled) {
    await client.send(
      new UpdateTableCommand({
        TableName: tableName,
        StreamSpecification: { StreamEnabled: true, StreamViewType: tableDefinition.streamViewType },
      }),
    );
    await waitUntilActive(client, tableName);
  }

  const ttl = await client.send(new DescribeTimeToLiveCommand({ TableName: tableName }));
  const ttlStatus = ttl.TimeToLiveDescription?.TimeToLiveStatus;
  if (ttlStatus !== 'ENABLED' && ttlStatus !== 'ENABLING') {
    await client.send(
      new UpdateTimeToLiveCommand({
        TableName: tableName,
        TimeToLiveSpecification: { Enabled: true, AttributeName: tableDefinition.timeToLiveAttribute },
      }),
    );
  }
}

function createTableInput(tableName: string): CreateTableCommandInput {
  const { partitionKey, sortKey, globalIndexes, streamViewType } = tableDefinition;
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: uniqueAttributes([
      ...stringAttributes(partitionKey, sortKey),
      ...globalIndexes.flatMap(indexAttributes),
    ]),
    KeySchema: [
      { AttributeName: partitionKey, KeyType: 'HASH' },
      { AttributeName: sortKey, KeyType: 'RANGE' },
    ],
    GlobalSecondaryIndexes: globalIndexes.map(globalIndex),
    StreamSpecification: { StreamEnabled: true, StreamViewType: streamViewType },
  };
}

function globalIndex(index: IndexDefinition): GlobalSecondaryIndex {
  return {
    IndexName: index.indexName,
    KeySchema: [
      { AttributeName: index.partitionKey, KeyType: 'HASH' },
      { AttributeName: index.sortKey, KeyType: 'RANGE' },
    ],
    Projection: { ProjectionType: 'ALL' },
  };
}

function indexAttributes(index: IndexDefinition): AttributeDefinition[] {
  return stringAttributes(index.partitionKey, index.sortKey);
}

function stringAttributes(...names: string[]): AttributeDefinition[] {
  return names.map((name) => ({ AttributeName: name, AttributeType: 'S' }));
}

function uniqueAttributes(attributes: AttributeDefinition[]): AttributeDefinition[] {
  return [...new Map(attributes.map((attribute) => [attribute.AttributeName, attribute])).values()];
}

async function describe(client: DynamoDBClient, tableName: string): Promise<TableDescription | undefined> {
  try {
    return (await client.send(new DescribeTableCommand({ TableName: tableName }))).Table;
  } catch (error) {
    if (error instanceof ResourceNotFoundException) return undefined;
    throw error;
  }
}

async function waitUntilActive(client: DynamoDBClient, tableName: string): Promise<TableDescription> {
  const deadline = Date.now() + ACTIVE_TIMEOUT_MS;
  for (;;) {
    const table = await describe(client, tableName);
    const indexesActive = (table?.GlobalSecondaryIndexes ?? []).every((index) => index.IndexStatus === 'ACTIVE');
    if (table?.TableStatus === 'ACTIVE' && indexesActive) return table;
    if (Date.now() > deadline)
      throw new Error(`Table ${tableName} did not become ACTIVE within ${ACTIVE_TIMEOUT_MS} ms`);
    await sleep(100);
  }
}
