/**
 * Regions as Nomad has them: in a region that is not the authoritative one, every write is forwarded to the
 * authoritative region with the caller's token (`front/forward.ts`, as the secrets service forwards); reads are
 * answered from the local (replicated) data.
 */
import { type HttpReply, type HttpRequest, textReply } from '../../front/exchange.ts';
import { forwardRequest } from '../../front/forward.ts';

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
const schedulerForwarding = (method: string) => ({
  headers: ['x-scheduler-token', 'x-nomad-token', 'authorization', 'content-type'],
  fromHeader: 'x-scheduler-forwarded-from',
  refuse: textReply,
  what: `${method} is a write`,
});

/** In a replica region, whether the request is a write, which goes to the authoritative region. */
function forwardsWrite(
  options: RegionOptions,
  method: string,
): options is RegionOptions & { region: string; authoritativeRegion: string } {
  const region = options.region ?? 'global';
  return region !== (options.authoritativeRegion ?? region) && writeMethods.has(method);
}

/** In a replica region, the authoritative region's answer to a write (`encoded`: its canonical path as sent); else undefined. */
export function forwardWrites(
  options: RegionOptions,
): (request: HttpRequest, encoded: string) => Promise<HttpReply | undefined> {
  const region = options.region ?? 'global';
  const forward = { ...options, region, authoritativeRegion: options.authoritativeRegion ?? region };
  return async (request, encoded) => {
    if (!forwardsWrite(forward, request.method)) return undefined;
    return forwardRequest(forward, schedulerForwarding(request.method), { ...request, path: encoded });
  };
}
