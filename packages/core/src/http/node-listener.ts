import type { IncomingMessage, ServerResponse } from 'node:http';
import { maxBodyBytes } from '../front/body-limit.ts';
import {
  canonicalMethod,
  type HttpFront,
  type HttpRequest,
  queryOnlyMethods,
  type Refusal,
} from '../front/exchange.ts';
import { clientIpFrom } from '../lib/client-ip.ts';
import { jsonLogger } from '../lib/log.ts';
import type { RequestHeaders } from '../lib/request-headers.ts';
import { sentPath } from '../lib/request-path.ts';
import { writeBody } from './lambda-handler.ts';

export interface NodeListenerOptions {
  /** How the service words a refusal (a body the client stopped sending). */
  refuse: Refusal;
  /** Proxies whose `X-Forwarded-For` is believed (`client-ip.ts`). */
  trustedProxies: readonly string[];
  /** The caller's address; default the socket's remote address. */
  clientIp?: ((request: IncomingMessage) => string) | undefined;
  /** The process stopping (`npm start`'s stop): a read's signal is aborted, so a blocking query answers at once. */
  shutdown?: AbortSignal | undefined;
}

/**
 * Both services as `node:http` request listeners (what `npm start` serves): the node request is read straight into
 * the adapter-neutral request (`front/exchange.ts`) and the reply written straight to the node response, as the
 * Lambda adapter (`lambda-handler.ts`) does for API Gateway, with no web Request, Response or framework between
 * (issue 28: they cost more CPU than the rest of an authenticated read). A streamed reply (the event stream) is
 * written chunk by chunk until it ends or the client goes away.
 *
 * The path is the raw request line's, as sent (`request-path.ts`): nothing here resolves `..`, turns `\` into `/` or
 * decodes anything; the front decides the one canonical path.
 */
export function nodeListener(
  front: HttpFront,
  options: NodeListenerOptions,
): (request: IncomingMessage, response: ServerResponse) => void {
  const socketAddress = options.clientIp ?? ((request: IncomingMessage) => request.socket.remoteAddress ?? '');
  const answer = async (request: IncomingMessage, response: ServerResponse) => {
    const method = canonicalMethod(request.method ?? 'GET');
    const target = request.url ?? '';
    const queryAt = target.indexOf('?');
    const beforeQuery = queryAt === -1 ? target : target.slice(0, queryAt);
    const tooLong = Number(request.headers['content-length'] ?? 0) > maxBodyBytes;
    // A read or a delete is its query: its body is not even read (the front would drop it; node discards it).
    const body = queryOnlyMethods.has(method) ? '' : tooLong ? undefined : await readBody(request, maxBodyBytes);
    const headers = rawHeaders(request.rawHeaders);
    let gone: AbortController | undefined;
    const exchange: HttpRequest = {
      method,
      // As sent. An absolute-form target (`GET http://host/v1/… HTTP/1.1`) gives its path as sent too.
      path:
        beforeQuery.startsWith('/') || !/^https?:\/\//i.test(beforeQuery)
          ? beforeQuery
          : sentPath(undefined, beforeQuery),
      search: queryAt === -1 ? '' : target.slice(queryAt),
      headers,
      body,
      clientIp: clientIpFrom(
        socketAddress(request),
        headers.get('x-forwarded-for') ?? undefined,
        options.trustedProxies,
      ),
      // Made when a front asks (a blocking query, a stream): aborted when the client goes away, and for a read when
      // the process stops.
      get signal() {
        if (!gone) {
          const controller = new AbortController();
          gone = controller;
          response.once('close', () => controller.abort());
          if (options.shutdown && method === 'GET') {
            if (options.shutdown.aborted) controller.abort();
            else options.shutdown.addEventListener('abort', () => controller.abort(), { once: true });
          }
        }
        return gone.signal;
      },
    };
    const reply = await front(exchange);
    const out: Record<string, string> = { ...reply.headers };
    // A refused body was left unread, and would be taken for the next request on a kept-alive connection (issue
    // 24): the 413 closes the connection, and a pooling client opens a new one for its next request.
    if (body === undefined) out.Connection = 'close';
    if (reply.body === undefined) {
      response.writeHead(reply.status, out);
      response.end();
      return;
    }
    if (!hasHeader(out, 'content-type')) out['content-type'] = 'text/plain; charset=UTF-8';
    if (typeof reply.body === 'string') {
      out['content-length'] = String(Buffer.byteLength(reply.body));
      response.writeHead(reply.status, out);
      response.end(reply.body);
      return;
    }
    response.writeHead(reply.status, out);
    response.flushHeaders();
    await writeBody(reply, response, exchange.signal as AbortSignal);
    response.end();
  };
  return (request, response) => {
    answer(request, response).catch((error: unknown) => {
      // The request's own stream failing (the client went away mid-body) is the client's: 400. Anything else (the
      // front never throws) is a bug, answered 500 and logged, never a process that ends (issue 37 §4).
      const message = error instanceof Error ? error.message : String(error);
      const unreadable = error instanceof UnreadableRequest;
      if (!unreadable) failureLog.error('request listener failed', { method: request.method, error: message });
      if (!response.headersSent) {
        const refusal = unreadable
          ? options.refuse(400, `the request could not be read: ${message}`)
          : options.refuse(500, 'internal error');
        response.writeHead(refusal.status, { ...refusal.headers, Connection: 'close' });
        response.end(refusal.body);
      } else {
        response.destroy();
      }
    });
  };
}

const failureLog = jsonLogger((line) => process.stderr.write(`${line}\n`));

/** The request's body stream failed: the client's doing, not the service's. */
class UnreadableRequest extends Error {}

const hasHeader = (headers: Record<string, string>, lowerName: string) =>
  Object.keys(headers).some((name) => name.toLowerCase() === lowerName);

/**
 * The request headers by case-insensitive name from node's raw list, repeated fields joined as a web `Headers` joins
 * them (`, `; `; ` for cookies), so that `get` answers what a web `Headers` would (node's own `headers` object keeps
 * only the first of a repeated `Authorization`).
 */
function rawHeaders(raw: string[]): RequestHeaders {
  return {
    get(name) {
      const lower = name.toLowerCase();
      const separator = lower === 'cookie' ? '; ' : ', ';
      let value: string | null = null;
      for (let index = 0; index < raw.length; index += 2) {
        const field = raw[index] as string;
        if (field.length !== lower.length || field.toLowerCase() !== lower) continue;
        const each = raw[index + 1] as string;
        value = value === null ? each : value + separator + each;
      }
      return value;
    },
  };
}

/**
 * The body as text, or undefined once it passes `limit` bytes: a chunked upload without a Content-Length is
 * cut off there instead of being buffered whole.
 */
function readBody(request: IncomingMessage, limit: number): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        request.off('data', onData);
        request.off('end', onEnd);
        request.off('error', onError);
        request.pause();
        resolve(undefined);
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () =>
      resolve(chunks.length === 1 ? (chunks[0] as Buffer).toString('utf8') : Buffer.concat(chunks).toString('utf8'));
    const onError = (error: Error) => reject(new UnreadableRequest(error.message));
    request.on('data', onData);
    request.once('end', onEnd);
    request.once('error', onError);
  });
}
