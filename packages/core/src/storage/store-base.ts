import type { Logger } from '../lib/log.ts';
import type { Item } from './intent.ts';
import { type ItemKind, ItemMac } from './item-mac.ts';
import type { Keyring } from './keyring.ts';

/** What every store shares: the item MACs (`item-mac.ts`) over its own `get`. */
export abstract class StoreBase {
  #itemMac: ItemMac | undefined;

  abstract get<T extends Item = Item>(pk: string, sk: string): Promise<T | undefined>;

  /**
   * Turns on tamper evidence (`item-mac.ts`) once the keyring is loaded (the wrapped data key is itself in the
   * table, so the store exists first). Until then `signed` and `verified` throw: no security item is written or
   * trusted without it.
   */
  authenticateWith(keyring: Keyring, log: Logger): void {
    this.#itemMac = new ItemMac(keyring, log);
  }

  private get itemMac(): ItemMac {
    if (!this.#itemMac)
      throw new Error('the store has no keyring yet: security items can be neither written nor trusted');
    return this.#itemMac;
  }

  /** The item with the MAC of its kind set, for a put (see `item-mac.ts`). */
  signed<T extends Item>(kind: ItemKind, item: T): T {
    return this.itemMac.sign(kind, item);
  }

  /** The MAC an item of `kind` with these attributes carries, for an update that rewrites covered attributes. */
  macOf(kind: ItemKind, item: Item): string {
    return this.itemMac.tag(kind, item);
  }

  /** The item if its MAC verifies, else undefined (logged as an error naming its key): what every read of security state goes through. */
  verified<T extends Item>(kind: ItemKind, item: T | undefined): T | undefined {
    return this.itemMac.verify(kind, item);
  }

  /** `get` of an authenticated item: a forged, moved or MAC-less item reads as absent. */
  async getVerified<T extends Item = Item>(kind: ItemKind, pk: string, sk: string): Promise<T | undefined> {
    return this.verified(kind, await this.get<T>(pk, sk));
  }
}
