import { Hono } from 'hono';
import type { Core } from '../core.ts';
import { badRequest, type DomainError, tooLarge } from '../lib/errors.ts';
import { jsonLogger } from '../lib/log.ts';
import { maxBodyBytes, Pipeline } from '../secrets/framework/pipeline.ts';
import { forwardSecretsWrites, type SecretsRegionOptions, secretsRegionsFromEnvironment } from './forward-writes.ts';

export interface SecretsAppOptions {
  /** The core, created once per process on first use (a Lambda's cold start). */
  core: () => Promise<Core>;
  /** The caller's address, from the node socket or the API Gateway event. */
  clientIp: (env: unknown) => string;
  /** Regions (`forward-writes.ts`); default from the environment (`KEYHAVEN_REGION`…), else one region. */
  regions?: SecretsRegionOptions;
}

/** The secrets service as a web-standard app: every `/v1/*` request goes through the one pipeline. */
export function createSecretsApp(options: SecretsAppOptions): Hono {
  const app = new Hono();
  let pipeline: Promise<Pipeline> | undefined;
  const getPipeline = () => {
    pipeline ??= options.core().then((core) => new Pipeline(core));
    pipeline.catch(() => {
      pipeline = undefined;
    });
    return pipeline;
  };

  const regions = options.regions ?? secretsRegionsFromEnvironment(process.env);
  if (regions) app.use('*', forwardSecretsWrites(regions, options.core));

  app.all('*', async (c) => {
    const pipeline = await getPipeline();
    // What the adapter refuses (an oversized body, a malformed URL) still goes through the pipeline, so that
    // every request is answered and logged the same way.
    let refusal: DomainError | undefined;
    const bodyTooLarge = () => tooLarge(`request body larger than ${maxBodyBytes} bytes`);
    if (Number(c.req.header('content-length') ?? 0) > maxBodyBytes) refusal = bodyTooLarge();
    const body = refusal ? '' : await readBody(c.req.raw, maxBodyBytes);
    if (body === undefined) refusal = bodyTooLarge();
    let path = c.req.path;
    try {
      path = decodeURIComponent(c.req.path);
    } catch {
      refusal ??= badRequest('malformed percent-encoding in the URL path');
    }
    const response = await pipeline.handle({
      method: c.req.method,
      path,
      query: c.req.query(),
      headers: c.req.raw.headers,
      body: body ?? '',
      clientIp: options.clientIp(c.env),
      ...(refusal ? { refusal } : {}),
    });
    if (response.body === undefined) return c.body(null, response.status as 204);
    return c.json(response.body, response.status as 200);
  });
  // Only a core that cannot be built (its table or KMS unreachable) gets here: the pipeline answers all else.
  app.onError((error, c) => {
    failureLog.error('request failed before the pipeline', { error: error instanceof Error ? error.message : String(error) });
    return c.json({ errors: ['internal error: the service is not ready'] }, 500);
  });
  return app;
}

const failureLog = jsonLogger((line) => process.stderr.write(`${line}\n`));

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
