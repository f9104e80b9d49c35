import { maxBodyBytes } from '../front/body-limit.ts';
import { canonicalMethod, type HttpFront, queryOnlyMethods } from '../front/exchange.ts';
import { sentPath } from '../lib/request-path.ts';

/** A front in process, as web requests (what tests and benchmarks call; the deployed and `npm start` services do not). */
export interface WebApp {
  /** `env`: what a server that wraps it hands on; its node request (`env.incoming`) gives the path as sent. */
  fetch(request: Request, env?: unknown): Promise<Response>;
  /** `fetch` of a path (on `http://localhost`) or a URL, with the given init. */
  request(input: string | URL | Request, init?: RequestInit): Promise<Response>;
}

/**
 * A front as a web-standard handler: each request is read into the adapter-neutral request (`front/exchange.ts`)
 * as the node listener and the Lambda adapter read theirs, and the reply (text or stream) becomes a Response. The
 * path is the web Request's, already parsed (`..` resolved, `\` made `/`), unless the server that wraps it hands the
 * node request on (`lib/request-path.ts`'s `sentPath`): only the other adapters see it as sent.
 */
export function webApp(front: HttpFront, clientIp: (env?: unknown) => string = () => '127.0.0.1'): WebApp {
  const fetch = async (request: Request, env?: unknown): Promise<Response> => {
    const method = canonicalMethod(request.method);
    const queryOnly = queryOnlyMethods.has(method);
    const tooLong = Number(request.headers.get('content-length') ?? 0) > maxBodyBytes;
    const url = request.url;
    const queryAt = url.indexOf('?');
    // A read or a delete is its query: its body is not even read (the front would drop it).
    const body = queryOnly ? '' : tooLong ? undefined : await readBody(request, maxBodyBytes);
    const reply = await front({
      method,
      path: sentPath(env, queryAt === -1 ? url : url.slice(0, queryAt)),
      search: queryAt === -1 ? '' : url.slice(queryAt),
      headers: request.headers,
      body,
      clientIp: clientIp(env),
      signal: request.signal,
    });
    // As the node listener does: a refused body closes the connection.
    const headers = body === undefined ? { ...reply.headers, Connection: 'close' } : reply.headers;
    const noBody = reply.body === undefined || method === 'HEAD';
    return new Response(noBody ? null : reply.body, { status: reply.status, headers });
  };
  return {
    fetch,
    request: (input, init) =>
      fetch(
        input instanceof Request
          ? input
          : new Request(typeof input === 'string' && input.startsWith('/') ? `http://localhost${input}` : input, init),
      ),
  };
}

/**
 * The body as text, or undefined once it passes `limit` bytes: a chunked upload without a Content-Length is
 * cut off there instead of being buffered whole.
 */
async function readBody(request: Request, limit: number): Promise<string | undefined> {
  if (!request.body) return '';
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => undefined);
      return undefined;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}
