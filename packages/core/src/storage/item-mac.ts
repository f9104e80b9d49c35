/**
 * Tamper evidence for the items that hold security state (tokens, policies, the mount table, auth configuration),
 * as Vault's storage barrier makes storage untrusted: whoever can write the table must not be able to grant
 * itself anything by editing, adding, removing or moving an attribute.
 *
 * An authenticated item carries `mac`: HMAC-SHA256 (the keyring's item-MAC subkey) over a canonical encoding of its
 * kind, its key (`pk`, `sk`: an item copied onto another key does not verify) and every attribute except the few its
 * kind names as bookkeeping (due-queue keys, counters DynamoDB updates atomically). Everything else is covered, so
 * an attribute an attacker adds (`builtin`, `issuer`, …) breaks the MAC as much as one they change.
 *
 * On read, an item whose MAC is missing or wrong is treated as absent and logged as an error naming its key (never
 * its content). Items written before tamper evidence carry no MAC and are refused the same way (see docs/security.md).
 */
import { timingSafeEqual } from 'node:crypto';
import type { Logger } from '../lib/log.ts';
import type { Keyring } from './keyring.ts';

/** The attribute that holds an item's MAC. */
export const macAttribute = 'mac';
const macPrefix = 'v1:';

/** What is authenticated of one kind of item: everything but `pk`, `sk`, `mac` and the attributes named here. */
export interface ItemKind {
  /** Bound into the MAC, so an item of one kind cannot be passed off as another kind stored at a look-alike key. */
  readonly name: string;
  /** Attributes outside the MAC: bookkeeping the store updates without rewriting the item. */
  readonly unauthenticated: ReadonlySet<string>;
}

export const itemKind = (name: string, unauthenticated: readonly string[] = []): ItemKind => ({
  name,
  unauthenticated: new Set(unauthenticated),
});

type Keyed = Record<string, unknown> & { pk: string; sk: string };

/** A JSON form with object keys sorted at every depth; binary and set values tagged so no two values share a form. */
function canonical(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean')
    return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value instanceof Uint8Array) return `{"$bytes":${JSON.stringify(Buffer.from(value).toString('base64'))}}`;
  if (value instanceof Set) return `{"$set":[${[...value].map(canonical).sort().join(',')}]}`;
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, inner]) => inner !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, inner]) => `${JSON.stringify(key)}:${canonical(inner)}`).join(',')}}`;
  }
  throw new TypeError(`cannot authenticate a value of type ${typeof value}`);
}

/** The message a kind's item is MACed as: kind, key, then the covered attributes (undefined ones count as absent). */
function message(kind: ItemKind, item: Keyed): string {
  const covered: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(item)) {
    if (name === 'pk' || name === 'sk' || name === macAttribute || kind.unauthenticated.has(name)) continue;
    covered[name] = value;
  }
  return canonical([macPrefix, kind.name, item.pk, item.sk, covered]);
}

/** Signs and checks items of the kinds that hold security state; one HMAC per item either way. */
export class ItemMac {
  constructor(
    private readonly keyring: Keyring,
    private readonly log: Logger,
  ) {}

  /** The MAC an item of `kind` carries, `v1:<base64url>`. */
  tag(kind: ItemKind, item: Keyed): string {
    return macPrefix + this.keyring.itemMac(message(kind, item)).toString('base64url');
  }

  /** The item with its MAC set (any `mac` it had is replaced). */
  sign<T extends Keyed>(kind: ItemKind, item: T): T {
    return { ...item, [macAttribute]: this.tag(kind, item) };
  }

  /** Whether the item's MAC is the one its kind, key and attributes give. */
  valid(kind: ItemKind, item: Keyed): boolean {
    const stored = item[macAttribute];
    if (typeof stored !== 'string' || !stored.startsWith(macPrefix)) return false;
    const given = Buffer.from(stored.slice(macPrefix.length), 'base64url');
    const expected = this.keyring.itemMac(message(kind, item));
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  /** The item if it verifies; otherwise undefined (as if absent), logged as an error naming its key only. */
  verify<T extends Keyed>(kind: ItemKind, item: T | undefined): T | undefined {
    if (item === undefined) return undefined;
    if (this.valid(kind, item)) return item;
    this.log.error(
      'refused a stored item that failed its integrity check (forged, moved, or written before item MACs)',
      {
        kind: kind.name,
        pk: item.pk,
        sk: item.sk,
        mac: typeof item[macAttribute] === 'string' ? 'mismatch' : 'missing',
      },
    );
    return undefined;
  }
}
