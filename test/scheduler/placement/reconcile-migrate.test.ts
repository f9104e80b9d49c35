/**
 * The reconciler and draining nodes: allocations marked to migrate, and a draining node's allocations as Nomad's
 * drainer marks them (keeping count - migrate.max_parallel healthy; batch and the rest at the deadline).
 */
import { describe, expect, it } from 'vitest';
import type { DrainStrategy } from '../../../packages/core/src/scheduler/cluster/nodes/model.ts';
import { counts, makeAlloc, makeJob, makeNode, now, run, second, summary } from './reconcile-fixtures.ts';

const migrating = (id: string) => ({ id, description: 'alloc is being migrated' });
/** A drain started a minute ago with a deadline `deadlineMs` after its start (negative: forced). */
const drain = (deadlineMs: number): DrainStrategy => ({
  Deadline: deadlineMs * 1e6,
  IgnoreSystemJobs: false,
  ForceDeadline: deadlineMs > 0 ? new Date(now - 60 * second + deadlineMs).toISOString() : '0001-01-01T00:00:00Z',
  StartedAt: new Date(now - 60 * second).toISOString(),
});

describe('reconcile: migrations', () => {
  const job = makeJob();
  const migrate = { Migrate: true, Reschedule: null, ForceReschedule: null, NoShutdownDelay: null };

  it('stops an allocation marked to migrate and places it anew under its name', () => {
    const allocs = [
      makeAlloc(job, 0, 'n1', { DesiredTransition: migrate }),
      makeAlloc(job, 1, 'n2'),
      makeAlloc(job, 2, 'n2'),
    ];
    const result = run({ job, allocs, nodes: [makeNode('n1'), makeNode('n2')] });
    expect(summary(result)).toEqual({
      place: [{ name: 'web.web[0]', previous: 'alloc-web-0', replacing: 'migrate' }],
      stop: [migrating('alloc-web-0')],
      inplace: [],
    });
    expect(result.desiredTGUpdates).toEqual({ web: counts({ Migrate: 1, Ignore: 2 }) });
  });

  it('migrates a draining node’s allocations one at a time (migrate.max_parallel 1), while the rest are healthy', () => {
    const nodes = [makeNode('n1', { DrainStrategy: drain(3600 * second) }), makeNode('n2')];
    const allocs = [makeAlloc(job, 0, 'n1'), makeAlloc(job, 1, 'n1'), makeAlloc(job, 2, 'n2')];
    const result = run({ job, allocs, nodes });
    expect(summary(result)).toEqual({
      place: [{ name: 'web.web[0]', previous: 'alloc-web-0', replacing: 'migrate' }],
      stop: [migrating('alloc-web-0')],
      inplace: [],
    });
    expect(result.desiredTGUpdates).toEqual({ web: counts({ Migrate: 1, Ignore: 2 }) });
  });

  it('waits while a replacement is not yet healthy, then takes the next', () => {
    const nodes = [makeNode('n1', { DrainStrategy: drain(3600 * second) }), makeNode('n2')];
    const stopped = makeAlloc(job, 0, 'n1', { DesiredStatus: 'stop', DesiredDescription: 'alloc is being migrated' });
    const replacement = (status: 'pending' | 'running') =>
      makeAlloc(job, 0, 'n2', { ID: 'alloc-web-0b', PreviousAllocation: 'alloc-web-0', ClientStatus: status });
    const base = [stopped, makeAlloc(job, 1, 'n1'), makeAlloc(job, 2, 'n2')];
    const waiting = run({ job, allocs: [...base, replacement('pending')], nodes });
    expect(summary(waiting)).toEqual({ place: [], stop: [], inplace: [] });
    const next = run({ job, allocs: [...base, replacement('running')], nodes });
    expect(summary(next).stop).toEqual([migrating('alloc-web-1')]);
  });

  it('takes migrate.max_parallel from the group', () => {
    const wide = makeJob({
      TaskGroups: [
        { Name: 'web', Count: 3, Migrate: { MaxParallel: 2 }, Tasks: [{ Name: 'server', Driver: 'raw_exec' }] },
      ],
    });
    const nodes = [makeNode('n1', { DrainStrategy: drain(3600 * second) })];
    const allocs = [0, 1, 2].map((index) => makeAlloc(wide, index, 'n1'));
    expect(summary(run({ job: wide, allocs, nodes })).stop).toEqual([
      migrating('alloc-web-0'),
      migrating('alloc-web-1'),
    ]);
  });

  it('migrates everything left once the drain’s deadline has passed, or at once for a forced drain', () => {
    const past = makeNode('n1', { DrainStrategy: drain(30 * second) });
    const allocs = [0, 1, 2].map((index) => makeAlloc(job, index, 'n1'));
    const result = run({ job, allocs, nodes: [past] });
    expect(summary(result).stop).toEqual(['alloc-web-0', 'alloc-web-1', 'alloc-web-2'].map(migrating));
    expect(result.desiredTGUpdates).toEqual({ web: counts({ Migrate: 3 }) });
    const forced = makeNode('n1', { DrainStrategy: drain(-1000) });
    expect(run({ job, allocs, nodes: [forced] }).desiredTGUpdates).toEqual({ web: counts({ Migrate: 3 }) });
    // No ForceDeadline written: the deadline counts from the drain's start.
    const unset = makeNode('n1', { DrainStrategy: { ...drain(30 * second), ForceDeadline: '0001-01-01T00:00:00Z' } });
    expect(run({ job, allocs, nodes: [unset] }).desiredTGUpdates).toEqual({ web: counts({ Migrate: 3 }) });
  });

  it('lets batch allocations on a draining node finish until the deadline', () => {
    const batch = makeJob({ Type: 'batch' });
    const allocs = [0, 1, 2].map((index) => makeAlloc(batch, index, 'n1'));
    const draining = makeNode('n1', { DrainStrategy: drain(3600 * second) });
    const result = run({ job: batch, allocs, nodes: [draining] });
    expect(summary(result)).toEqual({ place: [], stop: [], inplace: [] });
    expect(result.desiredTGUpdates).toEqual({ web: counts({ Ignore: 3 }) });
  });

  it('stops migrating allocations beyond a lowered count instead of moving them', () => {
    const two = makeJob({ TaskGroups: [{ Name: 'web', Count: 2, Tasks: [{ Name: 'server', Driver: 'raw_exec' }] }] });
    const allocs = [
      makeAlloc(two, 0, 'n2'),
      makeAlloc(two, 1, 'n1', { DesiredTransition: migrate }),
      makeAlloc(two, 2, 'n1', { DesiredTransition: migrate }),
    ];
    const result = run({ job: two, allocs, nodes: [makeNode('n1'), makeNode('n2')] });
    expect(summary(result)).toEqual({
      place: [{ name: 'web.web[1]', previous: 'alloc-web-1', replacing: 'migrate' }],
      stop: [{ id: 'alloc-web-2', description: 'alloc not needed due to job update' }, migrating('alloc-web-1')],
      inplace: [],
    });
    expect(result.desiredTGUpdates).toEqual({ web: counts({ Stop: 1, Migrate: 1, Ignore: 1 }) });
  });
});
