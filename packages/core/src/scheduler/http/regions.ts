/**
 * Regions as Nomad has them: in a region that is not the authoritative one, every write is forwarded to the
 * authoritative region with the caller's token; reads are answered from the local (replicated) data.
 */
import type { MiddlewareHandler } from 'hono';
import { forwardTarget, sentPath } from '../../lib/request-path.ts';

export interface RegionOptions {
  /** This instance's region (default `global`). */
  region?: string;
  /** The region that owns ACL writes (default: this region). */
  authoritativeRegion?: string;
  /** Base URL of the authoritative region's scheduler service (required when the regions differ). */
  authoritativeUrl?: string;
  /** The fetch used to forward (tests may pass one). */
  forwardFetch?: typeof fetch;
}

const writeMethods = new Set(['POST', 'PUT', 'DELETE', 'PATCH']);
const forwardedHeaders = ['x-scheduler-token', 'x-nomad-token', 'authorization', 'content-type'];

export function forwardWrites(options: RegionOptions): MiddlewareHandler {
  const region = options.region ?? 'global';
  const authoritative = options.authoritativeRegion ?? region;
  return async (c, next) => {
    if (region === authoritative || !writeMethods.has(c.req.method)) return next();
    if (!options.authoritativeUrl) return c.text(`writes go to the authoritative region ${authoritative}, and no URL is configured for it`, 503);
    // The canonical path (the app refused any other spelling before this), appended to the configured URL: never
    // resolved against it, where `//host/...` would name another host.
    const url = new URL(c.req.url);
    const target = forwardTarget(options.authoritativeUrl, sentPath(c.env, url.origin + url.pathname), url.search);
    if (!target) return c.text('the request path cannot be forwarded: it must begin with one "/"', 400);
    const headers = new Headers();
    for (const name of forwardedHeaders) {
      const value = c.req.header(name);
      if (value) headers.set(name, value);
    }
    headers.set('x-scheduler-forwarded-from', region);
    let response: Response;
    try {
      response = await (options.forwardFetch ?? fetch)(target, {
        method: c.req.method,
        headers,
        ...(c.req.method === 'DELETE' ? {} : { body: await c.req.text() }),
      });
    } catch (error) {
      return c.text(`failed to forward the write to region ${authoritative}: ${(error as Error).message}`, 502);
    }
    const out = new Headers();
    for (const [name, value] of response.headers) {
      if (name.startsWith('x-') || name === 'content-type') out.set(name, value);
    }
    // A 204 or 304 has no body (a Response refuses one).
    return new Response(response.status === 204 || response.status === 304 ? null : await response.arrayBuffer(), {
      status: response.status,
      headers: out,
    });
  };
}
