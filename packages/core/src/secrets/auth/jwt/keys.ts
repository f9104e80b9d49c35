import { supportedAlgorithms } from '../../../lib/jwt/algorithms.ts';
import type { KeySource } from '../../../lib/jwt/keys.ts';
import type { JwtConfig } from './config.ts';

/** The keys the mount's config trusts (exactly one kind is set): PEM keys, JWKS URLs, or the discovered provider's. */
export function keySource(config: JwtConfig): KeySource {
  if (config.jwt_validation_pubkeys.length > 0) return { kind: 'pem', keys: config.jwt_validation_pubkeys };
  if (config.jwks_url) return { kind: 'jwks', sets: [{ url: config.jwks_url, caPem: config.jwks_ca_pem }] };
  if (config.jwks_pairs.length > 0) return { kind: 'jwks', sets: config.jwks_pairs.map((pair) => ({ url: pair.jwks_url, caPem: pair.jwks_ca_pem })) };
  return { kind: 'discovery', discoveryUrl: config.oidc_discovery_url, caPem: config.oidc_discovery_ca_pem };
}

/** The algorithms a login accepts: `jwt_supported_algs`, else every algorithm for JWT logins. */
export const loginAlgorithms = (config: JwtConfig): readonly string[] => (config.jwt_supported_algs.length > 0 ? config.jwt_supported_algs : supportedAlgorithms);

/** The provider as the OIDC flow reaches it. */
export const providerOf = (config: JwtConfig) => ({ discoveryUrl: config.oidc_discovery_url, caPem: config.oidc_discovery_ca_pem });
