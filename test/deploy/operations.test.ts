import { beforeAll, describe, expect, it } from 'vitest';
import { alarmThresholds } from '../../stacks/alarms.ts';
import { allSecretsFamilies } from '../../packages/core/src/secrets/families.ts';
import { engineJobs, scheduleTickMaxAge, streamMaxRecordAge } from '../../stacks/Jobs.ts';
import { callBudgetSeconds } from '../../stacks/SecretsApi.ts';
import { App as CdkApp, Stack as CdkStack } from 'aws-cdk-lib';
import { replicateAuditBucket } from '../../stacks/audit-replication.ts';
import { tableBackup } from '../../stacks/backup.ts';
import { checkAlarmSubscriptions } from '../../stacks/stage-checks.ts';
import { type StageConfig, stageConfig } from '../../stacks/stage-config.ts';
import { throttledSchedulerRoutes, throttledSecretsRoutes } from '../../stacks/throttling.ts';
import { type Synthesized, synthesize } from './synthesize.ts';
import {
  appFunctions,
  asList,
  engineJobEntry,
  entryOf,
  mappingOf,
  resourcesOf,
  roleStatementsOf,
  routeTargets,
  secretsEntry,
  single,
} from './template-queries.ts';

/**
 * Issue 25, production on AWS: alarms that reach a person (the stage's own SNS topic, subscribed from the stage
 * config, targeted by every alarm), the alarms a production stage lacked, and a dashboard. Synthesis of `prod`.
 */
// One synthesis per file (SST keeps process-wide state), shared by both describes below.
let s: Synthesized;
beforeAll(async () => {
  s = await synthesize('prod');
}, 180_000);

