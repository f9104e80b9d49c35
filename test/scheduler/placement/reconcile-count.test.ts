/** The reconciler, count changes of a service job: new names take the lowest free indexes, a scale-down stops the highest. */
import { describe, expect, it } from 'vitest';
import { counts, makeAlloc, makeJob, makeNode, run, summary } from './reconcile-fixtures.ts';

const nodes = [makeNode('n1'), makeNode('n2')];

describe('reconcile: count', () => {
  it('places every allocation of a new job under names 0 to count-1', () => {
    const job = makeJob();
    const result = run({ job, allocs: [], nodes });
    expect(summary(result)).toEqual({
      place: [{ name: 'web.web[0]' }, { name: 'web.web[1]' }, { name: 'web.web[2]' }],
      stop: [],
      inplace: [],
    });
    expect(result.place.every((request) => request.group === 'web')).toBe(true);
    expect(result.desiredTGUpdates).toEqual({ web: counts({ Place: 3 }) });
    expect(result.followups).toEqual([]);
    expect(result.followupAt).toBeUndefined();
  });

  it('changes nothing when the allocations match the job', () => {
    const job = makeJob();
    const allocs = [0, 1, 2].map((index) => makeAlloc(job, index, 'n1'));
    const result = run({ job, allocs, nodes });
    expect(summary(result)).toEqual({ place: [], stop: [], inplace: [] });
    expect(result.desiredTGUpdates).toEqual({ web: counts({ Ignore: 3 }) });
  });

  it('scales up into the lowest free names, filling a gap first', () => {
    const job = makeJob({ TaskGroups: [{ Name: 'web', Count: 5, Tasks: [{ Name: 'server', Driver: 'raw_exec' }] }] });
    const allocs = [0, 2].map((index) => makeAlloc(job, index, 'n1'));
    const result = run({ job, allocs, nodes });
    expect(summary(result).place).toEqual([{ name: 'web.web[1]' }, { name: 'web.web[3]' }, { name: 'web.web[4]' }]);
    expect(result.stop).toEqual([]);
    expect(result.desiredTGUpdates).toEqual({ web: counts({ Place: 3, Ignore: 2 }) });
  });

  it('scales down by stopping the highest names', () => {
    const job = makeJob({ TaskGroups: [{ Name: 'web', Count: 2, Tasks: [{ Name: 'server', Driver: 'raw_exec' }] }] });
    const allocs = [0, 1, 2, 3, 4].map((index) => makeAlloc(job, index, index % 2 ? 'n1' : 'n2'));
    const result = run({ job, allocs, nodes });
    expect(summary(result)).toEqual({
      place: [],
      stop: [
        { id: 'alloc-web-2', description: 'alloc not needed due to job update' },
        { id: 'alloc-web-3', description: 'alloc not needed due to job update' },
        { id: 'alloc-web-4', description: 'alloc not needed due to job update' },
      ],
      inplace: [],
    });
    expect(result.desiredTGUpdates).toEqual({ web: counts({ Stop: 3, Ignore: 2 }) });
  });

  it('stops every allocation of a group scaled to zero, and of a group the job no longer has', () => {
    const job = makeJob({
      TaskGroups: [
        { Name: 'web', Count: 0, Tasks: [{ Name: 'server', Driver: 'raw_exec' }] },
        { Name: 'api', Count: 1, Tasks: [{ Name: 'server', Driver: 'raw_exec' }] },
      ],
    });
    const allocs = [
      makeAlloc(job, 0, 'n1'),
      makeAlloc(job, 1, 'n1', { ClientStatus: 'failed' }),
      makeAlloc(job, 0, 'n1', { TaskGroup: 'api', ID: 'alloc-api-0', Name: 'web.api[0]' }),
      makeAlloc(job, 0, 'n2', { TaskGroup: 'old', ID: 'alloc-old-0', Name: 'web.old[0]' }),
    ];
    const result = run({ job, allocs, nodes });
    expect(summary(result)).toEqual({
      place: [],
      stop: [
        { id: 'alloc-web-0', description: 'alloc not needed due to job update' },
        { id: 'alloc-web-1', description: 'alloc not needed due to job update' },
        { id: 'alloc-old-0', description: 'alloc not needed due to job update' },
      ],
      inplace: [],
    });
    expect(result.desiredTGUpdates).toEqual({
      web: counts({ Stop: 2 }),
      api: counts({ Ignore: 1 }),
      old: counts({ Stop: 1 }),
    });
  });

  it('does not count or replace allocations already stopped, nor a service allocation that completed', () => {
    const job = makeJob();
    const allocs = [
      makeAlloc(job, 0, 'n1'),
      makeAlloc(job, 1, 'n1', { DesiredStatus: 'stop', ClientStatus: 'complete' }),
      makeAlloc(job, 2, 'n1', { ClientStatus: 'complete' }),
    ];
    const result = run({ job, allocs, nodes });
    expect(summary(result).place).toEqual([{ name: 'web.web[1]' }, { name: 'web.web[2]' }]);
    expect(result.desiredTGUpdates).toEqual({ web: counts({ Place: 2, Ignore: 1 }) });
  });
});
