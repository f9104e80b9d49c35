import { unavailable } from '../../lib/errors.ts';
import { ConditionFailed } from '../../storage/condition-failed.ts';
import { type ItemKind, itemKind, macAttribute } from '../../storage/item-mac.ts';
import type { Keyring } from '../../storage/keyring.ts';
import { type Change, type Condition, maxTransactionWrites, type Write } from '../../storage/intent.ts';
import { changed } from '../../storage/memory-store.ts';
import type { Item, Store } from '../../storage/store.ts';

/** A mount's item written with `putAuthenticated`: its `value` and key are MACed (`storage/item-mac.ts`). */
export const authenticatedValueKind = itemKind('mount-value', [], { epoch: 'init' });

/** The partition that holds a mount's storage. */
export const mountPartition = (mountUuid: string) => `mount#${mountUuid}`;

/**
 * One write of a mount's transaction, keyed by the storage key inside the mount (`storage/intent.ts`'s `Write`).
 * `item` is the item's attributes besides its key (`value`, and top-level attributes such as the due queue's
 * `duePk`/`dueSk`).
 */
export type MountWrite =
  | { put: string; item: Record<string, unknown>; when?: Condition }
  | { update: string; change: Change; when?: Condition }
  | { delete: string; when?: Condition }
  | { check: string; when: Condition };

/**
 * Which of a mount's items are authenticated whole, by their key inside the mount (a backend's
 * `authenticatedItems`): the item kind whose MAC they carry (`storage/item-mac.ts`), or undefined for an item that
 * carries none. Such items are signed on every write and verified on every read by `MountStorage` itself (see there).
 */
export type MountItemKinds = (key: string) => ItemKind | undefined;

/** How many times an update of an authenticated item is tried again when another write changed the item between its read and its write. */
const authenticatedUpdateAttempts = 8;

/** The top-level attributes a change writes. */
function changedAttributes(change: Change): string[] {
  const paths = [
    ...Object.keys(change.set ?? {}),
    ...(change.remove ?? []),
    ...Object.keys(change.add ?? {}),
    ...Object.keys(change.setIfMissing ?? {}),
    ...Object.keys(change.append ?? {}),
    ...Object.keys(change.copy ?? {}),
  ];
  return [...new Set(paths.map((path) => path.split('.')[0] as string))];
}

/** Whether an item's MAC is as read: the same MAC (or none, or no item, as read). */
function macAsRead(read: Item | undefined): Condition {
  if (!read) return { absent: true };
  const mac = read[macAttribute];
  return mac === undefined ? { exists: true, missing: [macAttribute] } : { equals: { [macAttribute]: mac } };
}

/** The most writes one transaction holds: a mount's all-or-nothing change is at most this many items. */
export { maxTransactionWrites };

/**
 * A backend's own corner of the table, like Vault's logical storage: keys are slash paths inside one
 * partition per mount, so a mount can be moved or wiped without touching anyone else's data. Every read and
 * write goes through here; a handler never names a partition.
 */
export class MountStorage {
  private readonly pk: string;
  constructor(
    private readonly store: Store,
    private readonly keyring: Keyring,
    mountUuid: string,
    /** Items read ahead for this request (see `PathSpec.prefetch`), by key; a key here absent from the table is `undefined`. */
    private readonly prefetched?: ReadonlyMap<string, Item | undefined>,
    /**
     * The backend's authenticated items (see `MountItemKinds`): each is signed when written (`put`, `putItem`, a
     * transaction's put, and an update that changes what its MAC covers: read, changed and signed as it will be,
     * conditional on the MAC read) and verified when read (`get`, `getItem`, `items`, `list`): a forged, edited,
     * moved or MAC-less one reads as absent and is logged as an error naming its key.
     */
    private readonly kinds?: MountItemKinds,
  ) {
    this.pk = mountPartition(mountUuid);
  }

  /** The item, if it verifies as the kind its key has (or its key has none). */
  private checked<T extends Item>(key: string, item: T | undefined): T | undefined {
    const kind = this.kinds?.(key);
    return kind ? this.store.verified(kind, item) : item;
  }

  /** The whole item to put at `key`, signed if its key has a kind. */
  private sealedItem(key: string, item: Record<string, unknown>): Item {
    const whole = { ...item, pk: this.pk, sk: key };
    const kind = this.kinds?.(key);
    return kind ? this.store.signed(kind, whole) : whole;
  }

