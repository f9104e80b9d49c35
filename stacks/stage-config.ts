import {
  allSecretsFamilies,
  backendsOf,
  defaultMountsOf,
  type SecretsFamily,
  secretsFamilies,
} from '../packages/core/src/secrets/families.ts';
import type { Deployment } from '../packages/core/src/secrets/framework/backend.ts';
import type { googleEndpointVariables } from '../packages/core/src/secrets/mounts/operator-settings.ts';

/** A mount the stage serves: each becomes routes to its family's Lambda. */
export interface DeclaredMount {
  /** Path under `/v1/` without slashes at either end: `cloud`, `gcp-prod`, `auth/jwt`. */
  path: string;
  /** The mount type as `sys/mounts` or `sys/auth` takes it: `kv`, `cloud`, `ldap`, `mesh`, `jwt`, `oidc`. */
  type: string;
}

/** A private directory: the directory Lambda runs in these subnets. IDs only, so synthesis needs no lookup. */
export interface DirectoryVpc {
  vpcId: string;
  availabilityZones: string[];
  privateSubnetIds: string[];
  securityGroupIds: string[];
}

/** An API Gateway throttle: steady requests per second and the burst (token bucket) above it. */
export interface Throttle {
  rate: number;
  burst: number;
}

/** A distribution's own name and the ACM certificate (in us-east-1, as CloudFront requires) that covers it. */
export interface CustomDomain {
  domainName: string;
  certificateArn: string;
}

/**
 * A copy of every audit object in a bucket of another account or region (S3 replication): the bucket must be versioned
 * and have object lock on (S3 replicates each object's retention with it), its policy must let this stage's
 * replication role (`keyhaven-<stage>-audit-replication`) replicate into it, and `kmsKeyArn` is the destination's key,
 * which must let that role encrypt.
 */
export interface AuditReplication {
  bucketArn: string;
  account: string;
  kmsKeyArn: string;
}

/** A subscription of the alarm topic: an email address, an https endpoint, or a phone number (E.164) for SMS. */
export interface AlarmSubscription {
  protocol: 'email' | 'https' | 'sms';
  endpoint: string;
}

