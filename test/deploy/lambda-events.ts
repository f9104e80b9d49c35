import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Writable } from 'node:stream';
import { type AttributeValue, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type {
  APIGatewayProxyEventV2,
  APIGatewayProxyResultV2,
  CloudFormationCustomResourceEvent,
  Context,
  DynamoDBRecord,
  EventBridgeEvent,
} from 'aws-lambda';
import { inject } from 'vitest';
import { localClientConfig } from '../../packages/local/src/dynamodb-local.ts';
import { ensureTable } from '../../packages/local/src/table.ts';

/**
 * A fresh table in the run's DynamoDB Local and the environment a deployed function reads, set before any
 * handler module is imported.
 */
export async function deployedEnvironment(): Promise<{
  client: DynamoDBClient;
  tableName: string;
  keyFile: string;
  endpoint: string;
}> {
  const endpoint = inject('dynamoEndpoint');
  const client = new DynamoDBClient(localClientConfig(endpoint));
  const tableName = `deploy-${randomUUID()}`;
  await ensureTable(client, tableName);
  const keyFile = path.join(mkdtempSync(path.join(tmpdir(), 'keyhaven-deploy-')), 'keyring.key');
  process.env.KEYHAVEN_DYNAMODB_ENDPOINT = endpoint;
  process.env.KEYHAVEN_TABLE = tableName;
  process.env.KEYHAVEN_KEY_FILE = keyFile;
  delete process.env.KEYHAVEN_KMS_KEY_ID;
  return { client, tableName, keyFile, endpoint };
}

/** An API Gateway HTTP API (payload 2.0) event, as API Gateway builds it for `ANY /v1/...` routes. */
export function httpApiEvent(
  method: string,
  url: string,
  options: { headers?: Record<string, string>; body?: unknown; routeKey?: string } = {},
): APIGatewayProxyEventV2 {
  const [rawPath = '/', rawQueryString = ''] = url.split('?');
  const query = new URLSearchParams(rawQueryString);
  const body = options.body === undefined ? undefined : JSON.stringify(options.body);
  const headers = {
    host: 'abc123.execute-api.us-east-1.amazonaws.com',
    'user-agent': 'vitest',
    'x-forwarded-for': '198.51.100.7',
    'x-forwarded-proto': 'https',
    ...(body ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) } : {}),
    ...options.headers,
  };
  return {
    version: '2.0',
    routeKey: options.routeKey ?? `ANY ${rawPath}`,
    rawPath,
    rawQueryString,
    headers,
    ...(rawQueryString ? { queryStringParameters: Object.fromEntries(query) } : {}),
    requestContext: {
      accountId: '123456789012',
      apiId: 'abc123',
      domainName: headers.host,
      domainPrefix: 'abc123',
      http: { method, path: rawPath, protocol: 'HTTP/1.1', sourceIp: '198.51.100.7', userAgent: 'vitest' },
      requestId: randomUUID(),
      routeKey: options.routeKey ?? `ANY ${rawPath}`,
      stage: '$default',
      time: new Date().toUTCString(),
      timeEpoch: Date.now(),
    },
    ...(body ? { body } : {}),
    isBase64Encoded: false,
  };
}

export const lambdaContext = {
  functionName: 'test',
  awsRequestId: randomUUID(),
  getRemainingTimeInMillis: () => 29_000,
} as unknown as Context;

export type HttpHandler = (event: APIGatewayProxyEventV2, context: Context) => Promise<APIGatewayProxyResultV2>;

export interface Answer {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary response JSON
  body: any;
}

/** Invokes a buffered handler the way API Gateway does and decodes its answer. */
export async function invoke(handler: unknown, event: APIGatewayProxyEventV2): Promise<Answer> {
  const result = (await (handler as HttpHandler)(event, lambdaContext)) as {
    statusCode: number;
    body?: string;
    isBase64Encoded?: boolean;
  };
  const text = result.isBase64Encoded ? Buffer.from(result.body ?? '', 'base64').toString('utf8') : (result.body ?? '');
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    // plain-text answers (the scheduler's errors) stay text
  }
  return { status: result.statusCode, body };
}

/** Drops what differs between any two answers to the same request (request ids). */
export function comparable(answer: Answer): Answer {
  if (answer.body && typeof answer.body === 'object' && 'request_id' in answer.body) {
    const { request_id: _id, ...rest } = answer.body;
    return { status: answer.status, body: rest };
  }
  return answer;
}

/** The event an EventBridge schedule rule (SST `Cron`) sends its target each minute. */
export const scheduledEvent = (rule: string): EventBridgeEvent<'Scheduled Event', Record<string, never>> => ({
  version: '0',
  id: '53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa',
  'detail-type': 'Scheduled Event',
  source: 'aws.events',
  account: '123456789012',
  time: new Date().toISOString(),
  region: 'us-east-1',
  resources: [`arn:aws:events:us-east-1:123456789012:rule/prod-keyhaven-Jobs-${rule}`],
  detail: {},
});

/** A stream record of DynamoDB's TTL deleting an item (the service principal), with the item's old image. */
export const ttlRemoval = (tableName: string, sequence: string, oldImage: unknown): DynamoDBRecord => ({
  eventID: `event-${sequence}`,
  eventName: 'REMOVE',
  eventVersion: '1.1',
  eventSource: 'aws:dynamodb',
  awsRegion: 'us-east-1',
  userIdentity: { type: 'Service', principalId: 'dynamodb.amazonaws.com' },
  dynamodb: {
    ApproximateCreationDateTime: Math.floor(Date.now() / 1000),
    Keys: { pk: { S: 'x' }, sk: { S: 'token' } },
    OldImage: oldImage as Record<string, never>,
    SequenceNumber: sequence,
    SizeBytes: 120,
    StreamViewType: 'NEW_AND_OLD_IMAGES',
  },
  eventSourceARN: `arn:aws:dynamodb:us-east-1:123456789012:table/${tableName}/stream/2026-11-22T00:00:00.000`,
});

