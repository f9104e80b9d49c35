import {
  allSecretsFamilies,
  backendsOf,
  defaultMountsOf,
  type SecretsFamily,
  secretsFamilies,
} from '../packages/core/src/secrets/families.ts';
import type { Deployment } from '../packages/core/src/secrets/framework/backend.ts';
import type { AlarmSubscription, CustomDomain, DeclaredMount, StageConfig } from './stage-schema.ts';

export type {
  AlarmSubscription,
  AuditReplication,
  CustomDomain,
  DeclaredMount,
  DirectoryVpc,
  StageConfig,
  TableCapacity,
  Throttle,
} from './stage-schema.ts';

/** Mount type -> the endpoint family (and so the Lambda) that serves it: each backend of the family list but `system`'s. */
export const familyOfType: Record<string, Exclude<SecretsFamily, 'system'>> = Object.fromEntries(
  allSecretsFamilies.flatMap((family) =>
    family === 'system' ? [] : secretsFamilies[family].map((backend) => [backend.type, family]),
  ),
);

/** The mount types that are auth methods (mounted under `auth/`). */
export const authTypes = new Set(
  allSecretsFamilies.flatMap((family) =>
    secretsFamilies[family].filter((backend) => backend.kind === 'auth').map((backend) => backend.type),
  ),
);

/**
 * The mounts of a stage that lists none: every backend of the family list (`packages/core/src/secrets/family-list.ts`)
 * at its default path (`defaultMountPath`: kv at `secret`, an engine at its type, a login method under `auth/`). A
 * stage chooses its own with `mounts` (the example stages below do); a new engine is routed on the others.
 */
export const defaultMounts: DeclaredMount[] = defaultMountsOf(backendsOf(allSecretsFamilies)).map(({ path, type }) => ({
  path,
  type,
}));

const devStages = new Set(['dev', 'test']);

/** A stage's changes to the defaults: any field, and inside a block (`audit`, `backup`, …) only what differs. */
type StageOverride = { [Field in keyof StageConfig]?: Partial<StageConfig[Field]> | StageConfig[Field] };

const isBlock = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The defaults with a stage's changes: a block merged field by field (at any depth), anything else replaced. */
function withOverride<T extends object>(defaults: T, override: object): T {
  const merged: Record<string, unknown> = { ...(defaults as Record<string, unknown>) };
  for (const [field, value] of Object.entries(override)) {
    if (value === undefined) continue;
    const current = merged[field];
    merged[field] = isBlock(current) && isBlock(value) ? withOverride(current, value) : value;
  }
  return merged as T;
}

/**
 * The stage's configuration, in one place. Stages not listed here get the defaults; a stage name starting
 * with `dev` (or `test`, used by the synthesis tests) is a dev stage.
 */
