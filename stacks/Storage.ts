import { type StackContext, Table } from 'sst/constructs';
import { tableDefinition } from '../packages/core/src/storage/table-definition.ts';

/** The one table, from the same definition `npm start` creates on DynamoDB Local. */
export function Storage({ stack }: StackContext) {
  const keys = [
    tableDefinition.partitionKey,
    tableDefinition.sortKey,
    ...tableDefinition.globalIndexes.flatMap((index) => [index.partitionKey, index.sortKey]),
  ];
  const table = new Table(stack, 'Table', {
    fields: Object.fromEntries(keys.map((key) => [key, 'string' as const])),
    primaryIndex: { partitionKey: tableDefinition.partitionKey, sortKey: tableDefinition.sortKey },
    globalIndexes: Object.fromEntries(
      tableDefinition.globalIndexes.map((index) => [index.indexName, { partitionKey: index.partitionKey, sortKey: index.sortKey }]),
    ),
    timeToLiveAttribute: tableDefinition.timeToLiveAttribute,
    stream: 'new_and_old_images',
  });
  return { table };
}
