import { coreFromEnvironment } from '@keyhaven/core/entry-points/secrets-core-from-environment.ts';
import { onTableChange } from '@keyhaven/core/entry-points/table-changes.ts';
import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { toTableChange } from './stream-records.ts';

/**
 * No backends: a lease TTL removed is restored and its revocation handed to its engine's job;
 * tokens are revoked here (their leases likewise handed off).
 */
const core = coreFromEnvironment([]);

/**
 * The table's stream: the TTL backstop for leases and tokens the sweep did not reach. Records are handled in
 * order; the first that fails is reported (with `ReportBatchItemFailures`, Lambda retries the shard from it),
 * so later records are neither skipped nor handled twice out of order. Exhausted retries land in the DLQ.
 */
export async function handler(event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> {
  const instance = await core();
  for (const record of event.Records) {
    try {
      await onTableChange(instance, [toTableChange(record)]);
    } catch (error) {
      instance.log.error('stream record failed; Lambda retries the batch from it', {
        sequenceNumber: record.dynamodb?.SequenceNumber,
        error: String(error),
      });
      return { batchItemFailures: [{ itemIdentifier: record.dynamodb?.SequenceNumber ?? '' }] };
    }
  }
  return { batchItemFailures: [] };
}