export function stageConfig(
  stage: string,
  region = process.env.AWS_REGION ?? 'us-east-1',
  extra: Partial<StageConfig> = {},
): StageConfig {
  const isDev = devStages.has(stage) || stage.startsWith('dev-');
  const base: StageConfig = {
    region,
    authoritativeRegion: region,
    mounts: defaultMounts,
    logRetention: isDev ? 'one_week' : 'three_months',
    audit: isDev
      ? { retentionDays: 1, lockMode: 'governance', scheduler: true }
      : { retentionDays: 400, lockMode: 'compliance', scheduler: true },
    reservedConcurrency: isDev
      ? { eventStream: 5, schedulerApi: 5, schedulerClient: 5, jobs: 2, streamConsumer: 2 }
      : { eventStream: 50, schedulerApi: 50, schedulerClient: 20, jobs: 2, streamConsumer: 10 },
    throttle: isDev
      ? { default: { rate: 50, burst: 100 }, login: { rate: 5, burst: 10 }, credentials: { rate: 10, burst: 20 } }
      : { default: { rate: 500, burst: 1000 }, login: { rate: 20, burst: 40 }, credentials: { rate: 50, burst: 100 } },
    firstTokens: isDev ? 'http' : 'deploy',
    corsOrigins: [],
    // A floor of one unit each (table and index: ~$1.1 a month idle); autoscaling follows the load above it.
    tableCapacity: isDev
      ? { mode: 'provisioned', targetPercent: 90, read: { min: 1, max: 100 }, write: { min: 1, max: 100 } }
      : { mode: 'provisioned', targetPercent: 90, read: { min: 1, max: 4_000 }, write: { min: 1, max: 4_000 } },
    replicaRegions: [],
    alarmSubscriptions: [],
    ...(isDev ? {} : { backup: { retentionDays: 35, lockChangeableForDays: 3 } }),
    isDev,
  };
  // The example stages' on-call address; replace it with your own (synthesis of a stage outside dev needs one).
  const exampleOnCall: AlarmSubscription[] = [{ protocol: 'email', endpoint: 'oncall@example.com' }];
  // The example stages' names, under one (example) certificate in us-east-1 for *.example.com; use your own.
  const exampleCertificate = 'arn:aws:acm:us-east-1:123456789012:certificate/22222222-2222-2222-2222-222222222222';
  const exampleDomains = (prefix: string) => ({
    secrets: { domainName: `${prefix}secrets.example.com`, certificateArn: exampleCertificate },
    scheduler: { domainName: `${prefix}scheduler.example.com`, certificateArn: exampleCertificate },
  });
  const overrides: Record<string, StageOverride> = {
    // Example of a production stage with two cloud mounts; edit to match your accounts.
    prod: {
      mounts: [...defaultMounts, { path: 'gcp-prod', type: 'cloud' }],
      reservedConcurrency: { eventStream: 100 },
      corsOrigins: ['https://console.example.com'],
      alarmSubscriptions: exampleOnCall,
      customDomains: exampleDomains('prod-'),
      // Every audit object copied into a locked bucket of another account (a log archive account).
      audit: {
        replication: {
          bucketArn: 'arn:aws:s3:::keyhaven-prod-audit-copy',
          account: '210987654321',
          kmsKeyArn: 'arn:aws:kms:us-west-2:210987654321:key/11111111-2222-3333-4444-555555555555',
        },
      },
      // A copy of each backup in a vault of another account (a backup account), which must allow this one to copy in.
      backup: {
        copyToVaultArn: 'arn:aws:backup:us-west-2:210987654321:backup-vault:keyhaven-prod-copy',
      },
    },
    // Example of a stage in two regions: deploy it first with `--region us-east-1` (the table, a global table with a
    // replica in eu-west-1, and the multi-Region sealing key), then put that deploy's URLs and `SealingKeyArn`
    // output here and deploy it with `--region eu-west-1` (reads served from the replica, writes forwarded).
    'example-multi-region': {
      // A global table: its replicated writes on demand (provisioned replicas would each need capacity of their own).
      tableCapacity: { mode: 'on-demand' },
      authoritativeRegion: 'us-east-1',
      replicaRegions: ['eu-west-1'],
      authoritativeUrl: 'https://scheduler.example.com',
      authoritativeSecretsUrl: 'https://secrets.example.com',
      authoritativeSealingKeyArn: 'arn:aws:kms:us-east-1:123456789012:key/mrk-0123456789abcdef0123456789abcdef',
      alarmSubscriptions: exampleOnCall,
      // A name per region (a CloudFront name belongs to one distribution); both under one certificate of *.example.com.
      customDomains: exampleDomains(region === 'us-east-1' ? '' : `${region}-`),
      // Outside us-east-1: the web ACL the us-east-1 deploy made (its output EdgeWebAclArn).
      ...(region === 'us-east-1'
        ? {}
        : {
            edgeWebAclArn:
              'arn:aws:wafv2:us-east-1:123456789012:global/webacl/keyhaven-example-multi-region-edge/0a1b2c3d-4e5f-6789-abcd-ef0123456789',
          }),
    },
    // Example of a stage whose distributions have their own domains (a certificate in us-east-1 each): they refuse
    // TLS 1.0 and 1.1, which the default *.cloudfront.net certificate cannot. Every stage outside dev needs them.
    'example-custom-domain': {
      customDomains: {
        secrets: {
          domainName: 'secrets.example.com',
          certificateArn: 'arn:aws:acm:us-east-1:123456789012:certificate/11111111-1111-1111-1111-111111111111',
        },
        scheduler: {
          domainName: 'scheduler.example.com',
          certificateArn: 'arn:aws:acm:us-east-1:123456789012:certificate/00000000-0000-0000-0000-000000000000',
        },
      },
      alarmSubscriptions: exampleOnCall,
    },
    // Example of a stage with only a directory and kv, the directory in a private network; use your VPC's IDs.
    'example-private': {
      mounts: [
        { path: 'secret', type: 'kv' },
        { path: 'ldap', type: 'ldap' },
      ],
      directoryVpc: {
        vpcId: 'vpc-0example',
        availabilityZones: ['us-east-1a', 'us-east-1b'],
        privateSubnetIds: ['subnet-0examplea', 'subnet-0exampleb'],
        securityGroupIds: ['sg-0example'],
      },
      alarmSubscriptions: exampleOnCall,
      customDomains: exampleDomains('private-'),
    },
  };
  // A stage's override is merged into the defaults block by block; `extra` (tests) replaces whole fields.
  const config = { ...withOverride(base, overrides[stage] ?? {}), ...extra };
  validateMounts(config.mounts);
  return config;
}

