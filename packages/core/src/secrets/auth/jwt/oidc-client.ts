import * as client from 'openid-client';
import type { Clock } from '../../../lib/clock.ts';
import type { JwtConfig } from './config.ts';
import { fetchWithCa } from '../../../lib/fetch-with-ca.ts';

/** Discovered provider metadata per config version (a config write makes a new version, so a new discovery). */
const discovered = new Map<string, Promise<client.ServerMetadata>>();
/** The provider's JWKS as openid-client caches it, kept across the per-request Configurations. */
const jwksCaches = new Map<string, client.ExportedJWKSCache>();

const insecure = (url: string) => url.toLowerCase().startsWith('http:');

/** Fetches `<oidc_discovery_url>/.well-known/openid-configuration`, checking the issuer it names. */
export async function discover(config: JwtConfig, secret: string): Promise<client.ServerMetadata> {
  const rp = await client.discovery(new URL(config.oidc_discovery_url), config.oidc_client_id || 'keyhaven-jwt-verifier', secret ? { client_secret: secret } : undefined, undefined, {
    ...(insecure(config.oidc_discovery_url) ? { execute: [client.allowInsecureRequests] } : {}),
    [client.customFetch]: fetchWithCa(config.oidc_discovery_ca_pem),
  });
  return rp.serverMetadata();
}

/** The provider metadata for this config version, discovered once per process. */
export function serverMetadata(config: JwtConfig, secret: string): Promise<client.ServerMetadata> {
  let pending = discovered.get(config.version);
  if (!pending) {
    if (discovered.size > 1000) discovered.clear();
    pending = discover(config, secret);
    discovered.set(config.version, pending);
    pending.catch(() => discovered.delete(config.version));
  }
  return pending;
}

/**
 * A relying-party Configuration for one callback. It is built per request so its notion of "now" is the
 * core's clock (tests move it), and it verifies ID token signatures against the provider's JWKS.
 */
export function relyingParty(config: JwtConfig, server: client.ServerMetadata, secret: string, clock: Clock): client.Configuration {
  const methods = server.token_endpoint_auth_methods_supported ?? ['client_secret_basic'];
  const auth = methods.includes('client_secret_basic') ? client.ClientSecretBasic(secret) : client.ClientSecretPost(secret);
  const algs = config.jwt_supported_algs.length > 0 ? config.jwt_supported_algs : ['RS256'];
  const rp = new client.Configuration(
    server,
    config.oidc_client_id,
    {
      client_secret: secret,
      ...(algs.length === 1 ? { id_token_signed_response_alg: algs[0] } : {}),
      [client.clockSkew]: Math.round((clock.now() - Date.now()) / 1000),
    },
    auth,
  );
  rp[client.customFetch] = fetchWithCa(config.oidc_discovery_ca_pem);
  if (insecure(config.oidc_discovery_url)) client.allowInsecureRequests(rp);
  client.enableNonRepudiationChecks(rp);
  if (config.oidc_response_types.includes('id_token')) client.useIdTokenResponseType(rp);
  const cached = jwksCaches.get(config.version);
  if (cached) client.setJwksCache(rp, cached);
  return rp;
}

/** Keeps what the Configuration fetched of the provider's JWKS for the next callback. */
export function keepJwksCache(config: JwtConfig, rp: client.Configuration): void {
  const cache = client.getJwksCache(rp);
  if (!cache) return;
  if (jwksCaches.size > 1000) jwksCaches.clear();
  jwksCaches.set(config.version, cache);
}