describe('operations of a production stage (synthesis of "prod")', () => {
  const allAlarms = () =>
    s.all.flatMap((template) => resourcesOf(template, 'AWS::CloudWatch::Alarm').map(([, alarm]) => alarm.Properties));

  describe('alarms reach a person', () => {
    it('makes an SNS topic for the stage, encrypted with its own key that CloudWatch may use, TLS only', () => {
      const topic = single(s.storage, 'AWS::SNS::Topic');
      expect(topic.Properties.TopicName).toBe('keyhaven-prod-alarms');
      const [keyId, key] =
        resourcesOf(s.storage, 'AWS::KMS::Key').find(([, k]) =>
          String(k.Properties.Description).includes('alarm topic'),
        ) ?? [];
      expect(topic.Properties.KmsMasterKeyId).toEqual({
        'Fn::GetAtt': [keyId, 'Arn'],
      });
      expect(key?.Properties.EnableKeyRotation).toBe(true);
      const cloudWatch = key?.Properties.KeyPolicy.Statement.find(
        (statement: { Sid?: string }) => statement.Sid === 'CloudWatchPublishesAlarms',
      );
      expect(cloudWatch).toMatchObject({
        Effect: 'Allow',
        Principal: { Service: 'cloudwatch.amazonaws.com' },
        Action: ['kms:Decrypt', 'kms:GenerateDataKey*'],
      });
      const policy = single(s.storage, 'AWS::SNS::TopicPolicy').Properties.PolicyDocument.Statement;
      expect(policy).toContainEqual(
        expect.objectContaining({
          Effect: 'Deny',
          Condition: { Bool: { 'aws:SecureTransport': 'false' } },
        }),
      );
    });

    it("subscribes the stage config's alarmSubscriptions to the topic", () => {
      const [topicId] = resourcesOf(s.storage, 'AWS::SNS::Topic')[0] ?? [];
      const subscriptions = resourcesOf(s.storage, 'AWS::SNS::Subscription').map(
        ([, subscription]) => subscription.Properties,
      );
      const [queueId] = resourcesOf(s.storage, 'AWS::SQS::Queue')[0] ?? [];
      expect(subscriptions).toEqual(
        stageConfig('prod').alarmSubscriptions.map(({ protocol, endpoint }) => ({
          Protocol: protocol,
          Endpoint: endpoint,
          TopicArn: { Ref: topicId },
          RedrivePolicy: { deadLetterTargetArn: { 'Fn::GetAtt': [queueId, 'Arn'] } },
        })),
      );
    });

    it('has every alarm of every stack notify that topic when it fires and when it is OK again', () => {
      const [topicId] = resourcesOf(s.storage, 'AWS::SNS::Topic')[0] ?? [];
      const alarms = allAlarms();
      expect(alarms.length).toBeGreaterThan(30);
      for (const alarm of alarms) {
        for (const actions of [alarm.AlarmActions, alarm.OKActions]) {
          expect(actions, alarm.AlarmName).toHaveLength(1);
          // The topic itself in the Storage stack, its exported ARN in the others.
          expect(JSON.stringify(actions[0]), alarm.AlarmName).toMatch(
            new RegExp(`"Ref":"${topicId}"|ExportsOutputRef${topicId}`),
          );
        }
        expect(alarm.AlarmName).toMatch(/^keyhaven-prod-/);
      }
      expect(new Set(alarms.map((alarm) => alarm.AlarmName)).size).toBe(alarms.length);
    });
  });

  describe('the alarms a production stage lacked', () => {
    const find = (namespace: string, metricName: string) =>
      allAlarms().filter((alarm) => alarm.Namespace === namespace && alarm.MetricName === metricName);

    it('alarms on the iterator age of both consumers of the table stream (the TTL backstop, the evaluation trigger)', () => {
      const consumers = ['functions/jobs/table-stream.handler', 'functions/jobs/evaluation-trigger.handler'].map(
        (handler) => appFunctions(s.jobs).find(([, fn]) => fn.Properties.Handler === handler)?.[0],
      );
      const alarms = find('AWS/Lambda', 'IteratorAge');
      expect(alarms.map((alarm) => alarm.Dimensions[0].Value.Ref).sort()).toEqual([...consumers].sort());
      for (const alarm of alarms)
        expect(alarm).toMatchObject({
          Statistic: 'Maximum',
          Threshold: alarmThresholds.streamIteratorAgeMs,
          ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        });
    });

    it('alarms on 5xx answers and p99 latency of both HTTP APIs', () => {
      const apiIds = [s.secrets, s.scheduler].map(
        (template) => resourcesOf(template, 'AWS::ApiGatewayV2::Api')[0]?.[0],
      );
      const errors = find('AWS/ApiGateway', '5xx');
      const latency = find('AWS/ApiGateway', 'Latency');
      expect(errors.map((alarm) => alarm.Dimensions)).toEqual(
        apiIds.map((id) => [{ Name: 'ApiId', Value: { Ref: id } }]),
      );
      for (const alarm of errors)
        expect(alarm).toMatchObject({
          Statistic: 'Sum',
          Period: 300,
          Threshold: alarmThresholds.api5xx,
        });
      expect(latency.map((alarm) => [alarm.Dimensions, alarm.Threshold])).toEqual([
        [[{ Name: 'ApiId', Value: { Ref: apiIds[0] } }], alarmThresholds.secretsLatencyP99Ms],
        [[{ Name: 'ApiId', Value: { Ref: apiIds[1] } }], alarmThresholds.schedulerLatencyP99Ms],
      ]);
      for (const alarm of latency)
        expect(alarm).toMatchObject({
          ExtendedStatistic: 'p99',
          EvaluationPeriods: alarmThresholds.latencyPeriods,
        });
    });

    it('alarms on throttled reads and writes of the table and its indexes', () => {
      const [tableId] = resourcesOf(s.storage, 'AWS::DynamoDB::Table')[0] ?? [];
      const reads = find('AWS/DynamoDB', 'ReadThrottleEvents');
      const writes = find('AWS/DynamoDB', 'WriteThrottleEvents');
      expect(reads.map((alarm) => alarm.Dimensions)).toEqual([[{ Name: 'TableName', Value: { Ref: tableId } }]]);
      expect(writes.length).toBeGreaterThanOrEqual(2);
      for (const alarm of [...reads, ...writes]) {
        expect(alarm).toMatchObject({ Statistic: 'Sum', Threshold: 1 });
        expect(alarm.Dimensions).toContainEqual({
          Name: 'TableName',
          Value: { Ref: tableId },
        });
      }
      expect(
        writes.some((alarm) =>
          alarm.Dimensions.some((dimension: { Name: string }) => dimension.Name === 'GlobalSecondaryIndexName'),
        ),
      ).toBe(true);
    });

    it("alarms on both distributions' share of 5xx (us-east-1, where CloudFront's metrics are)", () => {
      const alarms = find('AWS/CloudFront', '5xxErrorRate');
      expect(alarms).toHaveLength(2);
      for (const [index, template] of [s.secrets, s.scheduler].entries()) {
        const [distributionId] = resourcesOf(template, 'AWS::CloudFront::Distribution')[0] ?? [];
        expect(alarms[index]).toMatchObject({
          Statistic: 'Average',
          Threshold: alarmThresholds.cloudFront5xxPercent,
          EvaluationPeriods: alarmThresholds.cloudFrontPeriods,
          Dimensions: [
            { Name: 'DistributionId', Value: { Ref: distributionId } },
            { Name: 'Region', Value: 'Global' },
          ],
        });
      }
    });

    it('alarms when audit lines wait in Firehose instead of reaching the bucket', () => {
      const [deliveryId] = resourcesOf(s.audit, 'AWS::KinesisFirehose::DeliveryStream')[0] ?? [];
      const [alarm] = find('AWS/Firehose', 'DeliveryToS3.DataFreshness');
      expect(alarm).toMatchObject({
        Statistic: 'Maximum',
        Threshold: alarmThresholds.auditFreshnessSeconds,
        Dimensions: [{ Name: 'DeliveryStreamName', Value: { Ref: deliveryId } }],
      });
    });
  });

  it("shows every alarm of the stage on the stage's dashboard: their states, then one graph each", () => {
    const dashboard = single(s.operations, 'AWS::CloudWatch::Dashboard');
    expect(dashboard.Properties.DashboardName).toBe('keyhaven-prod');
    const body = JSON.stringify(dashboard.Properties.DashboardBody);
    const names = allAlarms().map((alarm) => alarm.AlarmName as string);
    for (const name of names) {
      expect(body, name).toContain(`:alarm:${name}`);
      expect(body.split(`:alarm:${name}\\"`).length - 1, name).toBe(2);
    }
    expect(body).toContain('\\"type\\":\\"alarm\\"');
  });
});

