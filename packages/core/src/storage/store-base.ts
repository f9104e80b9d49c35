import type { Logger } from '../lib/log.ts';
import type { Item } from './intent.ts';
import { bootstrapMarkerKind, bootstrapMarkerPk, bootstrapMarkerSk } from './bootstrap-marker.ts';
import { type EpochDomain, epochPattern, type ItemKind, ItemMac } from './item-mac.ts';
import type { Keyring } from './keyring.ts';
import { keyringKind, keyringPk, keyringSk } from './keyring-item.ts';

/** How often a process that has not seen an initialisation (or bootstrap) re-reads its epoch after refusing an item. */
const epochRecheckMs = 1000;

/** Where each domain's epoch is kept: the keyring's item (`initEpoch`), the scheduler's bootstrap marker (`epoch`). */
const epochSources: Record<EpochDomain, { pk: string; sk: string; kind: ItemKind; attribute: string; seenBy: string }> =
  {
    init: { pk: keyringPk, sk: keyringSk, kind: keyringKind, attribute: 'initEpoch', seenBy: 'initializedAt' },
    bootstrap: {
      pk: bootstrapMarkerPk,
      sk: bootstrapMarkerSk,
      kind: bootstrapMarkerKind,
      attribute: 'epoch',
      seenBy: 'index',
    },
  };

/** What a process knows of one domain's epoch. */
interface EpochState {
  /** The epoch the domain's items are MACed under; undefined before one (or for a table from before epochs). */
  value: string | undefined;
  /** Whether the initialisation (bootstrap) was seen: its epoch, or its absence on an older table, is then final. */
  seen: boolean;
  readAt: number;
  reading: Promise<void> | undefined;
}

/** What every store shares: the item MACs (`item-mac.ts`) over its own `get`. */
export abstract class StoreBase {
  #itemMac: ItemMac | undefined;
  readonly #epochs: Record<EpochDomain, EpochState> = {
    init: { value: undefined, seen: false, readAt: Number.NEGATIVE_INFINITY, reading: undefined },
    bootstrap: { value: undefined, seen: false, readAt: Number.NEGATIVE_INFINITY, reading: undefined },
  };

  abstract get<T extends Item = Item>(pk: string, sk: string): Promise<T | undefined>;

  /**
   * Turns on tamper evidence (`item-mac.ts`) once the keyring is loaded (the wrapped data key is itself in the
   * table, so the store exists first). Until then `signed` and `verified` throw: no security item is written or
   * trusted without it. `readEpoch` is then called once, before anything is verified.
   */
  authenticateWith(keyring: Keyring, log: Logger): void {
    this.#itemMac = new ItemMac(keyring, log, (domain) => this.#epochs[domain].value);
  }

  /**
   * Reads the epochs (or the one of `domain`) from the items that keep them, which must verify: the keyring's item for
   * the initialisation (`sys/init` chose it), the scheduler's bootstrap marker for the ACL bootstrap; none on a table
   * not initialised (bootstrapped) yet, or initialised before epochs existed.
   */
  async readEpoch(domain?: EpochDomain): Promise<void> {
    const domains: EpochDomain[] = domain ? [domain] : ['init', 'bootstrap'];
    await Promise.all(
      domains.map(async (name) => {
        const source = epochSources[name];
        const state = this.#epochs[name];
        state.readAt = Date.now();
        const item = this.verified(source.kind, await this.get(source.pk, source.sk));
        if (!item || item[source.seenBy] === undefined) return;
        const value = item[source.attribute];
        state.seen = true;
        state.value = typeof value === 'string' && epochPattern.test(value) ? value : undefined;
      }),
    );
  }

  /**
   * In a process that has not yet seen the initialisation (`init`) or the bootstrap (`bootstrap`), which another
   * process may have made since, reads that epoch again (one read at a time); otherwise nothing. A request of the
   * service calls it before it verifies anything, so only requests before that event pay a read for it.
   */
  async settleEpoch(domain: EpochDomain = 'init'): Promise<void> {
    const state = this.#epochs[domain];
    if (state.seen) return;
    state.reading ??= this.readEpoch(domain).finally(() => {
      state.reading = undefined;
    });
    return state.reading;
  }

  /**
   * The epoch of an initialisation (bootstrap) this process is making: items of that domain it signs from now on carry
   * it. `undefined` forgets it again (the event did not happen: another process's did, or none), and the epoch is read
   * from the table at the next `settleEpoch`.
   */
  useEpoch(domain: EpochDomain, epoch: string | undefined): void {
    const state = this.#epochs[domain];
    state.value = epoch;
    state.seen = epoch !== undefined;
    state.readAt = Number.NEGATIVE_INFINITY;
  }

  /** `useEpoch('init', epoch)`. */
  useInitEpoch(epoch: string | undefined): void {
    this.useEpoch('init', epoch);
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
    // Refused in a process that has not seen an initialisation (bootstrap) another process made: its epoch is read
    // for next time.
    const state = kind.epoch && this.#epochs[kind.epoch];
    if (item && !verified && kind.epoch && state && !state.seen && Date.now() - state.readAt >= epochRecheckMs)
      this.settleEpoch(kind.epoch).catch(() => undefined);
    return verified;
  }

  /** `get` of an authenticated item: a forged, moved or MAC-less item reads as absent. */
  async getVerified<T extends Item = Item>(kind: ItemKind, pk: string, sk: string): Promise<T | undefined> {
    return this.verified(kind, await this.get<T>(pk, sk));
  }
}
