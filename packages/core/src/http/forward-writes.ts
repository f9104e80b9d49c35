/**
 * Regions for the secrets service, as the scheduler has them (`scheduler/http/regions.ts`): in a region that is not
 * the authoritative one, every write is forwarded to the authoritative region's secrets service with the caller's
 * headers and body, and its answer returned as is; reads are answered from the local (replicated) table.
 *
 * A write here is anything that changes the table, so conditional writes, use counts and lease claims keep their
 * guarantees by happening in one region only:
 * - every request that is not GET, HEAD or LIST (`?list=true` is a GET): writes, deletes, logins, token creation,
 *   renewals, revocations, wrapping, sys/* changes;
 * - a GET made with a token that has uses left (`num_uses`): every request spends one;
 * - a GET that issues a lease or credentials: `creds/…` of any engine, `…/token` and `…/key` of the cloud engine;
 * - a GET on a kv version 1 mount: a secret written with a `ttl` is read out under a lease (kv version 2 has none).
 */
import type { MiddlewareHandler } from 'hono';
import type { Core } from '../core.ts';
import { tokenFromHeaders } from '../secrets/tokens/caller.ts';

export interface SecretsRegionOptions {
  /** This instance's region. */
  region: string;
  /** The region that takes writes. */
  authoritativeRegion: string;
  /** Base URL of the authoritative region's secrets service (required when the regions differ). */
  authoritativeUrl?: string;
  /** The fetch used to forward (tests may pass one). */
  forwardFetch?: typeof fetch;
}

/** From `KEYHAVEN_REGION`, `KEYHAVEN_AUTHORITATIVE_REGION` and `KEYHAVEN_AUTHORITATIVE_SECRETS_URL`; none set: one region. */
export function secretsRegionsFromEnvironment(env: NodeJS.ProcessEnv): SecretsRegionOptions | undefined {
  if (!env.KEYHAVEN_REGION || !env.KEYHAVEN_AUTHORITATIVE_REGION || env.KEYHAVEN_REGION === env.KEYHAVEN_AUTHORITATIVE_REGION) return undefined;
  return {
    region: env.KEYHAVEN_REGION,
    authoritativeRegion: env.KEYHAVEN_AUTHORITATIVE_REGION,
    ...(env.KEYHAVEN_AUTHORITATIVE_SECRETS_URL ? { authoritativeUrl: env.KEYHAVEN_AUTHORITATIVE_SECRETS_URL } : {}),
  };
}

const readMethods = new Set(['GET', 'HEAD', 'LIST']);
const forwardedHeaders = ['x-secrets-token', 'x-vault-token', 'authorization', 'content-type', 'x-vault-request', 'x-vault-wrap-ttl', 'x-vault-wrap-format'];
/** Mount-relative GET paths that issue credentials (and so a lease). */
const issuing = /(^|\/)creds\/|\/(token|key)$/;

/** Why a request must go to the authoritative region, or undefined when the local replica may answer it. */
export async function writeReason(core: Core, method: string, path: string, token: string | undefined): Promise<string | undefined> {
  if (!readMethods.has(method)) return `${method} is a write`;
  if (token) {
    const entry = await core.tokens.lookup(token);
    if (entry && entry.numUses > 0) return 'the token has limited uses';
  }
  const relative = path.replace(/^\/v1\//, '');
  const mount = await core.mounts.resolve(relative);
  if (!mount || mount.path.startsWith('sys/') || mount.path.startsWith('auth/')) return undefined;
  const inMount = relative.slice(mount.path.length);
  if (mount.type === 'kv') return mount.options.version === '2' ? undefined : 'a kv version 1 read may issue a lease';
  return issuing.test(inMount) ? 'the read issues credentials' : undefined;
}

export function forwardSecretsWrites(options: SecretsRegionOptions, core: () => Promise<Core>): MiddlewareHandler {
  return async (c, next) => {
    if (options.region === options.authoritativeRegion) return next();
    const token = tokenFromHeaders(c.req.raw.headers);
    const reason = await writeReason(await core(), c.req.method, c.req.path, token);
    if (!reason) return next();
    if (!options.authoritativeUrl) {
      return c.json({ errors: [`${reason}: it must go to region ${options.authoritativeRegion}, and no URL is configured for it`] }, 503);
    }
    const url = new URL(c.req.url);
    const target = new URL(url.pathname + url.search, options.authoritativeUrl);
    const headers = new Headers();
    for (const name of forwardedHeaders) {
      const value = c.req.header(name);
      if (value) headers.set(name, value);
    }
    headers.set('x-keyhaven-forwarded-from', options.region);
    let response: Response;
    try {
      response = await (options.forwardFetch ?? fetch)(target, {
        method: c.req.method,
        headers,
        ...(c.req.method === 'GET' || c.req.method === 'HEAD' ? {} : { body: await c.req.arrayBuffer() }),
      });
    } catch (error) {
      return c.json({ errors: [`failed to forward to region ${options.authoritativeRegion} (${options.authoritativeUrl}): ${(error as Error).message}`] }, 502);
    }
    const out = new Headers();
    for (const [name, value] of response.headers) {
      if (name.startsWith('x-') || name === 'content-type') out.set(name, value);
    }
    return new Response(response.status === 204 ? null : await response.arrayBuffer(), { status: response.status, headers: out });
  };
}