  /**
   * The table update for `change` at `key`, signed as the item will be after it when the change writes an attribute
   * the key's kind covers, with the read it was computed from (undefined when no read was needed). The stored item
   * is read raw: if it fails its MAC, what the MAC covers of it is dropped (removed by this write), so a change never
   * signs a forged attribute; bookkeeping outside the MAC is kept. The write holds only while the item's MAC is still
   * the one read, so a concurrent write to a covered attribute (which always sets a new MAC) makes it fail.
   */
  private async signedUpdate(
    key: string,
    change: Change,
    when: Condition | undefined,
  ): Promise<{ change: Change; when?: Condition; read?: { item: Item | undefined } }> {
    const kind = this.kinds?.(key);
    const written = changedAttributes(change).filter(
      (name) => name !== macAttribute && !kind?.unauthenticated.has(name),
    );
    if (!kind || written.length === 0) return { change, ...(when ? { when } : {}) };
    const current = await this.store.get(this.pk, key);
    let base: Item | undefined = current;
    const dropped: string[] = [];
    if (current && !this.store.verified(kind, current)) {
      base = { pk: this.pk, sk: key };
      for (const [name, value] of Object.entries(current)) {
        if (name === 'pk' || name === 'sk') continue;
        if (kind.unauthenticated.has(name)) base[name] = value;
        else if (!written.includes(name)) dropped.push(name);
      }
    }
    const after = changed(base, { pk: this.pk, sk: key }, change);
    const mac = this.store.macOf(kind, after);
    const removals = dropped.filter((name) => name !== macAttribute);
    const signedChange: Change = {
      ...change,
      set: { ...change.set, [macAttribute]: mac },
      ...(removals.length > 0 ? { remove: [...(change.remove ?? []), ...removals] } : {}),
    };
    const guard = macAsRead(current);
    return { change: signedChange, when: when ? { all: [when, guard] } : guard, read: { item: current } };
  }

  /** Whether an item read for a signed update has changed its MAC (or come or gone) since. */
  private async movedSince(key: string, read: Item | undefined): Promise<boolean> {
    const now = await this.store.get(this.pk, key);
    return (now === undefined) !== (read === undefined) || now?.[macAttribute] !== read?.[macAttribute];
  }

  /** The `value` stored at `key`. */
  async get<T = Record<string, unknown>>(key: string): Promise<T | undefined> {
    return (await this.getItem(key))?.value as T | undefined;
  }

  /** The whole item at `key` (its `value` and any top-level attributes). */
  async getItem<T extends Record<string, unknown> = Record<string, unknown>>(
    key: string,
  ): Promise<(T & Item) | undefined> {
    const item = this.prefetched?.has(key) ? this.prefetched.get(key) : await this.store.get(this.pk, key);
    return this.checked(key, item) as (T & Item) | undefined;
  }

  /**
   * The `value` at `key` if it was written with `putAuthenticated` and is unchanged there: for a backend's security
   * configuration (roles that grant policies, auth config). A forged, moved or MAC-less item reads as absent and is
   * logged as an error naming its key.
   */
  async getAuthenticated<T = Record<string, unknown>>(key: string): Promise<T | undefined> {
    return this.store.verified(authenticatedValueKind, await this.getItem(key))?.value as T | undefined;
  }

  /**
   * The `value` at `key` and its `expiresAt` (covered by the MAC as well), if it was written with `putAuthenticated`
   * and is unchanged there; with `mac`, what a conditional delete names to take exactly this item.
   */
  async getAuthenticatedItem<T = Record<string, unknown>>(
    key: string,
  ): Promise<{ value: T; expiresAt?: number; mac: string } | undefined> {
    const item = this.store.verified(authenticatedValueKind, await this.getItem(key));
    if (!item) return undefined;
    return {
      value: item.value as T,
      mac: item.mac as string,
      ...(typeof item.expiresAt === 'number' ? { expiresAt: item.expiresAt } : {}),
    };
  }

  /**
   * Writes `value` at `key` with a MAC over it, its key and its `expiresAt` (the table's TTL, given for state that
   * expires), for `getAuthenticated`; with `ifAbsent`, throws ConditionFailed when something is already there.
   */
  async putAuthenticated(
    key: string,
    value: Record<string, unknown>,
    options: { ifAbsent?: boolean; expiresAt?: number } = {},
  ): Promise<void> {
    const expiry = options.expiresAt === undefined ? {} : { expiresAt: options.expiresAt };
    await this.store.put(
      this.store.signed(authenticatedValueKind, { value, ...expiry, pk: this.pk, sk: key }),
      options.ifAbsent ? { when: { absent: true } } : {},
    );
  }

  /** Writes `value` at `key`; with `ifAbsent`, throws ConditionFailed when something is already there. */
  async put(key: string, value: Record<string, unknown>, options: { ifAbsent?: boolean } = {}): Promise<void> {
    await this.putItem(key, { value }, options.ifAbsent ? { when: { absent: true } } : {});
  }

  /** Writes a whole item (its attributes besides the key) at `key`, if `when` holds (else ConditionFailed). */
  async putItem(key: string, item: Record<string, unknown>, options: { when?: Condition } = {}): Promise<void> {
    await this.store.put(this.sealedItem(key, item), options);
  }

