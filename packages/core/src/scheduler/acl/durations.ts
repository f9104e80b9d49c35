import * as z from 'zod/mini';
import { DurationError, parseGoDuration } from '../../lib/duration.ts';

/**
 * A duration as Nomad's ACL bodies take one (`MaxTokenTTL`, `ExpirationTTL`, the auth method's leeways): a Go
 * duration string (`1h`, `90s`) or nanoseconds as a number, in whole seconds. A string that is no duration is an
 * issue of the schema that calls this (`invalid duration "…"`), so the body's 400 names its field.
 */
export function wholeSeconds(value: string | number, ctx: z.core.ParsePayload): number {
  if (typeof value === 'number') return Math.floor(value / 1e9);
  try {
    return Math.floor(parseGoDuration(value));
  } catch (error) {
    if (!(error instanceof DurationError)) throw error;
    ctx.issues.push({ code: 'custom', input: value, message: `invalid duration "${value}"` });
    return z.NEVER;
  }
}
