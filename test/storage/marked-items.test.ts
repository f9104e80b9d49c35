import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../packages/core/src/lib/log.ts';
import type { Item, Key, Store } from '../../packages/core/src/storage/intent.ts';
import { itemKind } from '../../packages/core/src/storage/item-mac.ts';
import { Keyring } from '../../packages/core/src/storage/keyring.ts';
import { MarkedItems } from '../../packages/core/src/storage/marked-items.ts';
import { storeImplementations } from '../support/store-implementations.ts';

/**
 * Marked items (`storage/marked-items.ts`) on DynamoDB Local and in memory: an item held under the mark given is
 * returned without a read; any other mark (or none) reads it whole and verifies it, as any reader does. The batch
 * reads are counted at the store.
 */
const kind = itemKind('marked-items-test');
const keyring = Keyring.fromDataKey(new Uint8Array(32).map((_, index) => index + 5));

const value = (item: Item) => ({ sk: item.sk, n: item.n });

describe.each(storeImplementations)('marked items on %s', (_name, open) => {
  let store: Store;
  beforeAll(async () => {
    store = await open();
    store.authenticateWith(keyring, silentLogger);
  });

  it('gives a held item under its mark without a read, and reads again under another mark or none', async () => {
    const pk = `p-${randomUUID()}`;
    let reads = 0;
    const view = {
      verified: store.verified.bind(store),
      batchGet: (keys: Key[]) => {
        reads++;
        return store.batchGet(keys);
      },
    } as Store;
    const items = new MarkedItems(() => view, kind, value, 100);
    await store.put(store.signed(kind, { pk, sk: 'a', n: 1 }));
    await store.put(store.signed(kind, { pk, sk: 'b', n: 1 }));
    const a = { pk, sk: 'a' };
    const b = { pk, sk: 'b' };
    expect(
      await items.get([
        { key: b, mark: 1 },
        { key: a, mark: 1 },
      ]),
    ).toEqual([
      { sk: 'b', n: 1 },
      { sk: 'a', n: 1 },
    ]);
    expect(reads).toBe(1);
    const [held] = await items.get([{ key: a, mark: 1 }]);
    expect(Object.isFrozen(held)).toBe(true);
    expect(reads).toBe(1);
    // Changed, with its mark moved: read again. Without a mark: read every time.
    await store.put(store.signed(kind, { pk, sk: 'a', n: 2 }));
    expect(
      await items.get([
        { key: a, mark: 2 },
        { key: b, mark: 1 },
      ]),
    ).toEqual([
      { sk: 'a', n: 2 },
      { sk: 'b', n: 1 },
    ]);
    expect(reads).toBe(2);
    expect(await items.get([{ key: b, mark: undefined }])).toEqual([{ sk: 'b', n: 1 }]);
    expect(await items.get([{ key: b, mark: undefined }])).toEqual([{ sk: 'b', n: 1 }]);
    expect(reads).toBe(4);
  });

  it('never holds an absent, forged or unsigned item, and drops the items used longest ago past its bound', async () => {
    const pk = `p-${randomUUID()}`;
    const items = new MarkedItems(() => store, kind, value, 2);
    await store.put({ pk, sk: 'forged', n: 9, mac: 'v1:AAAA' });
    await store.put({ pk, sk: 'unsigned', n: 9 });
    const keys = ['forged', 'unsigned', 'absent'].map((sk) => ({ key: { pk, sk }, mark: 1 }));
    expect(await items.get(keys)).toEqual([]);
    // Signed now, under the same mark: read (nothing was held), and given.
    await store.put(store.signed(kind, { pk, sk: 'forged', n: 1 }));
    expect(await items.get(keys)).toEqual([{ sk: 'forged', n: 1 }]);
    for (const sk of ['x', 'y']) await store.put(store.signed(kind, { pk, sk, n: 1 }));
    await items.get(['x', 'y'].map((sk) => ({ key: { pk, sk }, mark: 1 })));
    // Two held at most: 'forged' was used longest ago and is dropped, so a change under the same mark is read.
    await store.put(store.signed(kind, { pk, sk: 'forged', n: 3 }));
    expect(await items.get([{ key: { pk, sk: 'forged' }, mark: 1 }])).toEqual([{ sk: 'forged', n: 3 }]);
  });

  it('refuses a kind whose MAC binds an epoch', () => {
    expect(() => new MarkedItems(() => store, itemKind('epoch-kind', [], { epoch: 'init' }), value, 10)).toThrow(
      /bind an epoch/,
    );
  });
});