  /**
   * Changes the item at `key` if `when` holds; the item as it is after. An authenticated item's update that changes
   * what its MAC covers is signed as the item will be (see `signedUpdate`), and tried again if another write changed
   * the item in between; a failure of `when` itself throws ConditionFailed as always.
   */
  async update<T extends Record<string, unknown> = Record<string, unknown>>(
    key: string,
    change: Change,
    options: { when?: Condition } = {},
  ): Promise<T & Item> {
    for (let attempt = 1; ; attempt++) {
      const signed = await this.signedUpdate(key, change, options.when);
      let after: T & Item;
      try {
        after = await this.store.update<T & Item>(
          { pk: this.pk, sk: key },
          signed.change,
          signed.when ? { when: signed.when } : {},
        );
      } catch (error) {
        if (
          !(error instanceof ConditionFailed) ||
          !signed.read ||
          attempt >= authenticatedUpdateAttempts ||
          !(await this.movedSince(key, signed.read.item))
        )
          throw error;
        continue;
      }
      // A bookkeeping update of an item that fails its MAC (forged, or edited since its read) hands nothing of it on.
      if (this.checked(key, after) === undefined)
        throw unavailable(
          `the stored item "${key}" failed its integrity check (forged, edited, or written before item MACs): refused`,
        );
      return after;
    }
  }

  /** Deletes the item at `key` if `when` holds; the item as it was, if there was one. */
  delete<T extends Record<string, unknown> = Record<string, unknown>>(
    key: string,
    options: { when?: Condition } = {},
  ): Promise<(T & Item) | undefined> {
    return this.store.delete<T & Item>({ pk: this.pk, sk: key }, options);
  }

  /** All or nothing: every write happens, or (a condition failing: ConditionFailed) none does. At most `maxTransactionWrites`. */
  async transact(writes: MountWrite[]): Promise<void> {
    if (writes.length > maxTransactionWrites)
      throw new RangeError(`a transaction holds at most ${maxTransactionWrites} writes, not ${writes.length}`);
    for (let attempt = 1; ; attempt++) {
      const reads: Array<{ key: string; item: Item | undefined }> = [];
      const table = await Promise.all(
        writes.map(async (write): Promise<Write> => {
          if (!('update' in write)) return this.tableWrite(write);
          const signed = await this.signedUpdate(write.update, write.change, write.when);
          if (signed.read) reads.push({ key: write.update, item: signed.read.item });
          return {
            update: { pk: this.pk, sk: write.update },
            change: signed.change,
            ...(signed.when ? { when: signed.when } : {}),
          };
        }),
      );
      try {
        await this.store.transact(table);
        return;
      } catch (error) {
        if (!(error instanceof ConditionFailed) || reads.length === 0 || attempt >= authenticatedUpdateAttempts)
          throw error;
        const moved = await Promise.all(reads.map((read) => this.movedSince(read.key, read.item)));
        if (!moved.includes(true)) throw error;
      }
    }
  }

  /**
   * The table's form of a mount write, for a transaction that also spans the system's items (leases, tokens). A put
   * of an authenticated item is signed; an update that changes what such an item's MAC covers needs a read first and
   * goes through `transact` or `update` (refused here).
   */
  tableWrite(write: MountWrite): Write {
    const key = (sk: string) => ({ pk: this.pk, sk });
    if ('put' in write)
      return { put: this.sealedItem(write.put, write.item), ...(write.when ? { when: write.when } : {}) };
    if ('update' in write) {
      const kind = this.kinds?.(write.update);
      if (
        kind &&
        changedAttributes(write.change).some((name) => name !== macAttribute && !kind.unauthenticated.has(name))
      )
        throw new Error(
          `an update of ${write.update} changes what its MAC covers: write it through transact or update`,
        );
      return { update: key(write.update), change: write.change, ...(write.when ? { when: write.when } : {}) };
    }
    if ('delete' in write) return { delete: key(write.delete), ...(write.when ? { when: write.when } : {}) };
    return { check: key(write.check), when: write.when };
  }

  /** Names directly under `prefix` (of items that verify, for authenticated ones); deeper levels appear once as `name/`. Sorted. */
  async list(prefix: string): Promise<string[]> {
    const names = new Set<string>();
    for (const item of await this.items(prefix)) {
      const rest = item.sk.slice(prefix.length);
      const slash = rest.indexOf('/');
      names.add(slash === -1 ? rest : rest.slice(0, slash + 1));
    }
    return [...names].sort();
  }

  /**
   * Every item whose key starts with `prefix`, with its key as `sk`; an authenticated item that fails its MAC is left
   * out (and logged).
   */
  async items<T extends Record<string, unknown> = Record<string, unknown>>(prefix: string): Promise<Array<T & Item>> {
    const items = await this.store.list<T & Item>(this.pk, prefix ? { prefix } : {});
    if (!this.kinds) return items;
    return items.filter((item) => this.checked(item.sk, item) !== undefined);
  }

  /** Every item of the mount as stored, forged ones included (for wiping it on disable). */
  all(): Promise<Item[]> {
    return this.store.list(this.pk);
  }

  /** Seals a sensitive value bound to where it is stored, so a sealed value copied elsewhere will not open. */
  seal(key: string, plaintext: string): string {
    return this.keyring.seal(plaintext, `${this.pk}|${key}`);
  }

  open(key: string, sealed: string): string {
    return this.keyring.open(sealed, `${this.pk}|${key}`);
  }
}
