import http from 'node:http';
import https from 'node:https';
import type { DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';

/** What the SDK hands a request handler and wants back (`@smithy/types`' HttpHandler, as the DynamoDB client takes it). */
type SdkHandler = Extract<NonNullable<DynamoDBClientConfig['requestHandler']>, { handle: unknown }>;
type SdkRequest = Parameters<SdkHandler['handle']>[0];
type SdkOptions = NonNullable<Parameters<SdkHandler['handle']>[1]>;
type SdkResponse = Awaited<ReturnType<SdkHandler['handle']>>;

/** An idle socket fails the call after this long: the DynamoDB client's own default (`defaultSocketTimeout`). */
const defaultIdleTimeoutMs = 300_000;

export interface SdkHttpHandlerOptions {
  /** A call that takes longer fails with a retryable `TimeoutError`; default none (the SDK's default too). */
  requestTimeoutMs?: number;
  /** A socket idle this long fails its call with a retryable `TimeoutError`; default 300 s. */
  idleTimeoutMs?: number;
  /** The agent for `https:` endpoints (a test's own certificate authority); default a keep-alive agent. */
  httpsAgent?: https.Agent;
}

/**
 * The HTTP client under the services' DynamoDB clients (`storeClientOptions` in `store-client.ts`): node's own http and
 * https clients on keep-alive agents (50 sockets, as the SDK's), answering with the whole body read into one buffer.
 * The SDK's default handler does the same work with more around it per call: four timers, the response handed on as a
 * stream that the SDK then pipes into a collecting Writable. Measured on DynamoDB Local (issue 28): a `GetItem`'s CPU
 * about 60 µs less of some 380. DynamoDB's and KMS's protocols send and receive whole JSON bodies; a streamed body
 * is still sent as a stream.
 * Failures keep the names and codes the SDK's retry strategy reads: node's socket errors (`ECONNRESET`, ...) as node
 * raises them, a timeout as `TimeoutError`, an aborted call as `AbortError`.
 */
export class SdkHttpHandler {
  readonly metadata = { handlerProtocol: 'http/1.1' };
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;
  private readonly requestTimeoutMs: number | undefined;
  private readonly idleTimeoutMs: number;

  constructor(options: SdkHttpHandlerOptions = {}) {
    this.idleTimeoutMs = options.idleTimeoutMs ?? defaultIdleTimeoutMs;
    // The agents set each socket's idle timeout once, when they open it; a request in flight on a socket that goes
    // quiet hears of it below.
    const agentOptions = { keepAlive: true, maxSockets: 50, timeout: this.idleTimeoutMs };
    this.httpAgent = new http.Agent(agentOptions);
    this.httpsAgent = options.httpsAgent ?? new https.Agent(agentOptions);
    this.requestTimeoutMs = options.requestTimeoutMs;
  }

  handle(request: SdkRequest, options: SdkOptions = {}): Promise<SdkResponse> {
    // The SDK's signal type is older than the web's; the signals callers hand the SDK are node's (web) AbortSignals.
    const abortSignal = options.abortSignal as AbortSignal | undefined;
    const requestTimeoutMs = options.requestTimeout ?? this.requestTimeoutMs;
    return new Promise((resolve, reject) => {
      if (abortSignal?.aborted) {
        reject(abortError());
        return;
      }
      const secure = request.protocol === 'https:';
      const hostname = request.hostname.startsWith('[') ? request.hostname.slice(1, -1) : request.hostname;
      const query = request.query ? queryString(request.query) : '';
      let timer: NodeJS.Timeout | undefined;
      let onAbort: (() => void) | undefined;
      const settle = () => {
        if (timer) clearTimeout(timer);
        if (onAbort) abortSignal?.removeEventListener('abort', onAbort);
      };
      const fail = (error: Error) => {
        settle();
        reject(error);
      };
      const outgoing = (secure ? https : http).request(
        {
          host: hostname,
          port: request.port,
          method: request.method,
          path: query ? `${request.path}?${query}` : request.path,
          headers: request.headers,
          agent: secure ? this.httpsAgent : this.httpAgent,
        },
        (incoming) => {
          const chunks: Buffer[] = [];
          incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
          // A response cut off mid-body fails here as node reports it (`ECONNRESET`): the SDK retries it.
          incoming.on('error', fail);
          incoming.once('end', () => {
            settle();
            resolve({
              response: {
                statusCode: incoming.statusCode ?? -1,
                reason: incoming.statusMessage,
                headers: flatHeaders(incoming.headers),
                body: chunks.length === 1 ? chunks[0] : Buffer.concat(chunks),
              },
            });
          });
        },
      );
      // `on`, not `once`: a request destroyed after its first error may raise another, which must not go unheard.
      outgoing.on('error', fail);
      outgoing.once('timeout', () =>
        outgoing.destroy(timeoutError(`the socket was idle for ${this.idleTimeoutMs} ms`)),
      );
      if (requestTimeoutMs) {
        timer = setTimeout(
          () => outgoing.destroy(timeoutError(`the request took longer than ${requestTimeoutMs} ms`)),
          requestTimeoutMs,
        );
      }
      if (abortSignal) {
        onAbort = () => outgoing.destroy(abortError());
        abortSignal.addEventListener('abort', onAbort, { once: true });
      }
      const body = request.body as unknown;
      if (isReadable(body)) body.pipe(outgoing);
      else outgoing.end(body as string | Uint8Array | undefined);
    });
  }

  /** The timeouts are this handler's options; nothing a client sets here applies. */
  updateHttpClientConfig(): void {}

  httpHandlerConfigs(): Record<string, never> {
    return {};
  }

  destroy(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}

const timeoutError = (message: string) => Object.assign(new Error(message), { name: 'TimeoutError' });
const abortError = () => Object.assign(new Error('Request aborted'), { name: 'AbortError' });

const isReadable = (body: unknown): body is NodeJS.ReadableStream =>
  typeof body === 'object' && body !== null && typeof (body as { pipe?: unknown }).pipe === 'function';

/** Node's header values as the SDK's default handler gives them: one string each, repeated fields joined by `,`. */
function flatHeaders(headers: http.IncomingHttpHeaders): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const name in headers) {
    const value = headers[name];
    if (value !== undefined) flat[name] = Array.isArray(value) ? value.join(',') : value;
  }
  return flat;
}

/** The query as the SDK signs it: names and values escaped per RFC 3986, a repeated name once per value. */
function queryString(query: SdkRequest['query']): string {
  const parts: string[] = [];
  for (const name of Object.keys(query).sort()) {
    const value = query[name];
    const values = Array.isArray(value) ? value : [value];
    for (const each of values)
      parts.push(typeof each === 'string' ? `${escapeUri(name)}=${escapeUri(each)}` : escapeUri(name));
  }
  return parts.join('&');
}

const escapeUri = (text: string) =>
  encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
