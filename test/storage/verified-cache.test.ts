import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { type Logger, silentLogger } from '../../packages/core/src/lib/log.ts';
import type { Item, ListOptions, Store } from '../../packages/core/src/storage/intent.ts';
import { itemKind } from '../../packages/core/src/storage/item-mac.ts';
import { Keyring } from '../../packages/core/src/storage/keyring.ts';
import { VerifiedCache } from '../../packages/core/src/storage/verified-cache.ts';
import { storeImplementations } from '../support/store-implementations.ts';

/**
 * The verified cache (`storage/verified-cache.ts`) on DynamoDB Local and in memory: each read gives exactly what
 * `list` then `verified` give (new, changed, deleted and forged items included), while reading whole, after its first
 * read of a partition, only the items whose MAC it does not hold. The whole items read are counted at the store.
 */
const kind = itemKind('verified-cache-test');
const errors: unknown[] = [];
const log: Logger = { ...silentLogger, error: (...args: unknown[]) => void errors.push(args) } as Logger;
const keyring = Keyring.fromDataKey(new Uint8Array(32).map((_, index) => index + 3));

/** A view of the store counting the whole items it returns (listings of keys and MACs only are not counted). */
function counted(store: Store): { store: Store; wholeReads: () => number } {
  let whole = 0;
  // What the cache calls (list, batchGet, verified), the rest of the store's interface unused.
  const view = { verified: store.verified.bind(store) } as Store;
  view.batchGet = async (keys) => {
    const found = await store.batchGet(keys);
    whole += found.size;
    return found;
  };
  view.list = async <T extends Item = Item>(partition: string, options?: ListOptions) => {
    const items = await store.list<T>(partition, options);
    if (options?.attributes === undefined) whole += items.length;
    return items;
  };
  return { store: view, wholeReads: () => whole };
}

const value = (item: Item) => ({ sk: item.sk, n: item.n, inner: item.inner });