describe('alarm subscriptions in the stage config', () => {
  it('refuses a stage outside dev without any, naming the field', () => {
    expect(() => checkAlarmSubscriptions('staging', stageConfig('staging'))).toThrow(
      /staging is not a dev stage.*set alarmSubscriptions/,
    );
    expect(() => checkAlarmSubscriptions('dev-alice', stageConfig('dev-alice'))).not.toThrow();
  });

  it('refuses a malformed endpoint, naming it and its protocol', () => {
    const withSubscription = (protocol: 'email' | 'https' | 'sms', endpoint: string) =>
      stageConfig('staging', 'us-east-1', {
        alarmSubscriptions: [{ protocol, endpoint }],
      });
    expect(() => checkAlarmSubscriptions('staging', withSubscription('email', 'oncall'))).toThrow(
      /"oncall" is not a valid email endpoint/,
    );
    expect(() => checkAlarmSubscriptions('staging', withSubscription('https', 'http://hooks.example.com/x'))).toThrow(
      /not a valid https endpoint/,
    );
    expect(() => checkAlarmSubscriptions('staging', withSubscription('sms', '555-1234'))).toThrow(
      /not a valid sms endpoint/,
    );
    expect(() =>
      checkAlarmSubscriptions('staging', {
        isDev: false,
        alarmSubscriptions: [{ protocol: 'lambda' as 'sms', endpoint: 'x' }],
      }),
    ).toThrow(/protocol "lambda" is not one of email, https, sms/);
    expect(() => checkAlarmSubscriptions('staging', withSubscription('sms', '+15551234567'))).not.toThrow();
  });
});

