import { CustomResource, RemovalPolicy } from 'aws-cdk-lib';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { type StackContext, Table } from 'sst/constructs';
import { functionAlarms } from './alarms.ts';
import { keyhavenFunction } from './functions.ts';
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
  return { table, sealingKey, config, firstTokens: config.firstTokens === 'deploy' ? firstTokens(stack, { table, sealingKey, config }) : undefined };
}

/**
 * The first root token and management token, made at deploy time by `functions/deploy/first-tokens.ts` (a custom
 * resource) into a Secrets Manager secret encrypted with the stage's key. It runs before the API stacks exist (they
 * depend on this one), and it is the one function that may create the data key. Read the tokens with
 * `aws secretsmanager get-secret-value --secret-id <FirstTokensSecret>`.
 */
function firstTokens(stack: StackContext['stack'], context: Parameters<typeof keyhavenFunction>[2]) {
  const secret = new Secret(stack, 'FirstTokensSecret', {
    description: `keyhaven ${stack.stage}: the first root token (root_token) and scheduler management token (scheduler_management_token)`,
    encryptionKey: context.sealingKey,
    removalPolicy: context.config.isDev ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN,
  });
  const fn = keyhavenFunction(stack, 'Deploy-first-tokens', context, {
    handler: 'functions/deploy/first-tokens.handler',
    description: 'keyhaven deploy: makes the first root and management tokens into Secrets Manager',
    timeout: '60 seconds',
    permissions: [
      new PolicyStatement({ actions: ['secretsmanager:PutSecretValue'], resources: [secret.secretArn] }),
      // Secrets Manager encrypts the new version under the stage's key on the caller's behalf.
      new PolicyStatement({
        actions: ['kms:GenerateDataKey'],
        resources: [context.sealingKey.keyArn],
        conditions: {
          StringEquals: { 'kms:ViaService': `secretsmanager.${stack.region}.amazonaws.com`, 'kms:EncryptionContext:SecretARN': secret.secretArn },
        },
      }),
    ],
  });
  functionAlarms(stack, context.config, 'Deploy-first-tokens', fn);
  const resource = new CustomResource(stack, 'FirstTokens', {
    serviceToken: fn.functionArn,
    resourceType: 'Custom::KeyhavenFirstTokens',
    properties: { SecretId: secret.secretArn },
  });
  stack.addOutputs({ FirstTokensSecret: secret.secretArn });
  return { secret, function: fn, resource };
}
