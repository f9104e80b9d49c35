import { coreBaseFromEnvironment } from '@keyhaven/core/entry-points/shared-core-from-environment.ts';
import { runTriggeredEvaluations } from '@keyhaven/core/scheduler/sweep.ts';
import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { toTableChange } from './stream-records.ts';

/** The scheduler's state alone: none of the secrets service is bundled. */
const core = coreBaseFromEnvironment();

/**
 * The evaluation queue on the table's stream (`scheduler/worker/evaluation-trigger.ts`): the event source mapping
 * (stacks/Jobs.ts) passes evaluations written `pending` (and blocked, the records of room made, the broker unpaused,
 * the forced garbage collection requested), and each is run by the worker within seconds of its write rather than
 * at the next minute's sweep, which stays the backstop. A batch's evaluations run in one pass (the
 * newest of each job); if one fails, the earliest record of it is reported (`ReportBatchItemFailures`): Lambda
 * delivers the shard again from there, and an evaluation that already ran is skipped (the worker reads it again
 * and runs it only while pending, under its job's lease). Exhausted retries go to the failures bucket.
 */
export async function handler(event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> {
  const instance = await core();
  const { firstFailed } = await runTriggeredEvaluations(instance, event.Records.map(toTableChange));
  return { batchItemFailures: firstFailed ? [{ itemIdentifier: firstFailed.sequenceNumber ?? '' }] : [] };
}
