import { RemovalPolicy } from 'aws-cdk-lib';
import { Key } from 'aws-cdk-lib/aws-kms';
import { type StackContext, Table } from 'sst/constructs';
import { tableDefinition } from '../packages/core/src/storage/table-definition.ts';
import { stageConfig } from './stage-config.ts';

/**
 * The one table, from the same definition `npm start` creates on DynamoDB Local (on-demand, TTL, stream with
 * old and new images, point-in-time recovery), and the KMS key that wraps the data key for sealing.
 */
export function Storage({ stack, app }: StackContext) {
  const config = stageConfig(app.stage, app.region);
  const removalPolicy = config.isDev ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN;
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
    stream: tableDefinition.streamViewType === 'NEW_AND_OLD_IMAGES' ? 'new_and_old_images' : 'old_image',
    cdk: {
      table: {
        // SST turns point-in-time recovery on; on-demand billing is its default too.
        deletionProtection: !config.isDev,
        removalPolicy,
      },
    },
  });
  const sealingKey = new Key(stack, 'SealingKey', {
    description: `keyhaven ${app.stage}: wraps the data key that seals sensitive attributes`,
    enableKeyRotation: true,
    removalPolicy,
  });
  return { table, sealingKey, config };
}
