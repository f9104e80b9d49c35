import * as z from 'zod';
import { DurationError, parseDuration } from '../../lib/duration.ts';
import { typeBool, typeCommaStringSlice, typeInt, typeKvPairs } from './vault-field-types.ts';

/**
 * Field types shared by every backend, accepting what Vault's API accepts for them: those Vault decodes weakly are
 * its weak types (`vault-field-types.ts`), with the bounds and clean-ups our handlers rely on.
 */

/** Integer seconds or a Go-style duration string; negatives rejected. */
export const duration = z.union([z.number(), z.string()]).transform((value, ctx) => {
  try {
    return parseDuration(value);
  } catch (error) {
    ctx.addIssue({ code: 'custom', message: error instanceof DurationError ? error.message : String(error) });
    return z.NEVER;
  }
});

/**
 * Vault's `TypeCommaStringSlice` (a JSON list, or a comma-separated string; each item a string, weakly; each trimmed as
 * Go's `strings.TrimSpace`), with blank items dropped as the handlers that take these lists drop them (Vault's
 * `strutil.RemoveDupsAndEmpty`, `policyutil.SanitizePolicies`).
 */
export const stringList = typeCommaStringSlice.transform((items) => items.filter((item) => item !== ''));

/** Vault's `TypeBool`: a boolean, also a string (or 1/0) as Go's `strconv.ParseBool` reads it; "" is false. */
export const bool = typeBool;

/**
 * The largest count any field takes (Go's int32, which Vault and Nomad clients send): beyond it a count means
 * nothing, and past 2^53 it cannot even be stored exactly.
 */
export const maxCount = 2 ** 31 - 1;

/**
 * Vault's `TypeInt` (an integer, also a bool, or a string as a Go integer literal: `strconv.ParseInt(s, 0, 64)`) between
 * `min` and `max`; anything else is a 400 saying what it must be.
 */
export function integer({ min = 0, max = maxCount }: { min?: number; max?: number } = {}) {
  return typeInt.transform((parsed, ctx) => {
    const problem =
      parsed > max
        ? `must be at most ${max}, got ${parsed}`
        : parsed < min
          ? `must be at least ${min}, got ${parsed}`
          : undefined;
    if (problem) {
      ctx.addIssue({ code: 'custom', message: problem });
      return z.NEVER;
    }
    return parsed;
  });
}

/** A non-negative count (uses, lengths, versions), also as a numeric string, at most `maxCount`. */
export const count = integer();

/** String-to-string metadata: Vault's `TypeKVPairs` (a map whose values are strings, weakly, or a list of `"k=v"`). */
export const stringMap = typeKvPairs;

/** Free-form JSON (claims, provider options) whose numbers can be stored exactly: within ±(2^53 - 1). */
export const jsonValue = z.unknown().superRefine((value, ctx) => {
  const unsafe = firstUnsafeNumber(value, []);
  if (unsafe)
    ctx.addIssue({
      code: 'custom',
      path: unsafe.path,
      message: `${unsafe.value} is beyond ±${Number.MAX_SAFE_INTEGER}`,
    });
});

function firstUnsafeNumber(value: unknown, path: PropertyKey[]): { path: PropertyKey[]; value: number } | undefined {
  if (typeof value === 'number')
    return Math.abs(value) <= Number.MAX_SAFE_INTEGER || Number.isNaN(value) ? undefined : { path, value };
  if (typeof value !== 'object' || value === null) return undefined;
  for (const [key, inner] of Object.entries(value)) {
    const found = firstUnsafeNumber(inner, [...path, Array.isArray(value) ? Number(key) : key]);
    if (found) return found;
  }
  return undefined;
}
