/** The reconciler and nodes that went away: a down, disconnected or collected node's allocations are lost and replaced. */
import { describe, expect, it } from 'vitest';
import { counts, makeAlloc, makeJob, makeNode, run, summary } from './reconcile-fixtures.ts';

const lost = (id: string) => ({ id, description: 'alloc is lost since its node is down', clientStatus: 'lost' });

describe('reconcile: lost allocations', () => {
  const job = makeJob();

  it('stops a down node’s allocation as lost and places its replacement under the same name', () => {
    const nodes = [makeNode('n1'), makeNode('n2', { Status: 'down' })];
    const allocs = [makeAlloc(job, 0, 'n1'), makeAlloc(job, 1, 'n2'), makeAlloc(job, 2, 'n1')];
    const result = run({ job, allocs, nodes });
    expect(summary(result)).toEqual({
      place: [{ name: 'web.web[1]', previous: 'alloc-web-1', replacing: 'lost' }],
      stop: [lost('alloc-web-1')],
      inplace: [],
    });
    expect(result.place[0]?.penaltyNodeIds).toBeUndefined();
    expect(result.desiredTGUpdates).toEqual({ web: counts({ Place: 1, Stop: 1, Ignore: 2 }) });
  });

  it('treats a disconnected node and a node no longer known (collected) as down', () => {
    const nodes = [makeNode('n1'), makeNode('n3', { Status: 'disconnected' })];
    const allocs = [makeAlloc(job, 0, 'n1'), makeAlloc(job, 1, 'n3'), makeAlloc(job, 2, 'gone')];
    const result = run({ job, allocs, nodes });
    expect(summary(result)).toEqual({
      place: [
        { name: 'web.web[1]', previous: 'alloc-web-1', replacing: 'lost' },
        { name: 'web.web[2]', previous: 'alloc-web-2', replacing: 'lost' },
      ],
      stop: [lost('alloc-web-1'), lost('alloc-web-2')],
      inplace: [],
    });
    expect(result.desiredTGUpdates).toEqual({ web: counts({ Place: 2, Stop: 2, Ignore: 1 }) });
  });

  it('replaces lost allocations only up to the count', () => {
    const scaled = makeJob({
      TaskGroups: [{ Name: 'web', Count: 2, Tasks: [{ Name: 'server', Driver: 'raw_exec' }] }],
    });
    const nodes = [makeNode('n1'), makeNode('n2', { Status: 'down' })];
    const allocs = [makeAlloc(scaled, 0, 'n1'), makeAlloc(scaled, 1, 'n2'), makeAlloc(scaled, 2, 'n2')];
    const result = run({ job: scaled, allocs, nodes });
    expect(summary(result)).toEqual({
      place: [{ name: 'web.web[1]', previous: 'alloc-web-1', replacing: 'lost' }],
      stop: [lost('alloc-web-1'), lost('alloc-web-2')],
      inplace: [],
    });
    expect(result.desiredTGUpdates).toEqual({ web: counts({ Place: 1, Stop: 2, Ignore: 1 }) });
  });

  it('leaves a completed batch allocation on a down node alone', () => {
    const batch = makeJob({ Type: 'batch' });
    const nodes = [makeNode('n1'), makeNode('n2', { Status: 'down' })];
    const allocs = [
      makeAlloc(batch, 0, 'n2', { ClientStatus: 'complete' }),
      makeAlloc(batch, 1, 'n2'),
      makeAlloc(batch, 2, 'n1'),
    ];
    const result = run({ job: batch, allocs, nodes });
    expect(summary(result)).toEqual({
      place: [{ name: 'web.web[1]', previous: 'alloc-web-1', replacing: 'lost' }],
      stop: [lost('alloc-web-1')],
      inplace: [],
    });
    expect(result.desiredTGUpdates).toEqual({ web: counts({ Place: 1, Stop: 1, Ignore: 2 }) });
  });
});
