/**
 * An OpenID Connect provider as both services' logins see it: its discovered metadata (cached per configuration
 * version, so a config write discovers again) and a relying-party `Configuration` per request, built on
 * openid-client, that verifies ID token signatures and keeps the provider's JWKS across requests.
 */
import * as client from 'openid-client';
import type { Clock } from '../clock.ts';
import { fetchWithCa } from '../fetch-with-ca.ts';

/** Discovered provider metadata per configuration version. */
const discovered = new Map<string, Promise<client.ServerMetadata>>();
/** The provider's JWKS as openid-client caches it, per configuration version, kept across the per-request Configurations. */
const jwksCaches = new Map<string, client.ExportedJWKSCache>();
const maxEntries = 1000;

const insecure = (url: string) => url.toLowerCase().startsWith('http:');

/** Where and how to reach a provider: its discovery URL (the issuer) and the CA bundle to trust for it ('' for the system's). */
export interface ProviderLocation {
  discoveryUrl: string;
  caPem: string;
}

/**
 * `<discoveryUrl>/.well-known/openid-configuration`, fetched once per `version` (a key naming the configuration
 * it comes from); openid-client checks that the issuer it names is the discovery URL. A failed discovery is forgotten.
 */
export function providerMetadata(version: string, provider: ProviderLocation): Promise<client.ServerMetadata> {
  let pending = discovered.get(version);
  if (!pending) {
    if (discovered.size > maxEntries) discovered.clear();
    pending = client
      // Discovery reads the provider's metadata only; the client id a Configuration needs is not sent anywhere.
      .discovery(new URL(provider.discoveryUrl), 'keyhaven-discovery', undefined, undefined, {
        ...(insecure(provider.discoveryUrl) ? { execute: [client.allowInsecureRequests] } : {}),
        [client.customFetch]: fetchWithCa(provider.caPem),
      })
      .then((rp) => rp.serverMetadata());
    discovered.set(version, pending);
    pending.catch(() => discovered.delete(version));
  }
  return pending;
}

export interface RelyingPartyOptions extends ProviderLocation {
  clientId: string;
  clientSecret: string;
  /** The ID token algorithms allowed; none given means RS256 (OpenID Connect's default). */
  algorithms: readonly string[];
  /** The implicit flow (`response_type=id_token`) instead of the code flow. */
  idTokenResponse?: boolean;
}

/**
 * A relying-party Configuration for one request: its notion of "now" is `clock` (tests move it), it verifies the
 * signature of ID tokens from the token endpoint too (openid-client trusts those on TLS alone by default), and it
 * starts from the JWKS the last request of the same `version` fetched (see `keepJwksCache`).
 */
export function relyingParty(
  version: string,
  server: client.ServerMetadata,
  options: RelyingPartyOptions,
  clock: Clock,
): client.Configuration {
  const methods = server.token_endpoint_auth_methods_supported ?? ['client_secret_basic'];
  const auth = methods.includes('client_secret_basic')
    ? client.ClientSecretBasic(options.clientSecret)
    : client.ClientSecretPost(options.clientSecret);
  const algs = options.algorithms.length > 0 ? options.algorithms : ['RS256'];
  const rp = new client.Configuration(
    server,
    options.clientId,
    {
      client_secret: options.clientSecret,
      ...(algs.length === 1 ? { id_token_signed_response_alg: algs[0] } : {}),
      [client.clockSkew]: Math.round((clock.now() - Date.now()) / 1000),
    },
    auth,
  );
  rp[client.customFetch] = fetchWithCa(options.caPem);
  if (insecure(options.discoveryUrl)) client.allowInsecureRequests(rp);
  client.enableNonRepudiationChecks(rp);
  if (options.idTokenResponse) client.useIdTokenResponseType(rp);
  const cached = jwksCaches.get(version);
  if (cached) client.setJwksCache(rp, cached);
  return rp;
}

/** Keeps what the Configuration fetched of the provider's JWKS for the next request of the same `version`. */
export function keepJwksCache(version: string, rp: client.Configuration): void {
  const cache = client.getJwksCache(rp);
  if (!cache) return;
  if (jwksCaches.size > maxEntries) jwksCaches.clear();
  jwksCaches.set(version, cache);
}
