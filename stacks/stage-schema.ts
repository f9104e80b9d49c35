import type { googleEndpointVariables } from '../packages/core/src/secrets/mounts/operator-settings.ts';

/*
 * What a stage's configuration holds (`StageConfig`). The stages themselves, their defaults and the mounts' derivation
 * are in stage-config.ts; the checks the stacks make of a stage's settings in stage-checks.ts.
 */

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

/** The table's capacity mode: provisioned with autoscaling bounds (units) and target, or on demand. */
export type TableCapacity =
  | {
      mode: 'provisioned';
      targetPercent: number;
      read: { min: number; max: number };
      write: { min: number; max: number };
    }
  | { mode: 'on-demand' };

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
     * The client protocol's function (`Scheduler-client`, the agents' heartbeats on its Function URL). A beat takes
     * ~10 ms, so 10,000 nodes (37 beats a second) keep about one instance busy: the cap bounds what a flood of
     * requests to its public URL can cost, and what it can take from the account.
     */
    schedulerClient: number;
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
  /**
   * The table's capacity (docs/performance.md, "A cluster's bill"). `provisioned` (default): the table and its index
   * scale between `min` and `max` units each at `targetPercent` utilisation (Application Auto Scaling); heartbeats
   * are a smooth load, and at 100 nodes this costs a third of on demand. Autoscaling follows load within minutes:
   * before thousands of nodes register at once (a boot writes ~19 units), raise `write.min` for the storm, or choose
   * `on-demand`, which serves up to twice its previous peak at once (a new table: 4,000 write units a second).
   */
  tableCapacity: TableCapacity;
  /** Dev stages can be torn down: no deletion protection, the table and key are destroyed with the stack. */
  isDev: boolean;
}
