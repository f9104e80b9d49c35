import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';

/** Each salt as a KeyObject, made once: node's HMAC takes a raw key about 8 µs slower per call (issue 28). */
const saltKeys = new WeakMap<Uint8Array, KeyObject>();

/** Vault's identified HMAC: `hmac-sha256:` and the hex HMAC-SHA256 of the value under the device's salt. */
export function auditHash(salt: Uint8Array, value: string): string {
  let key = saltKeys.get(salt);
  if (!key) {
    key = createSecretKey(salt);
    saltKeys.set(salt, key);
  }
  return `hmac-sha256:${createHmac('sha256', key).update(value).digest('hex')}`;
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