/** A stream record of an item written (INSERT, or MODIFY with its old image), as DynamoDB's stream gives it. */
export const itemWritten = (
  tableName: string,
  sequence: string,
  newImage: Record<string, AttributeValue>,
  oldImage?: Record<string, AttributeValue>,
): DynamoDBRecord => ({
  eventID: `event-${sequence}`,
  eventName: oldImage ? 'MODIFY' : 'INSERT',
  eventVersion: '1.1',
  eventSource: 'aws:dynamodb',
  awsRegion: 'us-east-1',
  dynamodb: {
    ApproximateCreationDateTime: Math.floor(Date.now() / 1000),
    Keys: { pk: newImage.pk as never, sk: newImage.sk as never },
    NewImage: newImage as Record<string, never>,
    ...(oldImage ? { OldImage: oldImage as Record<string, never> } : {}),
    SequenceNumber: sequence,
    SizeBytes: 400,
    StreamViewType: 'NEW_AND_OLD_IMAGES',
  },
  eventSourceARN: `arn:aws:dynamodb:us-east-1:123456789012:table/${tableName}/stream/2026-11-22T00:00:00.000`,
});

/**
 * Installs a stand-in for the Lambda runtime's `awslambda` global, as `streamHandle` uses it: the handler is
 * streamified as is, and the response stream's metadata (status, headers) is recorded in the returned list.
 */
export function standInAwsLambda(): unknown[] {
  const metadata: unknown[] = [];
  (globalThis as Record<string, unknown>).awslambda = {
    streamifyResponse: (handler: unknown) => handler,
    HttpResponseStream: {
      from: (stream: Writable, meta: unknown) => {
        metadata.push(meta);
        return stream;
      },
    },
  };
  return metadata;
}

/**
 * CloudFormation's side of a custom resource: the event it sends the function, and the pre-signed URL (an S3 object
 * in AWS, a local server here) where it waits for the answer; `answers` holds every body PUT there, parsed.
 */
export async function startCloudFormationResponses(): Promise<{
  url: string;
  answers: Array<Record<string, unknown>>;
  event: (
    type: 'Create' | 'Update' | 'Delete',
    properties: Record<string, unknown>,
  ) => CloudFormationCustomResourceEvent;
  stop(): Promise<void>;
}> {
  const answers: Array<Record<string, unknown>> = [];
  const server = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    if (request.method !== 'PUT') response.writeHead(405).end();
    else {
      answers.push(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      response.writeHead(200).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/cloudformation-custom-resource-response?X-Amz-Signature=example`;
  const stackId =
    'arn:aws:cloudformation:us-east-1:123456789012:stack/prod-keyhaven-Storage/7c5f7d20-c9a1-11f0-8d2e-0a1b2c3d4e5f';
  const serviceToken = 'arn:aws:lambda:us-east-1:123456789012:function:prod-keyhaven-Storage-Deployfirsttokens';
  return {
    url,
    answers,
    event(type, properties) {
      const common = {
        ServiceToken: serviceToken,
        ResponseURL: url,
        StackId: stackId,
        RequestId: randomUUID(),
        LogicalResourceId: 'FirstTokens',
        ResourceType: 'Custom::KeyhavenFirstTokens',
        ResourceProperties: { ServiceToken: serviceToken, ...properties },
      };
      if (type === 'Create') return { ...common, RequestType: 'Create' };
      if (type === 'Update')
        return {
          ...common,
          RequestType: 'Update',
          PhysicalResourceId: 'keyhaven-first-tokens',
          OldResourceProperties: common.ResourceProperties,
        };
      return { ...common, RequestType: 'Delete', PhysicalResourceId: 'keyhaven-first-tokens' };
    },
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * An engine's job function as the stack deploys it (`Job-<engine>`: functions/jobs/engine-job.ts with
 * `KEYHAVEN_ENGINE` naming the engine), invoked with a scheduled event.
 */
export async function engineJob(engine: string): Promise<(event: unknown) => Promise<Record<string, number>>> {
  const { handler } = await import('../../functions/jobs/engine-job.ts');
  return async () => {
    const before = process.env.KEYHAVEN_ENGINE;
    process.env.KEYHAVEN_ENGINE = engine;
    try {
      return (await handler()) as Record<string, number>;
    } finally {
      if (before === undefined) delete process.env.KEYHAVEN_ENGINE;
      else process.env.KEYHAVEN_ENGINE = before;
    }
  };
}

/**
 * A secrets family's function as the stack deploys it (`Secrets-<family>`: functions/secrets/family.ts with
 * `KEYHAVEN_FAMILY` naming the family). The handler reads the variable before it awaits anything, so the variable is
 * set for the call's start only (a family's function may invoke another's while it runs).
 */
export async function secretsFunction(family: string): Promise<HttpHandler> {
  const { handler } = await import('../../functions/secrets/family.ts');
  return ((event: APIGatewayProxyEventV2) => {
    const before = process.env.KEYHAVEN_FAMILY;
    process.env.KEYHAVEN_FAMILY = family;
    try {
      return handler(event as never);
    } finally {
      if (before === undefined) delete process.env.KEYHAVEN_FAMILY;
      else process.env.KEYHAVEN_FAMILY = before;
    }
  }) as unknown as HttpHandler;
}
