import type { Keyring } from '../../storage/keyring.ts';
import type { Item, Store } from '../../storage/store.ts';

/** The partition that holds a mount's storage. */
export const mountPartition = (mountUuid: string) => `mount#${mountUuid}`;

/**
 * A backend's own corner of the table, like Vault's logical storage: keys are slash paths inside one
 * partition per mount, so a mount can be moved or wiped without touching anyone else's data.
 */
export class MountStorage {
  readonly pk: string;
  constructor(
    readonly store: Store,
    private readonly keyring: Keyring,
    mountUuid: string,
    /** Items read ahead for this request (see `PathSpec.prefetch`), by key; a key here absent from the table is `undefined`. */
    private readonly prefetched?: ReadonlyMap<string, Item | undefined>,
  ) {
    this.pk = mountPartition(mountUuid);
  }

  async get<T = Record<string, unknown>>(key: string): Promise<T | undefined> {
    const item = this.prefetched?.has(key) ? this.prefetched.get(key) : await this.store.get(this.pk, key);
    return item?.value as T | undefined;
  }

  /** Writes `value` at `key`; with `ifAbsent`, throws ConditionFailed when something is already there. */
  async put(key: string, value: Record<string, unknown>, options: { ifAbsent?: boolean } = {}): Promise<void> {
    await this.store.put({
      Item: { pk: this.pk, sk: key, value },
      ...(options.ifAbsent ? { ConditionExpression: 'attribute_not_exists(pk)' } : {}),
    });
  }

  async delete(key: string): Promise<void> {
    await this.store.delete({ Key: { pk: this.pk, sk: key } });
  }

  /** Names directly under `prefix`; deeper levels appear once as `name/`. Sorted. */
  async list(prefix: string): Promise<string[]> {
    const names = new Set<string>();
    for (const item of await this.store.prefix(this.pk, prefix)) {
      const rest = item.sk.slice(prefix.length);
      const slash = rest.indexOf('/');
      names.add(slash === -1 ? rest : rest.slice(0, slash + 1));
    }
    return [...names].sort();
  }

  /** Every item of the mount (for wiping it on disable). */
  all(): Promise<Item[]> {
    return this.store.prefix(this.pk, '');
  }

  /** Seals a sensitive value bound to where it is stored, so a sealed value copied elsewhere will not open. */
  seal(key: string, plaintext: string): string {
    return this.keyring.seal(plaintext, `${this.pk}|${key}`);
  }

  open(key: string, sealed: string): string {
    return this.keyring.open(sealed, `${this.pk}|${key}`);
  }
}
