/**
 * Where a JWT's signing keys come from, and the signature check built from them once per configuration version:
 * static PEM keys, one or more JWKS URLs, or the `jwks_uri` an OIDC provider's discovery document names.
 */
import { createPublicKey, type KeyObject, X509Certificate } from 'node:crypto';
import {
  compactVerify,
  createRemoteJWKSet,
  customFetch,
  decodeProtectedHeader,
  errors,
  importSPKI,
  type JWTVerifyGetKey,
} from 'jose';
import { fetchWithCa } from '../fetch-with-ca.ts';
import { algorithmsForKey } from './algorithms.ts';
import { providerMetadata } from './provider.ts';

/** The keys a login trusts; a CA bundle of '' means the system's CAs. */
export type JwtKeySource =
  /** PEM public keys or certificates (Vault's `jwt_validation_pubkeys`, Nomad's `JWTValidationPubKeys`). */
  | { kind: 'pem'; keys: string[] }
  /** Key sets at these URLs; a token verifies against any of them (`jwks_url`, `jwks_pairs`, `JWKSURL`). */
  | { kind: 'jwks'; sets: Array<{ url: string; caPem: string }> }
  /** The `jwks_uri` of the provider discovered at `discoveryUrl` (`oidc_discovery_url`, `OIDCDiscoveryURL`). */
  | { kind: 'discovery'; discoveryUrl: string; caPem: string };

/** Checks a JWT's signature (and that its `alg` is one of `algorithms`); the verified payload bytes. */
export type SignatureCheck = (jwt: string, algorithms: readonly string[]) => Promise<Uint8Array>;

/** A JWT whose signature or form is wrong, or whose keys could not be fetched; the message says which. */
export class TokenInvalid extends Error {}

type RemoteSet = ReturnType<typeof createRemoteJWKSet>;

const checks = new Map<string, Promise<SignatureCheck>>();
const maxEntries = 1000;

/**
 * The signature check for `source`, built once per process for `version` (a key naming the configuration the
 * source comes from: a config write makes a new one). Remote key sets cache their keys; a source that fails
 * to load is forgotten, so the next login tries again.
 */
export function signatureCheck(version: string, source: JwtKeySource): Promise<SignatureCheck> {
  let pending = checks.get(version);
  if (!pending) {
    if (checks.size > maxEntries) checks.clear();
    pending = buildCheck(version, source).catch((error: unknown) => {
      throw error instanceof TokenInvalid
        ? error
        : new TokenInvalid(`could not fetch the signing keys: ${describeError(error)}`);
    });
    checks.set(version, pending);
    pending.catch(() => checks.delete(version));
  }
  return pending;
}

/**
 * Fetches what a source's URLs point at, so a configuration naming a wrong one is refused when it is written
 * rather than at every login; the key sets fetched serve the first logins of `version`. Throws an Error naming
 * the URL that failed.
 */
export async function fetchKeySource(version: string, source: JwtKeySource): Promise<void> {
  if (source.kind === 'pem') return;
  if (source.kind === 'discovery') {
    try {
      await providerMetadata(version, source);
    } catch (error) {
      throw new Error(`error checking oidc discovery URL "${source.discoveryUrl}": ${describeError(error)}`);
    }
    return;
  }
  const sets: RemoteSet[] = [];
  for (const { url, caPem } of source.sets) {
    const set = remoteSet(url, caPem);
    try {
      await set.reload();
    } catch (error) {
      throw new Error(`error checking jwks URL "${url}": ${describeError(error)}`);
    }
    sets.push(set);
  }
  checks.set(version, Promise.resolve(remoteCheck(sets)));
}

/** A PEM public key (SPKI or PKCS#1) or a certificate carrying one; private keys are refused. */
export function parsePublicKeyPem(pem: string): KeyObject {
  if (pem.includes('-----BEGIN CERTIFICATE-----')) return new X509Certificate(pem).publicKey;
  if (!/-----BEGIN (RSA )?PUBLIC KEY-----/.test(pem))
    throw new Error('data does not contain a PEM public key or certificate');
  return createPublicKey(pem);
}

async function buildCheck(version: string, source: JwtKeySource): Promise<SignatureCheck> {
  switch (source.kind) {
    case 'pem':
      return staticCheck(await verificationKeys(source.keys.map(parsePublicKeyPem)));
    case 'jwks':
      return remoteCheck(source.sets.map((set) => remoteSet(set.url, set.caPem)));
    case 'discovery': {
      const server = await providerMetadata(version, source);
      if (!server.jwks_uri) throw new TokenInvalid('the OIDC provider publishes no jwks_uri');
      return remoteCheck([remoteSet(server.jwks_uri, source.caPem)]);
    }
  }
}

/**
 * A remote set refetches when a token names a `kid` it does not hold (go-oidc's behaviour, which Vault and Nomad
 * have: no cooldown, concurrent refetches share one request) and otherwise trusts its keys for ten minutes.
 */
function remoteSet(url: string, caPem: string): RemoteSet {
  return createRemoteJWKSet(new URL(url), {
    cooldownDuration: 0,
    cacheMaxAge: 600_000,
    [customFetch]: fetchWithCa(caPem),
  });
}

function headerAlgorithm(jwt: string, algorithms: readonly string[]): string {
  let alg: unknown;
  try {
    alg = decodeProtectedHeader(jwt).alg;
  } catch {
    throw new TokenInvalid('malformed JWT: expected three base64url parts with a JSON header');
  }
  if (jwt.split('.').length !== 3) throw new TokenInvalid('malformed JWT: expected a compact JWS (three parts)');
  if (typeof alg !== 'string' || !algorithms.includes(alg)) {
    throw new TokenInvalid(
      `token signed with unsupported algorithm ${JSON.stringify(alg)}; allowed: ${algorithms.join(', ')}`,
    );
  }
  return alg;
}

/** Each PEM key imported once per algorithm it can verify, as the WebCrypto keys jose works with natively. */
async function verificationKeys(keys: KeyObject[]): Promise<Map<string, CryptoKey[]>> {
  const byAlgorithm = new Map<string, CryptoKey[]>();
  for (const key of keys) {
    const spki = key.export({ type: 'spki', format: 'pem' }) as string;
    for (const alg of algorithmsForKey(key))
      byAlgorithm.set(alg, [...(byAlgorithm.get(alg) ?? []), await importSPKI(spki, alg)]);
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
  if (error instanceof errors.JWSSignatureVerificationFailed)
    return new TokenInvalid('failed to verify id token signature');
  if (error instanceof errors.JWKSNoMatchingKey)
    return new TokenInvalid('no key in the key set matches the token (kid, alg)');
  if (error instanceof errors.JWSInvalid) return new TokenInvalid(`malformed JWT: ${error.message}`);
  if (error instanceof errors.JOSEError) return new TokenInvalid(`failed to verify token: ${error.message}`);
  return new TokenInvalid(`failed to fetch the signing keys: ${describeError(error)}`);
}

/** An error's message with its cause's (fetch failures say why only in the cause). */
export function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
  return `${error.message}${cause}`;
}
