import { SecurityGroup, Subnet, Vpc } from 'aws-cdk-lib/aws-ec2';
import { type CfnRole, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import { Function as SstFunction, type FunctionProps, Stack, type Table } from 'sst/constructs';
import type { Construct } from 'constructs';
import { type SecretsFamily, secretsFamilies } from '../packages/core/src/secrets/families.ts';
import { tableDefinition } from '../packages/core/src/storage/table-definition.ts';
import { readActions, tableAccessOf } from './permissions.ts';
import { type StageConfig, settingsEnv } from './stage-config.ts';

/** What every function of the app gets: the table and key it may use, and nothing else. */
export interface FunctionContext {
  table: Table;
  sealingKey: IKey;
  config: StageConfig;
}

/** The keyring unwraps the data key and, where none exists yet, generates it (`packages/core/src/storage/keyring.ts`). */
export const keyActions = ['kms:Decrypt', 'kms:GenerateDataKey'] as const;
export type KeyAction = (typeof keyActions)[number];

/** The encryption context the keyring binds the data key to: KMS refuses it under any other. */
export const dataKeyContext = { 'kms:EncryptionContext:purpose': 'keyhaven-data-key' };

/**
 * Only the function that may be first to use the stage's table creates the data key: the deploy-time first-tokens
 * resource where there is one (it runs before any API exists), else any function (dev stages: the first request).
 */
export function keyActionsOf(functionId: string, config: StageConfig): KeyAction[] {
  if (functionId === 'Deploy-first-tokens' || config.firstTokens === 'http')
    return ['kms:Decrypt', 'kms:GenerateDataKey'];
  return ['kms:Decrypt'];
}

/**
 * The function's table actions (`stacks/permissions.ts`, derived from what it sends), on the table only: its reads
 * limited to the partitions it reads, its writes to those it writes (`dynamodb:LeadingKeys`); `Query` on the `due`
 * index limited to the queues it sweeps (an index query's leading key is the index's partition key); and the sealing
 * key. On a stage whose first request makes the data key (`firstTokens: 'http'`), any function may be that first one,
 * so each may also put the keyring item into `sys` (a conditional put: never over an existing one).
 */
export function corePermissions(functionId: string, { table, sealingKey, config }: FunctionContext): PolicyStatement[] {
  const access = tableAccessOf(functionId);
  const onPartitions = (patterns: string[]) => ({ 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': patterns } });
  const reads = access.items.filter((action) => readActions.includes(action));
  const writes = access.items.filter((action) => !readActions.includes(action));
  if (reads.length > 0 && access.reads.length === 0)
    throw new Error(`${functionId}: reads the table but no partition is declared`);
  if (writes.length > 0 && access.writes.length === 0)
    throw new Error(`${functionId}: writes the table but no partition is declared`);
  const firstKeyring =
    config.firstTokens === 'http' && !(writes.includes('dynamodb:PutItem') && access.writes.includes('sys'));
  return [
    ...(reads.length > 0
      ? [new PolicyStatement({ actions: reads, resources: [table.tableArn], conditions: onPartitions(access.reads) })]
      : []),
    ...(writes.length > 0
      ? [new PolicyStatement({ actions: writes, resources: [table.tableArn], conditions: onPartitions(access.writes) })]
      : []),
    ...(firstKeyring
      ? [
          new PolicyStatement({
            actions: ['dynamodb:PutItem'],
            resources: [table.tableArn],
            conditions: onPartitions(['sys']),
          }),
        ]
      : []),
    ...(access.dueQueues
      ? [
          new PolicyStatement({
            actions: ['dynamodb:Query'],
            resources: dueIndexes.map((name) => `${table.tableArn}/index/${name}`),
            conditions: onPartitions(access.dueQueues),
          }),
        ]
      : []),
    new PolicyStatement({
      actions: keyActionsOf(functionId, config),
      resources: [sealingKey.keyArn],
      conditions: { StringEquals: dataKeyContext },
    }),
  ];
}

const dueIndexes = tableDefinition.globalIndexes.map((index) => index.indexName);

export function coreEnvironment({ table, sealingKey, config }: FunctionContext): Record<string, string> {
  const forwards = config.region !== config.authoritativeRegion;
  return {
    KEYHAVEN_TABLE: table.tableName,
    KEYHAVEN_KMS_KEY_ID: sealingKey.keyArn,
    KEYHAVEN_REGION: config.region,
    KEYHAVEN_AUTHORITATIVE_REGION: config.authoritativeRegion,
    // Only a non-authoritative region forwards writes, so only it gets where to.
    ...(config.authoritativeUrl && forwards ? { KEYHAVEN_AUTHORITATIVE_URL: config.authoritativeUrl } : {}),
    ...(config.authoritativeSecretsUrl && forwards
      ? { KEYHAVEN_AUTHORITATIVE_SECRETS_URL: config.authoritativeSecretsUrl }
      : {}),
  };
}

/**
 * Left out of every bundle: the Lambda `nodejs24.x` runtime ships the AWS SDK for JavaScript v3, so the DynamoDB and
 * KMS clients (and the Smithy code only they pull in) are imported from the runtime rather than bundled.
 */
export const providedByRuntime = ['@aws-sdk/*'] as const;

/**
 * The HCL parser the scheduler's `POST /v1/jobs/parse` loads on its first parse (`@cdktf/hcl2json`, with fs-extra
 * and what fs-extra needs): it reads its WebAssembly from its own package folder, so it cannot be bundled; the
 * scheduler API function ships these folders beside its bundle, as the lockfile installed them (no install at build
 * time), and imports the package by name.
 */
export const hclParserFiles = ['@cdktf/hcl2json', 'graceful-fs', 'jsonfile', 'universalify'].map((name) => ({
  from: `node_modules/${name}`,
  to: `node_modules/${name}`,
}));

/**
 * The name of a function's role: `keyhaven.<stage>.<region>.<function id>`. The sealing key's policy names the roles
 * by this pattern (`aws:PrincipalArn`), since the roles live in stacks that depend on the key's. Dots separate the
 * parts because stage names cannot hold one, so no other stage's (or region's) roles match this stage's prefix.
 */
export function functionRoleName(stage: string, region: string, functionId: string): string {
  if (!/^[A-Za-z0-9-]+$/.test(stage))
    throw new Error(`stage "${stage}": a stage name holds only letters, digits and -`);
  const name = `${functionRolePrefix(stage, region)}${functionId}`;
  if (name.length > 64)
    throw new Error(`role name ${name} is longer than IAM's 64 characters: use a shorter stage name`);
  return name;
}

/** What every function role of the stage in the region starts with, and only those. */
export const functionRolePrefix = (stage: string, region: string) => `keyhaven.${stage}.${region}.`;

/** A Lambda of this app: Node 24 on arm64, a minified ESM bundle of just its entry's imports, less the runtime's SDK. */
export function keyhavenFunction(
  scope: Construct,
  id: string,
  context: FunctionContext,
  props: Pick<FunctionProps, 'handler' | 'description'> & Partial<FunctionProps>,
): SstFunction {
  const { environment, permissions, nodejs, ...rest } = props;
  const fn = new SstFunction(scope, id, {
    runtime: 'nodejs24.x',
    architecture: 'arm_64',
    memorySize: '512 MB',
    timeout: '29 seconds',
    logRetention: context.config.logRetention,
    tracing: 'disabled',
    nodejs: {
      format: 'esm',
      minify: true,
      splitting: true,
      sourcemap: false,
      esbuild: {
        external: [...providedByRuntime],
        ...(nodejs?.esbuild?.define ? { define: nodejs.esbuild.define } : {}),
      },
    },
    environment: { ...coreEnvironment(context), ...environment },
    permissions: [...corePermissions(id, context), ...((permissions as PolicyStatement[] | undefined) ?? [])],
    ...rest,
  });
  const role = fn.role?.node.defaultChild as CfnRole | undefined;
  if (!role) throw new Error(`function ${id} has no role of its own`);
  role.roleName = functionRoleName((Stack.of(scope) as Stack).stage, context.config.region, id);
  return fn;
}

/**
 * What a family's or an engine job's function is built with so that its zip holds that family's backends alone
 * (`packages/core/src/secrets/family-list.ts` explains how).
 */
export const bundledFamilyDefine = (family: SecretsFamily): Record<string, string> => ({
  'process.env.KEYHAVEN_BUNDLED_FAMILY': JSON.stringify(family),
});

/** Directories are usually private: the directory Lambda joins the given subnets. No lookups, so synthesis stays offline. */
export function directoryNetwork(stack: Construct, network: NonNullable<StageConfig['directoryVpc']>) {
  const vpc = Vpc.fromVpcAttributes(stack, 'DirectoryVpc', {
    vpcId: network.vpcId,
    availabilityZones: network.availabilityZones,
    privateSubnetIds: network.privateSubnetIds,
  });
  return {
    vpc,
    vpcSubnets: {
      subnets: network.privateSubnetIds.map((id, index) => Subnet.fromSubnetId(stack, `DirectorySubnet${index}`, id)),
    },
    securityGroups: network.securityGroupIds.map((id, index) =>
      SecurityGroup.fromSecurityGroupId(stack, `DirectorySg${index}`, id),
    ),
  };
}

const networks = new WeakMap<Construct, ReturnType<typeof directoryNetwork>>();

/**
 * A family's function props from its backends' `deployment`: the stage's private network (`directoryVpc`) where a
 * backend asks for it, and the environment of its operator settings (merged over `environment`); and its bundle holds
 * that family alone (`bundledFamilyDefine`).
 */
export function familyFunctionProps(
  stack: Construct,
  config: StageConfig,
  family: SecretsFamily,
  environment: Record<string, string> = {},
): Partial<FunctionProps> {
  const deployments = secretsFamilies[family].flatMap((backend) => (backend.deployment ? [backend.deployment] : []));
  const settings = Object.assign(
    {},
    ...deployments.flatMap((deployment) => (deployment.settings ? [settingsEnv(config, deployment.settings)] : [])),
  );
  let network: ReturnType<typeof directoryNetwork> | undefined;
  if (config.directoryVpc && deployments.some((deployment) => deployment.privateNetwork)) {
    network = networks.get(stack) ?? directoryNetwork(stack, config.directoryVpc);
    networks.set(stack, network);
  }
  return {
    nodejs: { esbuild: { define: bundledFamilyDefine(family) } },
    ...(Object.keys({ ...environment, ...settings }).length > 0
      ? { environment: { ...environment, ...settings } }
      : {}),
    ...network,
  };
}
