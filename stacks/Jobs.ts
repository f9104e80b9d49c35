import { Duration } from 'aws-cdk-lib';
import { StartingPosition } from 'aws-cdk-lib/aws-lambda';
import { SqsDlq } from 'aws-cdk-lib/aws-lambda-event-sources';
import { Queue } from 'aws-cdk-lib/aws-sqs';
import { Cron, type StackContext, use } from 'sst/constructs';
import { keyhavenFunction } from './functions.ts';
import { Storage } from './Storage.ts';

/**
 * Scheduled work: EventBridge runs the rotation and the lease sweep every minute (each run loops for most of
 * the minute), and the table's stream feeds the TTL backstop. The handlers are the ones `npm start` runs.
 */
export function Jobs({ stack }: StackContext) {
  const storage = use(Storage);
  const { table } = storage;
  const job = (name: string, description: string) =>
    keyhavenFunction(stack, `Job-${name}`, storage, { handler: `functions/jobs/${name}.handler`, description, timeout: '90 seconds' });

  const sweep = new Cron(stack, 'SweepSchedule', {
    schedule: 'rate(1 minute)',
    job: job('sweep', 'keyhaven job: revoke expired leases and tokens'),
  });
  const rotate = new Cron(stack, 'RotateSchedule', {
    schedule: 'rate(1 minute)',
    job: job('rotate', 'keyhaven job: rotations and cloud clean-up that fell due'),
  });

  const streamDeadLetters = new Queue(stack, 'TableStreamDeadLetters', {
    retentionPeriod: Duration.days(14),
    enforceSSL: true,
  });
  const streamConsumer = keyhavenFunction(stack, 'Job-table-stream', storage, {
    handler: 'functions/jobs/table-stream.handler',
    description: 'keyhaven job: TTL backstop on the table stream',
    timeout: '60 seconds',
  });
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
  return { sweep, rotate, streamConsumer, streamDeadLetters };
}
