import { randomInt } from 'node:crypto';
import { HclSyntaxError, keyName, type Node, parseHclV1, tokenValue } from './hcl-v1.ts';

/**
 * Vault's password policies: a length and `charset` rules, each with a minimum number of characters
 * from its charset. Passwords are drawn from the union of the rules' charsets with the CSPRNG.
 *
 * ```hcl
 * length = 20
 * rule "charset" {
 *   charset   = "abcdefghijklmnopqrstuvwxyz"
 *   min-chars = 1
 * }
 * ```
 */

export interface CharsetRule {
  charset: string;
  minChars: number;
}

export interface PasswordPolicy {
  length: number;
  rules: CharsetRule[];
}

export class PasswordPolicyError extends Error {}

export const minPolicyLength = 4;
export const maxPolicyLength = 100;
export const base62Charset = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

/** Parses and validates a policy given as HCL or JSON; throws PasswordPolicyError naming what is wrong. */
export function parsePasswordPolicy(text: string): PasswordPolicy {
  const { length, rules } = fromDocument(text);
  if (length === undefined) throw new PasswordPolicyError('"length" is required');
  if (typeof length !== 'number' || !Number.isInteger(length))
    throw new PasswordPolicyError('"length" must be an integer');
  if (length < minPolicyLength || length > maxPolicyLength) {
    throw new PasswordPolicyError(`"length" must be between ${minPolicyLength} and ${maxPolicyLength}, got ${length}`);
  }
  if (rules.length === 0)
    throw new PasswordPolicyError('no charset specified: the policy needs at least one rule "charset"');
  const required = rules.reduce((sum, rule) => sum + rule.minChars, 0);
  if (required > length) {
    throw new PasswordPolicyError(`specified rules require at least ${required} characters but "length" is ${length}`);
  }
  return { length, rules };
}

/** A password that satisfies every rule of the policy. */
export function generatePassword(policy: PasswordPolicy): string {
  const alphabet = [...new Set(policy.rules.flatMap((rule) => [...rule.charset]))];
  const chars: string[] = [];
  for (const rule of policy.rules) {
    const own = [...new Set(rule.charset)];
    // Characters already placed for an earlier rule count towards this one too, as in Vault's check.
    const have = chars.filter((char) => own.includes(char)).length;
    for (let index = have; index < rule.minChars; index++) chars.push(own[randomInt(own.length)] as string);
  }
  while (chars.length < policy.length) chars.push(alphabet[randomInt(alphabet.length)] as string);
  for (let index = chars.length - 1; index > 0; index--) {
    const other = randomInt(index + 1);
    [chars[index], chars[other]] = [chars[other] as string, chars[index] as string];
  }
  return chars.join('');
}

/** Whether a password meets the policy (what Vault checks after generating). */
export function satisfiesPolicy(password: string, policy: PasswordPolicy): boolean {
  const chars = [...password];
  const alphabet = new Set(policy.rules.flatMap((rule) => [...rule.charset]));
  if (chars.length !== policy.length || chars.some((char) => !alphabet.has(char))) return false;
  return policy.rules.every((rule) => chars.filter((char) => rule.charset.includes(char)).length >= rule.minChars);
}

/** `length` characters drawn uniformly from `charset` (default base62). */
export function randomString(length: number, charset = base62Charset): string {
  const chars = [...charset];
  let out = '';
  for (let index = 0; index < length; index++) out += chars[randomInt(chars.length)];
  return out;
}

type DecodedValue = string | number | boolean | DecodedValue[] | { [key: string]: DecodedValue };
type HclValue = DecodedValue | undefined;

/**
 * A document as plain data: `rule "charset" { … }` is `{ rule: { charset: { … } } }`, and a key given by more
 * than one item (blocks repeat; attributes cannot) holds the list of their values.
 */
function plain(node: Node): DecodedValue {
  if (node.kind === 'literal') return tokenValue(node.token);
  if (node.kind === 'list') return node.elements.map(plain);
  const list = node.kind === 'object' ? node.list : node;
  const values = new Map<string, DecodedValue[]>();
  for (const item of list.items) {
    const [first, ...rest] = item.keys.map(keyName);
    if (first === undefined) continue;
    let value = plain(item.value);
    for (const key of rest.reverse()) value = Object.assign(Object.create(null), { [key]: value });
    values.set(first, [...(values.get(first) ?? []), value]);
  }
  const out: { [key: string]: DecodedValue } = Object.create(null);
  for (const [key, list] of values) out[key] = list.length === 1 ? (list[0] as DecodedValue) : list;
  return out;
}

interface RawPolicy {
  length: HclValue;
  rules: CharsetRule[];
}

/**
 * HCL or JSON, parsed with hcl v1 as Vault does: `rule "charset" { … }` and `{"rule": {"charset": {…}}}` read
 * alike, as rules keyed by type.
 */
function fromDocument(text: string): RawPolicy {
  let parsed: DecodedValue;
  try {
    parsed = plain(parseHclV1(text));
  } catch (error) {
    if (error instanceof HclSyntaxError) throw new PasswordPolicyError(`unable to parse policy: ${error.message}`);
    throw error;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new PasswordPolicyError('the policy must be an object');
  const { length, rule, ...rest } = parsed as Record<string, DecodedValue>;
  const unknown = Object.keys(rest)[0];
  if (unknown !== undefined) throw new PasswordPolicyError(`unknown field "${unknown}"`);
  const rules: CharsetRule[] = [];
  for (const group of asList(rule)) {
    if (typeof group !== 'object' || group === null || Array.isArray(group))
      throw new PasswordPolicyError('"rule" must be an object keyed by rule type');
    for (const [type, bodies] of Object.entries(group)) {
      for (const ruleBody of asList(bodies)) {
        if (typeof ruleBody !== 'object' || ruleBody === null || Array.isArray(ruleBody)) {
          throw new PasswordPolicyError(`rule "${type}" must be an object`);
        }
        rules.push(charsetRule(type, ruleBody));
      }
    }
  }
  return { length, rules };
}

const asList = (value: HclValue): DecodedValue[] => (value === undefined ? [] : Array.isArray(value) ? value : [value]);

function charsetRule(type: string | undefined, attributes: Record<string, DecodedValue>): CharsetRule {
  if (type !== 'charset') throw new PasswordPolicyError(`unrecognized rule type "${type ?? ''}"`);
  const { charset, 'min-chars': minChars = 0, ...rest } = attributes;
  const unknown = Object.keys(rest)[0];
  if (unknown !== undefined) throw new PasswordPolicyError(`unknown field "${unknown}" in rule "charset"`);
  if (typeof charset !== 'string' || charset === '')
    throw new PasswordPolicyError('rule "charset" needs a non-empty "charset"');
  for (const char of charset) {
    if (!/^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u.test(char)) {
      throw new PasswordPolicyError(
        `rule "charset" has a non-printable character (U+${char.codePointAt(0)?.toString(16).padStart(4, '0')})`,
      );
    }
  }
  if (typeof minChars !== 'number' || !Number.isInteger(minChars) || minChars < 0) {
    throw new PasswordPolicyError('"min-chars" must be a non-negative integer');
  }
  return { charset: [...new Set(charset)].join(''), minChars };
}
