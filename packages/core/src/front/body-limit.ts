/**
 * The largest request body either service reads (1 MiB, Vault's default `max_request_size` is 32 MiB; ours is
 * smaller because one DynamoDB item holds at most 400 KB). Every adapter reads a body up to this size and hands the
 * front `undefined` for a larger one, unread; each service words the 413 in its own convention.
 */
export const maxBodyBytes = 1024 * 1024;
