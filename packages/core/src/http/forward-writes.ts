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
import type { Core } from '../composition/secrets-core.ts';
import { tokenFromHeaders } from '../secrets/tokens/caller.ts';
import { type HttpReply, type HttpRequest, jsonReply } from '../front/exchange.ts';
import { type ForwardOptions, forwardRequest } from '../front/forward.ts';

/** Regions of the secrets service: the authoritative URL is its secrets service's. */
export type SecretsRegionOptions = ForwardOptions;

/** From `KEYHAVEN_REGION`, `KEYHAVEN_AUTHORITATIVE_REGION` and `KEYHAVEN_AUTHORITATIVE_SECRETS_URL`; none set: one region. */
export function secretsRegionsFromEnvironment(env: NodeJS.ProcessEnv): SecretsRegionOptions | undefined {
  if (
    !env.KEYHAVEN_REGION ||
    !env.KEYHAVEN_AUTHORITATIVE_REGION ||
    env.KEYHAVEN_REGION === env.KEYHAVEN_AUTHORITATIVE_REGION
  )
    return undefined;
  return {
    region: env.KEYHAVEN_REGION,
    authoritativeRegion: env.KEYHAVEN_AUTHORITATIVE_REGION,
    ...(env.KEYHAVEN_AUTHORITATIVE_SECRETS_URL ? { authoritativeUrl: env.KEYHAVEN_AUTHORITATIVE_SECRETS_URL } : {}),
  };
}

const readMethods = new Set(['GET', 'HEAD', 'LIST']);
const forwardedHeaders = [
  'x-secrets-token',
  'x-vault-token',
  'authorization',
  'content-type',
  'x-vault-request',
  'x-vault-wrap-ttl',
  'x-vault-wrap-format',
];
/** Mount-relative GET paths that issue credentials (and so a lease). */
const issuing = /(^|\/)creds\/|\/(token|key)$/;

/** Why a request must go to the authoritative region, or undefined when the local replica may answer it. */
export async function writeReason(
  core: Core,
  method: string,
  path: string,
  token: string | undefined,
): Promise<string | undefined> {
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

/** How the secrets service forwards (`front/forward.ts`): Vault's token and request headers, its error convention. */
const secretsForwarding = (what: string) => ({
  headers: forwardedHeaders,
  fromHeader: 'x-keyhaven-forwarded-from',
  refuse: (status: number, message: string) => jsonReply(status, { errors: [message] }),
  what,
});

/**
 * In a replica region, the authoritative region's answer to a request that must be made there (`writeReason`);
 * undefined when this region answers it. The caller's headers that matter and its body are sent on; the answer's
 * status, `x-…` headers, content type and body come back as they are (`front/forward.ts`).
 */
export async function forwardIfWrite(
  options: SecretsRegionOptions,
  core: Core,
  request: HttpRequest,
): Promise<HttpReply | undefined> {
  if (options.region === options.authoritativeRegion) return undefined;
  const reason = await writeReason(core, request.method, request.path, tokenFromHeaders(request.headers));
  if (!reason) return undefined;
  return forwardRequest(options, secretsForwarding(reason), request);
}
