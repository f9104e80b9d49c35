/** Allocation names (Nomad's AllocNameIndex): the lowest free indexes, the highest to stop, duplicates renamed. */
import { describe, expect, it } from 'vitest';
import { AllocNameIndex, allocIndex, allocName } from '../../../packages/core/src/scheduler/placement/alloc-names.ts';
import { counts, makeAlloc, makeJob, makeNode, run, summary } from './reconcile-fixtures.ts';

const names = (...indexes: number[]) => indexes.map((index) => allocName('web', 'web', index));

describe('allocation names', () => {
  it('reads the index of a name as Nomad does, 0 when there is none', () => {
    expect(allocIndex('web.web[12]', 'web', 'web')).toBe(12);
    expect(allocIndex('a.b.c[3]', 'a.b', 'c')).toBe(3);
    expect(allocIndex('web.web[x]', 'web', 'web')).toBe(0);
    expect(allocIndex('web', 'web', 'web')).toBe(0);
  });

  it('gives the lowest free indexes below the count, then overlapping ones from 0', () => {
    const index = new AllocNameIndex('web', 'web', 4, names(1, 3));
    expect(index.next(2)).toEqual(names(0, 2));
    expect(index.next(2)).toEqual(names(0, 1));
  });

  it('takes the highest names in use for removal, beyond the count too', () => {
    const index = new AllocNameIndex('web', 'web', 2, names(0, 1, 5, 9));
    expect([...index.highest(3)]).toEqual(names(9, 5, 1));
    expect(index.next(1)).toEqual(names(1));
  });

  it('remembers duplicates: unsetting one keeps the index held', () => {
    const index = new AllocNameIndex('web', 'web', 3, names(0, 1, 1));
    expect(index.isDuplicate(1)).toBe(true);
    index.unsetIndex(1);
    expect(index.isDuplicate(1)).toBe(false);
    expect(index.next(1)).toEqual(names(2));
    index.unsetIndex(1);
    expect(index.next(1)).toEqual(names(1));
  });

  it('names canaries after the allocations being replaced, then free names, then beyond the count', () => {
    const index = new AllocNameIndex('web', 'web', 3, names(0, 1, 2));
    expect(index.nextCanaries(2, new Set(names(0)), names(0, 1, 2))).toEqual(names(1, 2));
    const full = new AllocNameIndex('web', 'web', 2, names(0, 1));
    expect(full.nextCanaries(3, new Set(), [])).toEqual(names(2, 3, 4));
  });
});

describe('reconcile: duplicate names', () => {
  it('stops one of two allocations holding a name when over the count, and renames a replacement reusing it', () => {
    const job = makeJob();
    const twice = [
      makeAlloc(job, 0, 'n1'),
      makeAlloc(job, 1, 'n1'),
      makeAlloc(job, 1, 'n1', { ID: 'alloc-web-1b' }),
      makeAlloc(job, 2, 'n1'),
    ];
    const over = run({ job, allocs: twice, nodes: [makeNode('n1')] });
    expect(summary(over).stop).toEqual([{ id: 'alloc-web-2', description: 'alloc not needed due to job update' }]);
    const down = makeNode('n2', { Status: 'down' });
    const lost = [
      makeAlloc(job, 0, 'n1'),
      makeAlloc(job, 1, 'n2'),
      makeAlloc(job, 1, 'n1', { ID: 'alloc-web-1b', ClientStatus: 'pending' }),
    ];
    const result = run({ job, allocs: lost, nodes: [makeNode('n1'), down] });
    expect(summary(result).place).toEqual([{ name: 'web.web[2]', previous: 'alloc-web-1', replacing: 'lost' }]);
    expect(result.desiredTGUpdates).toEqual({ web: counts({ Place: 1, Stop: 1, Ignore: 2 }) });
  });
});
