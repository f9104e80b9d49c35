import { createHash } from 'node:crypto';
import type { Keyring } from '../../storage/keyring.ts';
import type { Condition, Item } from '../../storage/store.ts';

/** RFC 3339 with fractional seconds, as Nomad prints times. */
export const rfc3339 = (ms: number): string => new Date(ms).toISOString();

/** A stable digest of an object's content (Nomad's `Hash` of list items). */
export function contentHash(value: unknown): string {
  return createHash('sha256').update(stableJson(value)).digest('base64');
}

/**
 * The same digest keyed under the keyring, for content that holds a secret (an OIDC client secret): a bare SHA-256
 * of it would let whoever sees the digest test guesses of the secret offline.
 */
export function keyedContentHash(keyring: Keyring, value: unknown): string {
  return keyring.contentDigest(stableJson(value));
}

function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).filter(([, inner]) => inner !== undefined);
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, inner]) => `${JSON.stringify(key)}:${stableJson(inner)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The stored attributes that are the API object (drops the key and bookkeeping attributes). */
export function withoutKeys<T>(item: Item | undefined): T | undefined {
  if (!item) return undefined;
  const { pk: _pk, sk: _sk, expiresAt: _expiresAt, duePk: _duePk, dueSk: _dueSk, mac: _mac, ...rest } = item;
  return rest as T;
}

export const sameContent = (a: unknown, b: unknown): boolean => stableJson(a) === stableJson(b);

/** A write's condition for an object read at `existing`: still at the index it was read at, or (new) not there yet. */
export const unchangedSince = (existing: { ModifyIndex: number } | undefined): Condition =>
  existing ? { equals: { ModifyIndex: existing.ModifyIndex } } : { absent: true };
