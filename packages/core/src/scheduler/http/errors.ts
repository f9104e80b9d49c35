/**
 * Errors to responses, in one place: a `DomainError` (lib/errors.ts) is answered with its kind's status and its
 * message as plain text (Nomad's error bodies); DynamoDB's size and shape refusals are mapped as the secrets service
 * maps them (`front/storage-limits.ts`: 413 or 400); anything else is a bug (500, logged, its message not shown).
 */
import { type HttpReply, textReply } from '../../front/exchange.ts';
import { beyondStorageLimits } from '../../front/storage-limits.ts';
import { DomainError } from '../../lib/errors.ts';
import { jsonLogger } from '../../lib/log.ts';

const failureLog = jsonLogger((line) => process.stderr.write(`${line}\n`));

export function errorReply(error: unknown, path: string): HttpReply {
  const known = error instanceof DomainError ? error : beyondStorageLimits(error);
  if (known) return textReply(known.status, known.message);
  failureLog.error('scheduler request failed', { path, error: error instanceof Error ? error.message : String(error) });
  return textReply(500, 'internal error');
}
