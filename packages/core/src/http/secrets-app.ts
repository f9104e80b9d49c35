import { Hono } from 'hono';
import type { Core } from '../core.ts';
import { maxBodyBytes } from '../front/body-limit.ts';
import { sentPath } from '../lib/request-path.ts';
import { clientIpFrom, trustedProxiesFromEnvironment } from '../lib/client-ip.ts';
import { type SecretsRegionOptions, secretsRegionsFromEnvironment } from './forward-writes.ts';
import { queryOnlyMethods } from '../front/exchange.ts';
import { secretsFront } from './secrets-front.ts';

export interface SecretsAppOptions {
  /** The core, created once per process on first use. */
  core: () => Promise<Core>;
  /** The caller's address, from the node socket. */
  clientIp: (env: unknown) => string;
  /** Regions (`forward-writes.ts`); default from the environment (`KEYHAVEN_REGION`…), else one region. */
  regions?: SecretsRegionOptions;
  /** Proxies whose `X-Forwarded-For` is believed (`client-ip.ts`); default `KEYHAVEN_TRUSTED_PROXIES`, else none. */
  trustedProxies?: readonly string[];
}

/**
 * The secrets service as a web-standard app (what `npm start` serves through `@hono/node-server`): each request is
 * read into the adapter-neutral form and answered by `secretsFront`, as the Lambda adapter (`secrets-lambda.ts`) does.
 */
export function createSecretsApp(options: SecretsAppOptions): Hono {
  const app = new Hono();
  const front = secretsFront({
    core: options.core,
    regions: options.regions ?? secretsRegionsFromEnvironment(process.env),
  });
  const trustedProxies = options.trustedProxies ?? trustedProxiesFromEnvironment(process.env);
  app.all('*', async (c) => {
    const queryOnly = queryOnlyMethods.has(c.req.method.toUpperCase());
    const tooLong = Number(c.req.header('content-length') ?? 0) > maxBodyBytes;
    const url = c.req.url;
    const queryAt = url.indexOf('?');
    // A read or a delete is its query: its body is not even read (the front would drop it).
    const body = queryOnly ? '' : tooLong ? undefined : await readBody(c.req.raw, maxBodyBytes);
    const reply = await front({
      method: c.req.method,
      // As sent: the URL parser behind `c.req.url` would already have resolved `..` and turned `\` into `/`.
      path: sentPath(c.env, queryAt === -1 ? url : url.slice(0, queryAt)),
      search: queryAt === -1 ? '' : url.slice(queryAt),
      headers: c.req.raw.headers,
      body,
      clientIp: clientIpFrom(options.clientIp(c.env), c.req.header('x-forwarded-for'), trustedProxies),
    });
    // A refused body was left unread, and would be taken for the next request on a kept-alive connection (issue
    // 24): the 413 closes the connection, and a pooling client opens a new one for its next request.
    const headers = body === undefined ? { ...reply.headers, Connection: 'close' } : reply.headers;
    return new Response(reply.body ?? null, { status: reply.status, headers });
  });
  return app;
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
