import { itemKind } from '../../storage/item-mac.ts';
import type { Keyring } from '../../storage/keyring.ts';
import { type Change, type Condition, maxTransactionWrites, type Write } from '../../storage/intent.ts';
import type { Item, Store } from '../../storage/store.ts';

/** A mount's item written with `putAuthenticated`: its `value` and key are MACed (`storage/item-mac.ts`). */
export const authenticatedValueKind = itemKind('mount-value');

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
  ) {
    this.pk = mountPartition(mountUuid);
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
    return item as (T & Item) | undefined;
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
    await this.store.put({ ...item, pk: this.pk, sk: key }, options);
  }

  /** Changes the item at `key` if `when` holds; the item as it is after. */
  update<T extends Record<string, unknown> = Record<string, unknown>>(
    key: string,
    change: Change,
    options: { when?: Condition } = {},
  ): Promise<T & Item> {
    return this.store.update<T & Item>({ pk: this.pk, sk: key }, change, options);
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
    await this.store.transact(writes.map((write) => this.tableWrite(write)));
  }

  /** The table's form of a mount write, for a transaction that also spans the system's items (leases, tokens). */
  tableWrite(write: MountWrite): Write {
    const key = (sk: string) => ({ pk: this.pk, sk });
    if ('put' in write)
      return { put: { ...write.item, ...key(write.put) }, ...(write.when ? { when: write.when } : {}) };
    if ('update' in write)
      return { update: key(write.update), change: write.change, ...(write.when ? { when: write.when } : {}) };
    if ('delete' in write) return { delete: key(write.delete), ...(write.when ? { when: write.when } : {}) };
    return { check: key(write.check), when: write.when };
  }

  /** Names directly under `prefix`; deeper levels appear once as `name/`. Sorted. */
  async list(prefix: string): Promise<string[]> {
    const names = new Set<string>();
    for (const item of await this.items(prefix)) {
      const rest = item.sk.slice(prefix.length);
      const slash = rest.indexOf('/');
      names.add(slash === -1 ? rest : rest.slice(0, slash + 1));
    }
    return [...names].sort();
  }

  /** Every item whose key starts with `prefix` (`''`: the whole mount, e.g. to wipe it on disable), with its key as `sk`. */
  items<T extends Record<string, unknown> = Record<string, unknown>>(prefix: string): Promise<Array<T & Item>> {
    return this.store.list<T & Item>(this.pk, prefix ? { prefix } : {});
  }

  /** Every item of the mount (for wiping it on disable). */
  all(): Promise<Item[]> {
    return this.items('');
  }

  /** Seals a sensitive value bound to where it is stored, so a sealed value copied elsewhere will not open. */
  seal(key: string, plaintext: string): string {
    return this.keyring.seal(plaintext, `${this.pk}|${key}`);
  }

  open(key: string, sealed: string): string {
    return this.keyring.open(sealed, `${this.pk}|${key}`);
  }
}
