/**
 * Verified items of some partitions kept between reads, for a reader that reads the same large partitions again and
 * again (the scheduler's snapshot of every node and the allocations on them, `scheduler/worker/decide.ts`).
 *
 * The first read of a partition lists it whole and verifies every item, as any reader does. A later read lists the
 * partition's keys and MACs only (a projection, `ListOptions.attributes`), takes the items whose stored MAC is the
 * one of an item it already holds verified, and reads whole (strongly consistent batch reads) and verifies only the
 * others: new items, changed items, items refused before. An item's MAC is an HMAC over its kind,
 * key and every covered attribute (`item-mac.ts`), so a stored MAC equal to a held item's means the stored item is
 * that item, or one the table's writer altered while leaving the MAC: then the held (genuine, earlier) item is used,
 * which is what that writer could also get by putting the earlier item back; an altered item whose MAC changed is
 * read whole and refused as always. An item the listing has and the batch read no longer finds was deleted between
 * the two reads, and is left out; one written between them is read as written. Only for kinds whose MAC binds no
 * epoch (an epoch's change would otherwise leave held items trusted).
 *
 * A reader that has a mark of the partition's writes (`list`'s `mark`) skips even the listing while the mark stays.
 *
 * What is held is the reader's value of each item (`toValue`, e.g. without its keys), frozen (a reader must not
 * change what the next read returns), and bounded: past `maxItems` the partitions read longest ago are dropped.
 */
import type { ItemKind } from './item-mac.ts';
import type { Item, Store } from './store.ts';

const macAttribute = 'mac';

interface Held<V> {
  mac: string;
  value: V;
}

/** Freezes a value and everything in it. */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}

export class VerifiedCache<V> {
  /** Per partition read, its items by sort key; a Map's order is the order partitions were last read. */
  private readonly partitions = new Map<string, Map<string, Held<V>>>();
  /** Per partition held, the mark it was read under (`list`'s `mark`), if any. */
  private readonly marks = new Map<string, number>();
  private held = 0;

  constructor(
    private readonly store: () => Store,
    private readonly kind: ItemKind,
    private readonly toValue: (item: Item) => V,
    private readonly maxItems: number,
  ) {
    if (kind.epoch) throw new TypeError(`items of kind ${kind.name} bind an epoch and cannot be held verified`);
  }

  /**
   * The values of the partition's items that verify, by sort key: what `store.list` then `store.verified` give.
   * `mark`, when the caller has one, is a verified value read before this call that moves with every write to the
   * partition (a node's allocation mark, `scheduler/beat-marks.ts`): when it is the one held with the partition,
   * the partition is unchanged since it was read and the held values are returned without a request.
   */
  async list(partition: string, mark?: number): Promise<V[]> {
    const before = this.partitions.get(partition);
    if (before && mark !== undefined && this.marks.get(partition) === mark) {
      this.hold(partition, before, mark);
      return [...before.values()].map((held) => held.value);
    }
    return this.read(partition, before, mark);
  }

  /** Drops every mark held (a mark may have been left behind): each partition is listed again, once. */
  forgetMarks(): void {
    this.marks.clear();
  }

  /** The partition read: whole when not held, else its keys and MACs and only the new or changed items whole. */
  private async read(partition: string, before: Map<string, Held<V>> | undefined, mark?: number): Promise<V[]> {
    const store = this.store();
    if (!before) return this.readWhole(store, partition, mark);
    const heads = await store.list(partition, { attributes: [macAttribute] });
    const kept = new Map<string, Held<V>>();
    const missing: string[] = [];
    for (const head of heads) {
      const held = before?.get(head.sk);
      if (held && held.mac === head[macAttribute]) kept.set(head.sk, held);
      else missing.push(head.sk);
    }
    if (missing.length > 0) {
      const found = await store.batchGet(missing.map((sk) => ({ pk: partition, sk })));
      for (const item of found.values()) {
        const verified = store.verified(this.kind, item);
        if (verified)
          kept.set(verified.sk, { mac: verified[macAttribute] as string, value: deepFreeze(this.toValue(verified)) });
      }
    }
    // Held in the listing's order (by sort key), which a later call under the same mark returns again.
    const ordered = new Map<string, Held<V>>();
    for (const head of heads) {
      const held = kept.get(head.sk);
      if (held) ordered.set(head.sk, held);
    }
    this.hold(partition, ordered, mark);
    return [...ordered.values()].map((held) => held.value);
  }

  /** A partition not held: read whole in one listing, as a reader without this cache reads it. */
  private async readWhole(store: Store, partition: string, mark?: number): Promise<V[]> {
    const kept = new Map<string, Held<V>>();
    for (const item of await store.list(partition)) {
      const verified = store.verified(this.kind, item);
      if (verified)
        kept.set(verified.sk, { mac: verified[macAttribute] as string, value: deepFreeze(this.toValue(verified)) });
    }
    this.hold(partition, kept, mark);
    return [...kept.values()].map((held) => held.value);
  }

  /**
   * Holds the partition's items as read now with the mark read before them (none: no mark), in one step (so two
   * reads of a partition at once never leave one's items with the other's mark), dropping the partitions read
   * longest ago past the bound.
   */
  private hold(partition: string, kept: Map<string, Held<V>>, mark: number | undefined): void {
    if (mark === undefined) this.marks.delete(partition);
    else this.marks.set(partition, mark);
    this.held += kept.size - (this.partitions.get(partition)?.size ?? 0);
    this.partitions.delete(partition);
    this.partitions.set(partition, kept);
    for (const [oldest, items] of this.partitions) {
      if (this.held <= this.maxItems || oldest === partition) break;
      this.partitions.delete(oldest);
      this.marks.delete(oldest);
      this.held -= items.size;
    }
  }
}
