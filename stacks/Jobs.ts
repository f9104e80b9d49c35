import { Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import { type IEventSourceDlq, StartingPosition } from 'aws-cdk-lib/aws-lambda';
import { BlockPublicAccess, Bucket, BucketEncryption, EventType } from 'aws-cdk-lib/aws-s3';
import { SqsDestination } from 'aws-cdk-lib/aws-s3-notifications';
import { Queue } from 'aws-cdk-lib/aws-sqs';
import { Cron, type FunctionProps, type StackContext, use } from 'sst/constructs';
import { alarmOn, alarmThresholds, deadLetterAlarm, functionAlarms, period } from './alarms.ts';
import { forcedGcKey } from '../packages/core/src/scheduler/cluster/system/forced-gc.ts';
import { SCHEDULER_CONFIG_PK } from '../packages/core/src/scheduler/keys.ts';
import {
  capacityPartitionPrefix,
  evaluationPartitionPrefix,
} from '../packages/core/src/scheduler/worker/evaluation-trigger.ts';
import type { SecretsFamily } from '../packages/core/src/secrets/families.ts';
import { engineJobs } from './families.ts';
import { familyFunctionProps, keyhavenFunction } from './functions.ts';
import { familyOfType } from './stage-config.ts';
import { Storage } from './Storage.ts';

export { engineJobs } from './families.ts';

/**
 * Scheduled work: EventBridge runs the token sweep and each declared engine's job every minute (each run loops for
 * most of the minute), and the table's stream feeds the TTL backstop and the evaluation trigger. The handlers call
 * the functions `npm start` runs. The directory's job joins the directory's network, as its endpoints do.
 */
export function Jobs({ stack }: StackContext) {
  const storage = use(Storage);
  const { table, config } = storage;
  // Scheduled work writes (revocations, rotations, sweeps): it runs once, in the authoritative region, and its
  // writes replicate; a replica region has no jobs (and its table replica's stream is not consumed).
  if (config.region !== config.authoritativeRegion) return {};
  const job = (id: string, handler: string, description: string, extra: Partial<FunctionProps> = {}) => {
    const fn = keyhavenFunction(stack, `Job-${id}`, storage, {
      handler,
      description,
      timeout: '90 seconds',
      reservedConcurrentExecutions: config.reservedConcurrency.jobs,
      ...extra,
    });
    functionAlarms(stack, storage, `Job-${id}`, fn);
    // A tick that fails or cannot be delivered is dropped, not retried: the next minute's run does the same work, and a
    // retry hours later (the defaults: EventBridge 24 h, Lambda's async queue 6 h and 2 retries) would pile onto a
    // backend (LDAP, Google, Consul) that is already failing.
    fn.configureAsyncInvoke({ maxEventAge: scheduleTickMaxAge, retryAttempts: 0 });
    return new Cron(stack, `${id}Schedule`, {
      schedule: 'rate(1 minute)',
      job: { function: fn, cdk: { target: { maxEventAge: scheduleTickMaxAge, retryAttempts: 0 } } },
    });
  };

  const sweep = job(
    'sweep',
    'functions/jobs/sweep.handler',
    'keyhaven job: revoke expired tokens; kv leases and login mounts',
  );
  // Each engine with periodic work or leases that call out (`engineJobs`, from the backends), when the stage declares
  // a mount of it: its job in its own bundle (the engine named by KEYHAVEN_ENGINE), with its functions' network and
  // operator settings (the directory's network, the cloud's Google endpoints).
  const engines: Partial<Record<SecretsFamily, Cron>> = {};
  const declared = new Set(config.mounts.map((mount) => familyOfType[mount.type]));
  for (const [family, handler] of Object.entries(engineJobs) as Array<[SecretsFamily, string]>) {
    if (!declared.has(family as Exclude<SecretsFamily, 'system'>)) continue;
    const props = familyFunctionProps(stack, config, family, { KEYHAVEN_ENGINE: family });
    engines[family] = job(family, handler, `keyhaven job: ${family} leases and scheduled work`, props);
  }

  // A batch the TTL backstop gives up on is written whole (the records, not only pointers into the stream, which
  // forgets them after 24 h) to an S3 bucket kept for the stage's audit retention; each object it writes also puts a
  // message on the queue, which the dead-letter alarm watches.
  const streamDeadLetters = new Queue(stack, 'TableStreamDeadLetters', {
    retentionPeriod: Duration.days(14),
    enforceSSL: true,
  });
  const failedRecordsKey = new Key(stack, 'TableStreamFailuresKey', {
    description: `keyhaven ${stack.stage}: encrypts the stream records the TTL backstop gave up on`,
    enableKeyRotation: true,
    removalPolicy: RemovalPolicy.RETAIN,
  });
  const failedRecords = new Bucket(stack, 'TableStreamFailures', {
    encryption: BucketEncryption.KMS,
    encryptionKey: failedRecordsKey,
    bucketKeyEnabled: true,
    blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
    enforceSSL: true,
    versioned: true,
    lifecycleRules: [
      { expiration: Duration.days(config.audit.retentionDays), noncurrentVersionExpiration: Duration.days(1) },
    ],
    removalPolicy: RemovalPolicy.RETAIN,
  });
  failedRecords.addEventNotification(EventType.OBJECT_CREATED, new SqsDestination(streamDeadLetters));
  const streamConsumer = keyhavenFunction(stack, 'Job-table-stream', storage, {
    handler: 'functions/jobs/table-stream.handler',
    description: 'keyhaven job: TTL backstop on the table stream',
    timeout: '60 seconds',
    reservedConcurrentExecutions: config.reservedConcurrency.streamConsumer,
  });
  functionAlarms(stack, storage, 'Job-table-stream', streamConsumer);
  deadLetterAlarm(stack, storage, 'TableStreamDeadLetters', streamDeadLetters);
  alarmOn(
    stack,
    storage,
    'Job-table-streamIteratorAge',
    streamConsumer.metric('IteratorAge', { period, statistic: 'Maximum' }),
    'keyhaven Job-table-stream: the TTL backstop is behind on the table stream (records expire from it after 24 h)',
    { threshold: alarmThresholds.streamIteratorAgeMs },
  );
  table.addConsumers(stack, {
    ttlBackstop: {
      function: streamConsumer,
      // Only what TTL removed concerns the backstop; everything else is filtered out before it costs an invoke.
      filters: [
        { eventName: ['REMOVE'], userIdentity: { type: ['Service'], principalId: ['dynamodb.amazonaws.com'] } },
      ],
      cdk: {
        eventSource: {
          startingPosition: StartingPosition.TRIM_HORIZON,
          batchSize: 50,
          reportBatchItemFailures: true,
          bisectBatchOnError: true,
          retryAttempts: 10,
          // Well inside the stream's 24 h, so a failing record is copied out while the stream still holds it.
          maxRecordAge: streamMaxRecordAge,
          onFailure: new WholeBatchToS3(failedRecords, failedRecordsKey),
        },
      },
    },
  });

  // The evaluation queue (issue 41): an evaluation written `pending` runs within seconds of its write, not at the next
  // minute's sweep (which stays the backstop). Its own function, on the scheduler's state alone, given only those
  // records by the mapping's filter; a batch it gives up on goes to the same failures bucket (under its own mapping's
  // prefix), watched by the same dead-letter alarm. The evaluation stays pending on the queue, so the sweep still runs it.
  const evaluationTrigger = keyhavenFunction(stack, 'Job-evaluation-trigger', storage, {
    handler: 'functions/jobs/evaluation-trigger.handler',
    description: 'keyhaven job: run the evaluations written pending and the forced GC requested, from the table stream',
    timeout: '90 seconds',
    reservedConcurrentExecutions: config.reservedConcurrency.streamConsumer,
  });
  functionAlarms(stack, storage, 'Job-evaluation-trigger', evaluationTrigger);
  alarmOn(
    stack,
    storage,
    'Job-evaluation-triggerIteratorAge',
    evaluationTrigger.metric('IteratorAge', { period, statistic: 'Maximum' }),
    'keyhaven Job-evaluation-trigger: evaluations wait for the minute sweep (the trigger is behind on the table stream)',
    { threshold: alarmThresholds.streamIteratorAgeMs },
  );
  table.addConsumers(stack, {
    evaluationTrigger: {
      function: evaluationTrigger,
      filters: evaluationTriggerFilters,
      cdk: {
        eventSource: {
          startingPosition: StartingPosition.LATEST,
          batchSize: 50,
          maxBatchingWindow: Duration.millis(0),
          reportBatchItemFailures: true,
          bisectBatchOnError: true,
          retryAttempts: 3,
          maxRecordAge: streamMaxRecordAge,
          onFailure: new WholeBatchToS3(failedRecords, failedRecordsKey),
        },
      },
    },
  });
  return { sweep, engines, streamConsumer, streamDeadLetters, failedRecords, evaluationTrigger };
}

/**
 * The records the evaluation trigger is given (Lambda event filters, any of which passes a record): an evaluation item
 * (`sched#eval#NN`) inserted or changed with status `pending` (run now) or `blocked` (room made while it ran wakes it),
 * a record of room made (`sched#capacity#NN`, inserted: blocked evaluations may place there), the scheduler
 * configuration changed from a paused broker (what was due runs now), and the forced garbage collection requested
 * (`PUT /v1/system/gc`). The function drops a change from pending to pending, a configuration still paused and a claim
 * of the forced collection itself (a filter cannot compare the old image with the new).
 */
export const evaluationTriggerFilters = [
  {
    eventName: ['INSERT', 'MODIFY'],
    dynamodb: {
      NewImage: { pk: { S: [{ prefix: evaluationPartitionPrefix }] }, Status: { S: ['pending', 'blocked'] } },
    },
  },
  { eventName: ['INSERT'], dynamodb: { Keys: { pk: { S: [{ prefix: capacityPartitionPrefix }] } } } },
  {
    eventName: ['MODIFY'],
    dynamodb: { Keys: { pk: { S: [SCHEDULER_CONFIG_PK] } }, OldImage: { PauseEvalBroker: { BOOL: [true] } } },
  },
  {
    eventName: ['INSERT', 'MODIFY'],
    dynamodb: { Keys: { pk: { S: [forcedGcKey.pk] }, sk: { S: [forcedGcKey.sk] } } },
  },
];

/** How late a scheduled tick may still run: the minimum both EventBridge and Lambda accept, the schedule's period. */
export const scheduleTickMaxAge = Duration.seconds(60);

/** How long the TTL backstop retries a record before it is written to the failures bucket (the stream keeps 24 h). */
export const streamMaxRecordAge = Duration.hours(6);

/**
 * The event source mapping's on-failure destination as an S3 bucket: Lambda writes the whole invocation record
 * (the failed batch with its records) under `aws/lambda/<mapping id>/<shard>/…`. CDK's `S3OnFailureDestination`
 * grants the function read, write and delete on the bucket; the consumer gets exactly what the write needs
 * (`s3:PutObject`, `s3:ListBucket`, and the bucket key's data key under S3).
 */
class WholeBatchToS3 implements IEventSourceDlq {
  constructor(
    private readonly bucket: Bucket,
    private readonly key: Key,
  ) {}
  bind(_target: unknown, handler: Parameters<IEventSourceDlq['bind']>[1]) {
    handler.addToRolePolicy(
      new PolicyStatement({ actions: ['s3:PutObject'], resources: [this.bucket.arnForObjects('*')] }),
    );
    handler.addToRolePolicy(new PolicyStatement({ actions: ['s3:ListBucket'], resources: [this.bucket.bucketArn] }));
    handler.addToRolePolicy(
      new PolicyStatement({
        actions: ['kms:GenerateDataKey'],
        resources: [this.key.keyArn],
        conditions: { StringEquals: { 'kms:ViaService': `s3.${Stack.of(this.bucket).region}.amazonaws.com` } },
      }),
    );
    return { destination: this.bucket.bucketArn };
  }
}
