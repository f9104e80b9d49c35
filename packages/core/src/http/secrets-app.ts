import { Hono } from 'hono';
import type { Core } from '../core.ts';
import { maxBodyBytes, Pipeline } from './pipeline.ts';

export interface SecretsAppOptions {
  /** The core, created once per process on first use (a Lambda's cold start). */
  core: () => Promise<Core>;
  /** The caller's address, from the node socket or the API Gateway event. */
  clientIp: (env: unknown) => string;
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

  app.all('*', async (c) => {
    const declared = Number(c.req.header('content-length') ?? 0);
    if (declared > maxBodyBytes) return c.json({ errors: [`request body larger than ${maxBodyBytes} bytes`] }, 413);
    let path: string;
    try {
      path = decodeURIComponent(c.req.path);
    } catch {
      return c.json({ errors: ['malformed percent-encoding in the URL path'] }, 400);
    }
    const response = await (await getPipeline()).handle({
      method: c.req.method,
      path,
      query: c.req.query(),
      headers: c.req.raw.headers,
      body: await c.req.text(),
      clientIp: options.clientIp(c.env),
    });
    if (response.body === undefined) return c.body(null, response.status as 204);
    return c.json(response.body, response.status as 200);
  });
  return app;
}
