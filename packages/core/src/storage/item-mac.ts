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
  /**
   * `init`: the item belongs to one initialisation of the secrets service, and its MAC binds that initialisation's
   * epoch (chosen by `sys/init`, kept in the keyring's item): an item from before a re-initialisation never
   * verifies after it, as Vault's re-init makes new barrier keys. `bootstrap`: the same for one ACL bootstrap of the
   * scheduler (its epoch kept in the bootstrap marker). Absent for the items that say whether and when the service
   * was initialised or bootstrapped (the keyring's item, the init and bootstrap markers) and the scheduler's cluster.
   */
  readonly epoch?: EpochDomain;
}

/** Which event an item's epoch belongs to: the secrets service's initialisation or the scheduler's ACL bootstrap. */
export type EpochDomain = 'init' | 'bootstrap';

export const itemKind = (
  name: string,
  unauthenticated: readonly string[] = [],
  options: { epoch?: EpochDomain } = {},
): ItemKind => ({
  name,
  unauthenticated: new Set(unauthenticated),
  ...(options.epoch ? { epoch: options.epoch } : {}),
});

/** An initialisation epoch: 128 random bits, base64url. */
export const epochPattern = /^[A-Za-z0-9_-]{22}$/;

type Keyed = Record<string, unknown> & { pk: string; sk: string };

/**
 * A JSON form with object keys sorted at every depth; binary and set values tagged so no two values share a form.
 * Built by concatenation, as every authenticated read verifies one item (`test/storage/item-mac.test.ts` pins the
 * form: items signed by earlier releases must still verify).
 */
function canonical(value: unknown): string {
  switch (typeof value) {
    case 'string':
    case 'number':
    case 'boolean':
      return JSON.stringify(value);
    case 'undefined':
      return 'null';
    case 'object': {
      if (value === null) return 'null';
      if (Array.isArray(value)) {
        let out = '';
        for (let index = 0; index < value.length; index++) out += (index ? ',' : '') + canonical(value[index]);
        return `[${out}]`;
      }
      if (value instanceof Uint8Array)
        return `{"$bytes":${JSON.stringify(Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64'))}}`;
      if (value instanceof Set) return `{"$set":[${[...value].map(canonical).sort().join(',')}]}`;
      return canonicalObject(value as Record<string, unknown>);
    }
  }
  throw new TypeError(`cannot authenticate a value of type ${typeof value}`);
}

/** An object's canonical form: its keys in UTF-16 code unit order (the default sort), undefined and `left` ones left out. */
function canonicalObject(value: Record<string, unknown>, left?: (name: string) => boolean): string {
  // A map attribute named `__proto__` becomes the object's prototype when read (`unmarshall` assigns it), so it is in
  // no key list, yet its fields answer for every attribute the item lacks: a form the MAC cannot cover.
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) throw new TypeError('cannot authenticate a `__proto__`');
  let out = '';
  for (const name of Object.keys(value).sort()) {
    const inner = value[name];
    if (inner === undefined || left?.(name)) continue;
    out += `${out ? ',' : ''}${JSON.stringify(name)}:${canonical(inner)}`;
  }
  return `{${out}}`;
}

/**
 * The message a kind's item is MACed as: kind, key, then the covered attributes (undefined ones count as absent).
 * An `init` kind's item of a table initialised with an epoch has the epoch before its kind (a table initialised
 * before epochs existed keeps the message without, so its items still verify).
 */
function message(kind: ItemKind, item: Keyed, epochOf: (domain: EpochDomain) => string | undefined): string {
  const covered = canonicalObject(
    item,
    (name) => name === 'pk' || name === 'sk' || name === macAttribute || kind.unauthenticated.has(name),
  );
  const epoch = kind.epoch && epochOf(kind.epoch);
  const bound =
    kind.epoch && epoch !== undefined
      ? `${JSON.stringify(`${kind.epoch === 'init' ? 'epoch' : kind.epoch}:${epoch}`)},`
      : '';
  return `[${JSON.stringify(macPrefix)},${bound}${JSON.stringify(kind.name)},${canonical(item.pk)},${canonical(item.sk)},${covered}]`;
}

/** Signs and checks items of the kinds that hold security state; one HMAC per item either way. */
export class ItemMac {
  constructor(
    private readonly keyring: Keyring,
    private readonly log: Logger,
    /** The current epoch of a domain (`ItemKind.epoch`), if there was an initialisation or bootstrap with one. */
    private readonly epochOf: (domain: EpochDomain) => string | undefined = () => undefined,
  ) {}

  /** The MAC an item of `kind` carries, `v1:<base64url>`. */
  tag(kind: ItemKind, item: Keyed): string {
    return macPrefix + this.keyring.itemMac(message(kind, item, this.epochOf)).toString('base64url');
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
    let expected: Buffer;
    try {
      expected = this.keyring.itemMac(message(kind, item, this.epochOf));
    } catch {
      return false; // a form no signed item has (see `canonicalObject`)
    }
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
