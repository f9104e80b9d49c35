import type { Core } from '../composition/secrets-core.ts';
import { badRequest, type DomainError, permissionDenied, tooLarge, unsupportedMedia } from '../lib/errors.ts';
import { jsonLogger } from '../lib/log.ts';
import { maxBodyBytes } from '../front/body-limit.ts';
import { Pipeline } from '../secrets/framework/pipeline.ts';
import { canonicalPath } from '../lib/request-path.ts';
import { sharedUntilRejected } from '../lib/shared-until-rejected.ts';
import { forwardIfWrite, type SecretsRegionOptions } from './forward-writes.ts';
import { contentTypeRefusal, crossOriginRefusal } from '../front/cross-origin.ts';
import { type HttpFront, type HttpReply, type HttpRequest, jsonReply, queryOnlyMethods } from '../front/exchange.ts';

export interface SecretsFrontOptions {
  /** The core, created once per process on first use (a Lambda's cold start). */
  core: () => Promise<Core>;
  /** Regions (`forward-writes.ts`); undefined: one region. */
  regions?: SecretsRegionOptions;
  /**
   * Origins whose pages may change state here besides the service's own (`front/cross-origin.ts`): locally the
   * console's `localhost` spelling of the `npm start` origin. The console served beside the service is its own origin.
   */
  consoleOrigins?: () => readonly string[];
}

/**
 * The secrets service behind every adapter: in a replica region a write goes to the authoritative region
 * (`forward-writes.ts`); everything else goes through the one pipeline, including what the adapter could not take (an
 * oversized body, a malformed URL), so that every request is answered and logged the same way.
 */
export function secretsFront(options: SecretsFrontOptions): HttpFront {
  const getPipeline = sharedUntilRejected(() => options.core().then((core) => new Pipeline(core)));
  const answer = async (request: HttpRequest): Promise<HttpReply> => {
    // A read or a delete is its query (issue 23 §4): no such handler is given a body, so the parameter constraints
    // checked on the query are all its input. Vault ignores their body too; an oversized one is not read, not refused.
    const body = queryOnlyMethods.has(request.method) ? '' : request.body;
    let refusal: DomainError | undefined =
      body === undefined ? tooLarge(`request body larger than ${maxBodyBytes} bytes`) : undefined;
    // A browser on another origin changes nothing (`front/cross-origin.ts`); answered and audited as a refusal.
    const crossOrigin = crossOriginRefusal(request, options.consoleOrigins?.() ?? []);
    if (crossOrigin) refusal ??= permissionDenied(crossOrigin.message);
    const mediaType = contentTypeRefusal(request);
    if (mediaType) refusal ??= unsupportedMedia(mediaType.message);
    // One canonical path (`lib/request-path.ts`): what is authorised, routed, stored under and forwarded.
    const canonical = canonicalPath(request.path);
    if (canonical.problem !== undefined) refusal ??= badRequest(canonical.problem);
    const path = canonical.decoded ?? request.path;
    // What this region refuses is not forwarded (an oversized body would go on empty, `//host` is another origin).
    if (options.regions && !refusal && canonical.encoded !== undefined) {
      const forwarded = await forwardIfWrite(options.regions, await options.core(), {
        ...request,
        path: canonical.encoded,
        body,
      });
      if (forwarded) return forwarded;
    }
    const ready = await getPipeline();
    const response = await ready.handle({
      method: request.method,
      path,
      query: queryOf(request.search),
      headers: request.headers,
      body: body ?? '',
      clientIp: request.clientIp,
      ...(refusal ? { refusal } : {}),
    });
    if (response.body === undefined) return { status: response.status, headers: {}, body: undefined };
    return jsonReply(response.status, response.body);
  };
  return async (request) => {
    try {
      return await answer(request);
    } catch (error) {
      // Only a core that cannot be built (its table or KMS unreachable) gets here: the pipeline answers all else.
      failureLog.error('request failed before the pipeline', {
        error: error instanceof Error ? error.message : String(error),
      });
      return jsonReply(500, {
        errors: ['internal error: the service is not ready'],
      });
    }
  };
}

const failureLog = jsonLogger((line) => process.stderr.write(`${line}\n`));

/** The query parameters, the first value of each name (as Hono's `c.req.query()` gives them). */
function queryOf(search: string): Record<string, string> {
  const query: Record<string, string> = Object.create(null);
  if (search.length <= 1) return query;
  for (const [name, value] of new URLSearchParams(search)) {
    if (name !== '' && !(name in query)) query[name] = value;
  }
  return query;
}
