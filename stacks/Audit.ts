import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import {
  Compression,
  DecompressionProcessor,
  CloudWatchLogProcessor,
  DeliveryStream,
  S3Bucket,
  StreamEncryption,
} from 'aws-cdk-lib/aws-kinesisfirehose';
import { PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import { FilterPattern, SubscriptionFilter } from 'aws-cdk-lib/aws-logs';
import { FirehoseDestination } from 'aws-cdk-lib/aws-logs-destinations';
import { BlockPublicAccess, Bucket, BucketEncryption, ObjectLockRetention } from 'aws-cdk-lib/aws-s3';
import { type StackContext, use } from 'sst/constructs';
import { SchedulerApi } from './SchedulerApi.ts';
import { SecretsApi } from './SecretsApi.ts';
import { alarmOn, alarmThresholds, period } from './alarms.ts';
import { accessLogBucket } from './access-logs.ts';
import { replicateAuditBucket } from './audit-replication.ts';
import { Storage } from './Storage.ts';
import { encryptLogGroups } from './logs-key.ts';

/**
 * Audit lines outlive the functions that write them: the secrets service's audit devices with `file_path=stdout`
 * and the scheduler's audit log write JSON lines to the functions' output; a subscription filter on each request
 * function's log group sends exactly those lines through Firehose into an encrypted, versioned S3 bucket whose
 * object lock keeps them for the stage's retention. Operational log lines do not match the filter.
 */
export function Audit({ stack }: StackContext) {
  const storage = use(Storage);
  const { config } = storage;
  const secrets = use(SecretsApi);
  const scheduler = use(SchedulerApi);
  const { retentionDays, lockMode, scheduler: schedulerAudit } = config.audit;

  const key = new Key(stack, 'AuditKey', {
    description: `keyhaven ${stack.stage}: encrypts the audit bucket`,
    enableKeyRotation: true,
    removalPolicy: RemovalPolicy.RETAIN,
  });
  const retention = Duration.days(retentionDays);
  const bucket = new Bucket(stack, 'AuditBucket', {
    encryption: BucketEncryption.KMS,
    encryptionKey: key,
    bucketKeyEnabled: true,
    blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
    enforceSSL: true,
    versioned: true,
    objectLockEnabled: true,
    objectLockDefaultRetention:
      lockMode === 'compliance' ? ObjectLockRetention.compliance(retention) : ObjectLockRetention.governance(retention),
    // An audit trail is never deleted with the stack, dev stages included.
    removalPolicy: RemovalPolicy.RETAIN,
    // Who reads (or tries to read) the audit trail is itself logged: S3 server access logs into a bucket of their own.
    serverAccessLogsBucket: accessLogBucket(stack, 'AuditAccessLogs', config, 's3'),
    serverAccessLogsPrefix: 'audit-bucket/',
  });
  // A copy in another account (optional): object lock and all (stacks/audit-replication.ts).
  if (config.audit.replication) replicateAuditBucket(stack, stack.stage, bucket, key, config.audit.replication);
  // Roles with exactly the actions each hop needs; CDK's own grants (`s3:GetObject*`, `s3:List*`) are not added.
  const deliveryRole = new Role(stack, 'AuditDeliveryRole', {
    assumedBy: new ServicePrincipal('firehose.amazonaws.com'),
  });
  deliveryRole.addToPolicy(
    new PolicyStatement({
      actions: [
        's3:AbortMultipartUpload',
        's3:GetBucketLocation',
        's3:GetObject',
        's3:ListBucket',
        's3:ListBucketMultipartUploads',
        's3:PutObject',
      ],
      resources: [bucket.bucketArn, bucket.arnForObjects('*')],
    }),
  );
  deliveryRole.addToPolicy(
    new PolicyStatement({ actions: ['kms:Decrypt', 'kms:GenerateDataKey'], resources: [key.keyArn] }),
  );
  const delivery = new DeliveryStream(stack, 'AuditDelivery', {
    encryption: StreamEncryption.awsOwnedKey(),
    destination: new S3Bucket(bucket, {
      role: deliveryRole.withoutPolicyUpdates(),
      encryptionKey: key,
      compression: Compression.GZIP,
      dataOutputPrefix: 'audit/!{timestamp:yyyy/MM/dd/HH}/',
      errorOutputPrefix: 'audit-errors/!{firehose:error-output-type}/!{timestamp:yyyy/MM/dd}/',
      bufferingInterval: Duration.seconds(60),
      // CloudWatch Logs delivers gzip'd envelopes: unzip them and keep only each line's message.
      processors: [new DecompressionProcessor(), new CloudWatchLogProcessor({ dataMessageExtraction: true })],
    }),
  });

  const logsRole = new Role(stack, 'AuditLogsRole', {
    assumedBy: new ServicePrincipal(`logs.${stack.region}.amazonaws.com`),
  });
  logsRole.addToPolicy(
    new PolicyStatement({
      actions: ['firehose:PutRecord', 'firehose:PutRecordBatch'],
      resources: [delivery.deliveryStreamArn],
    }),
  );
  const requestFunctions = [...secrets.functions.values(), scheduler.apiFunction];
  if (schedulerAudit) scheduler.apiFunction.addEnvironment('KEYHAVEN_SCHEDULER_AUDIT', 'stdout');
  requestFunctions.forEach((fn, index) => {
    new SubscriptionFilter(stack, `AuditLines${index}`, {
      logGroup: fn.logGroup,
      destination: new FirehoseDestination(delivery, { role: logsRole.withoutPolicyUpdates() }),
      filterPattern: auditLinePattern,
    });
  });
  alarmOn(
    stack,
    storage,
    'AuditDeliveryFreshness',
    delivery.metric('DeliveryToS3.DataFreshness', { period, statistic: 'Maximum' }),
    'keyhaven audit: audit lines wait in Firehose instead of reaching the bucket',
    { threshold: alarmThresholds.auditFreshnessSeconds },
  );
  // Firehose's delivery error log group, under the stage's logs key.
  encryptLogGroups(stack, storage.logsKey);
  stack.addOutputs({ AuditBucket: bucket.bucketName });
  return { bucket, delivery };
}

/** Vault's entries carry `"type":"request"` or `"response"`; Nomad's carry `"event_type":"audit"`. */
export const auditLinePattern = FilterPattern.any(
  FilterPattern.stringValue('$.type', '=', 'request'),
  FilterPattern.stringValue('$.type', '=', 'response'),
  FilterPattern.stringValue('$.event_type', '=', 'audit'),
);
