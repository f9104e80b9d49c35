import type { HclValue } from '../../lib/hcl.ts';
import { badRequest } from '../../http/errors.ts';

/** A parameter name (lower-cased) and the values a rule names for it; no values means any value. */
export type ParameterValues = Array<[name: string, values: HclValue[]]>;

/**
 * A path rule's `allowed_parameters`, `denied_parameters` and `required_parameters`, as stored with the
 * policy. Pairs rather than objects, so that no parameter name (`__proto__`, `""`) is special anywhere.
 */
export interface ParameterRules {
  allowed?: ParameterValues;
  denied?: ParameterValues;
  required?: string[];
}

/** The constraints a path block names, or `undefined` when it names none that could refuse a request. */
export function parseParameterRules(pattern: string, attributes: Record<string, HclValue>): ParameterRules | undefined {
  const allowed = parameterValues(pattern, 'allowed_parameters', attributes.allowed_parameters);
  const denied = parameterValues(pattern, 'denied_parameters', attributes.denied_parameters);
  const required = requiredNames(pattern, attributes.required_parameters);
  // As Vault, empty maps and lists constrain nothing, not even when merged with other rules.
  if (allowed.length === 0 && denied.length === 0 && required.length === 0) return undefined;
  return {
    ...(allowed.length > 0 ? { allowed } : {}),
    ...(denied.length > 0 ? { denied } : {}),
    ...(required.length > 0 ? { required } : {}),
  };
}

function parameterValues(pattern: string, key: string, value: HclValue | undefined): ParameterValues {
  if (value === undefined) return [];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw badRequest(`failed to parse policy: ${key} of "${pattern}" must map parameter names to lists of values`);
  }
  return Object.entries(value).map(([name, values]) => {
    if (!Array.isArray(values)) {
      throw badRequest(`failed to parse policy: ${key} of "${pattern}": the values of "${name}" must be a list`);
    }
    if (name.includes('*') && name !== '*') {
      throw badRequest(`failed to parse policy: ${key} of "${pattern}": parameter key "${name}" cannot contain a wildcard other than "*" alone`);
    }
    return [name.toLowerCase(), values];
  });
}

function requiredNames(pattern: string, value: HclValue | undefined): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.some((name) => typeof name !== 'string')) {
    throw badRequest(`failed to parse policy: required_parameters of "${pattern}" must be a list of names`);
  }
  const names = value as string[];
  const wildcard = names.find((name) => name.includes('*'));
  if (wildcard !== undefined) {
    throw badRequest(`failed to parse policy: required_parameters of "${pattern}": parameter key "${wildcard}": wildcard is not permitted here`);
  }
  return names;
}

/**
 * The merged constraints of every rule for one path pattern, and the check Vault's ACL makes with them on
 * read, create, update and patch requests.
 */
export class ParameterConstraints {
  private allowed: Map<string, HclValue[]> | undefined;
  private denied: Map<string, HclValue[]> | undefined;
  private readonly required: string[] = [];

  /** Vault's merge: values are unioned per name, an empty list (any value) wins, required names are unioned. */
  add(rules: ParameterRules): void {
    if (rules.allowed) this.allowed = mergeValues(this.allowed, rules.allowed);
    if (rules.denied) this.denied = mergeValues(this.denied, rules.denied);
    for (const name of rules.required ?? []) if (!this.required.includes(name)) this.required.push(name);
  }

  /** Whether a request with these parameters (body fields, or query parameters of a read) passes. */
  permits(data: Record<string, unknown>): boolean {
    for (const name of this.required) if (!Object.hasOwn(data, name.toLowerCase())) return false;
    const entries = Object.entries(data);
    if (entries.length === 0) return true;
    if (this.denied) {
      if (this.denied.has('*')) return false;
      for (const [name, value] of entries) {
        const values = this.denied.get(name.toLowerCase());
        if (values && deniedValue(value, values)) return false;
      }
    }
    if (!this.allowed) return true;
    const anyName = this.allowed.has('*');
    if (anyName && this.allowed.size === 1) return true;
    for (const [name, value] of entries) {
      const values = this.allowed.get(name.toLowerCase());
      if (values ? !allowedValue(value, values) : !anyName) return false;
    }
    return true;
  }
}

function mergeValues(existing: Map<string, HclValue[]> | undefined, incoming: ParameterValues): Map<string, HclValue[]> {
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
function allowedValue(value: unknown, values: HclValue[]): boolean {
  if (values.length === 0 || matchesOne(value, values)) return true;
  return elementsOf(value)?.every((element) => matchesOne(element, values)) ?? false;
}

/** As Vault: the whole value matches one of the values, or, for a list or a comma-separated string, any element does. */
function deniedValue(value: unknown, values: HclValue[]): boolean {
  if (values.length === 0 || matchesOne(value, values)) return true;
  return elementsOf(value)?.some((element) => matchesOne(element, values)) ?? false;
}

/** A list's elements, or a string's comma-separated parts with spaces trimmed (none for ""). */
function elementsOf(value: unknown): unknown[] | undefined {
  if (Array.isArray(value)) return value;
  if (typeof value !== 'string') return undefined;
  return value === '' ? [] : value.split(',').map((part) => part.trim());
}

/** Strings match a value with a leading and/or trailing `*` as a glob; anything else must be the same JSON value. */
function matchesOne(value: unknown, values: HclValue[]): boolean {
  return values.some((candidate) =>
    typeof candidate === 'string' && typeof value === 'string' ? globMatches(candidate, value) : sameValue(candidate, value),
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

function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((item, index) => sameValue(item, b[index]));
  }
  const keys = Object.keys(a);
  return (
    keys.length === Object.keys(b).length &&
    keys.every((key) => Object.hasOwn(b, key) && sameValue((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key]))
  );
}
