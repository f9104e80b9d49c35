/**
 * A small in-process emulator of the AWS Lambda Invoke API (`POST /2015-03-31/functions/{FunctionName}/invocations`),
 * enough for one function to call another the way the SDK's `InvokeCommand` does:
 * - `FunctionName` as a name, a partial ARN (`123456789012:function:name`) or a full ARN, with an optional
 *   `:qualifier` suffix or `?Qualifier=`; an unknown one is 404 `ResourceNotFoundException`.
 * - `X-Amz-Invocation-Type`: `RequestResponse` (default: 200, the handler's JSON result as the body),
 *   `Event` (202, empty body, the handler runs after the answer), `DryRun` (204).
 * - A handler that throws gives 200 with `X-Amz-Function-Error: Unhandled` and the Node runtime's error payload
 *   `{"errorType", "errorMessage", "trace"}`; a payload that is not JSON is 400 `InvalidRequestContentException`.
 * - `X-Amz-Executed-Version: $LATEST` on invocations; service errors carry `x-amzn-ErrorType` and `{"Type", "message"}`.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export type InvokedHandler = (
  event: unknown,
  context: { functionName: string; awsRequestId: string },
) => Promise<unknown>;

export interface LambdaInvocation {
  functionName: string;
  invocationType: string;
  payload: unknown;
}

export interface LambdaEmulator {
  endpoint: string;
  /** Every invocation that reached a handler, in order. */
  invocations: LambdaInvocation[];
  stop(): Promise<void>;
}

const invokePath = /^\/2015-03-31\/functions\/([^/]+)\/invocations$/;

/** The function a `FunctionName` names: the last `function:` segment of an ARN, without a qualifier. */
function functionNameOf(raw: string): string {
  const decoded = decodeURIComponent(raw);
  const afterFunction = decoded.includes(':function:') ? (decoded.split(':function:')[1] ?? '') : decoded;
  return afterFunction.split(':')[0] ?? '';
}

export async function startLambdaEmulator(functions: Record<string, InvokedHandler>): Promise<LambdaEmulator> {
  const invocations: LambdaInvocation[] = [];
  const server = createServer(async (request, response) => {
    const serviceError = (status: number, type: string, message: string) => {
      response.writeHead(status, {
        'content-type': 'application/json',
        'x-amzn-errortype': type,
        'x-amzn-requestid': randomUUID(),
      });
      response.end(JSON.stringify({ Type: 'User', message }));
    };
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const url = new URL(request.url ?? '/', 'http://lambda');
    const match = request.method === 'POST' ? invokePath.exec(url.pathname) : null;
    if (!match)
      return serviceError(404, 'UnknownOperationException', `unknown operation ${request.method} ${url.pathname}`);
    const name = functionNameOf(match[1] ?? '');
    const handler = functions[name];
    if (!handler)
      return serviceError(
        404,
        'ResourceNotFoundException',
        `Function not found: arn:aws:lambda:us-east-1:123456789012:function:${name}`,
      );
    const text = Buffer.concat(chunks).toString('utf8');
    let payload: unknown = {};
    try {
      if (text) payload = JSON.parse(text);
    } catch {
      return serviceError(400, 'InvalidRequestContentException', 'Could not parse request body into json');
    }
    const invocationType = String(request.headers['x-amz-invocation-type'] ?? 'RequestResponse');
    if (!['RequestResponse', 'Event', 'DryRun'].includes(invocationType)) {
      return serviceError(400, 'InvalidParameterValueException', `invalid invocation type ${invocationType}`);
    }
    if (invocationType === 'DryRun') {
      response.writeHead(204, { 'x-amzn-requestid': randomUUID() });
      return response.end();
    }
    invocations.push({ functionName: name, invocationType, payload });
    const context = { functionName: name, awsRequestId: randomUUID() };
    const run = async (): Promise<{ error?: boolean; body: unknown }> => {
      try {
        return { body: (await handler(payload, context)) ?? null };
      } catch (error) {
        const failure = error instanceof Error ? error : new Error(String(error));
        return {
          error: true,
          body: { errorType: failure.name, errorMessage: failure.message, trace: (failure.stack ?? '').split('\n') },
        };
      }
    };
    if (invocationType === 'Event') {
      response.writeHead(202, { 'x-amzn-requestid': context.awsRequestId });
      response.end();
      await run();
      return;
    }
    const result = await run();
    response.writeHead(200, {
      'content-type': 'application/json',
      'x-amz-executed-version': '$LATEST',
      'x-amzn-requestid': context.awsRequestId,
      ...(result.error ? { 'x-amz-function-error': 'Unhandled' } : {}),
    });
    response.end(JSON.stringify(result.body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    invocations,
    stop: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
