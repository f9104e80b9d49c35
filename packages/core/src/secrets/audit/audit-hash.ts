import { createHmac } from 'node:crypto';

/** Vault's identified HMAC: `hmac-sha256:` and the hex HMAC-SHA256 of the value under the device's salt. */
export function auditHash(salt: Uint8Array, value: string): string {
  return `hmac-sha256:${createHmac('sha256', salt).update(value).digest('hex')}`;
}

/**
 * Every string inside a request's or response's data, hashed, as Vault's audit devices write them: numbers,
 * booleans and nulls stay as they are, the structure too; map keys are not hashed.
 */
export function hashStrings(value: unknown, hash: (text: string) => string): unknown {
  if (typeof value === 'string') return hash(value);
  if (Array.isArray(value)) return value.map((item) => hashStrings(item, hash));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, hashStrings(item, hash)]));
  }
  return value;
}
