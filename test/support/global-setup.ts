import type { TestProject } from 'vitest/node';
import { startDynamoDbLocal } from '../../packages/local/src/dynamodb-local.ts';

/** One DynamoDB Local for the whole run (the JVM is heavy); each test file makes its own table. */
export default async function setup(project: TestProject) {
  const dynamo = await startDynamoDbLocal({});
  project.provide('dynamoEndpoint', dynamo.endpoint);
  return () => dynamo.stop();
}

declare module 'vitest' {
  export interface ProvidedContext {
    dynamoEndpoint: string;
  }
}
