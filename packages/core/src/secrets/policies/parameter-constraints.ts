import { isDeepStrictEqual } from 'node:util';
import { badRequest } from '../../lib/errors.ts';
import { goToLower, goTrimSpace } from '../../lib/go-strings.ts';
import type { DecodedValue } from '../../lib/hcl-v1-decode.ts';

/** A parameter name (lower-cased) and the values a rule names for it; no values means any value. */
export type ParameterValues = Array<[name: string, values: DecodedValue[]]>;

/**
 * A path rule's `allowed_parameters`, `denied_parameters` and `required_parameters`, as stored with the
 * policy. Pairs rather than objects, so that no parameter name (`__proto__`, `""`) is special anywhere.
 */
export interface ParameterRules {
  allowed?: ParameterValues;
  denied?: ParameterValues;
  required?: string[];
}

/**
 * The constraints of a path rule as Vault keeps them (names lower-cased with Go's simple mapping, so `"İd"` is
 * `id`), or `undefined` when they could not refuse a request. Names with a `*` that is not the whole name are
 * refused before this (checkParameterName).
 */
export function parameterRules(
  pattern: string,
  allowed: Map<string, DecodedValue[]> | undefined,
  denied: Map<string, DecodedValue[]> | undefined,
  required: string[],
): ParameterRules | undefined {
  const allowedValues = lowerCased(pattern, 'allowed_parameters', allowed);
  const deniedValues = lowerCased(pattern, 'denied_parameters', denied);
  // As Vault, empty maps and lists constrain nothing, not even when merged with other rules.
  if (allowedValues.length === 0 && deniedValues.length === 0 && required.length === 0) return undefined;
  return {
    ...(allowedValues.length > 0 ? { allowed: allowedValues } : {}),
    ...(deniedValues.length > 0 ? { denied: deniedValues } : {}),
    ...(required.length > 0 ? { required } : {}),
  };
}

/**
 * Vault lower-cases names while copying its map, so of two names that differ only in case one wins at random
 * (Go's map order). Such a rule has no single meaning: it is refused.
 */
function lowerCased(pattern: string, key: string, values: Map<string, DecodedValue[]> | undefined): ParameterValues {
  const out = new Map<string, DecodedValue[]>();
  const spelled = new Map<string, string>();
  for (const [name, list] of values ?? []) {
    const lower = goToLower(name);
    const other = spelled.get(lower);
    if (other !== undefined) {
      throw badRequest(
        `failed to parse policy: path "${pattern}": ${key}: "${other}" and "${name}" name the same parameter`,
      );
    }
    spelled.set(lower, name);
    out.set(lower, list);
  }
  return [...out];
}

/**
 * Refuses a parameter name with a `*` that is not the whole name (`"foo*"`, `"*x"`), and any `*` in a required
 * parameter's name. Vault matches such a name literally, never as the glob it reads as, so a denied `"secret_*"`
 * would deny nothing; Vault's nested-constraints change (#16309, unmerged) refuses these names too.
 */
export function checkParameterName(pattern: string, key: string, name: string, wholeStarAllowed: boolean): void {
  if (!name.includes('*') || (wholeStarAllowed && name === '*')) return;
  const rule = wholeStarAllowed
    ? 'a "*" must be the whole name ("*": every parameter)'
    : 'a required parameter name cannot contain "*"';
  throw badRequest(
    `failed to parse policy: path "${pattern}": ${key}: parameter name ${JSON.stringify(name)} is refused: ${rule}; names are not patterns`,
  );
}

/** Current vault/acl.go lower-cases `policies` and `token_policies` values before checking them (normalizePolicyParameterValue). */
function normalizedValue(lowerName: string, value: unknown): unknown {
  if (lowerName !== 'policies' && lowerName !== 'token_policies') return value;
  if (typeof value === 'string') return goToLower(value);
  if (Array.isArray(value)) return value.map((element) => (typeof element === 'string' ? goToLower(element) : element));
  return value;
}

/**
 * How the requested path decodes a parameter it declares: the value its handler would get (`"t"`, `1` and `true` are
 * all `true` to a boolean field), or undefined when the path declares no such field or the value does not decode.
 */
export type FieldDecoder = (name: string, value: unknown) => unknown;

/**
 * The merged constraints of every rule for one path pattern, and the check Vault's ACL makes with them on
 * read, create, update and patch requests.
 *
 * Vault compares the values as sent, before its fields decode them weakly, so a denied `true` passes as `"1"`, `"t"`
 * or `1` and the handler still gets `true` (and a denied `"root"` as `["root "]`). Here a denied value is also refused
 * in any spelling that decodes, through the requested field, to what the denied value itself decodes to. Allowed values
 * are matched as Vault matches them, as sent: a spelling Vault would refuse stays refused.
 */
export class ParameterConstraints {
  private allowed: Map<string, DecodedValue[]> | undefined;
  private denied: Map<string, DecodedValue[]> | undefined;
  private readonly required: string[] = [];

  /** Vault's merge: values are unioned per name, an empty list (any value) wins, required names are unioned. */
  add(rules: ParameterRules): void {
    if (rules.allowed) this.allowed = mergeValues(this.allowed, rules.allowed);
    if (rules.denied) this.denied = mergeValues(this.denied, rules.denied);
    for (const name of rules.required ?? []) if (!this.required.includes(name)) this.required.push(name);
  }

