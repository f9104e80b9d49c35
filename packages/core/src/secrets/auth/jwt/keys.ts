import { createPublicKey, type KeyObject, X509Certificate } from 'node:crypto';
import { compactVerify, createRemoteJWKSet, customFetch, decodeProtectedHeader, errors, importSPKI, type JWTVerifyGetKey } from 'jose';
import { fetchWithCa } from '../../../lib/fetch-with-ca.ts';
import { badRequest } from '../../framework/errors.ts';
import { algorithmsForKey, supportedAlgorithms } from './algorithms.ts';
import type { JwtConfig } from './config.ts';
import { serverMetadata } from './oidc-client.ts';

/** Checks a JWT's signature against the mount's keys; returns the verified payload bytes. */
export type SignatureCheck = (jwt: string, algorithms: string[]) => Promise<Uint8Array>;

type RemoteSet = ReturnType<typeof createRemoteJWKSet>;

/** A JWT whose signature or form is wrong: the login answers 400 with this message. */
export class TokenInvalid extends Error {}

const checks = new Map<string, Promise<SignatureCheck>>();

/** The signature check for this config version, built once per process (remote key sets cache their keys). */
export function signatureCheck(config: JwtConfig, secret: string): Promise<SignatureCheck> {
  let pending = checks.get(config.version);
  if (!pending) {
    if (checks.size > 1000) checks.clear();
    pending = buildCheck(config, secret).catch((error: unknown) => {
      throw error instanceof TokenInvalid ? error : new TokenInvalid(`could not fetch the signing keys: ${describe(error)}`);
    });
    checks.set(config.version, pending);
    pending.catch(() => checks.delete(config.version));
  }
  return pending;
}

/** Which kind of key source the config uses (exactly one is set). */
export function keySource(config: JwtConfig): 'pubkeys' | 'jwks' | 'pairs' | 'discovery' {
  if (config.jwt_validation_pubkeys.length > 0) return 'pubkeys';
  if (config.jwks_url) return 'jwks';
  if (config.jwks_pairs.length > 0) return 'pairs';
  return 'discovery';
}

/** A PEM public key (SPKI or PKCS#1) or a certificate carrying one; private keys are refused. */
export function parsePublicKeyPem(pem: string): KeyObject {
  if (pem.includes('-----BEGIN CERTIFICATE-----')) return new X509Certificate(pem).publicKey;
  if (!/-----BEGIN (RSA )?PUBLIC KEY-----/.test(pem)) throw new Error('data does not contain a PEM public key or certificate');
  return createPublicKey(pem);
}

/** The algorithms a login accepts: `jwt_supported_algs`, else every algorithm for JWT logins. */
export const loginAlgorithms = (config: JwtConfig): string[] =>
  config.jwt_supported_algs.length > 0 ? config.jwt_supported_algs : [...supportedAlgorithms];

/** On config write: fetch what the URLs point at, so a typo is a 400 now rather than failed logins later. */
export async function checkRemoteKeys(config: JwtConfig, secret: string): Promise<void> {
  const source = keySource(config);
  if (source === 'discovery') {
    try {
      await serverMetadata(config, secret);
    } catch (error) {
      throw badRequest(`error checking oidc discovery URL "${config.oidc_discovery_url}": ${describe(error)}`);
    }
    return;
  }
  const urls = source === 'jwks' ? [{ url: config.jwks_url, ca: config.jwks_ca_pem }] : source === 'pairs' ? config.jwks_pairs.map((pair) => ({ url: pair.jwks_url, ca: pair.jwks_ca_pem })) : [];
  const sets: RemoteSet[] = [];
  for (const { url, ca } of urls) {
    const set = remoteSet(url, ca);
    try {
      await set.reload();
    } catch (error) {
      throw badRequest(`error checking jwks URL "${url}": ${describe(error)}`);
    }
    sets.push(set);
  }
  // The key sets just fetched serve the first logins of this config version.
  if (sets.length > 0) checks.set(config.version, Promise.resolve(remoteCheck(sets)));
}

async function buildCheck(config: JwtConfig, secret: string): Promise<SignatureCheck> {
  switch (keySource(config)) {
    case 'pubkeys':
      return staticCheck(await verificationKeys(config.jwt_validation_pubkeys.map(parsePublicKeyPem)));
    case 'jwks':
      return remoteCheck([remoteSet(config.jwks_url, config.jwks_ca_pem)]);
    case 'pairs':
      return remoteCheck(config.jwks_pairs.map((pair) => remoteSet(pair.jwks_url, pair.jwks_ca_pem)));
    case 'discovery': {
      const server = await serverMetadata(config, secret);
      if (!server.jwks_uri) throw new TokenInvalid('the OIDC provider publishes no jwks_uri');
      return remoteCheck([remoteSet(server.jwks_uri, config.oidc_discovery_ca_pem)]);
    }
  }
}

