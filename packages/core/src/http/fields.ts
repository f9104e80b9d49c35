import * as z from 'zod';
import { DurationError, parseDuration } from '../lib/duration.ts';

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

/** A list given as a JSON array or a comma-separated string; blanks dropped. */
export const stringList = z.union([z.array(z.string()), z.string()]).transform((value) =>
  (Array.isArray(value) ? value : value.split(','))
    .map((item) => item.trim())
    .filter((item) => item !== ''),
);

/** A boolean, also as the strings "true"/"false" (form posts and query strings). */
export const bool = z.union([z.boolean(), z.enum(['true', 'false']).transform((value) => value === 'true')]);

/** A non-negative integer, also as a numeric string. */
export const count = z.union([z.number().int().nonnegative(), z.string().regex(/^\d+$/, 'must be a non-negative integer').transform(Number)]);

/** String-to-string metadata. */
export const stringMap = z.record(z.string(), z.string());