  /** Whether a request with these parameters (body fields, or query parameters of a read) passes. */
  permits(data: Record<string, unknown>, decodeField?: FieldDecoder): boolean {
    // Go's strings.ToLower of the rule's name; the request's names are looked up as given.
    for (const name of this.required) if (!Object.hasOwn(data, goToLower(name))) return false;
    const entries = Object.entries(data);
    if (entries.length === 0) return true;
    if (this.denied) {
      if (this.denied.has('*')) return false;
      for (const [name, value] of entries) {
        const lower = goToLower(name);
        const values = this.denied.get(lower);
        if (!values) continue;
        if (deniedValue(normalizedValue(lower, value), values)) return false;
        if (decodeField && deniedOnceDecoded(name, lower, value, values, decodeField)) return false;
      }
    }
    if (!this.allowed) return true;
    const anyName = this.allowed.has('*');
    if (anyName && this.allowed.size === 1) return true;
    for (const [name, value] of entries) {
      const lower = goToLower(name);
      const values = this.allowed.get(lower);
      if (values ? !allowedValue(normalizedValue(lower, value), values) : !anyName) return false;
    }
    return true;
  }
}

/**
 * Whether `value`, decoded as the requested field decodes it, is one of the denied values decoded the same way: a
 * decoded list is denied when any of its elements is (as a list is as sent), strings match as globs.
 */
function deniedOnceDecoded(
  name: string,
  lowerName: string,
  value: unknown,
  values: DecodedValue[],
  decodeField: FieldDecoder,
): boolean {
  if (values.length === 0) return false; // any value is denied: already refused above
  const decoded = decodeField(name, value);
  if (decoded === undefined) return false;
  const requested = asElements(normalizedValue(lowerName, decoded));
  const denied = values.flatMap((deniedValue) => {
    const once = decodeField(name, deniedValue);
    return once === undefined ? [] : asElements(normalizedValue(lowerName, once));
  });
  return requested.some((element) =>
    denied.some((candidate) =>
      typeof candidate === 'string' && typeof element === 'string'
        ? globMatches(candidate, element)
        : isDeepStrictEqual(candidate, element),
    ),
  );
}

const asElements = (value: unknown): unknown[] => (Array.isArray(value) ? value : [value]);

function mergeValues(
  existing: Map<string, DecodedValue[]> | undefined,
  incoming: ParameterValues,
): Map<string, DecodedValue[]> {
  const merged = new Map(existing);
  for (const [name, values] of incoming) {
    const before = merged.get(name);
    merged.set(name, values.length === 0 || before?.length === 0 ? [] : [...values, ...(before ?? [])]);
  }
  return merged;
}

/**
 * As Vault (1.21 and later): the whole value matches one of the values, or, for a list or a comma-separated
 * string, every element does. So an empty list or an empty string is allowed whatever the values.
 */
function allowedValue(value: unknown, values: DecodedValue[]): boolean {
  if (values.length === 0 || matchesOne(value, values)) return true;
  return elementsOf(value)?.every((element) => matchesOne(element, values)) ?? false;
}

/** As Vault: the whole value matches one of the values, or, for a list or a comma-separated string, any element does. */
function deniedValue(value: unknown, values: DecodedValue[]): boolean {
  if (values.length === 0 || matchesOne(value, values)) return true;
  return elementsOf(value)?.some((element) => matchesOne(element, values)) ?? false;
}

/**
 * A list's elements, or a string's comma-separated parts (parseutil.ParseCommaStringSlice: none for "", each part
 * trimmed by Go's strings.TrimSpace, so U+0085 and U+00A0 are trimmed and U+FEFF is not).
 */
function elementsOf(value: unknown): unknown[] | undefined {
  if (Array.isArray(value)) return value;
  if (typeof value !== 'string') return undefined;
  return value === '' ? [] : value.split(',').map(goTrimSpace);
}

/** Strings match a value with a leading and/or trailing `*` as a glob; anything else must be the same JSON value. */
function matchesOne(value: unknown, values: DecodedValue[]): boolean {
  return values.some((candidate) =>
    typeof candidate === 'string' && typeof value === 'string'
      ? globMatches(candidate, value)
      : sameValue(candidate, value),
  );
}

function globMatches(glob: string, value: string): boolean {
  if (glob.length < 2) return glob === value;
  const prefix = glob.startsWith('*');
  const suffix = glob.endsWith('*');
  if (prefix && suffix) return value.includes(glob.slice(1, -1));
  if (prefix) return value.endsWith(glob.slice(1));
  if (suffix) return value.startsWith(glob.slice(0, -1));
  return glob === value;
}

/**
 * reflect.DeepEqual between a policy value and a request value. Vault decodes request numbers as json.Number,
 * which never equals the int or float64 a policy decodes to: a number matches nothing, at any depth.
 */
function sameValue(a: unknown, b: unknown): boolean {
  if (typeof a === 'number' || typeof b === 'number') return false;
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    return (
      Array.isArray(a) &&
      Array.isArray(b) &&
      a.length === b.length &&
      a.every((item, index) => sameValue(item, b[index]))
    );
  }
  const keys = Object.keys(a);
  return (
    keys.length === Object.keys(b).length &&
    keys.every(
      (key) =>
        Object.hasOwn(b, key) && sameValue((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key]),
    )
  );
}
