import { itemKind } from '../../storage/item-mac.ts';
import type { Keyring } from '../../storage/keyring.ts';
import type { Item, Store, TransactItem } from '../../storage/store.ts';

/** A mount's item written with `putAuthenticated`: its `value` and key are MACed (`storage/item-mac.ts`). */
export const authenticatedValueKind = itemKind('mount-value');

/** The partition that holds a mount's storage. */
export const mountPartition = (mountUuid: string) => `mount#${mountUuid}`;

/** A DynamoDB condition on the item a write touches (names and values shared with an update expression). */
export interface Condition {
  ConditionExpression?: string;
  ExpressionAttributeNames?: Record<string, string>;
  ExpressionAttributeValues?: Record<string, unknown>;
}

/**
 * One write of a mount's transaction: DynamoDB's shapes, keyed by the storage key inside the mount. `item` is the
 * item's attributes besides its key (`value`, and top-level attributes such as the due queue's `duePk`/`dueSk`).
 */
export type MountWrite =
  | { Put: { key: string; item: Record<string, unknown> } & Condition }
  | { Update: { key: string; UpdateExpression: string } & Condition }
  | { Delete: { key: string } & Condition }
  | { ConditionCheck: { key: string; ConditionExpression: string } & Condition };

/** DynamoDB's limit on the writes of one transaction: a mount's all-or-nothing change is at most this many items. */
export const maxTransactionWrites = 100;

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
  async getItem<T extends Record<string, unknown> = Record<string, unknown>>(key: string): Promise<(T & Item) | undefined> {
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

  /** Writes `value` at `key` with a MAC over it and its key, for `getAuthenticated`. */
  async putAuthenticated(key: string, value: Record<string, unknown>): Promise<void> {
    await this.store.put({ Item: this.store.signed(authenticatedValueKind, { value, pk: this.pk, sk: key }) });
  }

  /** Writes `value` at `key`; with `ifAbsent`, throws ConditionFailed when something is already there. */
  async put(key: string, value: Record<string, unknown>, options: { ifAbsent?: boolean } = {}): Promise<void> {
    await this.putItem(key, { value }, options.ifAbsent ? { ConditionExpression: 'attribute_not_exists(pk)' } : {});
  }

  /** Writes a whole item (its attributes besides the key) at `key`, if `condition` holds (else ConditionFailed). */
  async putItem(key: string, item: Record<string, unknown>, condition: Condition = {}): Promise<void> {
    await this.store.put({ Item: { ...item, pk: this.pk, sk: key }, ...condition });
  }

  /** Applies an update expression to the item at `key` if `condition` holds; the item as it is after. */
  async update<T extends Record<string, unknown> = Record<string, unknown>>(
    key: string,
    UpdateExpression: string,
    condition: Condition = {},
  ): Promise<(T & Item) | undefined> {
    return this.store.update<T & Item>({ Key: { pk: this.pk, sk: key }, UpdateExpression, ...condition });
  }

  /** Deletes the item at `key` if `condition` holds; the item as it was, if there was one. */
  async delete<T extends Record<string, unknown> = Record<string, unknown>>(key: string, condition: Condition = {}): Promise<(T & Item) | undefined> {
    return this.store.delete<T & Item>({ Key: { pk: this.pk, sk: key }, ...condition });
  }

  /** All or nothing: every write happens, or (a condition failing: ConditionFailed) none does. At most `maxTransactionWrites`. */
  async transact(writes: MountWrite[]): Promise<void> {
    if (writes.length > maxTransactionWrites) throw new RangeError(`a transaction holds at most ${maxTransactionWrites} writes, not ${writes.length}`);
    await this.store.transact(writes.map((write) => this.tableWrite(write)));
  }

  /** The table's form of a mount write, for a transaction that also spans the system's items (leases, tokens). */
  tableWrite(write: MountWrite): TransactItem {
    if ('Put' in write) {
      const { key, item, ...condition } = write.Put;
      return { Put: { Item: { ...item, pk: this.pk, sk: key }, ...condition } };
    }
    if ('Update' in write) {
      const { key, ...rest } = write.Update;
      return { Update: { Key: { pk: this.pk, sk: key }, ...rest } };
    }
    if ('Delete' in write) {
      const { key, ...condition } = write.Delete;
      return { Delete: { Key: { pk: this.pk, sk: key }, ...condition } };
    }
    const { key, ...condition } = write.ConditionCheck;
    return { ConditionCheck: { Key: { pk: this.pk, sk: key }, ...condition } };
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
    return this.store.prefix<T & Item>(this.pk, prefix);
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
