import { unmarshall } from '@aws-sdk/util-dynamodb';
import { coreFromEnvironment } from '@keyhaven/core/entry-points/secrets-core-from-environment.ts';
import { onTableChange, type TableChange } from '@keyhaven/core/entry-points/table-changes.ts';
import type { Item } from '@keyhaven/core/storage/store.ts';
import type {
  DynamoDBBatchResponse,
  DynamoDBRecord,
  DynamoDBStreamEvent,
  AttributeValue as LambdaAttributeValue,
} from 'aws-lambda';

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

/** A Lambda stream record as the core's change. */
export function toTableChange(record: DynamoDBRecord): TableChange {
  const data = record.dynamodb;
  return {
    eventName: record.eventName ?? 'MODIFY',
    ...(data?.Keys ? { keys: image(data.Keys) } : {}),
    ...(data?.OldImage ? { oldImage: image(data.OldImage) as Item } : {}),
    ...(data?.NewImage ? { newImage: image(data.NewImage) as Item } : {}),
    byTtl: record.userIdentity?.type === 'Service' && record.userIdentity?.principalId === 'dynamodb.amazonaws.com',
    ...(data?.SequenceNumber ? { sequenceNumber: data.SequenceNumber } : {}),
  };
}

/** A Lambda event's image as plain values (Lambda gives binary values as base64 strings, and they stay strings). */
const image = (attributes: Record<string, LambdaAttributeValue>) =>
  unmarshall(attributes as Parameters<typeof unmarshall>[0]);
