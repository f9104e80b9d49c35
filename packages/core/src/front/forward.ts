/**
 * Write forwarding to the authoritative region, for both services (the secrets service's `http/forward-writes.ts`
 * decides which requests are writes by Vault's rules, the scheduler's `scheduler/http/regions.ts` by Nomad's): the
 * request goes, with the caller's headers that matter and its body, to the canonical path on the configured URL
 * (appended, never resolved: `lib/request-path.ts`), marked with the region it came from; the answer's status,
 * `x-…` headers, content type and body come back as they are.
 */
import { forwardTarget } from '../lib/request-path.ts';
import type { HttpReply, HttpRequest, Refusal } from './exchange.ts';

export interface ForwardOptions {
  /** This instance's region. */
  region: string;
  /** The region that takes writes. */
  authoritativeRegion: string;
  /** Base URL of the authoritative region's service (required when the regions differ). */
  authoritativeUrl?: string | undefined;
  /** The fetch used to forward (tests may pass one). */
  forwardFetch?: typeof fetch | undefined;
}

export interface ForwardRules {
  /** The request headers sent on (lower-case names). */
  headers: readonly string[];
  /** The header that names the region the request was forwarded from. */
  fromHeader: string;
  /** How the service words a refusal. */
  refuse: Refusal;
  /** What the refusals call the request: `a write`, or the reason it must go to the authoritative region. */
  what: string;
}

/**
 * The authoritative region's answer to `request`, whose `path` is the canonical path still percent-encoded. Refused
 * (503) when no URL is configured for that region, (400) when the path cannot be forwarded, (502) when the region
 * cannot be reached.
 */
export async function forwardRequest(
  options: ForwardOptions,
  rules: ForwardRules,
  request: HttpRequest,
): Promise<HttpReply> {
  const authoritative = options.authoritativeRegion;
  if (!options.authoritativeUrl)
    return rules.refuse(503, `${rules.what}: it must go to region ${authoritative}, and no URL is configured for it`);
  const target = forwardTarget(options.authoritativeUrl, request.path, request.search);
  if (!target)
    return rules.refuse(
      400,
      `the path ${JSON.stringify(request.path)} cannot be forwarded: it must begin with one "/"`,
    );
  const headers = new Headers();
  for (const name of rules.headers) {
    const value = request.headers.get(name);
    if (value) headers.set(name, value);
  }
  headers.set(rules.fromHeader, options.region);
  let response: Response;
  try {
    response = await (options.forwardFetch ?? fetch)(target, {
      method: request.method,
      headers,
      ...(request.method === 'GET' || request.method === 'HEAD' || request.method === 'DELETE'
        ? {}
        : // As bytes: a string body would be sent as text/plain, which the authoritative region refuses (415) when the
          // caller declared no type (`cross-origin.ts` contentTypeRefusal); bytes carry no type of their own.
          { body: new TextEncoder().encode(request.body ?? '') }),
    });
  } catch (error) {
    return rules.refuse(
      502,
      `failed to forward to region ${authoritative} (${options.authoritativeUrl}): ${(error as Error).message}`,
    );
  }
  const out: Record<string, string> = {};
  for (const [name, value] of response.headers) {
    if (name.startsWith('x-') || name === 'content-type') out[name] = value;
  }
  return {
    status: response.status,
    headers: out,
    body: response.status === 204 || response.status === 304 ? undefined : await response.text(),
  };
}
