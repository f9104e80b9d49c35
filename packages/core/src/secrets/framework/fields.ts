import * as z from 'zod';
import { DurationError, parseDuration } from '../../lib/duration.ts';
import { goTrimSpace } from '../../lib/go-strings.ts';

/** Field types shared by every backend, accepting what Vault's API accepts for them. */

/** Integer seconds or a Go-style duration string; negatives rejected. */
export const duration = z.union([z.number(), z.string()]).transform((value, ctx) => {
  try {
    return parseDuration(value);
  } catch (error) {
    ctx.addIssue({ code: 'custom', message: error instanceof DurationError ? error.message : String(error) });
    return z.NEVER;
  }
});

/** A list given as a JSON array or a comma-separated string, each item trimmed as Go's `strings.TrimSpace` trims (Vault's comma string slice); blanks dropped. */
export const stringList = z
  .union([z.array(z.string()), z.string()])
  .transform((value) =>
    (Array.isArray(value) ? value : value.split(',')).map(goTrimSpace).filter((item) => item !== ''),
  );

/** A boolean, also as the strings "true"/"false" (form posts and query strings). */
export const bool = z.union([z.boolean(), z.enum(['true', 'false']).transform((value) => value === 'true')]);

/**
 * The largest count any field takes (Go's int32, which Vault and Nomad clients send): beyond it a count means
 * nothing, and past 2^53 it cannot even be stored exactly.
 */
export const maxCount = 2 ** 31 - 1;

/** An integer between `min` and `max`, also as a numeric string; anything else is a 400 saying what it must be. */
export function integer({ min = 0, max = maxCount }: { min?: number; max?: number } = {}) {
  const kind = min === 0 ? 'a non-negative integer' : 'an integer';
  return z.union([z.number(), z.string()]).transform((value, ctx) => {
    const text = typeof value === 'string' ? value.trim() : '';
    const parsed = typeof value === 'number' ? value : /^[-+]?\d+$/.test(text) ? Number(text) : Number.NaN;
    const problem =
      !Number.isInteger(parsed) || (min === 0 && parsed < 0)
        ? `must be ${kind}`
        : parsed > max
          ? `must be at most ${max}, got ${String(value).slice(0, 40)}`
          : parsed < min
            ? `must be at least ${min}, got ${String(value).slice(0, 40)}`
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

/** String-to-string metadata. */
export const stringMap = z.record(z.string(), z.string());

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
