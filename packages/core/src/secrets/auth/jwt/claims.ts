/** The role's rules over a verified token's claims: bound claims, the user and group names, the metadata mapped from claims. */
import { globMatches } from '../../../lib/glob.ts';
import { ClaimError, type Claims, claimAt } from '../../../lib/jwt/claims.ts';
import type { JwtRole } from './roles.ts';

type Scalar = string | number | boolean;

function normalizeList(raw: unknown): unknown[] | undefined {
  if (Array.isArray(raw)) return raw;
  if (typeof raw === 'string' || typeof raw === 'boolean' || typeof raw === 'number') return [raw];
  return undefined;
}

/** Every bound claim must be present and match one of its values (lists on either side: any match). */
export function checkBoundClaims(claims: Claims, role: JwtRole): void {
  for (const [name, expected] of Object.entries(role.bound_claims)) {
    const actual = claimAt(claims, name);
    if (actual === undefined) throw new ClaimError(`error validating claims: claim "${name}" is missing`);
    const actualValues = normalizeList(actual);
    if (!actualValues)
      throw new ClaimError(`error validating claims: claim "${name}" is not a string, bool, number or list`);
    const expectedValues = normalizeList(expected) as Scalar[];
    const found = expectedValues.some((want) =>
      actualValues.some((have) =>
        role.bound_claims_type === 'glob'
          ? typeof have === 'string' && globMatches(want as string, have)
          : have === want,
      ),
    );
    if (!found)
      throw new ClaimError(`error validating claims: claim "${name}" does not match any associated bound claim values`);
  }
}

/** The identity the token names: `user_claim` (a JSON pointer when the role says so), which must be a string. */
export function userName(claims: Claims, role: JwtRole): string {
  const raw = role.user_claim_json_pointer
    ? claimAt(claims, role.user_claim)
    : Object.hasOwn(claims, role.user_claim)
      ? claims[role.user_claim]
      : undefined;
  if (raw === undefined || raw === null) throw new ClaimError(`claim "${role.user_claim}" not found in token`);
  if (typeof raw !== 'string') throw new ClaimError(`claim "${role.user_claim}" could not be converted to string`);
  if (raw === '') throw new ClaimError(`claim "${role.user_claim}" is empty`);
  return raw;
}

/** Group alias names from `groups_claim`: a string or a list of strings; empty names are skipped. */
export function groupNames(claims: Claims, role: JwtRole): string[] {
  if (!role.groups_claim) return [];
  const raw = claimAt(claims, role.groups_claim);
  if (raw === undefined) throw new ClaimError(`"${role.groups_claim}" claim not found in token`);
  const values = normalizeList(raw);
  if (!values) throw new ClaimError(`"${role.groups_claim}" claim could not be converted to string list`);
  const groups: string[] = [];
  for (const value of values) {
    if (typeof value !== 'string')
      throw new ClaimError(`value ${JSON.stringify(value)} in groups claim could not be parsed as string`);
    if (value !== '' && !groups.includes(value)) groups.push(value);
  }
  return groups;
}

/** `claim_mappings` into token and alias metadata, plus `role`. Numbers and booleans are written as text. */
export function claimMetadata(claims: Claims, role: JwtRole, roleName: string): Record<string, string> {
  const metadata: Record<string, string> = {};
  for (const [claim, target] of Object.entries(role.claim_mappings)) {
    const value = claimAt(claims, claim);
    if (value === undefined) continue;
    if (typeof value === 'string') metadata[target] = value;
    else if (typeof value === 'number' || typeof value === 'boolean') metadata[target] = String(value);
    else throw new ClaimError(`error converting claim '${claim}' to string`);
  }
  metadata.role = roleName;
  return metadata;
}
