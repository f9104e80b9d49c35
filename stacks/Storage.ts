import { CustomResource, RemovalPolicy } from 'aws-cdk-lib';
import { AccountRootPrincipal, PolicyDocument, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { Table as CdkTable } from 'aws-cdk-lib/aws-dynamodb';
import { CfnReplicaKey, type IKey, Key } from 'aws-cdk-lib/aws-kms';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { type StackContext, Table } from 'sst/constructs';
import { functionAlarms } from './alarms.ts';
import { keyhavenFunction } from './functions.ts';
import { tableDefinition } from '../packages/core/src/storage/table-definition.ts';
import { checkReplicaRegion, type StageConfig, stageConfig } from './stage-config.ts';

/**
 * The one table, from the same definition `npm start` creates on DynamoDB Local (on-demand, TTL, stream with
 * old and new images, point-in-time recovery), and the KMS key that wraps the data key for sealing.
 *
 * Regions: in the authoritative region the table is a global table with a replica in each of the stage's
 * `replicaRegions`, and the key is a multi-Region key. In a replica region nothing is created but the replica of
 * that key (the data key's wrapped copy replicates with the table, and only the same key material unwraps it); the
 * table is the replica the authoritative deploy made, found by its name.
 */
export function Storage({ stack, app }: StackContext) {
  const config = stageConfig(app.stage, app.region);
  if (config.region !== config.authoritativeRegion) return replicaStorage(stack, config, app.logicalPrefixedName('Table'));
  const removalPolicy = config.isDev ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN;
  const replicated = config.replicaRegions.length > 0;
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
        // A global table (version 2019.11.21): CDK adds a replica per region, on-demand, with this stream.
        ...(replicated ? { replicationRegions: config.replicaRegions } : {}),
      },
    },
  });
  const sealingKey = new Key(stack, 'SealingKey', {
    description: `keyhaven ${app.stage}: wraps the data key that seals sensitive attributes`,
    enableKeyRotation: true,
    removalPolicy,
    multiRegion: replicated,
  });
  stack.addOutputs({ SealingKeyArn: sealingKey.keyArn });
  return { table, sealingKey: sealingKey as IKey, config, firstTokens: config.firstTokens === 'deploy' ? firstTokens(stack, { table, sealingKey, config }) : undefined };
}

/**
 * A replica region's storage: the table replica (same name, made by the authoritative deploy) and this region's
 * replica of the multi-Region sealing key. No first tokens here: they are made once, in the authoritative region.
 */
function replicaStorage(stack: StackContext['stack'], config: StageConfig, tableName: string) {
  checkReplicaRegion(stack.stage, config);
  const table = new Table(stack, 'Table', {
    cdk: { table: CdkTable.fromTableName(stack, 'TableReplica', tableName) },
  });
  const replicaKey = new CfnReplicaKey(stack, 'SealingKey', {
    primaryKeyArn: config.authoritativeSealingKeyArn as string,
    description: `keyhaven ${stack.stage}: replica in ${config.region} of the key that wraps the data key`,
    keyPolicy: new PolicyDocument({
      statements: [new PolicyStatement({ actions: ['kms:*'], principals: [new AccountRootPrincipal()], resources: ['*'] })],
    }),
  });
  replicaKey.applyRemovalPolicy(config.isDev ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN);
  const sealingKey = Key.fromKeyArn(stack, 'SealingKeyReplica', replicaKey.attrArn);
  return { table, sealingKey, config, firstTokens: undefined };
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
