import { generateKeyPairSync } from 'node:crypto';
import { exportJWK, type JWK } from 'jose';
import { ConditionFailed } from '../../storage/store.ts';
import type { MountStorage } from '../mounts/mount-storage.ts';

/**
 * Plugin identity tokens (Vault's workload identity federation): a secrets engine signs a short-lived JWT
 * with its mount's own RSA key, and a cloud provider verifies it against the keys published at
 * `identity/oidc/plugins/.well-known/keys`. Kept apart from any engine so `sys/` can publish without
 * bundling the engines.
 */

const identityKeyKey = 'identity-token-key';

/** Where plugin identity tokens say they come from; the public keys are `identityTokenJwks`. */
export const identityTokenIssuer = () =>
  `${(process.env.KEYHAVEN_API_ADDR ?? 'http://127.0.0.1:8200').replace(/\/+$/, '')}/v1/identity/oidc/plugins`;

export async function identityKey(storage: MountStorage): Promise<JWK> {
  const stored = await storage.get<{ key: string }>(identityKeyKey);
  if (stored) return JSON.parse(storage.open(identityKeyKey, stored.key)) as JWK;
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = { ...(await exportJWK(privateKey)), kid: crypto.randomUUID(), alg: 'RS256' };
  try {
    await storage.put(identityKeyKey, { key: storage.seal(identityKeyKey, JSON.stringify(jwk)) }, { ifAbsent: true });
    return jwk;
  } catch (error) {
    if (error instanceof ConditionFailed) return identityKey(storage);
    throw error;
  }
}

/** The public keys that verify this mount's identity tokens, as a JWKS (for the workload identity pool provider). */
export async function identityTokenJwks(storage: MountStorage): Promise<{ keys: JWK[] }> {
  return { keys: [publicHalf(await identityKey(storage))] };
}

/** The public halves of every mount's identity key that exists (none is created by reading). */
export async function publishedIdentityKeys(storages: MountStorage[]): Promise<{ keys: JWK[] }> {
  const keys: JWK[] = [];
  for (const storage of storages) {
    const stored = await storage.get<{ key: string }>(identityKeyKey);
    if (stored) keys.push(publicHalf(JSON.parse(storage.open(identityKeyKey, stored.key)) as JWK));
  }
  return { keys };
}

function publicHalf(jwk: JWK): JWK {
  const { d: _d, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, ...pub } = jwk;
  return pub;
}
