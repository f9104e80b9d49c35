import type { Writable } from 'node:stream';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { maxBodyBytes } from '../front/body-limit.ts';
import { canonicalMethod, type HttpFront, type HttpReply, type HttpRequest } from '../front/exchange.ts';
import { clientIpFrom, trustedProxiesFromEnvironment } from '../lib/client-ip.ts';
import { lowerCaseHeaders } from '../lib/request-headers.ts';

/**
 * Both services on API Gateway's HTTP API (payload version 2.0) and on a Lambda Function URL: the event is read
 * straight into the adapter-neutral request (`front/exchange.ts`) and the reply written straight into the result,
 * with no web Request or Response between (they cost more CPU than the rest of a batch-token login; see
 * test/bench/jwt-login.bench.ts). The node server (`node-listener.ts`) hands a front the same request.
 */
export function requestOfEvent(event: APIGatewayProxyEventV2, trustedProxies: readonly string[]): HttpRequest {
  const body =
    event.body === undefined
      ? ''
      : event.isBase64Encoded
        ? Buffer.from(event.body, 'base64').toString('utf8')
        : event.body;
  return {
    method: canonicalMethod(event.requestContext.http.method),
    path: event.rawPath,
    search: event.rawQueryString ? `?${event.rawQueryString}` : '',
    headers: lowerCaseHeaders(event.headers),
    body: Buffer.byteLength(body) > maxBodyBytes ? undefined : body,
    clientIp: eventClientIp(event, trustedProxies),
  };
}

/**
 * API Gateway's address of the caller (`sourceIp`: behind CloudFront, an edge's); `X-Forwarded-For` only when that
 * is a proxy the operator trusts (`KEYHAVEN_TRUSTED_PROXIES`), by the one rule both services use (`lib/client-ip.ts`).
 */
export function eventClientIp(event: APIGatewayProxyEventV2, trustedProxies: readonly string[]): string {
  return clientIpFrom(
    event.requestContext?.http?.sourceIp ?? '',
    event.headers?.['x-forwarded-for'] ?? event.headers?.['X-Forwarded-For'],
    trustedProxies,
  );
}

/** A front as an API Gateway handler: the reply as the result (a streamed reply read whole: this API does not stream). */
export function lambdaHandler(
  front: HttpFront,
  trustedProxies: readonly string[] = trustedProxiesFromEnvironment(process.env),
) {
  return async (event: APIGatewayProxyEventV2): Promise<APIGatewayProxyStructuredResultV2> => {
    const reply = await front(requestOfEvent(event, trustedProxies));
    const body =
      reply.body === undefined
        ? ''
        : typeof reply.body === 'string'
          ? reply.body
          : await new Response(reply.body).text();
    return { statusCode: reply.status, headers: reply.headers, body, isBase64Encoded: false };
  };
}

/** The Lambda runtime's response-stream API (a global in a function with `InvokeMode: RESPONSE_STREAM`). */
interface ResponseStreamRuntime {
  streamifyResponse(
    handler: (event: APIGatewayProxyEventV2, stream: Writable, context: unknown) => Promise<void>,
  ): unknown;
  HttpResponseStream: {
    from(stream: Writable, metadata: { statusCode: number; headers: Record<string, string> }): Writable;
  };
}

/**
 * A front as a response-streaming handler (a Function URL with `InvokeMode: RESPONSE_STREAM`): the status and
 * headers first, then the body as the front produces it (the event stream's lines), until it ends or the client
 * goes away. The request's signal is aborted when the response stream closes.
 */
export function lambdaStreamHandler(
  front: HttpFront,
  trustedProxies: readonly string[] = trustedProxiesFromEnvironment(process.env),
): unknown {
  const runtime = (globalThis as { awslambda?: ResponseStreamRuntime }).awslambda;
  if (!runtime)
    throw new Error("the Lambda runtime's awslambda global is missing: this handler runs only in a streaming Lambda");
  return runtime.streamifyResponse(async (event, responseStream) => {
    const gone = new AbortController();
    responseStream.once('close', () => gone.abort());
    const reply = await front({ ...requestOfEvent(event, trustedProxies), signal: gone.signal });
    const out = runtime.HttpResponseStream.from(responseStream, { statusCode: reply.status, headers: reply.headers });
    await writeBody(reply, out, gone.signal);
    out.end();
  });
}

/** The reply's body onto a node stream, chunk by chunk; a stream is cancelled when `gone` aborts. */
export async function writeBody(reply: HttpReply, out: Writable, gone: AbortSignal): Promise<void> {
  if (reply.body === undefined) return;
  if (typeof reply.body === 'string') {
    out.write(reply.body);
    return;
  }
  const reader = reply.body.getReader();
  const cancel = () => void reader.cancel().catch(() => undefined);
  gone.addEventListener('abort', cancel, { once: true });
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done || gone.aborted) break;
      out.write(value);
    }
  } catch {
    // The client went away mid-stream.
  } finally {
    gone.removeEventListener('abort', cancel);
  }
}
