import { CustomResource, RemovalPolicy } from 'aws-cdk-lib';
import { AccountRootPrincipal, PolicyDocument, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { BillingMode, Table as CdkTable } from 'aws-cdk-lib/aws-dynamodb';
import { type CfnKey, CfnReplicaKey, type IKey, Key } from 'aws-cdk-lib/aws-kms';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { type Stack, type StackContext, Table } from 'sst/constructs';
import { type AlarmContext, alarmOn, alarmTopic, functionAlarms, period } from './alarms.ts';
import { tableBackup } from './backup.ts';
import { logsKey } from './logs-key.ts';
import { dataKeyContext, functionRoleName, functionRolePrefix, keyhavenFunction } from './functions.ts';
import { tableDefinition } from '../packages/core/src/storage/table-definition.ts';
import { checkReplicaRegion } from './stage-checks.ts';
import { type StageConfig, stageConfig, type TableCapacity } from './stage-config.ts';

/**
 * The one table, from the same definition `npm start` creates on DynamoDB Local (TTL, stream with old and new
 * images, point-in-time recovery; capacity as the stage's `tableCapacity` says, provisioned with autoscaling by
 * default), and the KMS key that wraps the data key for sealing.
 *
 * Regions: in the authoritative region the table is a global table with a replica in each of the stage's
 * `replicaRegions`, and the key is a multi-Region key. In a replica region nothing is created but the replica of
 * that key (the data key's wrapped copy replicates with the table, and only the same key material unwraps it); the
 * table is the replica the authoritative deploy made, found by its name.
 */
export function Storage({ stack, app }: StackContext) {
  const config = stageConfig(app.stage, app.region);
  const topic = alarmTopic(stack, config);
  const logs = logsKey(stack, config);
  if (config.region !== config.authoritativeRegion)
    return { ...replicaStorage(stack, config, app.logicalPrefixedName('Table'), topic), logsKey: logs as IKey };
  const removalPolicy = config.isDev ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN;
  const replicated = config.replicaRegions.length > 0;
  const provisioned = provisionedCapacity(config.tableCapacity);
  const keys = [
    tableDefinition.partitionKey,
    tableDefinition.sortKey,
    ...tableDefinition.globalIndexes.flatMap((index) => [index.partitionKey, index.sortKey]),
  ];
  const table = new Table(stack, 'Table', {
    fields: Object.fromEntries(keys.map((key) => [key, 'string' as const])),
    primaryIndex: { partitionKey: tableDefinition.partitionKey, sortKey: tableDefinition.sortKey },
    globalIndexes: Object.fromEntries(
      tableDefinition.globalIndexes.map((index) => [
        index.indexName,
        {
          partitionKey: index.partitionKey,
          sortKey: index.sortKey,
          ...(provisioned
            ? { cdk: { index: { readCapacity: provisioned.read.min, writeCapacity: provisioned.write.min } } }
            : {}),
        },
      ]),
    ),
    timeToLiveAttribute: tableDefinition.timeToLiveAttribute,
    stream: tableDefinition.streamViewType === 'NEW_AND_OLD_IMAGES' ? 'new_and_old_images' : 'old_image',
    cdk: {
      table: {
        // SST turns point-in-time recovery on. Provisioned capacity starts at the minimum; autoscaling follows.
        ...(provisioned
          ? {
              billingMode: BillingMode.PROVISIONED,
              readCapacity: provisioned.read.min,
              writeCapacity: provisioned.write.min,
            }
          : { billingMode: BillingMode.PAY_PER_REQUEST }),
        deletionProtection: !config.isDev,
        removalPolicy,
        // A global table (version 2019.11.21): CDK adds a replica per region, in the table's capacity mode (provisioned
        // write capacity scales alike in every replica), with this stream.
        ...(replicated ? { replicationRegions: config.replicaRegions } : {}),
      },
    },
  });
  if (provisioned) autoscale(table, provisioned);
  const sealingKey = new Key(stack, 'SealingKey', {
    description: `keyhaven ${app.stage}: wraps the data key that seals sensitive attributes`,
    enableKeyRotation: true,
    removalPolicy,
    multiRegion: replicated,
  });
  stack.addOutputs({ SealingKeyArn: sealingKey.keyArn });
  tableAlarms(stack, { config, alarmTopic: topic }, table);
  tableBackup(stack, config, table);
  const tokens =
    config.firstTokens === 'deploy' ? firstTokens(stack, { table, sealingKey, config, alarmTopic: topic }) : undefined;
  // The whole policy, set last: CDK's default (the account may do everything) and the statements `Secret` adds for
  // Secrets Manager (any secret of the account) are replaced, not extended.
  (sealingKey.node.defaultChild as CfnKey).keyPolicy = sealingKeyPolicy(
    stack,
    config,
    tokens ? firstTokensSecretName(stack.stage) : undefined,
  );
  return {
    table,
    sealingKey: sealingKey as IKey,
    config,
    alarmTopic: topic,
    firstTokens: tokens,
    logsKey: logs as IKey,
  };
}

/** The provisioned capacity to set up, checked (undefined: on demand). */
function provisionedCapacity(capacity: TableCapacity): Exclude<TableCapacity, { mode: 'on-demand' }> | undefined {
  if (capacity.mode === 'on-demand') return undefined;
  // Application Auto Scaling's target tracking takes 20–90%.
  if (!(capacity.targetPercent >= 20 && capacity.targetPercent <= 90))
    throw new Error(`tableCapacity.targetPercent ${capacity.targetPercent}: autoscaling takes 20 to 90`);
  for (const [name, range] of Object.entries({ read: capacity.read, write: capacity.write }))
    if (!(Number.isInteger(range.min) && range.min >= 1 && range.max >= range.min))
      throw new Error(
        `tableCapacity.${name}: min ${range.min} and max ${range.max} must be whole units, 1 ≤ min ≤ max`,
      );
  return capacity;
}

/** Target tracking on the table's and each index's read and write capacity. */
function autoscale(table: Table, capacity: Exclude<TableCapacity, { mode: 'on-demand' }>): void {
  const cdkTable = table.cdk.table as CdkTable;
  const target = { targetUtilizationPercent: capacity.targetPercent };
  const bounds = (range: { min: number; max: number }) => ({ minCapacity: range.min, maxCapacity: range.max });
  cdkTable.autoScaleReadCapacity(bounds(capacity.read)).scaleOnUtilization(target);
  cdkTable.autoScaleWriteCapacity(bounds(capacity.write)).scaleOnUtilization(target);
  for (const index of tableDefinition.globalIndexes) {
    cdkTable
      .autoScaleGlobalSecondaryIndexReadCapacity(index.indexName, bounds(capacity.read))
      .scaleOnUtilization(target);
    cdkTable
      .autoScaleGlobalSecondaryIndexWriteCapacity(index.indexName, bounds(capacity.write))
      .scaleOnUtilization(target);
  }
}

/**
 * Any throttled read or write of the table or of a global index (on-demand tables throttle too: a partition's own
 * limit, the account's table limit, or an index that cannot keep up throttles the table's writes).
 */
function tableAlarms(stack: Stack, context: AlarmContext, table: Table): void {
  const cdkTable = table.cdk.table;
  for (const metricName of ['ReadThrottleEvents', 'WriteThrottleEvents']) {
    alarmOn(
      stack,
      context,
      `Table${metricName}`,
      cdkTable.metric(metricName, { period, statistic: 'Sum' }),
      `keyhaven table: ${metricName}`,
    );
  }
  for (const index of tableDefinition.globalIndexes) {
    const dimensionsMap = { TableName: cdkTable.tableName, GlobalSecondaryIndexName: index.indexName };
    const metric = cdkTable.metric('WriteThrottleEvents', { period, statistic: 'Sum', dimensionsMap });
    alarmOn(
      stack,
      context,
      `Table-${index.indexName}-WriteThrottleEvents`,
      metric,
      `keyhaven table: index ${index.indexName} throttled writes`,
    );
  }
}

/** Key administration for the account (IAM decides who), without any use of the key. */
export const keyAdminActions = [
  'kms:Create*',
  'kms:Describe*',
  'kms:Enable*',
  'kms:List*',
  'kms:Put*',
  'kms:Update*',
  'kms:Revoke*',
  'kms:Disable*',
  'kms:Get*',
  'kms:Delete*',
  'kms:TagResource',
  'kms:UntagResource',
  'kms:ScheduleKeyDeletion',
  'kms:CancelKeyDeletion',
];

/** The first-tokens secret's name, so the key policy can name it without referring to the secret (which refers to the key). */
export const firstTokensSecretName = (stage: string) => `keyhaven/${stage}/first-tokens`;

/**
 * The sealing key's policy. The account administers the key but may not use it; the stage's function roles (named
 * `keyhaven.<stage>.<region>.<id>`, `stacks/functions.ts`: the roles live in stacks that depend on this one, so they
 * are matched by name, not referred to) may `Decrypt` the data key under its encryption context; `GenerateDataKey`
 * only the role that creates the data key (the first-tokens resource on deploy stages, any function on stages whose
 * first tokens are made over HTTP, as `keyActionsOf` grants). With a first-tokens secret, Secrets Manager may use
 * the key for that secret only (the account's IAM decides who reads it).
 */
export function sealingKeyPolicy(stack: Stack, config: StageConfig, secretName?: string): PolicyDocument {
  const account = new AccountRootPrincipal();
  const roleArn = (name: string) => `arn:${stack.partition}:iam::${stack.account}:role/${name}`;
  const functionRoles = roleArn(`${functionRolePrefix(stack.stage, config.region)}*`);
  // A replica region makes no first tokens: its roles only unwrap the data key that replicated with the table.
  const replica = config.region !== config.authoritativeRegion;
  const creator =
    config.firstTokens === 'http'
      ? functionRoles
      : replica
        ? undefined
        : roleArn(functionRoleName(stack.stage, config.region, 'Deploy-first-tokens'));
  const viaSecretsManager = { 'kms:ViaService': `secretsmanager.${config.region}.amazonaws.com` };
  const statements = [
    new PolicyStatement({
      sid: 'KeyAdministration',
      principals: [account],
      actions: [...keyAdminActions, ...(config.replicaRegions.length > 0 ? ['kms:ReplicateKey'] : [])],
      resources: ['*'],
    }),
    new PolicyStatement({
      sid: 'DecryptDataKey',
      principals: [account],
      actions: ['kms:Decrypt'],
      resources: ['*'],
      conditions: { ArnLike: { 'aws:PrincipalArn': functionRoles }, StringEquals: dataKeyContext },
    }),
  ];
  if (creator) {
    statements.push(
      new PolicyStatement({
        sid: 'GenerateDataKey',
        principals: [account],
        actions: ['kms:GenerateDataKey'],
        resources: ['*'],
        conditions: { ArnLike: { 'aws:PrincipalArn': creator }, StringEquals: dataKeyContext },
      }),
    );
  }
  if (secretName) {
    statements.push(
      new PolicyStatement({
        sid: 'FirstTokensSecret',
        principals: [account],
        actions: ['kms:Decrypt', 'kms:GenerateDataKey'],
        resources: ['*'],
        conditions: {
          StringEquals: viaSecretsManager,
          StringLike: {
            'kms:EncryptionContext:SecretARN': `arn:${stack.partition}:secretsmanager:${config.region}:${stack.account}:secret:${secretName}-??????`,
          },
        },
      }),
      new PolicyStatement({
        sid: 'SecretsManagerDescribe',
        principals: [account],
        actions: ['kms:DescribeKey'],
        resources: ['*'],
        conditions: { StringEquals: viaSecretsManager },
      }),
    );
  }
  return new PolicyDocument({ statements });
}

/**
 * A replica region's storage: the table replica (same name, made by the authoritative deploy) and this region's
 * replica of the multi-Region sealing key. No first tokens here: they are made once, in the authoritative region.
 */
function replicaStorage(
  stack: StackContext['stack'],
  config: StageConfig,
  tableName: string,
  topic: AlarmContext['alarmTopic'],
) {
  checkReplicaRegion(stack.stage, config);
  const table = new Table(stack, 'Table', {
    cdk: { table: CdkTable.fromTableName(stack, 'TableReplica', tableName) },
  });
  const replicaKey = new CfnReplicaKey(stack, 'SealingKey', {
    primaryKeyArn: config.authoritativeSealingKeyArn as string,
    description: `keyhaven ${stack.stage}: replica in ${config.region} of the key that wraps the data key`,
    keyPolicy: sealingKeyPolicy(stack, config),
  });
  replicaKey.applyRemovalPolicy(config.isDev ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN);
  const sealingKey = Key.fromKeyArn(stack, 'SealingKeyReplica', replicaKey.attrArn);
  tableAlarms(stack, { config, alarmTopic: topic }, table);
  return { table, sealingKey, config, alarmTopic: topic, firstTokens: undefined };
}

/**
 * The first root token and management token, made at deploy time by `functions/deploy/first-tokens.ts` (a custom
 * resource) into a Secrets Manager secret encrypted with the stage's key. It runs before the API stacks exist (they
 * depend on this one), and it is the one function that may create the data key. Read the tokens with
 * `aws secretsmanager get-secret-value --secret-id <FirstTokensSecret>`.
 */
function firstTokens(stack: StackContext['stack'], context: Parameters<typeof keyhavenFunction>[2] & AlarmContext) {
  const secret = new Secret(stack, 'FirstTokensSecret', {
    secretName: firstTokensSecretName(stack.stage),
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
          StringEquals: {
            'kms:ViaService': `secretsmanager.${stack.region}.amazonaws.com`,
            'kms:EncryptionContext:SecretARN': secret.secretArn,
          },
        },
      }),
    ],
  });
  functionAlarms(stack, context, 'Deploy-first-tokens', fn);
  const resource = new CustomResource(stack, 'FirstTokens', {
    serviceToken: fn.functionArn,
    resourceType: 'Custom::KeyhavenFirstTokens',
    properties: { SecretId: secret.secretArn },
  });
  stack.addOutputs({ FirstTokensSecret: secret.secretArn });
  return { secret, function: fn, resource };
}
