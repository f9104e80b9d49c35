import { Duration } from 'aws-cdk-lib';
import { StartingPosition } from 'aws-cdk-lib/aws-lambda';
import { SqsDlq } from 'aws-cdk-lib/aws-lambda-event-sources';
import { Queue } from 'aws-cdk-lib/aws-sqs';
import { Cron, type FunctionProps, type StackContext, use } from 'sst/constructs';
import { alarmOn, alarmThresholds, deadLetterAlarm, functionAlarms, period } from './alarms.ts';
import { directoryNetwork, keyhavenFunction } from './functions.ts';
import { familyOfType, googleEndpointsEnv } from './stage-config.ts';
import { Storage } from './Storage.ts';

/** The engines whose leases or scheduled work need their backend: each has a job in its own bundle. */
export const engineJobs = {
  ldap: 'functions/jobs/ldap.handler',
  cloud: 'functions/jobs/cloud.handler',
  mesh: 'functions/jobs/mesh.handler',
} as const;

/**
 * Scheduled work: EventBridge runs the token sweep and each declared engine's job every minute (each run loops for
 * most of the minute), and the table's stream feeds the TTL backstop. The handlers call the functions `npm start`
 * runs. The directory's job joins the directory's network, as its endpoints do.
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
    return new Cron(stack, `${id}Schedule`, { schedule: 'rate(1 minute)', job: fn });
  };

  const sweep = job('sweep', 'functions/jobs/sweep.handler', 'keyhaven job: revoke expired tokens; kv leases and login mounts');
  const engines: Partial<Record<keyof typeof engineJobs, Cron>> = {};
  const declared = new Set(config.mounts.map((mount) => familyOfType[mount.type]));
  for (const [family, handler] of Object.entries(engineJobs) as Array<[keyof typeof engineJobs, string]>) {
    if (!declared.has(family)) continue;
    const network = family === 'ldap' && config.directoryVpc ? directoryNetwork(stack, config.directoryVpc) : {};
    // The cloud job calls Google where the cloud endpoints' function does: the stage's operator configuration.
    const endpoints = family === 'cloud' ? { environment: googleEndpointsEnv(config) } : {};
    engines[family] = job(family, handler, `keyhaven job: ${family} leases and scheduled work`, { ...network, ...endpoints });
  }

  const streamDeadLetters = new Queue(stack, 'TableStreamDeadLetters', {
    retentionPeriod: Duration.days(14),
    enforceSSL: true,
  });
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
      filters: [{ eventName: ['REMOVE'], userIdentity: { type: ['Service'], principalId: ['dynamodb.amazonaws.com'] } }],
      cdk: {
        eventSource: {
          startingPosition: StartingPosition.TRIM_HORIZON,
          batchSize: 50,
          reportBatchItemFailures: true,
          bisectBatchOnError: true,
          retryAttempts: 10,
          maxRecordAge: Duration.days(1),
          onFailure: new SqsDlq(streamDeadLetters),
        },
      },
    },
  });
  return { sweep, engines, streamConsumer, streamDeadLetters };
}