/** Issue 25: a flood on the login routes must not stall the revocation jobs. */
describe('throttling and reserved concurrency (synthesis of "prod")', () => {
  const { throttle, reservedConcurrency, mounts } = stageConfig('prod');
  const limits = (t: { rate: number; burst: number }) => ({
    ThrottlingRateLimit: t.rate,
    ThrottlingBurstLimit: t.burst,
  });

  it("throttles every route of both HTTP API stages at the stage's default", () => {
    for (const template of [s.secrets, s.scheduler]) {
      expect(single(template, 'AWS::ApiGatewayV2::Stage').Properties.DefaultRouteSettings).toEqual(
        limits(throttle.default),
      );
    }
  });

  it('throttles each login and credential route of the secrets API on its own, and routes it to its mount family', () => {
    const stage = single(s.secrets, 'AWS::ApiGatewayV2::Stage');
    const expected = throttledSecretsRoutes(mounts);
    expect(Object.keys(expected)).toEqual(
      expect.arrayContaining([
        'ANY /v1/auth/jwt/login',
        'ANY /v1/auth/token/create',
        'ANY /v1/ldap/creds/{proxy+}',
        'ANY /v1/ldap/library/{proxy+}',
        'ANY /v1/mesh/creds/{proxy+}',
        'ANY /v1/gcp-prod/roleset/{name}/token',
      ]),
    );
    expect(stage.Properties.RouteSettings).toEqual(
      Object.fromEntries(Object.entries(expected).map(([route, kind]) => [route, limits(throttle[kind])])),
    );
    const targets = routeTargets(s.secrets);
    expect(targets['ANY /v1/auth/jwt/login']).toBe(secretsEntry('jwt'));
    expect(targets['ANY /v1/auth/token/create']).toBe(secretsEntry('system'));
    expect(targets['ANY /v1/ldap/creds/{proxy+}']).toBe(secretsEntry('ldap'));
    expect(targets['ANY /v1/gcp-prod/roleset/{name}/token']).toBe(secretsEntry('cloud'));
    // The stage is created after the routes its settings name (CloudFormation refuses settings for a missing route).
    const routeIds = resourcesOf(s.secrets, 'AWS::ApiGatewayV2::Route')
      .filter(([, route]) => route.Properties.RouteKey in expected)
      .map(([id]) => id);
    expect(routeIds).toHaveLength(Object.keys(expected).length);
    const stageResource = resourcesOf(s.secrets, 'AWS::ApiGatewayV2::Stage')[0]?.[1] as { DependsOn?: string[] };
    expect(stageResource.DependsOn).toEqual(expect.arrayContaining(routeIds));
  });

  it("throttles the scheduler's login routes at the login limits", () => {
    const stage = single(s.scheduler, 'AWS::ApiGatewayV2::Stage');
    expect(stage.Properties.RouteSettings).toEqual(
      Object.fromEntries(Object.keys(throttledSchedulerRoutes).map((route) => [route, limits(throttle.login)])),
    );
    expect(Object.keys(routeTargets(s.scheduler)).sort()).toEqual(
      ['ANY /v1/{proxy+}', ...Object.keys(throttledSchedulerRoutes)].sort(),
    );
  });

  it('reserves concurrency for the sweep, every engine job (revocation, rotation) and the stream consumer', () => {
    const reserved = Object.fromEntries(
      appFunctions(s.jobs).map(([, fn]) => [entryOf(fn), fn.Properties.ReservedConcurrentExecutions]),
    );
    expect(reserved).toEqual({
      'functions/jobs/sweep.handler': reservedConcurrency.jobs,
      [engineJobEntry('ldap')]: reservedConcurrency.jobs,
      [engineJobEntry('cloud')]: reservedConcurrency.jobs,
      [engineJobEntry('mesh')]: reservedConcurrency.jobs,
      'functions/jobs/table-stream.handler': reservedConcurrency.streamConsumer,
      'functions/jobs/evaluation-trigger.handler': reservedConcurrency.streamConsumer,
    });
  });
});

