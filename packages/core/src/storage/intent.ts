/**
 * What the code means by storage, with no DynamoDB in it (issue 27 §1). Types only.
 *
 * Items live in one table, keyed by a partition `pk` and a sort key `sk`. `get`/`batchGet` read (strongly
 * consistent); `put` writes a whole item, `update(key, change)` changes some attributes and returns the item as it
 * is after (an update of a missing item creates it, unless a condition says otherwise), `delete` returns the item as
 * it was. Every write takes `{ when }`, a `Condition` given as data — `{ absent: true }` (put-if-absent),
 * `{ exists: true }`, `{ equals: { 'value.generation': 3 } }`, `{ missing: ['revoking'] }`, `{ atMost: { n: 5 } }`,
 * combined with `all`/`any`/`not`; the fields of one object must all hold. A condition that does not hold throws
 * `ConditionFailed` and writes nothing. A `Change` says `set` (a value of `undefined` removes), `remove`, `add` (to a
 * number, created at 0), `setIfMissing`, `append` (to a list, created empty) and `copy` (one attribute's value to
 * another). Attribute paths are dotted (`entry.disabling`: the attribute `disabling` of the map `entry`); a name
 * never holds a dot. `list(partition, { prefix | range, index, limit, reverse, where })` returns the items of one
 * partition in sort-key order (of an index's partition and sort key with `index: 'due'`), filtered by `where`, at
 * most `limit`. `transact([...])` applies puts, updates, deletes and `check`s (a condition on an item that is not
 * written) all or nothing; its `ConditionFailed` carries one reason per write. `storage/dynamodb-store.ts` is the
 * implementation on DynamoDB (the only file that writes DynamoDB expressions) and `storage/memory-store.ts` the
 * one in memory; `test/storage/store-contract.test.ts` holds both to the same behaviour. Security items are signed
 * and verified through the same object (`signed`, `verified`, `getVerified`; see `item-mac.ts`). Engines reach it
 * through `secrets/mounts/mount-storage.ts`, keyed inside their mount: `putItem(key, item, { when })`,
 * `update(key, change, { when })`, `delete(key, { when })` and `transact([{ put: key, item, when },
 * { update: key, change, when }, { delete: key, when }, { check: key, when }])` (`tableWrite` gives a mount write's
 * table `Write` for a transaction that spans system items). `createCore({ store })` builds the secrets core (and
 * so the scheduler) over any `Store`; `test/architecture/storage-intent.test.ts` keeps expressions inside `storage/`.
 * What the memory store does not model: item and transaction size limits, throughput, and the lag of index reads —
 * tests of those stay on DynamoDB Local.
 */
import type { Logger } from '../lib/log.ts';
import type { EpochDomain, ItemKind } from './item-mac.ts';
import type { Keyring } from './keyring.ts';

/** Where an item is: its partition and its sort key. */
export interface Key {
  pk: string;
  sk: string;
}

/** A stored item: its key and any other attributes (strings, numbers, booleans, binary, sets, lists, maps). */
export type Item = Record<string, unknown> & Key;

/** A dotted attribute path: `value`, `entry.disabling`. */
export type Path = string;

/**
 * What must be true of the item a write touches (an absent item has no attributes). Every field given must hold;
 * an empty condition always holds. Comparisons hold only between values of one type (numbers, or strings in
 * byte order).
 */
export interface Condition {
  /** An item is stored at the key. */
  exists?: true;
  /** No item is stored at the key. */
  absent?: true;
  /** Each attribute equals the value (maps, lists and sets compared whole). */
  equals?: Record<Path, unknown>;
  /** Each attribute is not there. */
  missing?: Path[];
  /** Each attribute is there. */
  present?: Path[];
  /** attribute < value */
  below?: Record<Path, number | string>;
  /** attribute <= value */
  atMost?: Record<Path, number | string>;
  /** attribute > value */
  above?: Record<Path, number | string>;
  /** attribute >= value */
  atLeast?: Record<Path, number | string>;
  /** The string attribute starts with the value. */
  beginsWith?: Record<Path, string>;
  /** Every condition holds (at least one given). */
  all?: Condition[];
  /** At least one condition holds (at least one given). */
  any?: Condition[];
  /** The condition does not hold. */
  not?: Condition;
}

/** A change to some attributes of an item. A path appears in at most one part, and never inside another path given. */
export interface Change {
  /** Attribute = value; `undefined` removes the attribute. A nested path needs its parent map to exist. */
  set?: Record<Path, unknown>;
  remove?: Path[];
  /** Adds to a number (negative subtracts); a missing attribute counts as 0. */
  add?: Record<Path, number>;
  /** Sets the attribute only if it is not there. */
  setIfMissing?: Record<Path, unknown>;
  /** Appends to a list; a missing attribute counts as an empty list. */
  append?: Record<Path, unknown[]>;
  /** Attribute = the value of another attribute of the same item (which must be there), e.g. `{ duePk: 'queue' }`. */
  copy?: Record<Path, Path>;
}

