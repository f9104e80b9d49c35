import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { Item } from '@keyhaven/core/storage/store.ts';
import type { TableChange } from '@keyhaven/core/entry-points/table-changes.ts';
import type { DynamoDBRecord, AttributeValue as LambdaAttributeValue } from 'aws-lambda';

/** A Lambda stream record as the core's change (what both consumers of the table's stream are given). */
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