describe.each(storeImplementations)('the verified cache on %s', (_name, open) => {
  let store: Store;
  beforeAll(async () => {
    store = await open();
    store.authenticateWith(keyring, log);
  });

  it('lists keys and MACs only with the attributes option', async () => {
    const pk = `p-${randomUUID()}`;
    await store.put(store.signed(kind, { pk, sk: 'a', n: 1, inner: { big: 'x'.repeat(100) } }));
    const [head] = await store.list(pk, { attributes: ['mac'] });
    expect(Object.keys(head ?? {}).sort()).toEqual(['mac', 'pk', 'sk']);
    expect(head?.mac).toMatch(/^v1:/);
  });

  it('gives what list and verify give, reading whole only new or changed items', async () => {
    const pk = `p-${randomUUID()}`;
    const { store: reads, wholeReads } = counted(store);
    const cache = new VerifiedCache(() => reads, kind, value, 100);
    for (const sk of ['a', 'b', 'c']) await store.put(store.signed(kind, { pk, sk, n: 1, inner: { v: sk } }));
    expect(await cache.list(pk)).toEqual([
      { sk: 'a', n: 1, inner: { v: 'a' } },
      { sk: 'b', n: 1, inner: { v: 'b' } },
      { sk: 'c', n: 1, inner: { v: 'c' } },
    ]);
    expect(wholeReads()).toBe(3);
    // Unchanged: nothing read whole.
    expect((await cache.list(pk)).map((held) => held.sk)).toEqual(['a', 'b', 'c']);
    expect(wholeReads()).toBe(3);
    // One changed, one deleted, one added: only the changed and the added are read whole.
    await store.put(store.signed(kind, { pk, sk: 'b', n: 2, inner: { v: 'b2' } }));
    await store.delete({ pk, sk: 'c' });
    await store.put(store.signed(kind, { pk, sk: 'd', n: 1, inner: { v: 'd' } }));
    expect(await cache.list(pk)).toEqual([
      { sk: 'a', n: 1, inner: { v: 'a' } },
      { sk: 'b', n: 2, inner: { v: 'b2' } },
      { sk: 'd', n: 1, inner: { v: 'd' } },
    ]);
    expect(wholeReads()).toBe(5);
    expect(await cache.list(`${pk}-empty`)).toEqual([]);
  });

  it('under an unchanged mark gives the held items without a request; a moved mark reads the partition again', async () => {
    const pk = `p-${randomUUID()}`;
    let listings = 0;
    const { store: reads, wholeReads } = counted(store);
    const view = {
      ...reads,
      list: (...args: Parameters<Store['list']>) => {
        listings++;
        return reads.list(...args);
      },
    } as Store;
    const cache = new VerifiedCache(() => view, kind, value, 100);
    for (const sk of ['b', 'a']) await store.put(store.signed(kind, { pk, sk, n: 1, inner: { v: sk } }));
    expect((await cache.list(pk, 7)).map((held) => held.sk)).toEqual(['a', 'b']);
    expect([listings, wholeReads()]).toEqual([1, 2]);
    // The partition changes, and the mark with it: the held items are not given under the old mark's value.
    await store.put(store.signed(kind, { pk, sk: 'c', n: 1, inner: { v: 'c' } }));
    await store.put(store.signed(kind, { pk, sk: 'a', n: 2, inner: { v: 'a2' } }));
    expect(await cache.list(pk, 9)).toEqual([
      { sk: 'a', n: 2, inner: { v: 'a2' } },
      { sk: 'b', n: 1, inner: { v: 'b' } },
      { sk: 'c', n: 1, inner: { v: 'c' } },
    ]);
    expect([listings, wholeReads()]).toEqual([2, 4]);
    // The same mark again: the held items, in the same order, and no request at all.
    expect((await cache.list(pk, 9)).map((held) => held.sk)).toEqual(['a', 'b', 'c']);
    expect([listings, wholeReads()]).toEqual([2, 4]);
    // Without a mark the partition is listed (keys and MACs) as before, and a later mark is not taken as the old one.
    expect((await cache.list(pk)).map((held) => held.sk)).toEqual(['a', 'b', 'c']);
    expect(listings).toBe(3);
    expect((await cache.list(pk, 9)).map((held) => held.sk)).toEqual(['a', 'b', 'c']);
    expect(listings).toBe(4);
  });

  it('refuses a forged or unsigned item as verify does, and never trusts it later', async () => {
    const pk = `p-${randomUUID()}`;
    const cache = new VerifiedCache(() => store, kind, value, 100);
    await store.put(store.signed(kind, { pk, sk: 'a', n: 1 }));
    await store.put({ pk, sk: 'forged', n: 9, mac: 'v1:AAAA' });
    await store.put({ pk, sk: 'unsigned', n: 9 });
    errors.length = 0;
    expect((await cache.list(pk)).map((held) => held.sk)).toEqual(['a']);
    expect((await cache.list(pk)).map((held) => held.sk)).toEqual(['a']);
    expect(errors.length).toBe(4);
    // An item changed with its MAC left: the held item (as verified) is what the read gives, as a put of it back would.
    const signed = store.signed(kind, { pk, sk: 'a', n: 1 });
    await store.put({ ...signed, n: 1000 });
    expect(await cache.list(pk)).toEqual([{ sk: 'a', n: 1 }]);
    // A new cache (another process) reads it whole and refuses it.
    expect(await new VerifiedCache(() => store, kind, value, 100).list(pk)).toEqual([]);
  });

  it('holds frozen values, and drops the partitions read longest ago past its bound', async () => {
    const { store: reads, wholeReads } = counted(store);
    const cache = new VerifiedCache(() => reads, kind, value, 4);
    const partitions = [`p-${randomUUID()}`, `p-${randomUUID()}`, `p-${randomUUID()}`];
    for (const pk of partitions)
      for (const sk of ['a', 'b']) await store.put(store.signed(kind, { pk, sk, n: 1, inner: { v: sk } }));
    const [first] = await cache.list(partitions[0] as string);
    expect(Object.isFrozen(first)).toBe(true);
    expect(Object.isFrozen(first?.inner)).toBe(true);
    await cache.list(partitions[1] as string);
    expect(wholeReads()).toBe(4);
    await cache.list(partitions[0] as string); // held: the second partition is now the one read longest ago
    expect(wholeReads()).toBe(4);
    await cache.list(partitions[2] as string); // six held: the second is dropped
    await cache.list(partitions[0] as string);
    expect(wholeReads()).toBe(6);
    await cache.list(partitions[1] as string);
    expect(wholeReads()).toBe(8);
  });

  it('refuses a kind whose MAC binds an epoch', () => {
    expect(() => new VerifiedCache(() => store, itemKind('epoch-kind', [], { epoch: 'init' }), value, 10)).toThrow(
      /bind an epoch/,
    );
  });
});
