import * as z from 'zod';
import { goParseBool, goToLower, goTrimSpace } from '../../lib/go-strings.ts';

/**
 * Vault's framework field types that decode their input weakly, one helper per type, as Vault's
 * `sdk/framework/field_data.go` decodes them: through mapstructure's `WeakDecode` (`WeaklyTypedInput`), with the
 * comma-split hook for `TypeCommaStringSlice`, and for `TypeKVPairs` a second try as a list of `"k=v"` strings. A body's
 * numbers reach Vault as `json.Number`, whose kind is a string to mapstructure: a number becomes a string, a bool or an
 * int through its text. Here a number's text is JavaScript's (`1e3` arrives as 1000, so it reads "1000" where Vault
 * keeps "1e3"); an integer beyond ±(2^53 - 1), whose digits JSON.parse has already lost, is refused rather than
 * altered.
 *
 * Durations (`TypeDurationSecond`) are not here: Vault parses them with `parseutil.ParseDurationSecond`, not weakly
 * (`fields.ts`'s `duration`). Free-form data (a kv secret) is no field at all.
 *
 * Each helper is a zod schema whose input is any JSON value (its JSON Schema, for the OpenAPI document, says what it
 * takes) and whose output is what Vault's handler would get. `vault-field-types.test.ts` holds the table of cases against Vault's rules.
 */

type Decoded<T> = { value: T } | { problem: string; at?: PropertyKey[] };

const kindOf = (value: unknown): string =>
  value === null ? 'null' : Array.isArray(value) ? 'list' : typeof value === 'object' ? 'map' : typeof value;

const isMap = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A JSON number's text as mapstructure reads a `json.Number`; undefined for one whose digits were lost in parsing. */
function numberText(value: number): string | undefined {
  if (Number.isInteger(value) && !Number.isSafeInteger(value)) return undefined;
  return String(value);
}

const lostDigits = (value: number) =>
  `the number ${value} is beyond ±${Number.MAX_SAFE_INTEGER} and cannot be read exactly: send it as a string`;

/** mapstructure's weak decode into a Go string: strings as they are, bools as "1"/"0", numbers as their text. */
function weakString(value: unknown): Decoded<string> {
  if (typeof value === 'string') return { value };
  if (typeof value === 'boolean') return { value: value ? '1' : '0' };
  if (typeof value === 'number') {
    const text = numberText(value);
    return text === undefined ? { problem: lostDigits(value) } : { value: text };
  }
  return { problem: `expected a string, got a ${kindOf(value)}` };
}

/** mapstructure's weak decode into a Go bool: a string (or a number's text) as `strconv.ParseBool` reads it, "" false. */
function weakBool(value: unknown): Decoded<boolean> {
  if (typeof value === 'boolean') return { value };
  const text = typeof value === 'string' ? value : typeof value === 'number' ? numberText(value) : undefined;
  if (text === undefined) return { problem: `expected a boolean, got a ${kindOf(value)}` };
  if (text === '') return { value: false };
  const parsed = goParseBool(text);
  return parsed === undefined
    ? { problem: `cannot parse ${JSON.stringify(text.slice(0, 40))} as a boolean` }
    : { value: parsed };
}

/** Go's integer literal syntax, which `strconv.ParseInt(s, 0, 64)` reads: sign, base prefix, `_` between digits. */
const goIntegerLiteral =
  /^[+-]?(?:0[xX](?:_?[0-9a-fA-F])+|0[bB](?:_?[01])+|0[oO](?:_?[0-7])+|0(?:_?[0-7])*|[1-9](?:_?\d)*)$/;
const int64Min = -(2n ** 63n);
const int64Max = 2n ** 63n - 1n;

/** `strconv.ParseInt(s, 0, 64)`: a legacy leading `0` is octal. */
function parseGoInt(text: string): bigint | undefined {
  if (!goIntegerLiteral.test(text)) return undefined;
  const negative = text.startsWith('-');
  const unsigned = text.replace(/^[+-]/, '').replaceAll('_', '');
  const legacyOctal = /^0[0-7]+$/.test(unsigned);
  const magnitude = BigInt(legacyOctal ? `0o${unsigned.slice(1)}` : unsigned);
  const result = negative ? -magnitude : magnitude;
  return result < int64Min || result > int64Max ? undefined : result;
}

