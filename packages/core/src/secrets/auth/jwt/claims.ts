import type { JwtRole } from './roles.ts';

/** A claim that does not satisfy the role: the login answers 400 with this message. */
export class ClaimError extends Error {}

export type Claims = Record<string, unknown>;

/**
 * RFC 6901 JSON pointer lookup (`/groups/0`, `/https:~1~1example.com~1team`). Hand-written: the rule is ten
 * lines and the libraries that offer it bring whole JSON-schema stacks.
 */
export function jsonPointer(document: unknown, pointer: string): unknown {
  if (pointer === '') return document;
  let current: unknown = document;
  for (const raw of pointer.slice(1).split('/')) {
    const token = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    if (Array.isArray(current)) {
      if (!/^(0|[1-9]\d*)$/.test(token)) return undefined;
      current = current[Number(token)];
    } else if (current !== null && typeof current === 'object' && Object.hasOwn(current, token)) {
      current = (current as Record<string, unknown>)[token];
    } else {
      return undefined;
    }
  }
  return current;
}

/** Vault's `getClaim`: a name starting with `/` is a JSON pointer, anything else a top-level claim. */
export function getClaim(claims: Claims, name: string): unknown {
  const value = name.startsWith('/') ? jsonPointer(claims, name) : Object.hasOwn(claims, name) ? claims[name] : undefined;
  return value === null ? undefined : value;
}

/** `bound_issuer`, `bound_subject`, `bound_audiences`, and Vault's refusal of an `aud` no role asked for. */
export function checkExpectedClaims(claims: Claims, expected: { issuer: string; subject: string; audiences: string[]; strictAudience: boolean }): void {
  if (expected.issuer && claims.iss !== expected.issuer) throw new ClaimError('error validating token: invalid issuer (iss) claim');
  if (expected.subject && claims.sub !== expected.subject) throw new ClaimError('error validating token: invalid subject (sub) claim');
  const aud = claims.aud;
  if (aud !== undefined && typeof aud !== 'string' && !(Array.isArray(aud) && aud.every((item) => typeof item === 'string'))) {
    throw new ClaimError('error validating token: invalid audience (aud) claim: must be a string or a list of strings');
  }
  const audiences = aud === undefined ? [] : Array.isArray(aud) ? (aud as string[]) : aud === '' ? [] : [aud];
  if (expected.audiences.length > 0) {
    if (!audiences.some((item) => expected.audiences.includes(item))) {
      throw new ClaimError('error validating token: invalid audience (aud) claim: audience provided in the token does not match any of the expected audiences');
    }
  } else if (expected.strictAudience && audiences.length > 0) {
    throw new ClaimError('audience claim found in JWT but no audiences bound to the role');
  }
}

/**
 * `exp`, `nbf` and `iat` with the role's three leeways (0 picks the default, a negative value disables one).
 * A token with none of the three is refused; one without `exp` lives `expiration_leeway` past its start.
 */
export function checkTimes(claims: Claims, role: JwtRole, nowSeconds: number): void {
  const pick = (value: number, fallback: number) => (value < 0 ? 0 : value === 0 ? fallback : value);
  const skew = pick(role.clock_skew_leeway, 60);
  const expLeeway = pick(role.expiration_leeway, 150);
  const nbfLeeway = pick(role.not_before_leeway, 150);
  const time = (name: 'exp' | 'nbf' | 'iat') => {
    const value = claims[name];
    if (value === undefined) return undefined;
    if (typeof value !== 'number' || !Number.isFinite(value)) throw new ClaimError(`error validating token: the ${name} claim must be a number of seconds`);
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
  if (nbf !== undefined && nowSeconds < nbf - nbfLeeway - skew) throw new ClaimError('error validating token: token not valid yet (nbf)');
  if (iat !== undefined && nowSeconds < iat - skew) throw new ClaimError('error validating token: token issued in the future (iat)');
}

type Scalar = string | number | boolean;

function normalizeList(raw: unknown): unknown[] | undefined {
  if (Array.isArray(raw)) return raw;
  if (typeof raw === 'string' || typeof raw === 'boolean' || typeof raw === 'number') return [raw];
  return undefined;
}

/** go-glob's rule, which Vault uses: `*` matches any run of characters and nothing else is special. */
export function globMatch(pattern: string, value: string): boolean {
  const parts = pattern.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'));
  return new RegExp(`^${parts.join('.*')}$`, 's').test(value);
}

/** Every bound claim must be present and match one of its values (lists on either side: any match). */
export function checkBoundClaims(claims: Claims, role: JwtRole): void {
  for (const [name, expected] of Object.entries(role.bound_claims)) {
    const actual = getClaim(claims, name);
    if (actual === undefined) throw new ClaimError(`error validating claims: claim "${name}" is missing`);
    const actualValues = normalizeList(actual);
    if (!actualValues) throw new ClaimError(`error validating claims: claim "${name}" is not a string, bool, number or list`);
    const expectedValues = normalizeList(expected) as Scalar[];
    const found = expectedValues.some((want) =>
      actualValues.some((have) => (role.bound_claims_type === 'glob' ? typeof have === 'string' && globMatch(want as string, have) : have === want)),
    );
    if (!found) throw new ClaimError(`error validating claims: claim "${name}" does not match any associated bound claim values`);
  }
}

/** The identity the token names: `user_claim` (a JSON pointer when the role says so), which must be a string. */
export function userName(claims: Claims, role: JwtRole): string {
  const raw = role.user_claim_json_pointer ? getClaim(claims, role.user_claim) : Object.hasOwn(claims, role.user_claim) ? claims[role.user_claim] : undefined;
  if (raw === undefined || raw === null) throw new ClaimError(`claim "${role.user_claim}" not found in token`);
  if (typeof raw !== 'string') throw new ClaimError(`claim "${role.user_claim}" could not be converted to string`);
  if (raw === '') throw new ClaimError(`claim "${role.user_claim}" is empty`);
  return raw;
}

/** Group alias names from `groups_claim`: a string or a list of strings; empty names are skipped. */
export function groupNames(claims: Claims, role: JwtRole): string[] {
  if (!role.groups_claim) return [];
  const raw = getClaim(claims, role.groups_claim);
  if (raw === undefined) throw new ClaimError(`"${role.groups_claim}" claim not found in token`);
  const values = normalizeList(raw);
  if (!values) throw new ClaimError(`"${role.groups_claim}" claim could not be converted to string list`);
  const groups: string[] = [];
  for (const value of values) {
    if (typeof value !== 'string') throw new ClaimError(`value ${JSON.stringify(value)} in groups claim could not be parsed as string`);
    if (value !== '' && !groups.includes(value)) groups.push(value);
  }
  return groups;
}

/** `claim_mappings` into token and alias metadata, plus `role`. Numbers and booleans are written as text. */
export function claimMetadata(claims: Claims, role: JwtRole, roleName: string): Record<string, string> {
  const metadata: Record<string, string> = {};
  for (const [claim, target] of Object.entries(role.claim_mappings)) {
    const value = getClaim(claims, claim);
    if (value === undefined) continue;
    if (typeof value === 'string') metadata[target] = value;
    else if (typeof value === 'number' || typeof value === 'boolean') metadata[target] = String(value);
    else throw new ClaimError(`error converting claim '${claim}' to string`);
  }
  metadata.role = roleName;
  return metadata;
}
