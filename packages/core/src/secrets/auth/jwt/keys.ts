import { supportedAlgorithms } from '../../../lib/jwt/algorithms.ts';
import type { JwtKeySource } from '../../../lib/jwt/keys.ts';

/** The part of the mount's config (`auth/jwt/config`) that says which keys and algorithms it trusts. */
export interface JwtKeyConfig {
  jwt_validation_pubkeys: string[];
  jwks_url: string;
  jwks_ca_pem: string;
  jwks_pairs: Array<{ jwks_url: string; jwks_ca_pem: string }>;
  oidc_discovery_url: string;
  oidc_discovery_ca_pem: string;
  jwt_supported_algs: string[];
}

/** The keys the mount's config trusts (exactly one kind is set): PEM keys, JWKS URLs, or the discovered provider's. */
export function keySource(config: JwtKeyConfig): JwtKeySource {
  if (config.jwt_validation_pubkeys.length > 0) return { kind: 'pem', keys: config.jwt_validation_pubkeys };
  if (config.jwks_url) return { kind: 'jwks', sets: [{ url: config.jwks_url, caPem: config.jwks_ca_pem }] };
  if (config.jwks_pairs.length > 0)
    return { kind: 'jwks', sets: config.jwks_pairs.map((pair) => ({ url: pair.jwks_url, caPem: pair.jwks_ca_pem })) };
  return { kind: 'discovery', discoveryUrl: config.oidc_discovery_url, caPem: config.oidc_discovery_ca_pem };
}

/** The algorithms a login accepts: `jwt_supported_algs`, else every algorithm for JWT logins. */
export const loginAlgorithms = (config: JwtKeyConfig): readonly string[] =>
  config.jwt_supported_algs.length > 0 ? config.jwt_supported_algs : supportedAlgorithms;

/** The provider as the OIDC flow reaches it. */
export const providerOf = (config: JwtKeyConfig) => ({
  discoveryUrl: config.oidc_discovery_url,
  caPem: config.oidc_discovery_ca_pem,
});