/** mapstructure's weak decode into a Go int64: numbers that are integers, bools as 1/0, strings as Go integer literals ("" is 0). */
function weakInt(value: unknown): Decoded<number> {
  if (typeof value === 'boolean') return { value: value ? 1 : 0 };
  if (typeof value === 'number') {
    if (!Number.isInteger(value)) return { problem: `cannot parse ${value} as an integer` };
    if (!Number.isSafeInteger(value)) return { problem: lostDigits(value) };
    return { value };
  }
  if (typeof value !== 'string') return { problem: `expected an integer, got a ${kindOf(value)}` };
  const parsed = parseGoInt(value === '' ? '0' : value);
  if (parsed === undefined) return { problem: `cannot parse ${JSON.stringify(value.slice(0, 40))} as an integer` };
  if (parsed > BigInt(Number.MAX_SAFE_INTEGER) || parsed < BigInt(-Number.MAX_SAFE_INTEGER))
    return { problem: `${value.slice(0, 40)} is beyond ±${Number.MAX_SAFE_INTEGER}` };
  return { value: Number(parsed) };
}

/** mapstructure's weak decode into `[]string`: a list's elements each weakly, any other value as a list of itself, an empty map as an empty list. */
function weakStringList(value: unknown): Decoded<string[]> {
  const elements = Array.isArray(value) ? value : isMap(value) && Object.keys(value).length === 0 ? [] : [value];
  const out: string[] = [];
  for (const [index, element] of elements.entries()) {
    // mapstructure sets a nil element to the zero string.
    const decoded = element === null ? { value: '' } : weakString(element);
    if ('problem' in decoded) return Array.isArray(value) ? { problem: decoded.problem, at: [index] } : decoded;
    out.push(decoded.value);
  }
  return { value: out };
}

/** mapstructure's weak decode into `map[string]string`: a map's values each weakly (null as ""), an empty list as an empty map, a list of maps merged. */
function weakStringMap(value: unknown): Decoded<Record<string, string>> {
  const maps = isMap(value) ? [value] : Array.isArray(value) && value.every(isMap) ? value : undefined;
  if (!maps) return { problem: `expected a map, got a ${kindOf(value)}` };
  const out: Record<string, string> = {};
  for (const map of maps)
    for (const [key, inner] of Object.entries(map)) {
      const decoded = inner === null ? { value: '' } : weakString(inner);
      if ('problem' in decoded) return { problem: decoded.problem, at: [key] };
      Object.defineProperty(out, key, { value: decoded.value, enumerable: true, writable: true, configurable: true });
    }
  return { value: out };
}

/**
 * A helper's schema: any JSON value goes to `decode` as parsed (no copy, so a key such as `__proto__` stays a key);
 * `accepts` is the JSON Schema the OpenAPI document shows for its input.
 */
function vaultType<T>(accepts: Record<string, unknown>, decode: (value: unknown) => Decoded<T>) {
  return z
    .unknown()
    .meta(accepts)
    .transform((value, ctx): T => {
      const decoded = value === undefined ? { problem: 'is required' } : decode(value);
      if ('problem' in decoded) {
        ctx.addIssue({ code: 'custom', message: decoded.problem, ...(decoded.at ? { path: decoded.at } : {}) });
        return z.NEVER;
      }
      return decoded.value;
    });
}

const scalar = { type: ['string', 'number', 'boolean'] };
const anyJson = { type: ['string', 'number', 'boolean', 'array', 'object'] };

/** `TypeString`: a string, also a bool ("1"/"0") or a number (its text). */
export const typeString = vaultType(scalar, weakString);

/** `TypeLowerCaseString`: `TypeString`, lower-cased as Go's `strings.ToLower`. */
export const typeLowerCaseString = vaultType(scalar, (value) => {
  const decoded = weakString(value);
  return 'problem' in decoded ? decoded : { value: goToLower(decoded.value) };
});

/**
 * Vault's name rule (`framework.GenericNameRegex`, and `TypeNameString`'s): letters, digits, `_`, `-` and `.`,
 * starting and ending with a letter, digit or `_` (Go's `\w` is ASCII). The names of roles follow it.
 */
export const vaultNamePattern = /^\w(?:[\w.-]*\w)?$/;