/**
 * A remote set refetches when a token names a `kid` it does not hold (go-oidc's behaviour, which Vault has:
 * no cooldown, concurrent refetches share one request) and otherwise trusts its keys for ten minutes.
 */
function remoteSet(url: string, caPem: string): RemoteSet {
  return createRemoteJWKSet(new URL(url), { cooldownDuration: 0, cacheMaxAge: 600_000, [customFetch]: fetchWithCa(caPem) });
}

function headerAlgorithm(jwt: string, algorithms: string[]): string {
  let alg: unknown;
  try {
    alg = decodeProtectedHeader(jwt).alg;
  } catch {
    throw new TokenInvalid('malformed JWT: expected three base64url parts with a JSON header');
  }
  if (jwt.split('.').length !== 3) throw new TokenInvalid('malformed JWT: expected a compact JWS (three parts)');
  if (typeof alg !== 'string' || !algorithms.includes(alg)) {
    throw new TokenInvalid(`token signed with unsupported algorithm ${JSON.stringify(alg)}; allowed: ${algorithms.join(', ')}`);
  }
  return alg;
}

/** Each PEM key imported once per algorithm it can verify, as the WebCrypto keys jose works with natively. */
async function verificationKeys(keys: KeyObject[]): Promise<Map<string, CryptoKey[]>> {
  const byAlgorithm = new Map<string, CryptoKey[]>();
  for (const key of keys) {
    const spki = key.export({ type: 'spki', format: 'pem' }) as string;
    for (const alg of algorithmsForKey(key)) byAlgorithm.set(alg, [...(byAlgorithm.get(alg) ?? []), await importSPKI(spki, alg)]);
  }
  return byAlgorithm;
}

function staticCheck(byAlgorithm: Map<string, CryptoKey[]>): SignatureCheck {
  return async (jwt, algorithms) => {
    const alg = headerAlgorithm(jwt, algorithms);
    for (const key of byAlgorithm.get(alg) ?? []) {
      try {
        return (await compactVerify(jwt, key, { algorithms: [alg] })).payload;
      } catch (error) {
        if (!(error instanceof errors.JWSSignatureVerificationFailed)) throw asInvalid(error);
      }
    }
    throw new TokenInvalid('failed to verify id token signature');
  };
}

function remoteCheck(sets: RemoteSet[]): SignatureCheck {
  return async (jwt, algorithms) => {
    const alg = headerAlgorithm(jwt, algorithms);
    let lastError: unknown;
    for (const set of sets) {
      try {
        return await verifyWithSet(jwt, set, alg);
      } catch (error) {
        lastError = error;
      }
    }
    throw asInvalid(lastError);
  };
}

async function verifyWithSet(jwt: string, set: JWTVerifyGetKey, alg: string): Promise<Uint8Array> {
  try {
    return (await compactVerify(jwt, set, { algorithms: [alg] })).payload;
  } catch (error) {
    if (!(error instanceof errors.JWKSMultipleMatchingKeys)) throw error;
    for await (const key of error as unknown as AsyncIterable<CryptoKey>) {
      try {
        return (await compactVerify(jwt, key, { algorithms: [alg] })).payload;
      } catch (inner) {
        if (!(inner instanceof errors.JWSSignatureVerificationFailed)) throw inner;
      }
    }
    throw new errors.JWSSignatureVerificationFailed();
  }
}

function asInvalid(error: unknown): TokenInvalid {
  if (error instanceof TokenInvalid) return error;
  if (error instanceof errors.JWSSignatureVerificationFailed) return new TokenInvalid('failed to verify id token signature');
  if (error instanceof errors.JWKSNoMatchingKey) return new TokenInvalid('no key in the key set matches the token (kid, alg)');
  if (error instanceof errors.JWSInvalid) return new TokenInvalid(`malformed JWT: ${error.message}`);
  if (error instanceof errors.JOSEError) return new TokenInvalid(`failed to verify token: ${error.message}`);
  return new TokenInvalid(`failed to fetch the signing keys: ${describe(error)}`);
}

export function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
  return `${error.message}${cause}`;
}
