import { randomBytes, randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../packages/core/src/lib/log.ts';
import { ConditionFailed } from '../../packages/core/src/storage/condition-failed.ts';
import type { Condition, Item, Store } from '../../packages/core/src/storage/intent.ts';
import { itemKind } from '../../packages/core/src/storage/item-mac.ts';
import { Keyring } from '../../packages/core/src/storage/keyring.ts';
import { storeImplementations } from '../support/store-implementations.ts';

const sks = (items: Item[]) => items.map((item) => item.sk);

/** A rejection that is not a failed condition: the store refused the request itself. */
async function refused(promise: Promise<unknown>, message: RegExp): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (failure: unknown) => failure,
  );
  expect(error).toBeInstanceOf(Error);
  expect(error).not.toBeInstanceOf(ConditionFailed);
  expect((error as Error).message).toMatch(message);
}

/**
 * One suite, two stores: `intent.ts`'s operations on DynamoDB Local (a fresh table) and in memory must behave
 * alike — what is stored, what is returned, which conditions hold, what a failure leaves behind.
 */
describe.each(storeImplementations)('the store contract on %s', (_name, open) => {
  let store: Store;
  // Each test writes under its own partition, so the tests share one table without seeing each other.
  let n = 0;
  const partition = () => `p${++n}-${randomUUID()}`;
  beforeAll(async () => {
    store = await open();
  });

  describe('get, put, batchGet, delete', () => {
    it('stores every kind of value as given, leaving out undefined attributes at any depth', async () => {
      const pk = partition();
      const item = {
        pk,
        sk: 'a',
        text: 'x',
        empty: '',
        number: 1.5,
        yes: true,
        bytes: new Uint8Array([1, 2, 3]),
        list: [1, 'two', { three: 3 }],
        map: { inner: { deep: 'd' }, gone: undefined },
        set: new Set(['s1', 's2']),
        gone: undefined,
      };
      await store.put(item);
      const got = await store.get(pk, 'a');
      expect(got).toEqual({
        pk,
        sk: 'a',
        text: 'x',
        empty: '',
        number: 1.5,
        yes: true,
        bytes: new Uint8Array([1, 2, 3]),
        list: [1, 'two', { three: 3 }],
        map: { inner: { deep: 'd' } },
        set: new Set(['s1', 's2']),
      });
      expect(Object.keys(got ?? {})).not.toContain('gone');
      expect(await store.get(pk, 'nothing')).toBeUndefined();
    });

    it('keeps a number past Number.MAX_SAFE_INTEGER as the same number (a nanosecond time), not a BigInt', async () => {
      const pk = partition();
      const nanos = Date.UTC(2026, 0, 1) * 1e6;
      await store.put({ pk, sk: 'a', nanos, list: [nanos], map: { nanos } });
      const got = await store.get(pk, 'a');
      expect(got).toEqual({ pk, sk: 'a', nanos, list: [nanos], map: { nanos } });
      expect(typeof got?.nanos).toBe('number');
      expect((await store.list(pk))[0]?.nanos).toBe(nanos);
    });

    it('gives a copy: changing what was read or written does not change what is stored', async () => {
      const pk = partition();
      const item = { pk, sk: 'a', map: { v: 1 } };
      await store.put(item);
      item.map.v = 2;
      const read = await store.get<Item & { map: { v: number } }>(pk, 'a');
      expect(read?.map.v).toBe(1);
      if (read) read.map.v = 3;
      expect((await store.get<Item & { map: { v: number } }>(pk, 'a'))?.map.v).toBe(1);
    });

    it('batchGet returns the items that exist, keyed pk|sk, over more than one request', async () => {
      const pk = partition();
      for (let index = 0; index < 120; index += 2) await store.put({ pk, sk: `k${index}`, index });
      const keys = Array.from({ length: 120 }, (_, index) => ({ pk, sk: `k${index}` }));
      const found = await store.batchGet([...keys, { pk, sk: 'k0' }]);
      expect(found.size).toBe(60);
      expect(found.get(`${pk}|k10`)).toEqual({ pk, sk: 'k10', index: 10 });
      expect(found.has(`${pk}|k11`)).toBe(false);
      expect((await store.batchGet([])).size).toBe(0);
    });

    it('answers concurrent calls of one kind each with its own result, failing only the call whose condition fails', async () => {
      const pk = partition();
      const count = 64;
      const writes = await Promise.allSettled(
        Array.from({ length: count }, (_, index) =>
          store.put({ pk, sk: `c${index}`, index }, index === 7 ? { when: { exists: true } } : {}),
        ),
      );
      const failed = writes.flatMap((each, index) => (each.status === 'rejected' ? [index] : []));
      expect(failed).toEqual([7]);
      expect((writes[7] as PromiseRejectedResult).reason).toBeInstanceOf(ConditionFailed);
      const reads = await Promise.all(Array.from({ length: count }, (_, index) => store.get(pk, `c${index}`)));
      expect(reads).toEqual(
        Array.from({ length: count }, (_, index) => (index === 7 ? undefined : { pk, sk: `c${index}`, index })),
      );
      const pairs = await Promise.all(
        Array.from({ length: count / 2 }, (_, index) =>
          store.batchGet([
            { pk, sk: `c${2 * index}` },
            { pk, sk: `c${2 * index + 1}` },
          ]),
        ),
      );
      expect(
        pairs.map((found) => [...found.values()].map((item) => item.index).sort((a, b) => Number(a) - Number(b))),
      ).toEqual(
        Array.from({ length: count / 2 }, (_, index) => [2 * index, 2 * index + 1].filter((each) => each !== 7)),
      );
    });

    it('put overwrites the whole item; putting when absent fails once something is there, leaving it as it was', async () => {
      const pk = partition();
      await store.put({ pk, sk: 'a', v: 1, extra: 'x' }, { when: { absent: true } });
      await expect(store.put({ pk, sk: 'a', v: 2 }, { when: { absent: true } })).rejects.toBeInstanceOf(
        ConditionFailed,
      );
      expect(await store.get(pk, 'a')).toEqual({ pk, sk: 'a', v: 1, extra: 'x' });
      await store.put({ pk, sk: 'a', v: 3 });
      expect(await store.get(pk, 'a')).toEqual({ pk, sk: 'a', v: 3 });
    });

    it('put when the item exists fails on a missing item and writes nothing', async () => {
      const pk = partition();
      await expect(store.put({ pk, sk: 'a', v: 1 }, { when: { exists: true } })).rejects.toBeInstanceOf(
        ConditionFailed,
      );
      expect(await store.get(pk, 'a')).toBeUndefined();
    });

    it('delete returns the item as it was (undefined when absent); a failed condition deletes nothing', async () => {
      const pk = partition();
      await store.put({ pk, sk: 'a', v: 1 });
      await expect(store.delete({ pk, sk: 'a' }, { when: { equals: { v: 2 } } })).rejects.toBeInstanceOf(
        ConditionFailed,
      );
      expect(await store.get(pk, 'a')).toEqual({ pk, sk: 'a', v: 1 });
      expect(await store.delete({ pk, sk: 'a' }, { when: { equals: { v: 1 } } })).toEqual({ pk, sk: 'a', v: 1 });
      expect(await store.get(pk, 'a')).toBeUndefined();
      expect(await store.delete({ pk, sk: 'a' })).toBeUndefined();
      await expect(store.delete({ pk, sk: 'a' }, { when: { exists: true } })).rejects.toBeInstanceOf(ConditionFailed);
    });

    it('refuses an empty key', async () => {
      await refused(store.put({ pk: partition(), sk: '' }), /empty string/);
    });
  });

  describe('conditions', () => {
    const subject = {
      n: 5,
      s: 'm',
      flag: true,
      value: { generation: 3, inner: { deep: 'd' } },
      list: [1, 2],
      set: new Set(['a', 'b']),
      bytes: new Uint8Array([9]),
    };
    const cases: Array<[string, Condition, boolean]> = [
      ['exists', { exists: true }, true],
      ['absent', { absent: true }, false],
      ['equals a number', { equals: { n: 5 } }, true],
      ['equals a different number', { equals: { n: 6 } }, false],
      ['equals across types', { equals: { n: '5' } }, false],
      ['equals a boolean', { equals: { flag: true } }, true],
      ['equals a nested attribute', { equals: { 'value.generation': 3 } }, true],
      ['equals a deeper attribute', { equals: { 'value.inner.deep': 'd' } }, true],
      ['equals a whole map', { equals: { value: { inner: { deep: 'd' }, generation: 3 } } }, true],
      [
        'equals a map with one more entry',
        { equals: { value: { inner: { deep: 'd' }, generation: 3, more: 1 } } },
        false,
      ],
      ['equals a list', { equals: { list: [1, 2] } }, true],
      ['equals a list in another order', { equals: { list: [2, 1] } }, false],
      ['equals a set in another order', { equals: { set: new Set(['b', 'a']) } }, true],
      ['equals binary', { equals: { bytes: new Uint8Array([9]) } }, true],
      ['equals on a missing attribute', { equals: { nothing: 1 } }, false],
      ['equals several, all matching', { equals: { n: 5, s: 'm' } }, true],
      ['equals several, one not', { equals: { n: 5, s: 'x' } }, false],
      ['missing, when missing', { missing: ['nothing', 'value.nothing'] }, true],
      ['missing, when there', { missing: ['n'] }, false],
      ['missing, nested and there', { missing: ['value.generation'] }, false],
      ['present, when there', { present: ['n', 'value.inner'] }, true],
      ['present, when missing', { present: ['nothing'] }, false],
      ['below', { below: { n: 6 } }, true],
      ['below, equal', { below: { n: 5 } }, false],
      ['atMost, equal', { atMost: { n: 5 } }, true],
      ['atMost, less', { atMost: { n: 4 } }, false],
      ['above', { above: { n: 4 } }, true],
      ['above, equal', { above: { n: 5 } }, false],
      ['atLeast, equal', { atLeast: { n: 5 } }, true],
      ['atLeast, more', { atLeast: { n: 6 } }, false],
      ['below on strings', { below: { s: 'n' } }, true],
      ['above on strings', { above: { s: 'n' } }, false],
      ['a comparison across types', { below: { s: 100 } }, false],
      ['a comparison on a missing attribute', { atMost: { nothing: 100 } }, false],
      ['beginsWith', { beginsWith: { s: 'm' } }, true],
      ['beginsWith, not', { beginsWith: { s: 'x' } }, false],
      ['beginsWith on a number', { beginsWith: { n: '5' } }, false],
      ['two fields, both holding', { exists: true, missing: ['revoking'] }, true],
      ['two fields, one failing', { exists: true, missing: ['n'] }, false],
      ['all, holding', { all: [{ exists: true }, { equals: { n: 5 } }] }, true],
      ['all, one failing', { all: [{ exists: true }, { equals: { n: 4 } }] }, false],
      ['any, one holding', { any: [{ missing: ['n'] }, { atMost: { n: 5 } }] }, true],
      ['any, none holding', { any: [{ missing: ['n'] }, { atMost: { n: 4 } }] }, false],
      ['any with an empty member', { any: [{ missing: ['n'] }, {}] }, true],
      ['not', { not: { equals: { n: 4 } } }, true],
      ['not, failing', { not: { exists: true } }, false],
      [
        'nested',
        {
          exists: true,
          any: [{ missing: ['until'] }, { all: [{ atMost: { n: 5 } }, { not: { equals: { s: 'x' } } }] }],
        },
        true,
      ],
      ['empty: always holds', {}, true],
    ];
    it.each(cases)('%s', async (_what, when, expected) => {
      const pk = partition();
      await store.put({ pk, sk: 'a', ...subject });
      const attempt = store.update({ pk, sk: 'a' }, { set: { touched: true } }, { when });
      if (expected) {
        expect(await attempt).toMatchObject({ touched: true });
        expect(await store.get(pk, 'a')).toMatchObject({ touched: true });
      } else {
        await expect(attempt).rejects.toBeInstanceOf(ConditionFailed);
        expect(await store.get(pk, 'a')).toEqual({ pk, sk: 'a', ...subject });
      }
    });

    it('on a missing item only absence and missing attributes hold', async () => {
      const pk = partition();
      await expect(store.put({ pk, sk: 'a', v: 1 }, { when: { equals: { v: 1 } } })).rejects.toBeInstanceOf(
        ConditionFailed,
      );
      await expect(store.put({ pk, sk: 'a', v: 1 }, { when: { not: { missing: ['v'] } } })).rejects.toBeInstanceOf(
        ConditionFailed,
      );
      await store.put({ pk, sk: 'a', v: 1 }, { when: { missing: ['v'], not: { equals: { v: 1 } } } });
      expect(await store.get(pk, 'a')).toEqual({ pk, sk: 'a', v: 1 });
    });

    it('refuses conditions that name nothing', async () => {
      const pk = partition();
      await expect(store.put({ pk, sk: 'a' }, { when: { equals: {} } })).rejects.toThrow(/names no attribute/);
      await expect(store.put({ pk, sk: 'a' }, { when: { missing: [] } })).rejects.toThrow(/names no attribute/);
      await expect(store.put({ pk, sk: 'a' }, { when: { all: [] } })).rejects.toThrow(/holds no condition/);
      await expect(store.put({ pk, sk: 'a' }, { when: { any: [] } })).rejects.toThrow(/holds no condition/);
      await expect(store.put({ pk, sk: 'a' }, { when: { not: {} } })).rejects.toThrow(/can never hold/);
      expect(await store.get(pk, 'a')).toBeUndefined();
    });
  });

  describe('update', () => {
    it('sets, removes (also by setting undefined) and returns the item as it is after', async () => {
      const pk = partition();
      await store.put({ pk, sk: 'a', keep: 1, drop: 2, alsoDrop: 3 });
      const after = await store.update(
        { pk, sk: 'a' },
        { set: { added: 'x', alsoDrop: undefined }, remove: ['drop', 'neverThere'] },
      );
      expect(after).toEqual({ pk, sk: 'a', keep: 1, added: 'x' });
      expect(await store.get(pk, 'a')).toEqual(after);
    });

    it('creates a missing item from its key, unless the condition asks for it to exist', async () => {
      const pk = partition();
      await expect(store.update({ pk, sk: 'a' }, { set: { v: 1 } }, { when: { exists: true } })).rejects.toBeInstanceOf(
        ConditionFailed,
      );
      expect(await store.get(pk, 'a')).toBeUndefined();
      expect(await store.update({ pk, sk: 'a' }, { set: { v: 1 } })).toEqual({ pk, sk: 'a', v: 1 });
      expect(await store.update({ pk, sk: 'b' }, {})).toEqual({ pk, sk: 'b' });
    });

    it('sets and removes inside maps; a nested path needs its parent', async () => {
      const pk = partition();
      await store.put({ pk, sk: 'a', entry: { uuid: 'u', disabling: true } });
      expect(
        await store.update(
          { pk, sk: 'a' },
          { set: { 'entry.flag': 1 }, remove: ['entry.disabling', 'entry.neverThere'] },
        ),
      ).toEqual({ pk, sk: 'a', entry: { uuid: 'u', flag: 1 } });
      await refused(
        store.update({ pk, sk: 'a' }, { set: { 'nothing.flag': 1 } }),
        /document path provided in the update expression is invalid/,
      );
      expect(await store.get(pk, 'a')).toEqual({ pk, sk: 'a', entry: { uuid: 'u', flag: 1 } });
    });

    it('adds to numbers (a missing one counting as 0), subtracts with a negative amount', async () => {
      const pk = partition();
      await store.put({ pk, sk: 'a', uses: 3 });
      expect(await store.update({ pk, sk: 'a' }, { add: { uses: -1, count: 2 } })).toEqual({
        pk,
        sk: 'a',
        uses: 2,
        count: 2,
      });
    });

    it('setIfMissing keeps what is there; append extends a list (a missing one counting as empty)', async () => {
      const pk = partition();
      await store.put({ pk, sk: 'a', first: 'kept', log: ['one'] });
      expect(
        await store.update(
          { pk, sk: 'a' },
          { setIfMissing: { first: 'no', second: 'yes' }, append: { log: ['two', 'three'], fresh: [1] } },
        ),
      ).toEqual({
        pk,
        sk: 'a',
        first: 'kept',
        second: 'yes',
        log: ['one', 'two', 'three'],
        fresh: [1],
      });
    });

    it('copies one attribute to another, reading the item as it was before the update', async () => {
      const pk = partition();
      await store.put({ pk, sk: 'a', queue: 'q1', old: 'before' });
      expect(
        await store.update({ pk, sk: 'a' }, { copy: { duePk: 'queue', saved: 'old' }, set: { old: 'after' } }),
      ).toEqual({ pk, sk: 'a', queue: 'q1', duePk: 'q1', old: 'after', saved: 'before' });
      await refused(
        store.update({ pk, sk: 'a' }, { copy: { x: 'nothing' } }),
        /refers to an attribute that does not exist/,
      );
    });

    it('refuses overlapping paths and key attributes, changing nothing', async () => {
      const pk = partition();
      await store.put({ pk, sk: 'a', entry: { v: 1 }, n: 1 });
      await refused(store.update({ pk, sk: 'a' }, { set: { entry: {} }, remove: ['entry.v'] }), /overlap/);
      await refused(store.update({ pk, sk: 'a' }, { set: { n: 2 }, add: { n: 1 } }), /overlap/);
      await refused(store.update({ pk, sk: 'a' }, { set: { sk: 'b' } }), /part of the key/);
      expect(await store.get(pk, 'a')).toEqual({ pk, sk: 'a', entry: { v: 1 }, n: 1 });
    });

    it('a failed condition changes nothing', async () => {
      const pk = partition();
      await store.put({ pk, sk: 'a', uses: 1 });
      await expect(
        store.update({ pk, sk: 'a' }, { add: { uses: -1 }, set: { revoking: true } }, { when: { above: { uses: 1 } } }),
      ).rejects.toBeInstanceOf(ConditionFailed);
      expect(await store.get(pk, 'a')).toEqual({ pk, sk: 'a', uses: 1 });
    });
  });

  describe('list', () => {
    const keys = ['a', 'a/1', 'a/2', 'B', 'b', 'b/1', 'é', 'z'];
    async function filled(): Promise<string> {
      const pk = partition();
      for (const [index, sk] of keys.entries()) await store.put({ pk, sk, index, even: index % 2 === 0 });
      await store.put({ pk: `${pk}-other`, sk: 'a' });
      return pk;
    }

    it('lists a partition in byte order of the sort key', async () => {
      const pk = await filled();
      expect(sks(await store.list(pk))).toEqual(['B', 'a', 'a/1', 'a/2', 'b', 'b/1', 'z', 'é']);
      expect(await store.list(`${pk}-none`)).toEqual([]);
    });

    it('lists by prefix', async () => {
      const pk = await filled();
      expect(sks(await store.list(pk, { prefix: 'a/' }))).toEqual(['a/1', 'a/2']);
      expect(sks(await store.list(pk, { prefix: 'b' }))).toEqual(['b', 'b/1']);
      expect(sks(await store.list(pk, { prefix: '' }))).toHaveLength(keys.length);
    });

    it('lists by range, each end inclusive or not', async () => {
      const pk = await filled();
      expect(sks(await store.list(pk, { range: { after: 'a/2' } }))).toEqual(['b', 'b/1', 'z', 'é']);
      expect(sks(await store.list(pk, { range: { from: 'a/2' } }))).toEqual(['a/2', 'b', 'b/1', 'z', 'é']);
      expect(sks(await store.list(pk, { range: { before: 'a/1' } }))).toEqual(['B', 'a']);
      expect(sks(await store.list(pk, { range: { to: 'a/1' } }))).toEqual(['B', 'a', 'a/1']);
      expect(sks(await store.list(pk, { range: { from: 'a', to: 'b' } }))).toEqual(['a', 'a/1', 'a/2', 'b']);
      expect(sks(await store.list(pk, { range: { after: 'a', before: 'b' } }))).toEqual(['a/1', 'a/2']);
      expect(sks(await store.list(pk, { range: { after: 'a', to: 'b' } }))).toEqual(['a/1', 'a/2', 'b']);
      await expect(store.list(pk, { prefix: 'a', range: { to: 'b' } })).rejects.toThrow(/prefix or a range/);
      await expect(store.list(pk, { range: { after: 'a', from: 'a' } })).rejects.toThrow(/after or from/);
      await refused(store.list(pk, { where: { equals: { sk: 'a' } } }), /non-primary key attributes/);
    });

    it('lists highest first, at most a limit, filtered before the limit counts', async () => {
      const pk = await filled();
      expect(sks(await store.list(pk, { reverse: true }))).toEqual(['é', 'z', 'b/1', 'b', 'a/2', 'a/1', 'a', 'B']);
      expect(sks(await store.list(pk, { limit: 3 }))).toEqual(['B', 'a', 'a/1']);
      expect(sks(await store.list(pk, { reverse: true, limit: 2 }))).toEqual(['é', 'z']);
      expect(sks(await store.list(pk, { where: { equals: { even: true } } }))).toEqual(['a', 'a/2', 'b', 'é']);
      expect(sks(await store.list(pk, { where: { equals: { even: true } }, limit: 2 }))).toEqual(['a', 'a/2']);
      expect(
        sks(await store.list(pk, { prefix: 'a', where: { above: { index: 1 } }, reverse: true, limit: 1 })),
      ).toEqual(['a/2']);
    });

    it('reads every page of a large partition', async () => {
      const pk = partition();
      const big = 'x'.repeat(60_000);
      // 25 items of 60 kB are more than DynamoDB's 1 MB page.
      for (let index = 0; index < 25; index++)
        await store.put({ pk, sk: `k${String(index).padStart(2, '0')}`, index, big });
      const all = await store.list(pk);
      expect(sks(all)).toEqual(Array.from({ length: 25 }, (_, index) => `k${String(index).padStart(2, '0')}`));
      expect(sks(await store.list(pk, { limit: 20 }))).toHaveLength(20);
      expect(sks(await store.list(pk, { where: { atLeast: { index: 20 } } }))).toEqual([
        'k20',
        'k21',
        'k22',
        'k23',
        'k24',
      ]);
    });

    it("lists the due index's partition by its sort key, leaving out items not on it", async () => {
      const queue = `queue-${randomUUID()}`;
      const pk = partition();
      await store.put({ pk, sk: 'late', duePk: queue, dueSk: '000000000300#late' });
      await store.put({ pk, sk: 'early', duePk: queue, dueSk: '000000000100#early' });
      await store.put({ pk, sk: 'middle', duePk: queue, dueSk: '000000000200#middle', name: 'middle' });
      await store.put({ pk, sk: 'elsewhere', duePk: `${queue}-other`, dueSk: '000000000100#x' });
      await store.put({ pk, sk: 'unqueued' });
      const listed = async (options: Parameters<Store['list']>[1]) => {
        // The index is read eventually consistent on DynamoDB: wait for the three items to show.
        for (let attempt = 0; attempt < 50 && (await store.list(queue, { index: 'due' })).length < 3; attempt++)
          await new Promise((resolve) => setTimeout(resolve, 100));
        return (await store.list(queue, options)).map((item) => item.sk);
      };
      expect(await listed({ index: 'due' })).toEqual(['early', 'middle', 'late']);
      expect(await listed({ index: 'due', range: { to: '000000000200#~' } })).toEqual(['early', 'middle']);
      expect(await listed({ index: 'due', limit: 1 })).toEqual(['early']);
      expect(await listed({ index: 'due', reverse: true, limit: 1 })).toEqual(['late']);
      expect(await listed({ index: 'due', where: { beginsWith: { name: 'm' } } })).toEqual(['middle']);
      await refused(
        store.list(queue, { index: 'due', where: { beginsWith: { dueSk: '0' } } }),
        /non-primary key attributes/,
      );
    });

    it('scan returns every item', async () => {
      const pk = await filled();
      const mine = (await store.scan()).filter((item) => item.pk === pk);
      expect(mine.map((item) => item.sk).sort()).toEqual([...keys].sort());
    });
  });

  describe('transactions', () => {
    it('makes every write when every condition holds', async () => {
      const pk = partition();
      await store.put({ pk, sk: 'old', v: 1 });
      await store.put({ pk, sk: 'counter', n: 1 });
      await store.put({ pk, sk: 'marker', ok: true });
      await store.transact([
        { put: { pk, sk: 'new', v: 2 }, when: { absent: true } },
        { delete: { pk, sk: 'old' }, when: { exists: true } },
        { update: { pk, sk: 'counter' }, change: { add: { n: 1 } }, when: { equals: { n: 1 } } },
        { check: { pk, sk: 'marker' }, when: { equals: { ok: true } } },
      ]);
      expect(sks(await store.list(pk))).toEqual(['counter', 'marker', 'new']);
      expect(await store.get(pk, 'counter')).toEqual({ pk, sk: 'counter', n: 2 });
    });

    it('writes nothing when one condition fails, and says which', async () => {
      const pk = partition();
      await store.put({ pk, sk: 'old', v: 1 });
      await store.put({ pk, sk: 'marker', ok: false });
      const error = await store
        .transact([
          { put: { pk, sk: 'new', v: 2 }, when: { absent: true } },
          { check: { pk, sk: 'marker' }, when: { equals: { ok: true } } },
          { delete: { pk, sk: 'old' } },
          { update: { pk, sk: 'made' }, change: { set: { v: 1 } } },
        ])
        .catch((failure: unknown) => failure);
      expect(error).toBeInstanceOf(ConditionFailed);
      expect((error as ConditionFailed).reasons?.map((reason) => reason.Code)).toEqual([
        'None',
        'ConditionalCheckFailed',
        'None',
        'None',
      ]);
      expect(sks(await store.list(pk))).toEqual(['marker', 'old']);
    });

    it('refuses two writes to one item, more than 100 writes, a check that cannot fail and an update that changes nothing', async () => {
      const pk = partition();
      await refused(
        store.transact([{ put: { pk, sk: 'a' } }, { delete: { pk, sk: 'a' } }]),
        /multiple operations on one item/,
      );
      await expect(
        store.transact(Array.from({ length: 101 }, (_, index) => ({ put: { pk, sk: `k${index}` } }))),
      ).rejects.toThrow(/at most 100 writes/);
      await expect(store.transact([{ put: { pk, sk: 'a' } }, { check: { pk, sk: 'b' }, when: {} }])).rejects.toThrow(
        /needs a condition/,
      );
      await expect(store.transact([{ put: { pk, sk: 'a' } }, { update: { pk, sk: 'b' }, change: {} }])).rejects.toThrow(
        /changes nothing/,
      );
      expect(await store.list(pk)).toEqual([]);
    });

    it('takes 100 writes', async () => {
      const pk = partition();
      await store.transact(
        Array.from({ length: 100 }, (_, index) => ({
          put: { pk, sk: `k${String(index).padStart(3, '0')}` },
          when: { absent: true },
        })),
      );
      expect(await store.list(pk)).toHaveLength(100);
    });
  });

  describe('item MACs', () => {
    const kind = itemKind('contract-test', ['counter']);
    it('refuses to sign or verify before a keyring is given', async () => {
      const fresh = await open();
      expect(() => fresh.signed(kind, { pk: 'p', sk: 's' })).toThrow(/no keyring yet/);
    });

    it('verifies what it signed, and reads a changed, moved or unsigned item as absent', async () => {
      store.authenticateWith(Keyring.fromDataKey(randomBytes(32)), silentLogger);
      const pk = partition();
      const signed = store.signed(kind, { pk, sk: 'a', value: 'v', counter: 1 });
      await store.put(signed);
      expect(await store.getVerified(kind, pk, 'a')).toEqual(signed);
      // An attribute outside the MAC may change; one inside may not.
      await store.update({ pk, sk: 'a' }, { add: { counter: 1 } });
      expect(await store.getVerified(kind, pk, 'a')).toMatchObject({ value: 'v', counter: 2 });
      expect(store.macOf(kind, { pk, sk: 'a', value: 'v' })).toBe((signed as Item).mac);
      await store.update({ pk, sk: 'a' }, { set: { value: 'forged' } });
      expect(await store.getVerified(kind, pk, 'a')).toBeUndefined();
      await store.put({ ...signed, sk: 'moved' });
      expect(await store.getVerified(kind, pk, 'moved')).toBeUndefined();
      await store.put({ pk, sk: 'bare', value: 'v' });
      expect(await store.getVerified(kind, pk, 'bare')).toBeUndefined();
      expect(await store.getVerified(kind, pk, 'nothing')).toBeUndefined();
    });
  });
});