/** `TypeNameString`: `TypeString` matching `^\w(([\w-.]+)?\w)?$` (`vaultNamePattern`). */
export const typeNameString = vaultType(scalar, (value) => {
  const decoded = weakString(value);
  if ('problem' in decoded) return decoded;
  return vaultNamePattern.test(decoded.value) ? decoded : { problem: 'field does not match the formatting rules' };
});

/** `TypeBool`: a bool, also a string (or a number) as `strconv.ParseBool` reads it; "" is false. */
export const typeBool = vaultType(scalar, weakBool);

/** `TypeInt` (and `TypeInt64`): an integer, also a bool (1/0) or a string as a Go integer literal ("0x1f", "0o17", "010" is 8, "1_000"; "" is 0). */
export const typeInt = vaultType(scalar, weakInt);

/** `TypeMap`: a map, also an empty list (an empty map) or a list of maps (merged, later keys winning). */
export const typeMap = vaultType({ type: ['object', 'array'] }, (value): Decoded<Record<string, unknown>> => {
  if (isMap(value)) return { value };
  if (Array.isArray(value) && value.every(isMap)) {
    const merged: Record<string, unknown> = {};
    for (const map of value)
      for (const [key, inner] of Object.entries(map))
        Object.defineProperty(merged, key, { value: inner, enumerable: true, writable: true, configurable: true });
    return { value: merged };
  }
  return { problem: `expected a map, got a ${kindOf(value)}` };
});

/** `TypeSlice`: a list, also any other value as a list of itself; an empty map is an empty list. */
export const typeSlice = vaultType(anyJson, (value): Decoded<unknown[]> => {
  if (Array.isArray(value)) return { value };
  if (isMap(value) && Object.keys(value).length === 0) return { value: [] };
  return { value: [value] };
});

/** `TypeStringSlice`: a list of strings (each element weakly a string), also one value as a list of itself (no comma split; "" is empty); each trimmed as Go's `strings.TrimSpace`. */
export const typeStringSlice = vaultType(
  { type: ['array', 'string', 'number', 'boolean'] },
  (value): Decoded<string[]> => {
    if (value === '') return { value: [] };
    const decoded = weakStringList(value);
    return 'problem' in decoded ? decoded : { value: decoded.value.map(goTrimSpace) };
  },
);

/** `TypeCommaStringSlice`: `TypeStringSlice`, except that a string (or a number's text) is split on commas. */
export const typeCommaStringSlice = vaultType(
  { type: ['array', 'string', 'number', 'boolean'] },
  (value): Decoded<string[]> => {
    const text = typeof value === 'number' ? numberText(value) : typeof value === 'string' ? value : undefined;
    if (typeof value === 'number' && text === undefined) return { problem: lostDigits(value) };
    if (text === '') return { value: [] };
    const decoded = weakStringList(text === undefined ? value : text.split(','));
    return 'problem' in decoded ? decoded : { value: decoded.value.map(goTrimSpace) };
  },
);

/**
 * `TypeKVPairs`: a map of strings (each value weakly a string: `{"log_raw": true}` is `{"log_raw": "1"}`), or else a
 * list of `"key=value"` strings (one string alone is a list of itself), split at the first `=`, the key not empty.
 */
export const typeKvPairs = vaultType(
  { type: ['object', 'array', 'string'] },
  (value): Decoded<Record<string, string>> => {
    if (Array.isArray(value) && value.length === 0) return { value: {} };
    const asMap = weakStringMap(value);
    if (!('problem' in asMap)) return asMap;
    const asList = weakStringList(value);
    if ('problem' in asList) return isMap(value) ? asMap : asList;
    const pairs: Record<string, string> = {};
    for (const pair of asList.value) {
      const cut = pair.indexOf('=');
      if (cut <= 0) return { problem: `invalid key pair ${JSON.stringify(pair.slice(0, 80))}` };
      Object.defineProperty(pairs, pair.slice(0, cut), {
        value: pair.slice(cut + 1),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return { value: pairs };
  },
);

/**
 * Not a field type: what mapstructure's `WeakDecode` makes of a value for a struct's `map[string]string` (the token
 * store decodes `auth/token/create`'s body so): a map of strings, each value weakly, or a list of maps merged; no
 * `"k=v"` list.
 */
export const weakStringMapping = vaultType({ type: ['object', 'array'] }, (value) =>
  Array.isArray(value) && value.length === 0 ? { value: {} } : weakStringMap(value),
);
