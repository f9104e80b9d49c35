/** The reconciler when a job is stopped or purged: every live allocation stops, a lost one as lost. */
import { describe, expect, it } from 'vitest';
import { counts, makeAlloc, makeJob, makeNode, run, summary } from './reconcile-fixtures.ts';

describe('reconcile: stop and purge', () => {
  const job = makeJob();
  const nodes = [makeNode('n1'), makeNode('n2', { Status: 'down' })];
  const allocs = [
    makeAlloc(job, 0, 'n1'),
    makeAlloc(job, 1, 'n2'),
    makeAlloc(job, 2, 'n1', { ClientStatus: 'failed' }),
    makeAlloc(job, 3, 'n1', { DesiredStatus: 'stop', ClientStatus: 'complete' }),
  ];
  const expected = {
    place: [],
    stop: [
      { id: 'alloc-web-0', description: 'alloc not needed due to job update' },
      { id: 'alloc-web-1', description: 'alloc is lost since its node is down', clientStatus: 'lost' },
    ],
    inplace: [],
  };

  it('stops every live allocation of a stopped job', () => {
    const result = run({ job: { ...job, Stop: true }, allocs, nodes });
    expect(summary(result)).toEqual(expected);
    expect(result.desiredTGUpdates).toEqual({ web: counts({ Stop: 2 }) });
    expect(result.followups).toEqual([]);
  });

  it('stops every live allocation of a purged job, grouped by the allocations’ groups', () => {
    const result = run({ job: undefined, jobId: 'web', allocs, nodes });
    expect(summary(result)).toEqual(expected);
    expect(result.desiredTGUpdates).toEqual({ web: counts({ Stop: 2 }) });
  });

  it('gives a purged job with no live allocation nothing to do', () => {
    const result = run({ job: undefined, jobId: 'web', allocs: [allocs[3]!], nodes });
    expect(summary(result)).toEqual({ place: [], stop: [], inplace: [] });
    expect(result.desiredTGUpdates).toEqual({ web: counts({}) });
  });

  it('marks lost an allocation told to stop whose down node never reported it, without counting it', () => {
    const stopped = makeAlloc(job, 1, 'n2', { DesiredStatus: 'stop', ClientStatus: 'running' });
    const result = run({ job: { ...job, Stop: true }, allocs: [stopped], nodes });
    expect(summary(result).stop).toEqual([
      { id: 'alloc-web-1', description: 'alloc is lost since its node is down', clientStatus: 'lost' },
    ]);
    expect(result.desiredTGUpdates).toEqual({ web: counts({}) });
  });
});