/** The table's secondary indexes (`table-definition.ts`), by name: the attributes that are their partition and sort keys. */
export const indexKeys = { due: { pk: 'duePk', sk: 'dueSk' } } as const;
export type IndexName = keyof typeof indexKeys;

/** Sort-key bounds of a `list`: at most one lower (`after` exclusive, `from` inclusive) and one upper (`before`, `to`). */
export interface SortRange {
  after?: string;
  from?: string;
  before?: string;
  to?: string;
}

export interface ListOptions {
  /** Only sort keys that start with this (not with `range`). */
  prefix?: string;
  range?: SortRange;
  /** List an index's partition (its partition key's value), in its sort key's order; reads may lag writes slightly. */
  index?: IndexName;
  /** At most this many items (after `where`). */
  limit?: number;
  /** Highest sort key first. */
  reverse?: boolean;
  /** Only items for which this holds. */
  where?: Condition;
  /**
   * An eventually consistent read (half the read units): it may miss a write of the last second. Only for a reader
   * whose writes are conditional on what they change (a sweep), so a stale item costs a read, never a wrong write.
   */
  eventual?: boolean;
  /**
   * Only these attributes of each item, beside its keys (a projection): for a reader that compares them with items it
   * already holds verified (`verified-cache.ts`), never for one that trusts what it reads.
   */
  attributes?: readonly string[];
}

/** One write of a transaction. */
export type Write =
  | { put: Item; when?: Condition }
  | { update: Key; change: Change; when?: Condition }
  | { delete: Key; when?: Condition }
  | { check: Key; when: Condition };

/** Why one write of a cancelled transaction failed (`Code` is `None` for a write that would have passed). */
export interface CancellationReason {
  Code?: string;
  Message?: string;
}

/** The largest number of writes one transaction may hold. */
export const maxTransactionWrites = 100;

/** The one table, as the code uses it. */
export interface Store {
  /** The item at `pk`/`sk`, if there is one. */
  get<T extends Item = Item>(pk: string, sk: string): Promise<T | undefined>;
  /** Several items at once, keyed `pk|sk` (`itemKey`); an absent item is absent from the map. */
  batchGet(keys: Key[]): Promise<Map<string, Item>>;
  /** Writes the whole item, if `when` holds (else ConditionFailed). */
  put(item: Item, options?: { when?: Condition }): Promise<void>;
  /** Changes the item at `key` if `when` holds; the item as it is after. */
  update<T extends Item = Item>(key: Key, change: Change, options?: { when?: Condition }): Promise<T>;
  /** Deletes the item at `key` if `when` holds; the item as it was, if there was one. */
  delete<T extends Item = Item>(key: Key, options?: { when?: Condition }): Promise<T | undefined>;
  /** Items of one partition (of the table, or of `index`), in sort-key order. */
  list<T extends Item = Item>(partition: string, options?: ListOptions): Promise<T[]>;
  /** Every item of the table (for maintenance: signing, audits). */
  scan(): Promise<Item[]>;
  /** All or nothing, at most `maxTransactionWrites` writes, each to a different item. */
  transact(writes: Write[]): Promise<void>;

  /** Turns on item MACs once the keyring is loaded; until then `signed` and `verified` throw. */
  authenticateWith(keyring: Keyring, log: Logger): void;
  /** Reads the epochs the MACs of `init` and `bootstrap` kinds bind (`ItemKind.epoch`), or the one of `domain`. */
  readEpoch(domain?: EpochDomain): Promise<void>;
  /** Reads a domain's epoch again in a process that has not seen the initialisation (bootstrap) yet. */
  settleEpoch(domain?: EpochDomain): Promise<void>;
  /** Sets the epoch of an initialisation (bootstrap) this process is making; `undefined` forgets it. */
  useEpoch(domain: EpochDomain, epoch: string | undefined): void;
  /** `useEpoch('init', epoch)`. */
  useInitEpoch(epoch: string | undefined): void;
  /** The item with the MAC of its kind set, for a put (see `item-mac.ts`). */
  signed<T extends Item>(kind: ItemKind, item: T): T;
  /** The MAC an item of `kind` with these attributes carries, for an update that rewrites covered attributes. */
  macOf(kind: ItemKind, item: Item): string;
  /** The item if its MAC verifies, else undefined (logged as an error naming its key). */
  verified<T extends Item>(kind: ItemKind, item: T | undefined): T | undefined;
  /** `get` of an authenticated item: a forged, moved or MAC-less item reads as absent. */
  getVerified<T extends Item = Item>(kind: ItemKind, pk: string, sk: string): Promise<T | undefined>;
}
