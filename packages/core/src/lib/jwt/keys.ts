/**
 * Where a JWT's signing keys come from, and the signature check built from them once per configuration version:
 * static PEM keys, one or more JWKS URLs, or the `jwks_uri` an OIDC provider's discovery document names.
 */
import { constants, createPublicKey, KeyObject, verify, X509Certificate } from 'node:crypto';
import { createRemoteJWKSet, customFetch, errors, type JWTVerifyGetKey } from 'jose';
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
      return staticCheck(verificationKeys(source.keys.map(parsePublicKeyPem)));
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
 * A remote set trusts its keys for ten minutes. A token naming a `kid` it does not hold makes it fetch again
 * (go-oidc's behaviour, which Vault and Nomad have), but not for every such token: go-oidc has no cooldown, so
 * anonymous logins with made-up `kid`s would each download the key set (issue 39 §3). Here a set may refetch for an
 * unknown `kid` twice at once and then once every 30 s (`refetchAllowed`); jose's own cooldown is off (it would count
 * from any fetch, the config write's included, and refuse a key rotated in right after). Its body is capped
 * (`fetchWithCa`: 256 KiB).
 */
function remoteSet(url: string, caPem: string): RemoteSet {
  return createRemoteJWKSet(new URL(url), {
    cooldownDuration: Number.POSITIVE_INFINITY,
    cacheMaxAge: 600_000,
    [customFetch]: fetchWithCa(caPem),
  });
}

/** Refetches for an unknown `kid` a set may make at once, and how often one more is allowed (ms). */
const refetchBurst = 2;
const refetchEveryMs = 30_000;
const refetches = new WeakMap<JWTVerifyGetKey, { left: number; at: number }>();

/** Whether `set` may refetch now for an unknown `kid` (a token bucket per set, per process); takes the refetch. */
function refetchAllowed(set: JWTVerifyGetKey, now = Date.now()): boolean {
  const bucket = refetches.get(set) ?? { left: refetchBurst, at: now };
  const earned = Math.floor((now - bucket.at) / refetchEveryMs);
  if (earned > 0) {
    bucket.left = Math.min(refetchBurst, bucket.left + earned);
    bucket.at += earned * refetchEveryMs;
  }
  refetches.set(set, bucket);
  if (bucket.left === 0) return false;
  bucket.left--;
  return true;
}

/** A compact JWS taken apart: its `alg` (one of the allowed), the bytes signed, the payload and the signature. */
interface CompactJws {
  alg: string;
  header: Record<string, unknown>;
  /** The three parts as the token has them. */
  encoded: { protected: string; payload: string; signature: string };
  signingInput: Buffer;
  signature: Buffer;
}

const base64urlPart = /^[A-Za-z0-9_-]*$/;

/**
 * Takes a compact JWS apart, refusing what go-jose (under cap/jwt) refuses: not three base64url parts, a header that
 * is not a JSON object, an `alg` not allowed, critical header parameters, an unencoded payload.
 */
function parseCompact(jwt: string, algorithms: readonly string[]): CompactJws {
  const parts = jwt.split('.');
  if (parts.length !== 3) throw new TokenInvalid('malformed JWT: expected a compact JWS (three parts)');
  const [encodedHeader, payload, signature] = parts as [string, string, string];
  if (!base64urlPart.test(encodedHeader) || !base64urlPart.test(payload) || !base64urlPart.test(signature))
    throw new TokenInvalid('malformed JWT: expected three base64url parts with a JSON header');
  let header: unknown;
  try {
    header = JSON.parse(Buffer.from(encodedHeader, 'base64url').toString('utf8'));
  } catch {
    header = undefined;
  }
  if (!header || typeof header !== 'object' || Array.isArray(header))
    throw new TokenInvalid('malformed JWT: expected three base64url parts with a JSON header');
  const { alg, crit, b64 } = header as Record<string, unknown>;
  if (typeof alg !== 'string' || !algorithms.includes(alg)) {
    throw new TokenInvalid(
      `token signed with unsupported algorithm ${JSON.stringify(alg)}; allowed: ${algorithms.join(', ')}`,
    );
  }
  if (crit !== undefined)
    throw new TokenInvalid('malformed JWT: critical header parameters ("crit") are not supported');
  if (b64 !== undefined && b64 !== true)
    throw new TokenInvalid('malformed JWT: an unencoded payload ("b64": false) is not supported');
  return {
    alg,
    header: header as Record<string, unknown>,
    encoded: { protected: encodedHeader, payload, signature },
    signingInput: Buffer.from(`${encodedHeader}.${payload}`),
    signature: Buffer.from(signature, 'base64url'),
  };
}

/**
 * How node:crypto verifies each JWS algorithm (RFC 7518 §3): the digest, PSS padding with a salt of the digest's
 * length, and for ECDSA the size of r and s in the signature (JWS sends them side by side; node wants DER).
 */
const verifyOptions: Record<string, { digest: string | null; saltLength?: number; ecdsaPart?: number }> = {
  RS256: { digest: 'sha256' },
  RS384: { digest: 'sha384' },
  RS512: { digest: 'sha512' },
  PS256: { digest: 'sha256', saltLength: 32 },
  PS384: { digest: 'sha384', saltLength: 48 },
  PS512: { digest: 'sha512', saltLength: 64 },
  ES256: { digest: 'sha256', ecdsaPart: 32 },
  ES384: { digest: 'sha384', ecdsaPart: 48 },
  ES512: { digest: 'sha512', ecdsaPart: 66 },
  EdDSA: { digest: null },
};

/**
 * A JWS ECDSA signature (r then s, each `part` bytes) as the DER `SEQUENCE { INTEGER r, INTEGER s }` node:crypto
 * takes by default; undefined when it is not two parts long. (Given as a bare KeyObject, a key verifies about 8 µs
 * faster than inside an options object, which node probes at length.)
 */
function derSignature(signature: Buffer, part: number): Buffer | undefined {
  if (signature.length !== 2 * part) return undefined;
  const integer = (bytes: Buffer) => {
    let start = 0;
    while (start < bytes.length - 1 && bytes[start] === 0) start++;
    const trimmed = bytes.subarray(start);
    const value = (trimmed[0] as number) & 0x80 ? Buffer.concat([Buffer.of(0), trimmed]) : trimmed;
    return Buffer.concat([Buffer.of(0x02, value.length), value]);
  };
  const body = Buffer.concat([integer(signature.subarray(0, part)), integer(signature.subarray(part))]);
  const length = body.length < 0x80 ? Buffer.of(body.length) : Buffer.of(0x81, body.length);
  return Buffer.concat([Buffer.of(0x30), length, body]);
}

/** A verification key with what its type allows, read once (each KeyObject getter costs microseconds). */
interface VerificationKey {
  key: KeyObject;
  algorithms: readonly string[];
  /** An RSA key's modulus length. */
  bits?: number;
}

const described = new WeakMap<KeyObject, VerificationKey>();
function verificationKey(key: KeyObject): VerificationKey {
  let found = described.get(key);
  if (!found) {
    const bits = key.asymmetricKeyDetails?.modulusLength;
    found = { key, algorithms: algorithmsForKey(key), ...(bits === undefined ? {} : { bits }) };
    described.set(key, found);
  }
  return found;
}

/**
 * Whether `key` signed `jws`: node:crypto's one-shot verify, on this thread. (jose's WebCrypto verify queues each
 * check on libuv's pool behind a promise, which costs a login more CPU than the RSA check itself: issue 28.) The key
 * must be of the algorithm's type (`algorithmsForKey`), and an RSA key at least 2048 bits, as jose requires.
 */
function signedBy(jws: CompactJws, { key, algorithms, bits }: VerificationKey): boolean {
  const options = verifyOptions[jws.alg];
  if (!options || !algorithms.includes(jws.alg)) return false;
  if (bits !== undefined && bits < 2048) throw new TokenInvalid(`${jws.alg} requires an RSA key of 2048 bits or more`);
  try {
    if (options.ecdsaPart !== undefined) {
      const der = derSignature(jws.signature, options.ecdsaPart);
      return der !== undefined && verify(options.digest, jws.signingInput, key, der);
    }
    if (options.saltLength !== undefined) {
      const pss = { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: options.saltLength };
      return verify(options.digest, jws.signingInput, pss, jws.signature);
    }
    return verify(options.digest, jws.signingInput, key, jws.signature);
  } catch {
    return false;
  }
}

/** Each PEM key once per algorithm it can verify. */
function verificationKeys(keys: KeyObject[]): Map<string, VerificationKey[]> {
  const byAlgorithm = new Map<string, VerificationKey[]>();
  for (const key of keys.map(verificationKey))
    for (const alg of key.algorithms) byAlgorithm.set(alg, [...(byAlgorithm.get(alg) ?? []), key]);
  return byAlgorithm;
}

const verified = (jws: CompactJws): Uint8Array => Buffer.from(jws.encoded.payload, 'base64url');

function staticCheck(byAlgorithm: Map<string, VerificationKey[]>): SignatureCheck {
  return async (jwt, algorithms) => {
    const jws = parseCompact(jwt, algorithms);
    for (const key of byAlgorithm.get(jws.alg) ?? []) if (signedBy(jws, key)) return verified(jws);
    throw new TokenInvalid('failed to verify id token signature');
  };
}

function remoteCheck(sets: RemoteSet[]): SignatureCheck {
  return async (jwt, algorithms) => {
    const jws = parseCompact(jwt, algorithms);
    let lastError: unknown;
    for (const set of sets) {
      try {
        return await verifyWithSet(jws, set);
      } catch (error) {
        lastError = error;
      }
    }
    throw asInvalid(lastError);
  };
}

/** The key set picks the candidate keys (by `kid` and `alg`, refetching for an unknown `kid`); each is tried. */
async function verifyWithSet(jws: CompactJws, set: RemoteSet): Promise<Uint8Array> {
  let candidates: CryptoKey[];
  const pick = () => set(jws.header as Parameters<JWTVerifyGetKey>[0], jws.encoded) as Promise<CryptoKey>;
  try {
    try {
      candidates = [await pick()];
    } catch (error) {
      // An unknown `kid`: the set is fetched again, within its allowance, and asked once more.
      if (!(error instanceof errors.JWKSNoMatchingKey) || !refetchAllowed(set)) throw error;
      await set.reload();
      candidates = [await pick()];
    }
  } catch (error) {
    if (!(error instanceof errors.JWKSMultipleMatchingKeys)) throw error;
    candidates = [];
    for await (const key of error as unknown as AsyncIterable<CryptoKey>) candidates.push(key);
  }
  for (const key of candidates) if (signedBy(jws, fromSet(key))) return verified(jws);
  throw new TokenInvalid('failed to verify id token signature');
}

/** The verification key of a key set's CryptoKey, made once per key. */
const fromSets = new WeakMap<CryptoKey, VerificationKey>();
function fromSet(key: CryptoKey): VerificationKey {
  let found = fromSets.get(key);
  if (!found) {
    found = verificationKey(KeyObject.from(key));
    fromSets.set(key, found);
  }
  return found;
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
