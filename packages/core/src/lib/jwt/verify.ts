/**
 * Verifies a JWT as cap/jwt's `Validator.Validate` does for Vault's and Nomad's JWT logins: the signature
 * against the configured keys, then the bound issuer, subject and audiences, then `exp`, `nbf` and `iat` with
 * their leeways.
 */
import { ClaimError, type Claims } from './claims.ts';
import { type JwtKeySource, signatureCheck, TokenInvalid } from './keys.ts';

/**
 * Leeways in seconds, as cap/jwt takes them: 0 picks the default (60 s of clock skew, 150 s for `exp` and
 * `nbf`), a negative value disables one.
 */
export interface Leeways {
  clockSkew?: number;
  expiration?: number;
  notBefore?: number;
}

export interface Expected {
  /** The `alg` values a token may be signed with. */
  algorithms: readonly string[];
  /** When not empty, `iss` must be one of these. */
  issuers?: readonly string[];
  /** When set, `sub` must be this. */
  subject?: string;
  /** When not empty, `aud` must name one of these. */
  audiences?: readonly string[];
  /** No audiences expected and the token names some: refused (Vault's JWT login, not its OIDC callback). */
  refuseUnexpectedAudience?: boolean;
  leeways?: Leeways;
  /** Now, in seconds since the epoch. */
  now: number;
}

/**
 * The claims of a JWT that verifies against `source` (its keys cached per `version`, see `signatureCheck`) and
 * meets `expected`. Throws TokenInvalid (signature, form, keys) or ClaimError (issuer, subject, audience, times).
 */
export async function verifyJwt(
  jwt: string,
  keys: { version: string; source: JwtKeySource },
  expected: Expected,
): Promise<Claims> {
  const check = await signatureCheck(keys.version, keys.source);
  const claims = parseClaims(await check(jwt, expected.algorithms));
  checkExpectedClaims(claims, expected);
  checkTimes(claims, expected.leeways ?? {}, expected.now);
  return claims;
}

function parseClaims(payload: Uint8Array): Claims {
  let claims: unknown;
  try {
    claims = JSON.parse(new TextDecoder().decode(payload));
  } catch {
    throw new TokenInvalid('the JWT payload is not JSON');
  }
  if (claims === null || typeof claims !== 'object' || Array.isArray(claims))
    throw new TokenInvalid('the JWT payload is not a JSON object');
  return claims as Claims;
}

/** The bound issuer(s), subject and audiences. */
export function checkExpectedClaims(
  claims: Claims,
  expected: Pick<Expected, 'issuers' | 'subject' | 'audiences' | 'refuseUnexpectedAudience'>,
): void {
  const issuers = expected.issuers ?? [];
  if (issuers.length > 0 && !(typeof claims.iss === 'string' && issuers.includes(claims.iss)))
    throw new ClaimError('error validating token: invalid issuer (iss) claim');
  if (expected.subject && claims.sub !== expected.subject)
    throw new ClaimError('error validating token: invalid subject (sub) claim');
  const aud = claims.aud;
  if (
    aud !== undefined &&
    typeof aud !== 'string' &&
    !(Array.isArray(aud) && aud.every((item) => typeof item === 'string'))
  ) {
    throw new ClaimError('error validating token: invalid audience (aud) claim: must be a string or a list of strings');
  }
  const audiences = aud === undefined ? [] : Array.isArray(aud) ? (aud as string[]) : aud === '' ? [] : [aud];
  const bound = expected.audiences ?? [];
  if (bound.length > 0) {
    if (!audiences.some((item) => bound.includes(item))) {
      throw new ClaimError(
        'error validating token: invalid audience (aud) claim: audience provided in the token does not match any of the expected audiences',
      );
    }
  } else if (expected.refuseUnexpectedAudience && audiences.length > 0) {
    throw new ClaimError('audience claim found in JWT but no audiences bound to the role');
  }
}

/**
 * `exp`, `nbf` and `iat` with the three leeways. A token with none of the three is refused; one without `exp`
 * lives `expiration` leeway past its start.
 */
export function checkTimes(claims: Claims, leeways: Leeways, nowSeconds: number): void {
  const pick = (value: number | undefined, fallback: number) =>
    value === undefined || value === 0 ? fallback : value < 0 ? 0 : value;
  const skew = pick(leeways.clockSkew, 60);
  const expLeeway = pick(leeways.expiration, 150);
  const nbfLeeway = pick(leeways.notBefore, 150);
  const time = (name: 'exp' | 'nbf' | 'iat') => {
    const value = claims[name];
    if (value === undefined) return undefined;
    if (typeof value !== 'number' || !Number.isFinite(value))
      throw new ClaimError(`error validating token: the ${name} claim must be a number of seconds`);
    return value;
  };
  const exp = time('exp');
  const nbf = time('nbf');
  const iat = time('iat');
  if (exp === undefined && nbf === undefined && iat === undefined) {
    throw new ClaimError('error validating token: no issue time, notbefore, or expiration time encoded in token');
  }
  const expiry = exp ?? Math.max(iat ?? 0, nbf ?? 0);
  if (nowSeconds > expiry + expLeeway + skew) throw new ClaimError('error validating token: token is expired (exp)');
  if (nbf !== undefined && nowSeconds < nbf - nbfLeeway - skew)
    throw new ClaimError('error validating token: token not valid yet (nbf)');
  if (iat !== undefined && nowSeconds < iat - skew)
    throw new ClaimError('error validating token: token issued in the future (iat)');
}