/** Issue 25: who called what is recorded at every edge of a production stage. */
describe('access logs and the edge (synthesis of "prod")', () => {
  const config = stageConfig('prod');
  const bucketNamed = (template: Synthesized['audit'], prefix: string) => {
    const found = resourcesOf(template, 'AWS::S3::Bucket').filter(([id]) => id.startsWith(prefix));
    expect(found, prefix).toHaveLength(1);
    return found[0] as ReturnType<typeof resourcesOf>[number];
  };
  const expectLogBucket = (template: Synthesized['audit'], id: string) => {
    const [, bucket] = bucketNamed(template, id);
    expect(bucket.Properties.BucketEncryption).toEqual({
      ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
    });
    expect(bucket.Properties.PublicAccessBlockConfiguration).toEqual({
      BlockPublicAcls: true,
      BlockPublicPolicy: true,
      IgnorePublicAcls: true,
      RestrictPublicBuckets: true,
    });
    expect(bucket.Properties.LifecycleConfiguration.Rules).toEqual([
      { ExpirationInDays: config.audit.retentionDays, Status: 'Enabled' },
    ]);
    expect(bucket.DeletionPolicy).toBe('Retain');
    const policy = resourcesOf(template, 'AWS::S3::BucketPolicy').find(([, p]) =>
      JSON.stringify(p.Properties.Bucket).includes(id),
    )?.[1];
    expect(policy?.Properties.PolicyDocument.Statement).toContainEqual(
      expect.objectContaining({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
    );
    return bucket;
  };

  it("logs every request of both HTTP API stages (status, caller's IP, latency; no header) for the stage's log retention", () => {
    for (const template of [s.secrets, s.scheduler]) {
      const settings = single(template, 'AWS::ApiGatewayV2::Stage').Properties.AccessLogSettings;
      const format = JSON.parse(settings.Format);
      expect(Object.keys(format)).toEqual(
        expect.arrayContaining(['requestTime', 'httpMethod', 'path', 'status', 'ip', 'integrationError']),
      );
      expect(settings.Format).not.toMatch(/header|authorizer|querystring/i);
      const [logGroupId, logGroup] =
        resourcesOf(template, 'AWS::Logs::LogGroup').find(([id]) =>
          JSON.stringify(settings.DestinationArn).includes(id),
        ) ?? [];
      expect(logGroupId).toBeDefined();
      expect(logGroup?.Properties.RetentionInDays).toBe(90);
    }
  });

  it('logs every access to the audit bucket (S3 server access logs) into a bucket of their own', () => {
    const [logsId] = bucketNamed(s.audit, 'AuditAccessLogs');
    const [, audit] = bucketNamed(s.audit, 'AuditBucket');
    expect(audit.Properties.LoggingConfiguration).toEqual({
      DestinationBucketName: { Ref: logsId },
      LogFilePrefix: 'audit-bucket/',
    });
    const logs = expectLogBucket(s.audit, 'AuditAccessLogs');
    // S3's log delivery writes through the LogDeliveryWrite canned ACL, which needs object-writer ownership.
    expect(logs.Properties.OwnershipControls).toEqual({ Rules: [{ ObjectOwnership: 'ObjectWriter' }] });
    expect(logs.Properties.AccessControl).toBe('LogDeliveryWrite');
  });

  it("logs the scheduler distribution's requests (standard logs, a bucket that takes CloudFront's ACL writes)", () => {
    const [logsId] = bucketNamed(s.scheduler, 'SchedulerAccessLogs');
    const config = single(s.scheduler, 'AWS::CloudFront::Distribution').Properties.DistributionConfig;
    expect(config.Logging).toEqual({
      Bucket: { 'Fn::GetAtt': [logsId, 'RegionalDomainName'] },
      Prefix: 'scheduler-distribution/',
    });
    const logs = expectLogBucket(s.scheduler, 'SchedulerAccessLogs');
    expect(logs.Properties.OwnershipControls).toEqual({ Rules: [{ ObjectOwnership: 'BucketOwnerPreferred' }] });
  });

  it('adds HSTS (two years, subdomains), nosniff, no framing and no referrer to every answer of the distribution', () => {
    const [policyId, policy] = resourcesOf(s.scheduler, 'AWS::CloudFront::ResponseHeadersPolicy')[0] ?? [];
    expect(policy?.Properties.ResponseHeadersPolicyConfig.SecurityHeadersConfig).toEqual({
      StrictTransportSecurity: { AccessControlMaxAgeSec: 63_072_000, IncludeSubdomains: true, Override: true },
      ContentTypeOptions: { Override: true },
      FrameOptions: { FrameOption: 'DENY', Override: true },
      ReferrerPolicy: { ReferrerPolicy: 'no-referrer', Override: true },
    });
    const config = single(s.scheduler, 'AWS::CloudFront::Distribution').Properties.DistributionConfig;
    for (const behavior of [config.DefaultCacheBehavior, ...config.CacheBehaviors])
      expect(behavior.ResponseHeadersPolicyId).toEqual({ Ref: policyId });
  });
});

/** Issue 25: failures that can be replayed, ticks that are not retried late, a call budget inside the API's limit. */
describe('failures and time budgets (synthesis of "prod")', () => {
  it('writes a batch the TTL backstop gives up on whole to an encrypted bucket kept for the audit retention, well before the stream forgets it', () => {
    const mapping = mappingOf(s.jobs, 'functions/jobs/table-stream.handler').Properties;
    const [bucketId, bucket] =
      resourcesOf(s.jobs, 'AWS::S3::Bucket').find(([id]) => id.startsWith('TableStreamFailures')) ?? [];
    expect(mapping.DestinationConfig).toEqual({ OnFailure: { Destination: { 'Fn::GetAtt': [bucketId, 'Arn'] } } });
    expect(mapping.MaximumRecordAgeInSeconds).toBe(streamMaxRecordAge.toSeconds());
    expect(mapping.MaximumRecordAgeInSeconds).toBeLessThan(24 * 3600);
    expect(mapping).toMatchObject({
      BisectBatchOnFunctionError: true,
      MaximumRetryAttempts: 10,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
    expect(bucket?.Properties.LifecycleConfiguration.Rules[0].ExpirationInDays).toBe(
      stageConfig('prod').audit.retentionDays,
    );
    expect(
      bucket?.Properties.BucketEncryption.ServerSideEncryptionConfiguration[0].ServerSideEncryptionByDefault
        .SSEAlgorithm,
    ).toBe('aws:kms');
    expect(bucket?.DeletionPolicy).toBe('Retain');
    // Each object written puts a message on the queue the dead-letter alarm watches.
    const [queueId] = resourcesOf(s.jobs, 'AWS::SQS::Queue')[0] ?? [];
    const notifications = single(s.jobs, 'Custom::S3BucketNotifications').Properties;
    expect(notifications.BucketName).toEqual({ Ref: bucketId });
    expect(notifications.NotificationConfiguration.QueueConfigurations).toEqual([
      { Events: ['s3:ObjectCreated:*'], QueueArn: { 'Fn::GetAtt': [queueId, 'Arn'] } },
    ]);
  });

  it('lets the stream consumers only write failed batches to that bucket (no read, no delete)', () => {
    for (const handler of ['functions/jobs/table-stream.handler', 'functions/jobs/evaluation-trigger.handler']) {
      const [consumerId] = appFunctions(s.jobs).find(([, fn]) => fn.Properties.Handler === handler) ?? [];
      const s3Statements = roleStatementsOf(s.jobs, consumerId as string).filter((statement) =>
        asList(statement.Action).some((action: string) => action.startsWith('s3:')),
      );
      expect(s3Statements.flatMap((statement) => asList(statement.Action)).sort(), handler).toEqual([
        's3:ListBucket',
        's3:PutObject',
      ]);
    }
  });

  it('drops a scheduled tick that fails or cannot be delivered instead of retrying it hours later, on EventBridge and on Lambda', () => {
    const jobHandlers = ['functions/jobs/sweep.handler', ...Object.keys(engineJobs).map(engineJobEntry)];
    const functions = Object.fromEntries(appFunctions(s.jobs).map(([id, fn]) => [id, entryOf(fn)]));
    const rules = resourcesOf(s.jobs, 'AWS::Events::Rule');
    expect(rules.map(([, rule]) => functions[rule.Properties.Targets[0].Arn['Fn::GetAtt'][0]]).sort()).toEqual(
      [...jobHandlers].sort(),
    );
    for (const [, rule] of rules) {
      expect(rule.Properties.Targets[0].RetryPolicy).toEqual({
        MaximumEventAgeInSeconds: scheduleTickMaxAge.toSeconds(),
        MaximumRetryAttempts: 0,
      });
    }
    const configs = resourcesOf(s.jobs, 'AWS::Lambda::EventInvokeConfig').map(([, config]) => config.Properties);
    expect(configs.map((config) => functions[config.FunctionName.Ref]).sort()).toEqual([...jobHandlers].sort());
    for (const config of configs)
      expect(config).toMatchObject({ MaximumEventAgeInSeconds: 60, MaximumRetryAttempts: 0, Qualifier: '$LATEST' });
  });

  it('keeps the system function, waiting on an engine function, inside the 30 s API limit', () => {
    const timeouts = Object.fromEntries(appFunctions(s.secrets).map(([, fn]) => [entryOf(fn), fn.Properties.Timeout]));
    expect(timeouts[secretsEntry('system')]).toBe(callBudgetSeconds.system);
    expect(callBudgetSeconds.system).toBeLessThan(callBudgetSeconds.apiLimit);
    for (const family of allSecretsFamilies.filter((family) => family !== 'system')) {
      expect(timeouts[secretsEntry(family)], family).toBe(callBudgetSeconds.engine);
    }
    // An engine that runs out its whole timeout still leaves the system function time to answer.
    expect(callBudgetSeconds.system - callBudgetSeconds.engine).toBeGreaterThanOrEqual(5);
  });
});

/** Issue 25: backups that outlive a bad day (a deleted table, a compromised account admin). */
describe('AWS Backup of the table (synthesis of "prod")', () => {
  it('backs the table up daily into a vault under its own key and Vault Lock, with a copy in another account', () => {
    const backup = stageConfig('prod').backup;
    const [tableId] = resourcesOf(s.storage, 'AWS::DynamoDB::Table')[0] ?? [];
    const [vaultId, vault] = resourcesOf(s.storage, 'AWS::Backup::BackupVault')[0] ?? [];
    const [keyId] = resourcesOf(s.storage, 'AWS::KMS::Key').find(([id]) => id.startsWith('BackupVaultKey')) ?? [];
    expect(vault?.Properties).toMatchObject({
      BackupVaultName: 'keyhaven-prod',
      EncryptionKeyArn: { 'Fn::GetAtt': [keyId, 'Arn'] },
      LockConfiguration: { MinRetentionDays: backup?.retentionDays, ChangeableForDays: backup?.lockChangeableForDays },
    });
    expect(vault?.DeletionPolicy).toBe('Retain');
    const rules = single(s.storage, 'AWS::Backup::BackupPlan').Properties.BackupPlan.BackupPlanRule;
    expect(rules).toEqual([
      expect.objectContaining({
        RuleName: 'daily',
        ScheduleExpression: 'cron(0 3 * * ? *)',
        TargetBackupVault: { 'Fn::GetAtt': [vaultId, 'BackupVaultName'] },
        Lifecycle: { DeleteAfterDays: backup?.retentionDays },
        CopyActions: [
          { DestinationBackupVaultArn: backup?.copyToVaultArn, Lifecycle: { DeleteAfterDays: backup?.retentionDays } },
        ],
      }),
    ]);
    const selection = single(s.storage, 'AWS::Backup::BackupSelection').Properties.BackupSelection;
    expect(JSON.stringify(selection.Resources)).toContain(tableId);
  });

  it('has no backup on dev stages and refuses a lock that could never be changed or a malformed copy vault', () => {
    expect(stageConfig('dev').backup).toBeUndefined();
    expect(stageConfig('staging').backup).toEqual({ retentionDays: 35, lockChangeableForDays: 3 });
    const backupOf = (backup: NonNullable<StageConfig['backup']>) => () =>
      tableBackup(
        new CdkStack(new CdkApp(), 'Probe'),
        stageConfig('staging', 'us-east-1', { backup }),
        undefined as never,
      );
    expect(backupOf({ retentionDays: 35, lockChangeableForDays: 1 })).toThrow(
      /lockChangeableForDays must be at least 3/,
    );
    expect(backupOf({ retentionDays: 0, lockChangeableForDays: 3 })).toThrow(/retentionDays must be at least 1/);
    expect(backupOf({ retentionDays: 35, lockChangeableForDays: 3, copyToVaultArn: 'keyhaven-copy' })).toThrow(
      /"keyhaven-copy" is not a backup vault ARN/,
    );
  });
});

/** Issue 25: a copy of the audit trail in another account, log groups under a customer key, undeliverable alarms kept. */
describe('replication, log encryption and alarm delivery failures (synthesis of "prod")', () => {
  it("replicates every audit object, with its object lock retention, into the stage config's bucket of another account", () => {
    const replication = stageConfig('prod').audit.replication;
    const [, bucket] = resourcesOf(s.audit, 'AWS::S3::Bucket').find(([id]) => id.startsWith('AuditBucket')) ?? [];
    const [roleId, role] =
      resourcesOf(s.audit, 'AWS::IAM::Role').find(([id]) => id.startsWith('AuditReplicationRole')) ?? [];
    expect(bucket?.Properties.ObjectLockEnabled).toBe(true);
    expect(bucket?.Properties.ReplicationConfiguration).toEqual({
      Role: { 'Fn::GetAtt': [roleId, 'Arn'] },
      Rules: [
        {
          Id: 'audit-copy',
          Status: 'Enabled',
          Priority: 0,
          Filter: { Prefix: '' },
          DeleteMarkerReplication: { Status: 'Disabled' },
          SourceSelectionCriteria: { SseKmsEncryptedObjects: { Status: 'Enabled' } },
          Destination: {
            Bucket: replication?.bucketArn,
            Account: replication?.account,
            AccessControlTranslation: { Owner: 'Destination' },
            EncryptionConfiguration: { ReplicaKmsKeyID: replication?.kmsKeyArn },
          },
        },
      ],
    });
    expect(role?.Properties).toMatchObject({
      RoleName: 'keyhaven-prod-audit-replication',
      AssumeRolePolicyDocument: { Statement: [{ Principal: { Service: 's3.amazonaws.com' } }] },
    });
    const actions = resourcesOf(s.audit, 'AWS::IAM::Policy')
      .filter(([, policy]) => (policy.Properties.Roles ?? []).some((ref: { Ref?: string }) => ref.Ref === roleId))
      .flatMap(([, policy]) =>
        policy.Properties.PolicyDocument.Statement.flatMap((statement: { Action: string | string[] }) =>
          asList(statement.Action),
        ),
      );
    // Object lock: the retention and legal hold of each version are read and replicated with it.
    expect(actions).toEqual(
      expect.arrayContaining([
        's3:GetObjectRetention',
        's3:GetObjectLegalHold',
        's3:ReplicateObject',
        'kms:Decrypt',
        'kms:Encrypt',
      ]),
    );
    expect(actions).not.toContain('s3:ReplicateDelete');
  });

  it('refuses a malformed replication destination, naming the field', () => {
    const stack = new CdkStack(new CdkApp(), 'ReplicationCheck');
    for (const [field, replication] of [
      [
        'bucketArn',
        {
          bucketArn: 'keyhaven-copy',
          account: '210987654321',
          kmsKeyArn: 'arn:aws:kms:us-west-2:210987654321:key/abc',
        },
      ],
      [
        'account',
        {
          bucketArn: 'arn:aws:s3:::keyhaven-copy',
          account: 'backup',
          kmsKeyArn: 'arn:aws:kms:us-west-2:210987654321:key/abc',
        },
      ],
      ['kmsKeyArn', { bucketArn: 'arn:aws:s3:::keyhaven-copy', account: '210987654321', kmsKeyArn: 'alias/copy' }],
    ] as const) {
      expect(() => replicateAuditBucket(stack, 'prod', undefined as never, undefined as never, replication)).toThrow(
        new RegExp(`audit\\.replication\\.${field}`),
      );
    }
  });

  it("puts every log group of the stage (API access logs, WAF's, Firehose's errors) under the stage's logs key, which CloudWatch Logs may use", () => {
    const logGroups = s.all.flatMap((template) => resourcesOf(template, 'AWS::Logs::LogGroup'));
    expect(logGroups.length).toBeGreaterThanOrEqual(4);
    const [keyId, key] = resourcesOf(s.storage, 'AWS::KMS::Key').find(([id]) => id.startsWith('LogsKey')) ?? [];
    for (const [id, logGroup] of logGroups) {
      expect(JSON.stringify(logGroup.Properties.KmsKeyId), id).toMatch(
        new RegExp(`^\\{"Fn::ImportValue":"prod-keyhaven-Storage:ExportsOutputFnGetAtt${keyId}Arn[0-9A-F]+"\\}$`),
      );
    }
    expect(key?.Properties.EnableKeyRotation).toBe(true);
    expect(key?.Properties.KeyPolicy.Statement).toContainEqual({
      Sid: 'CloudWatchLogsEncryptsLogGroups',
      Effect: 'Allow',
      Principal: { Service: 'logs.us-east-1.amazonaws.com' },
      Action: ['kms:Encrypt*', 'kms:Decrypt*', 'kms:ReEncrypt*', 'kms:GenerateDataKey*', 'kms:Describe*'],
      Resource: '*',
      Condition: {
        ArnLike: {
          'kms:EncryptionContext:aws:logs:arn': {
            'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':logs:us-east-1:123456789012:log-group:*']],
          },
        },
      },
    });
  });

  it('sends a notification SNS cannot deliver to a dead-letter queue (SSE, TLS only, 14 days) that SNS may write and an alarm watches', () => {
    const [queueId, queue] = resourcesOf(s.storage, 'AWS::SQS::Queue')[0] ?? [];
    expect(queue?.Properties).toMatchObject({
      QueueName: 'keyhaven-prod-alarm-delivery-failures',
      SqsManagedSseEnabled: true,
      MessageRetentionPeriod: 1_209_600,
    });
    const policy = single(s.storage, 'AWS::SQS::QueuePolicy').Properties.PolicyDocument.Statement;
    expect(policy).toContainEqual(
      expect.objectContaining({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
    );
    expect(policy).toContainEqual(
      expect.objectContaining({
        Effect: 'Allow',
        Action: 'sqs:SendMessage',
        Principal: { Service: 'sns.amazonaws.com' },
        Resource: { 'Fn::GetAtt': [queueId, 'Arn'] },
      }),
    );
    const alarm = resourcesOf(s.storage, 'AWS::CloudWatch::Alarm').find(([id]) =>
      id.startsWith('AlarmDeliveryFailures'),
    )?.[1];
    expect(alarm?.Properties).toMatchObject({
      AlarmName: 'keyhaven-prod-AlarmDeliveryFailures',
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [queueId, 'QueueName'] } }],
      Threshold: 1,
    });
  });
});
