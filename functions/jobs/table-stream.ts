import { allSecretsFamilies, backendsOf, coreFromEnvironment, onTableChange, toTableChange } from '@keyhaven/core';
import type { DynamoDBStreamEvent } from 'aws-lambda';

const core = coreFromEnvironment(backendsOf(allSecretsFamilies));

/** The table's stream: the TTL backstop for leases and tokens the sweep did not reach. */
export async function handler(event: DynamoDBStreamEvent): Promise<void> {
  await onTableChange(await core(), event.Records.map(toTableChange));
}
