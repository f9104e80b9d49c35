import type { Logger } from '../lib/log.ts';
import type { Item } from './intent.ts';
import { epochPattern, type ItemKind, ItemMac } from './item-mac.ts';
import type { Keyring } from './keyring.ts';
import { keyringKind, keyringPk, keyringSk } from './keyring-item.ts';

/** How often a process that has not seen the service initialised reads the keyring's item again for its epoch. */
const epochRecheckMs = 1000;

/** What every store shares: the item MACs (`item-mac.ts`) over its own `get`. */
export abstract class StoreBase {
  #itemMac: ItemMac | undefined;
  /** The initialisation epoch items of `init` kinds are MACed under (`ItemKind.epoch`); undefined before one. */
  #initEpoch: string | undefined;
  /** Whether the keyring's item read says the service was initialised: its epoch (or none, before epochs) is final. */
  #initSeen = false;
  #epochReadAt = Number.NEGATIVE_INFINITY;
  #epochRead: Promise<void> | undefined;

  abstract get<T extends Item = Item>(pk: string, sk: string): Promise<T | undefined>;

  /**
   * Turns on tamper evidence (`item-mac.ts`) once the keyring is loaded (the wrapped data key is itself in the
   * table, so the store exists first). Until then `signed` and `verified` throw: no security item is written or
   * trusted without it. `readEpoch` is then called once, before anything is verified.
   */
  authenticateWith(keyring: Keyring, log: Logger): void {
    this.#itemMac = new ItemMac(keyring, log, () => this.#initEpoch);
  }

  /**
   * Reads the initialisation epoch from the keyring's item (which must verify): the epoch `sys/init` chose, or none
   * on a table not initialised yet or initialised before epochs existed.
   */
  async readEpoch(): Promise<void> {
    this.#epochReadAt = Date.now();
    const item = this.verified(keyringKind, await this.get(keyringPk, keyringSk));
    if (!item || item.initializedAt === undefined) return;
    this.#initSeen = true;
    this.#initEpoch =
      typeof item.initEpoch === 'string' && epochPattern.test(item.initEpoch) ? item.initEpoch : undefined;
  }

  /**
   * In a process that has not yet seen the service initialised (another process may have since), reads the epoch
   * again (one read at a time); otherwise nothing. A request calls it before it verifies anything, so only requests
   * to a table not yet initialised pay a read for it.
   */
  async settleEpoch(): Promise<void> {
    if (this.#initSeen) return;
    this.#epochRead ??= this.readEpoch().finally(() => {
      this.#epochRead = undefined;
    });
    return this.#epochRead;
  }

  /**
   * The epoch of an initialisation this process is making (`sys/init`): items it signs from now on carry it.
   * `undefined` forgets it again (the initialisation did not happen: another process's did, or none), and the epoch
   * is read from the keyring's item at the next `settleEpoch`.
   */
  useInitEpoch(epoch: string | undefined): void {
    this.#initEpoch = epoch;
    this.#initSeen = epoch !== undefined;
    this.#epochReadAt = Number.NEGATIVE_INFINITY;
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
    const verified = this.itemMac.verify(kind, item);
    // Refused in a process that has not seen an initialisation another process made: its epoch is read for next time.
    if (item && !verified && kind.epoch && !this.#initSeen && Date.now() - this.#epochReadAt >= epochRecheckMs)
      this.settleEpoch().catch(() => undefined);
    return verified;
  }

  /** `get` of an authenticated item: a forged, moved or MAC-less item reads as absent. */
  async getVerified<T extends Item = Item>(kind: ItemKind, pk: string, sk: string): Promise<T | undefined> {
    return this.verified(kind, await this.get<T>(pk, sk));
  }
}
