import { badRequest, type DomainError, tooLarge } from '../lib/errors.ts';

/**
 * The one mapping of DynamoDB's size and shape refusals, for both services (the secrets pipeline answers it as
 * `{"errors": [...]}`, the scheduler as plain text). DynamoDB refuses empty keys, keys over 1024 bytes (sort) or
 * 2048 bytes (partition), items over 400 KB and documents nested over 32 levels. Input that hits those limits is the caller's (an empty or very long path,
 * name or id; a huge secret), so it is a DomainError (400 or 413), whichever handler and whatever write or
 * transaction met it. Undefined for any other error.
 */
export function beyondStorageLimits(error: unknown): DomainError | undefined {
  if (!(error instanceof Error)) return undefined;
  if (error.name !== 'ValidationException' && error.name !== 'TransactionCanceledException') return undefined;
  const reasons =
    (error as { CancellationReasons?: Array<{ Code?: string; Message?: string }> }).CancellationReasons ?? [];
  const messages = [error.message, ...reasons.map((reason) => reason.Message ?? '')];
  if (messages.some((message) => /item size (to update )?has exceeded/i.test(message))) {
    return tooLarge('the data is too large to store (at most 400 KB per item)');
  }
  if (
    messages.some((message) =>
      /key values must be under|size of (hash|range) ?key|size of all range keys|exceeded the size limit of \d+ bytes/i.test(
        message,
      ),
    )
  ) {
    return badRequest('a path, name or id in the request is too long to store');
  }
  if (messages.some((message) => /key attribute cannot contain an empty string/i.test(message))) {
    return badRequest('a path, name or id in the request is empty');
  }
  if (messages.some((message) => /nesting levels have exceeded/i.test(message))) {
    return badRequest('the data is nested too deeply to store');
  }
  return undefined;
}
