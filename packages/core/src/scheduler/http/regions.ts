/**
 * Regions as Nomad has them: in a region that is not the authoritative one, every write is forwarded to the
 * authoritative region with the caller's token (`front/forward.ts`, as the secrets service forwards); reads are
 * answered from the local (replicated) data.
 */
import type { MiddlewareHandler } from 'hono';
import { textReply } from '../../front/exchange.ts';
import { forwardRequest } from '../../front/forward.ts';
import { sentPath } from '../../lib/request-path.ts';

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

/** How the scheduler forwards (`front/forward.ts`): Nomad's token headers, plain-text refusals. */
export const schedulerForwarding = (method: string) => ({
  headers: ['x-scheduler-token', 'x-nomad-token', 'authorization', 'content-type'],
  fromHeader: 'x-scheduler-forwarded-from',
  refuse: textReply,
  what: `${method} is a write`,
});

/** In a replica region, whether the request is a write, which goes to the authoritative region. */
export function forwardsWrite(options: RegionOptions, method: string): options is RegionOptions & { region: string; authoritativeRegion: string } {
  const region = options.region ?? 'global';
  return region !== (options.authoritativeRegion ?? region) && writeMethods.has(method);
}

export function forwardWrites(options: RegionOptions): MiddlewareHandler {
  const region = options.region ?? 'global';
  const forward = { ...options, region, authoritativeRegion: options.authoritativeRegion ?? region };
  return async (c, next) => {
    if (!forwardsWrite(forward, c.req.method)) return next();
    // The canonical path (the app refused any other spelling before this).
    const url = new URL(c.req.url);
    const reply = await forwardRequest(forward, schedulerForwarding(c.req.method), {
      method: c.req.method,
      path: sentPath(c.env, url.origin + url.pathname),
      search: url.search,
      headers: c.req.raw.headers,
      body: c.req.method === 'DELETE' ? '' : await c.req.text(),
      clientIp: '',
    });
    return new Response((reply.body as string | undefined) ?? null, { status: reply.status, headers: reply.headers });
  };
}
