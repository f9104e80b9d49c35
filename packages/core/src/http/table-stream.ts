import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import type { TableChange } from '../jobs.ts';

/** A stream record (Lambda's shape, as AWS and the local poller deliver it) as the core's neutral change. */
export function toTableChange(record: DynamoDBRecord): TableChange {
  const oldImage = record.dynamodb?.OldImage;
  return {
    eventName: record.eventName ?? 'MODIFY',
    ...(oldImage ? { oldImage: unmarshall(oldImage as Parameters<typeof unmarshall>[0]) as TableChange['oldImage'] } : {}),
    byTtl: record.userIdentity?.type === 'Service' && record.userIdentity?.principalId === 'dynamodb.amazonaws.com',
  };
}
