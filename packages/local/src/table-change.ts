import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { TableChange } from '@keyhaven/core';
import type { AttributeValue, DynamoDBRecord } from 'aws-lambda';

/** A stream record (Lambda's shape, as the poller and AWS deliver it) as the core's neutral change. */
export function toTableChange(record: DynamoDBRecord): TableChange {
  const oldImage = record.dynamodb?.OldImage;
  return {
    eventName: record.eventName ?? 'MODIFY',
    ...(oldImage ? { oldImage: unmarshall(oldImage as Record<string, never>) as TableChange['oldImage'] } : {}),
    byTtl: record.userIdentity?.type === 'Service' && record.userIdentity?.principalId === 'dynamodb.amazonaws.com',
  };
}

export type { AttributeValue };
