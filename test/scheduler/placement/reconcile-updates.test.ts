/**
 * The reconciler and a new job version: a change that needs no restart updates allocations in place, one that does
 * replaces them (destructive), at most the update block's max_parallel per evaluation.
 */
import { describe, expect, it } from 'vitest';
import { changeTask, counts, makeAlloc, makeJob, makeNode, run, summary } from './reconcile-fixtures.ts';

const nodes = [makeNode('n1'), makeNode('n2', { Datacenter: 'dc2' })];
const updating = (id: string) => ({ id, description: 'alloc is being updated due to job update' });

describe('reconcile: updates', () => {
  const v0 = makeJob();
  const allocs = [0, 1, 2].map((index) => makeAlloc(v0, index, 'n1'));

  it('updates in place when only fields that need no restart changed', () => {
    const v1 = changeTask(v0, { KillTimeout: 30e9 });
    const result = run({ job: v1, jobVersions: [v0], allocs, nodes });
    expect(summary(result)).toEqual({
      place: [],
      stop: [],
      inplace: ['alloc-web-0@1', 'alloc-web-1@1', 'alloc-web-2@1'],
    });
    expect(result.inplace.every((alloc) => alloc.EvalID === 'eval-1' && alloc.NodeID === 'n1')).toBe(true);
    expect(result.desiredTGUpdates).toEqual({ web: counts({ InPlaceUpdate: 3 }) });
  });

  it('replaces one allocation at a time (the default max_parallel 1) when the task config changed', () => {
    const v1 = changeTask(v0, { Config: { command: 'python3', args: ['-m', 'http.server', '9000'] } });
    const result = run({ job: v1, jobVersions: [v0], allocs, nodes });
    expect(summary(result)).toEqual({
      place: [{ name: 'web.web[0]', previous: 'alloc-web-0', replacing: 'update' }],
      stop: [updating('alloc-web-0')],
      inplace: [],
    });
    expect(result.desiredTGUpdates).toEqual({ web: counts({ DestructiveUpdate: 1, Ignore: 2 }) });
  });

  it('takes max_parallel from the update block', () => {
    const v1 = changeTask(makeJob({ Update: { MaxParallel: 2 } }), { Env: { PORT: '9000' } });
    const result = run({ job: v1, jobVersions: [v0], allocs, nodes });
    expect(summary(result).place).toEqual([
      { name: 'web.web[0]', previous: 'alloc-web-0', replacing: 'update' },
      { name: 'web.web[1]', previous: 'alloc-web-1', replacing: 'update' },
    ]);
    expect(result.desiredTGUpdates).toEqual({ web: counts({ DestructiveUpdate: 2, Ignore: 1 }) });
  });

  it('replaces every allocation at once for a job with no update block (batch)', () => {
    const b0 = makeJob({ Type: 'batch' });
    const b1 = changeTask(b0, { Resources: { CPU: 200, MemoryMB: 300 } });
    const batchAllocs = [0, 1, 2].map((index) => makeAlloc(b0, index, 'n1'));
    const result = run({ job: b1, jobVersions: [b0], allocs: batchAllocs, nodes });
    expect(summary(result).stop).toEqual([updating('alloc-web-0'), updating('alloc-web-1'), updating('alloc-web-2')]);
    expect(result.desiredTGUpdates).toEqual({ web: counts({ DestructiveUpdate: 3 }) });
  });

  it('counts placements against max_parallel before destructive updates when scaling up with a new spec', () => {
    const changed = changeTask(
      makeJob({ TaskGroups: [{ Name: 'web', Count: 4, Tasks: [{ Name: 'server', Driver: 'raw_exec' }] }] }),
      {
        Driver: 'exec',
      },
    );
    const result = run({ job: changed, jobVersions: [v0], allocs, nodes });
    expect(summary(result)).toEqual({ place: [{ name: 'web.web[3]' }], stop: [], inplace: [] });
    expect(result.desiredTGUpdates).toEqual({ web: counts({ Place: 1, Ignore: 3 }) });
  });

  it('updates destructively what no longer fits the job’s datacenters, and what runs a version no longer stored', () => {
    const v1 = { ...changeTask(v0, { KillTimeout: 30e9 }), Datacenters: ['dc2'] };
    const moved = run({ job: v1, jobVersions: [v0], allocs, nodes });
    expect(summary(moved)).toEqual({
      place: [{ name: 'web.web[0]', previous: 'alloc-web-0', replacing: 'update' }],
      stop: [updating('alloc-web-0')],
      inplace: [],
    });
    expect(moved.desiredTGUpdates).toEqual({ web: counts({ DestructiveUpdate: 1, Ignore: 2 }) });
    const inDc = { ...changeTask(v0, { KillTimeout: 30e9 }), Datacenters: ['dc*'] };
    expect(summary(run({ job: inDc, jobVersions: [v0], allocs, nodes })).inplace).toHaveLength(3);
    const collected = run({ job: inDc, jobVersions: [], allocs, nodes });
    expect(summary(collected).stop).toEqual([updating('alloc-web-0')]);
    expect(collected.desiredTGUpdates).toEqual({ web: counts({ DestructiveUpdate: 1, Ignore: 2 }) });
  });

  it('runs a batch job again for a new version: the old version’s completed allocations are not counted', () => {
    const b0 = makeJob({ Type: 'batch' });
    const b1 = changeTask(b0, { KillTimeout: 30e9 });
    const done = [0, 1, 2].map((index) => makeAlloc(b0, index, 'n1', { ClientStatus: 'complete' }));
    const result = run({ job: b1, jobVersions: [b0], allocs: done, nodes });
    expect(summary(result)).toEqual({
      place: [{ name: 'web.web[0]' }, { name: 'web.web[1]' }, { name: 'web.web[2]' }],
      stop: [],
      inplace: [],
    });
    expect(result.desiredTGUpdates).toEqual({ web: counts({ Place: 3, Ignore: 3 }) });
  });

  it('leaves alone a failed allocation that may not reschedule when the change needs no restart', () => {
    const noReschedule = { ReschedulePolicy: { Attempts: 0, Unlimited: false } };
    const s0 = makeJob({
      TaskGroups: [{ Name: 'web', Count: 1, ...noReschedule, Tasks: [{ Name: 'server', Driver: 'raw_exec' }] }],
    });
    const s1 = changeTask(s0, { KillTimeout: 30e9 });
    const failed = makeAlloc(s0, 0, 'n1', { ClientStatus: 'failed' });
    const result = run({ job: s1, jobVersions: [s0], allocs: [failed], nodes });
    expect(summary(result)).toEqual({ place: [], stop: [], inplace: [] });
    expect(result.desiredTGUpdates).toEqual({ web: counts({ Ignore: 1 }) });
  });

  it('asks the caller whether the new version still fits where an in-place update would leave it', () => {
    const v1 = changeTask(v0, { KillTimeout: 30e9 });
    const spreadOut = [makeAlloc(v0, 0, 'n1'), makeAlloc(v0, 1, 'n2'), makeAlloc(v0, 2, 'n1')];
    const asked: string[] = [];
    const result = run({
      job: { ...v1, Datacenters: ['*'] },
      jobVersions: [v0],
      allocs: spreadOut,
      nodes,
      fitsInPlace: (alloc, job, node) => {
        asked.push(`${alloc.ID}@${job.Version}:${node.ID}`);
        return node.ID === 'n1';
      },
    });
    expect(asked).toEqual(['alloc-web-0@1:n1', 'alloc-web-1@1:n2', 'alloc-web-2@1:n1']);
    expect(summary(result)).toEqual({
      place: [{ name: 'web.web[1]', previous: 'alloc-web-1', replacing: 'update' }],
      stop: [updating('alloc-web-1')],
      inplace: ['alloc-web-0@1', 'alloc-web-2@1'],
    });
    expect(result.desiredTGUpdates).toEqual({ web: counts({ InPlaceUpdate: 2, DestructiveUpdate: 1 }) });
  });
});