/** The `https://` origin of a distribution's own name, when it has one. */
export const customOrigin = (domain: CustomDomain | undefined) => (domain ? `https://${domain.domainName}` : undefined);

/** The mounts, as the secrets functions read them from `KEYHAVEN_DECLARED_MOUNTS`. */
export const declaredMountsEnv = (mounts: DeclaredMount[]) =>
  JSON.stringify(mounts.map((mount) => ({ path: `${mount.path}/`, type: mount.type })));

/**
 * The environment of an engine's functions for the operator settings its backend declares (`Deployment.settings`: the
 * cloud engine's `googleEndpoints`); each must be an https URL with a host.
 */
export function settingsEnv(
  config: StageConfig,
  settings: NonNullable<Deployment['settings']>,
): Record<string, string> {
  const environment: Record<string, string> = {};
  const given = (config as unknown as Record<string, Record<string, string> | undefined>)[settings.option];
  for (const [option, url] of Object.entries(given ?? {})) {
    const variable = settings.variables[option];
    if (!variable)
      throw new Error(
        `stage config: ${settings.option}.${option} is not one of ${Object.keys(settings.variables).join(', ')}`,
      );
    if (!/^https:\/\/[^/\s]+/.test(url))
      throw new Error(`stage config: ${settings.option}.${option} must be an https URL, not "${url}"`);
    environment[variable] = url;
  }
  return environment;
}

/** CORS for the HTTP APIs: only the listed origins, never `*`; none listed, no CORS configuration. */
export function corsOf(config: StageConfig) {
  for (const origin of config.corsOrigins) {
    if (!/^https?:\/\/[^/*]+$/.test(origin))
      throw new Error(`stage config: CORS origin "${origin}" must be scheme://host[:port]`);
  }
  if (config.corsOrigins.length === 0) return false as const;
  return {
    allowOrigins: config.corsOrigins,
    allowHeaders: [
      'content-type',
      'x-vault-token',
      'x-secrets-token',
      'x-nomad-token',
      'x-scheduler-token',
      'authorization',
      'x-vault-request',
    ],
    allowMethods: ['ANY' as const],
  };
}

function validateMounts(mounts: DeclaredMount[]): void {
  const seen = new Set<string>();
  for (const mount of mounts) {
    if (!/^[\w.-]+(\/[\w.-]+)*$/.test(mount.path)) throw new Error(`stage config: invalid mount path "${mount.path}"`);
    if (!familyOfType[mount.type]) throw new Error(`stage config: unknown mount type "${mount.type}" at ${mount.path}`);
    const isAuth = authTypes.has(mount.type);
    if (isAuth !== mount.path.startsWith('auth/')) {
      throw new Error(`stage config: ${mount.type} at "${mount.path}": auth methods live under auth/, engines do not`);
    }
    if (/^(sys|auth\/token|cubbyhole|identity)(\/|$)/.test(mount.path))
      throw new Error(`stage config: "${mount.path}" is reserved`);
    for (const other of seen) {
      if (`${other}/`.startsWith(`${mount.path}/`) || `${mount.path}/`.startsWith(`${other}/`)) {
        throw new Error(`stage config: mounts "${other}" and "${mount.path}" overlap`);
      }
    }
    seen.add(mount.path);
  }
}