export interface StageConfig {
  region: string;
  /** The region whose scheduler holds ACL state; other regions forward writes to it. */
  authoritativeRegion: string;
  /** `{scheduler_url}` of the authoritative region, when this is not it. */
  authoritativeUrl?: string;
  /**
   * Regions the table is replicated into (a DynamoDB global table, made by the authoritative region's deploy); each
   * is deployed as the same stage with `--region <it>` and serves reads from its replica, forwarding writes. Default none.
   */
  replicaRegions: string[];
  /** The secrets service's base URL in the authoritative region, where a non-authoritative region forwards writes. */
  authoritativeSecretsUrl?: string;
  /**
   * The authoritative region's sealing key (its stack output `SealingKeyArn`, a multi-Region key `mrk-…` once the
   * stage has replica regions): a non-authoritative region's deploy makes its replica of that key.
   */
  authoritativeSealingKeyArn?: string;
  mounts: DeclaredMount[];
  /**
   * The names of the two CloudFront distributions (`{base_url}` with the console under `/ui/`, and `{scheduler_url}`),
   * each with an ACM certificate in us-east-1 that covers it; point the name (CNAME or Route 53 alias) at the
   * distribution's domain (outputs `SecretsDistributionDomain`, `SchedulerDistributionDomain`). Required outside dev
   * stages (`checkEdge`): only a distribution with its own certificate can refuse TLS 1.0 and 1.1.
   */
  customDomains?: {
    secrets?: CustomDomain;
    scheduler?: CustomDomain;
  };
  /**
   * The CloudFront-scope WAF web ACL (an ARN in us-east-1) of both distributions when the stage is deployed outside
   * us-east-1: CloudFront takes only web ACLs made in us-east-1, and SST deploys all of a stage's stacks into one
   * region. A us-east-1 deploy makes its own (`stacks/Edge.ts`, output `EdgeWebAclArn`), which other regions of the
   * same stage can name here. Required outside dev stages deployed elsewhere (`checkEdge`).
   */
  edgeWebAclArn?: string;
  logRetention: 'one_week' | 'one_month' | 'three_months' | 'one_year';
  directoryVpc?: DirectoryVpc;
  /**
   * Where audit lines go (stacks/Audit.ts): kept in S3 under object lock for `retentionDays` (`governance` lets a
   * privileged operator shorten it, `compliance` lets nobody); `scheduler` switches the scheduler's audit log on.
   */
  audit: {
    retentionDays: number;
    lockMode: 'governance' | 'compliance';
    scheduler: boolean;
    replication?: AuditReplication;
  };
  /**
   * Reserved concurrency of the long-lived scheduler functions: each event stream holds an instance for up to
   * 14 minutes (Lambda does not stop when the client goes away) and each blocking query up to ~26 s. The cap keeps
   * watchers from taking the account's concurrency from the secrets API; a stream over the cap gets 429 (throttled).
   * Reserved concurrency is taken from the account's unreserved pool (1,000 by default, 100 of which AWS keeps
   * unreserved), so the sum over all stages in an account must fit.
   */
  reservedConcurrency: {
    eventStream: number;
    schedulerApi: number;
    /**
     * Each scheduled job (the token sweep and every engine's job: lease revocation and password rotation). A run lasts up
     * to 90 s on a 1-minute schedule, so 2 lets the next run start while one finishes; reserved, a flood of requests
     * cannot take the concurrency revocations need.
     */
    jobs: number;
    /** The TTL backstop on the table stream: one concurrent batch per stream shard. */
    streamConsumer: number;
  };
  /**
   * API Gateway throttles of both HTTP APIs (`stacks/throttling.ts`): `default` for every route of the stage, `login`
   * for each login route (secrets `auth/<jwt mount>/login` and its OIDC routes, scheduler `acl/login` and its OIDC
   * routes) and `credentials` for each route that issues credentials or tokens. Beyond a limit: 429, no invocation.
   */
  throttle: { default: Throttle; login: Throttle; credentials: Throttle };
  /**
   * How the first root token (`sys/init`) and the scheduler's first management token (`acl/bootstrap`) come to be.
   * `deploy` (default outside dev stages): a custom resource makes both while the stage deploys and puts them in a
   * Secrets Manager secret encrypted with the stage's key; the HTTP calls are refused (403). `http`: as locally, the
   * first caller of `sys/init` / `acl/bootstrap` gets them; dev stages default to it.
   */
  firstTokens: 'deploy' | 'http';
  /** Origins (`https://app.example.com`) the HTTP APIs answer CORS for; none: no CORS at all (never `*`). */
  corsOrigins: string[];
  /**
   * Who the stage's alarms reach: each entry subscribes to the SNS topic the stack makes for the stage's alarms
   * (`stacks/alarms.ts`). Required outside dev stages: synthesis fails without one. An email or https subscription
   * must be confirmed by its recipient before it receives anything.
   */
  alarmSubscriptions: AlarmSubscription[];
  /**
   * Where the cloud engine calls Google (a private API endpoint, Private Service Connect): operator configuration,
   * set as the cloud functions' environment (`KEYHAVEN_GOOGLE_IAM_URL`, …), never a mount option or request field
   * (docs/operator-settings.md). Unset: Google's public hosts.
   */
  googleEndpoints?: Partial<Record<keyof typeof googleEndpointVariables, string>>;
  /**
   * AWS Backup of the table (`stacks/backup.ts`): a daily backup kept `retentionDays` in a vault under Vault Lock, whose
   * configuration can still be changed or removed for `lockChangeableForDays` (at least 3) after the deploy and never
   * after; `copyToVaultArn` (a vault in another account or region, which must let this account copy into it) gets a
   * copy of each. Default: 35 days and 3 days outside dev stages, none on dev stages (a locked vault cannot be deleted).
   */
  backup?: { retentionDays: number; lockChangeableForDays: number; copyToVaultArn?: string };
  /** Dev stages can be torn down: no deletion protection, the table and key are destroyed with the stack. */
  isDev: boolean;
}

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
      ? { eventStream: 5, schedulerApi: 5, jobs: 2, streamConsumer: 2 }
      : { eventStream: 50, schedulerApi: 50, jobs: 2, streamConsumer: 10 },
    throttle: isDev
      ? { default: { rate: 50, burst: 100 }, login: { rate: 5, burst: 10 }, credentials: { rate: 10, burst: 20 } }
      : { default: { rate: 500, burst: 1000 }, login: { rate: 20, burst: 40 }, credentials: { rate: 50, burst: 100 } },
    firstTokens: isDev ? 'http' : 'deploy',
    corsOrigins: [],
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
  const overrides: Record<string, Partial<StageConfig>> = {
    // Example of a production stage with two cloud mounts; edit to match your accounts.
    prod: {
      mounts: [...defaultMounts, { path: 'gcp-prod', type: 'cloud' }],
      reservedConcurrency: { eventStream: 100, schedulerApi: 50, jobs: 2, streamConsumer: 10 },
      corsOrigins: ['https://console.example.com'],
      alarmSubscriptions: exampleOnCall,
      customDomains: exampleDomains('prod-'),
      // Every audit object copied into a locked bucket of another account (a log archive account).
      audit: {
        retentionDays: 400,
        lockMode: 'compliance',
        scheduler: true,
        replication: {
          bucketArn: 'arn:aws:s3:::keyhaven-prod-audit-copy',
          account: '210987654321',
          kmsKeyArn: 'arn:aws:kms:us-west-2:210987654321:key/11111111-2222-3333-4444-555555555555',
        },
      },
      // A copy of each backup in a vault of another account (a backup account), which must allow this one to copy in.
      backup: {
        retentionDays: 35,
        lockChangeableForDays: 3,
        copyToVaultArn: 'arn:aws:backup:us-west-2:210987654321:backup-vault:keyhaven-prod-copy',
      },
    },
    // Example of a stage in two regions: deploy it first with `--region us-east-1` (the table, a global table with a
    // replica in eu-west-1, and the multi-Region sealing key), then put that deploy's URLs and `SealingKeyArn`
    // output here and deploy it with `--region eu-west-1` (reads served from the replica, writes forwarded).
    'example-multi-region': {
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
  const config = { ...base, ...overrides[stage], ...extra };
  validateMounts(config.mounts);
  return config;
}

/** A deploy outside the authoritative region needs a replica there and where to forward; throws naming what is missing. */
export function checkReplicaRegion(stage: string, config: StageConfig): void {
  const missing = (['authoritativeUrl', 'authoritativeSecretsUrl', 'authoritativeSealingKeyArn'] as const).filter(
    (field) => !config[field],
  );
  if (missing.length > 0) {
    throw new Error(
      `stage config: ${stage} in ${config.region} is not the authoritative region (${config.authoritativeRegion}); set ${missing.join(', ')}`,
    );
  }
  if (!config.replicaRegions.includes(config.region)) {
    throw new Error(
      `stage config: ${stage} has no replica in ${config.region}; add it to replicaRegions and deploy ${config.authoritativeRegion} first`,
    );
  }
}

/**
 * A stage outside dev must say where its alarms go, and each subscription must be well formed; throws naming what is
 * wrong. Dev stages may have none (their alarms then only change state on the topic nobody reads).
 */
export function checkAlarmSubscriptions(
  stage: string,
  config: Pick<StageConfig, 'alarmSubscriptions' | 'isDev'>,
): void {
  if (!config.isDev && config.alarmSubscriptions.length === 0) {
    throw new Error(
      `stage config: ${stage} is not a dev stage, so its alarms must reach a person: set alarmSubscriptions (email, https or sms) in stacks/stage-config.ts`,
    );
  }
  const forms = { email: /^[^@\s]+@[^@\s]+\.[^@\s]+$/, https: /^https:\/\/[^/\s]+/, sms: /^\+[1-9]\d{6,14}$/ } as const;
  for (const { protocol, endpoint } of config.alarmSubscriptions) {
    const form = forms[protocol];
    if (!form)
      throw new Error(
        `stage config: alarm subscription protocol "${protocol}" is not one of ${Object.keys(forms).join(', ')}`,
      );
    if (!form.test(endpoint))
      throw new Error(`stage config: alarm subscription "${endpoint}" is not a valid ${protocol} endpoint`);
  }
}

const certificateInUsEast1 = /^arn:aws[a-z-]*:acm:us-east-1:\d{12}:certificate\/[\w-]+$/;
const cloudFrontWebAcl = /^arn:aws[a-z-]*:wafv2:us-east-1:\d{12}:global\/webacl\/[\w-]+\/[\w-]+$/;
const hostName = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/;

/**
 * The edge of a stage: outside dev stages both distributions have their own name and certificate (the default
 * `*.cloudfront.net` certificate accepts TLS 1.0, which only a distribution with its own certificate can refuse), and a
 * stage deployed outside us-east-1 names the web ACL of its distributions (`edgeWebAclArn`: CloudFront takes only web
 * ACLs made in us-east-1). Throws naming what is missing or malformed.
 */
export function checkEdge(
  stage: string,
  config: Pick<StageConfig, 'isDev' | 'region' | 'customDomains' | 'edgeWebAclArn'>,
): void {
  for (const service of ['secrets', 'scheduler'] as const) {
    const domain = config.customDomains?.[service];
    if (!domain) {
      if (config.isDev) continue;
      throw new Error(
        `stage config: ${stage} is not a dev stage, so its ${service} distribution needs its own name and certificate (CloudFront's default *.cloudfront.net certificate accepts TLS 1.0): set customDomains.${service} { domainName, certificateArn } (an ACM certificate in us-east-1)`,
      );
    }
    if (!hostName.test(domain.domainName))
      throw new Error(`stage config: customDomains.${service}.domainName "${domain.domainName}" is not a host name`);
    if (!certificateInUsEast1.test(domain.certificateArn)) {
      throw new Error(
        `stage config: customDomains.${service}.certificateArn "${domain.certificateArn}" is not an ACM certificate ARN in us-east-1 (CloudFront takes no other)`,
      );
    }
  }
  if (
    config.customDomains?.secrets &&
    config.customDomains.secrets.domainName === config.customDomains.scheduler?.domainName
  ) {
    throw new Error('stage config: customDomains.secrets and customDomains.scheduler must be different names');
  }
  if (config.edgeWebAclArn !== undefined && !cloudFrontWebAcl.test(config.edgeWebAclArn)) {
    throw new Error(
      `stage config: edgeWebAclArn "${config.edgeWebAclArn}" is not a CloudFront web ACL ARN (arn:aws:wafv2:us-east-1:<account>:global/webacl/<name>/<id>)`,
    );
  }
  if (!config.isDev && config.region !== 'us-east-1' && !config.edgeWebAclArn) {
    throw new Error(
      `stage config: ${stage} is not a dev stage and is deployed in ${config.region}, where no CloudFront web ACL can be made: set edgeWebAclArn to a web ACL in us-east-1 (a us-east-1 deploy's output EdgeWebAclArn)`,
    );
  }
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
