/**
 * Errors to responses, in one place: a `DomainError` (lib/errors.ts) is answered with its kind's status and its
 * message as plain text (Nomad's error bodies); DynamoDB's item-size refusal is 413; anything else is a bug (500,
 * logged, its message not shown).
 */
import type { Context } from 'hono';
import { DomainError } from '../../lib/errors.ts';
import { jsonLogger } from '../../lib/log.ts';

const failureLog = jsonLogger((line) => process.stderr.write(`${line}\n`));

export function errorResponse(error: unknown, c: Context): Response {
  if (error instanceof DomainError) return c.text(error.message, error.status as 400);
  const tooLarge = beyondStorageLimits(error);
  if (tooLarge) return c.text(tooLarge, 413);
  failureLog.error('scheduler request failed', { path: c.req.path, error: error instanceof Error ? error.message : String(error) });
  return c.text('internal error', 500);
}

/** DynamoDB's 400 KB item limit, met by a body under the request limit that fills one item (a huge list of names). */
function beyondStorageLimits(error: unknown): string | undefined {
  if (!(error instanceof Error) || (error.name !== 'ValidationException' && error.name !== 'TransactionCanceledException')) return undefined;
  const reasons = (error as { CancellationReasons?: Array<{ Message?: string }> }).CancellationReasons ?? [];
  const messages = [error.message, ...reasons.map((reason) => reason.Message ?? '')];
  if (messages.some((message) => /item size (to update )?has exceeded/i.test(message))) return 'the data is too large to store (at most 400 KB per item)';
  return undefined;
}
