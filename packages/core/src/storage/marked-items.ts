/**
 * Verified items kept between reads, each with a mark: a verified value, read before the item, that moves with every
 * write of the item (the scheduler's nodes, marked by their beats, `scheduler/beat-marks.ts`). A read of items whose
 * mark is the one held gives the held items without a request; the others are read whole (strongly consistent batch
 * reads of 100) and verified, as any reader reads them, and held with the mark given.
 *
 * An item held under a mark is the item as it was at or after that mark was written; while the mark stays, no write
 * changed it, so the held item is the stored one (or, if the table's writer changed it without the mark, the genuine
 * earlier item, which that writer could also get by putting it back). An item that is absent or does not verify is
 * not held, and is read again on every call. Only for kinds whose MAC binds no epoch. What is held is the reader's
 * value of each item, frozen, and bounded: past `maxItems` the items read longest ago are dropped.
 */
import type { ItemKind } from './item-mac.ts';
import { type Item, itemKey, type Key, type Store } from './store.ts';
import { deepFreeze } from './verified-cache.ts';

/** How many batch reads of 100 run at once. */
const readsAtOnce = 8;

export class MarkedItems<V> {
  /** By item key, in the order the items were last used. */
  private readonly held = new Map<string, { mark: number; value: V }>();

  constructor(
    private readonly store: () => Store,
    private readonly kind: ItemKind,
    private readonly toValue: (item: Item) => V,
    private readonly maxItems: number,
  ) {
    if (kind.epoch) throw new TypeError(`items of kind ${kind.name} bind an epoch and cannot be held verified`);
  }

  /** Drops every item held (a mark may have been left behind: each is read again, once). */
  forget(): void {
    this.held.clear();
  }

  /**
   * The values of the items at `wanted` (in its order) that exist and verify; a `mark` undefined is never taken as
   * held (the item is read).
   */
  async get(wanted: Array<{ key: Key; mark: number | undefined }>): Promise<V[]> {
    const store = this.store();
    const values = new Map<string, V>();
    const missing: Array<{ key: Key; mark: number | undefined }> = [];
    for (const entry of wanted) {
      const id = itemKey(entry.key.pk, entry.key.sk);
      const held = this.held.get(id);
      if (held && entry.mark !== undefined && held.mark === entry.mark) {
        values.set(id, held.value);
        this.held.delete(id);
        this.held.set(id, held);
      } else missing.push(entry);
    }
    const chunks: Array<typeof missing> = [];
    for (let start = 0; start < missing.length; start += 100) chunks.push(missing.slice(start, start + 100));
    for (let start = 0; start < chunks.length; start += readsAtOnce) {
      const reads = await Promise.all(
        chunks
          .slice(start, start + readsAtOnce)
          .map(async (chunk) => ({ chunk, found: await store.batchGet(chunk.map(({ key }) => key)) })),
      );
      for (const { chunk, found } of reads)
        for (const { key, mark } of chunk) {
          const id = itemKey(key.pk, key.sk);
          const verified = store.verified(this.kind, found.get(id));
          if (!verified) {
            this.held.delete(id);
            continue;
          }
          const value = deepFreeze(this.toValue(verified));
          values.set(id, value);
          this.held.delete(id);
          if (mark !== undefined) this.held.set(id, { mark, value });
        }
    }
    for (const [oldest] of this.held) {
      if (this.held.size <= this.maxItems) break;
      this.held.delete(oldest);
    }
    return wanted
      .map(({ key }) => values.get(itemKey(key.pk, key.sk)))
      .filter((value): value is V => value !== undefined);
  }
}
