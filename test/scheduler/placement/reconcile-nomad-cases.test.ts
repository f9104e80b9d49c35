/**
 * Scenarios of Nomad's own reconciler tests (`scheduler/reconciler/reconcile_cluster_test.go`), restated over this
 * service's jobs: the same allocations in, the same decisions and annotation counts out.
 */
import { describe, expect, it } from 'vitest';
import type { Allocation } from '../../../packages/core/src/scheduler/cluster/allocations/model.ts';
import type { Job } from '../../../packages/core/src/scheduler/cluster/jobs/model.ts';
import { deployment, groupState, health } from './deployment-fixtures.ts';
import { changeTask, counts, makeAlloc, makeJob, makeNode, run } from './reconcile-fixtures.ts';

const sized = (count: number, spec: Record<string, unknown> = {}) =>
  makeJob({
    Type: 'batch',
    TaskGroups: [{ Name: 'web', Count: count, Tasks: [{ Name: 'server', Driver: 'raw_exec' }] }],
    ...spec,
  });
/** Allocations 0..n-1 of `job`, each on its own node n<i>. */
const spread = (job: Job, n: number, overrides: (i: number) => Partial<Allocation> = () => ({})) =>
  Array.from({ length: n }, (_, i) => makeAlloc(job, i, `n${i}`, overrides(i)));
const nodesFor = (n: number, tainted: (i: number) => Partial<ReturnType<typeof makeNode>> = () => ({})) =>
  Array.from({ length: n }, (_, i) => makeNode(`n${i}`, tainted(i)));
const indexes = (names: string[]) => names.map((name) => Number(name.slice(name.indexOf('[') + 1, -1)));
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const migrate = { Migrate: true, Reschedule: null, ForceReschedule: null, NoShutdownDelay: null };

describe('reconcile: Nomad’s scenarios', () => {
  it('Destructive_ScaleUp: 10 replaced and 5 placed with no update block', () => {
    const v0 = sized(15);
    const v1 = changeTask(v0, { Driver: 'exec' });
    const result = run({ job: v1, jobVersions: [v0], allocs: spread(v0, 10), nodes: nodesFor(10) });
    expect(result.desiredTGUpdates).toEqual({ web: counts({ Place: 5, DestructiveUpdate: 10 }) });
    const replaced = result.place.filter((request) => request.replacing === 'update');
    expect(indexes(replaced.map((request) => request.name))).toEqual(range(0, 9));
    const fresh = result.place.filter((request) => !request.replacing);
    expect(indexes(fresh.map((request) => request.name))).toEqual(range(10, 14));
  });

  it('Destructive_ScaleDown: the highest 5 stop, the lowest 5 are replaced', () => {
    const v0 = sized(5);
    const v1 = changeTask(v0, { Driver: 'exec' });
    const result = run({ job: v1, jobVersions: [v0], allocs: spread(v0, 10), nodes: nodesFor(10) });
    expect(result.desiredTGUpdates).toEqual({ web: counts({ Stop: 5, DestructiveUpdate: 5 }) });
    const stopped = result.stop.filter((stop) => stop.description === 'alloc not needed due to job update');
    expect(indexes(stopped.map((stop) => stop.alloc.Name))).toEqual(range(5, 9));
    expect(indexes(result.place.map((request) => request.name))).toEqual(range(0, 4));
  });

  it('LostNode_ScaleDown: the lost stop first, then the highest names', () => {
    const job = sized(5);
    const result = run({ job, allocs: spread(job, 10), nodes: nodesFor(10, (i) => (i < 2 ? { Status: 'down' } : {})) });
    expect(result.desiredTGUpdates).toEqual({ web: counts({ Stop: 5, Ignore: 5 }) });
    expect(indexes(result.stop.map((stop) => stop.alloc.Name))).toEqual([0, 1, 7, 8, 9]);
    expect(result.place).toEqual([]);
  });

  it('DrainNode_ScaleDown: of 3 migrating, the 2 highest stop and 1 moves', () => {
    const job = sized(8);
    const allocs = spread(job, 10, (i) => (i < 3 ? { DesiredTransition: migrate } : {}));
    const result = run({ job, allocs, nodes: nodesFor(10) });
    expect(result.desiredTGUpdates).toEqual({ web: counts({ Migrate: 1, Stop: 2, Ignore: 7 }) });
    expect(indexes(result.stop.map((stop) => stop.alloc.Name))).toEqual([1, 2, 0]);
    expect(result.place.map((request) => [request.name, request.previousAlloc?.ID])).toEqual([
      ['web.web[0]', 'alloc-web-0'],
    ]);
  });

  it('Batch_Rerun: a new version of a batch job runs every completed allocation again', () => {
    const v0 = sized(10);
    const v1 = changeTask(v0, { KillTimeout: 1e9 });
    const result = run({
      job: v1,
      jobVersions: [v0],
      allocs: spread(v0, 10, () => ({ ClientStatus: 'complete' })),
      nodes: nodesFor(10),
    });
    expect(result.desiredTGUpdates).toEqual({ web: counts({ Place: 10, Ignore: 10 }) });
    expect(indexes(result.place.map((request) => request.name))).toEqual(range(0, 9));
  });

  it('JobStopped_TerminalAllocs: nothing to stop when every allocation is already terminal', () => {
    const job = { ...sized(10), Stop: true };
    const allocs = spread(job, 10, (i) => (i % 2 ? { DesiredStatus: 'stop' } : { ClientStatus: 'failed' }));
    const result = run({ job, allocs, nodes: nodesFor(10) });
    expect(result.stop).toEqual([]);
    expect(result.desiredTGUpdates).toEqual({ web: counts({}) });
  });

  it('MultiTG: each group reconciled on its own', () => {
    const job = makeJob({
      TaskGroups: [
        { Name: 'web', Count: 10, Tasks: [{ Name: 'server', Driver: 'raw_exec' }] },
        { Name: 'api', Count: 10, Tasks: [{ Name: 'server', Driver: 'raw_exec' }] },
      ],
    });
    const result = run({ job, allocs: spread(job, 2), nodes: nodesFor(2) });
    expect(result.desiredTGUpdates).toEqual({ web: counts({ Place: 8, Ignore: 2 }), api: counts({ Place: 10 }) });
  });

  it.each([0, 1, 2, 3, 4])(
    'DeploymentLimit_HealthAccounting: %i healthy of 4 placed frees as many replacements',
    (healthy) => {
      const update = { MaxParallel: 4 };
      const v0 = makeJob({
        Update: update,
        TaskGroups: [{ Name: 'web', Count: 10, Tasks: [{ Name: 'server', Driver: 'raw_exec' }] }],
      });
      const v1 = changeTask(v0, { Driver: 'exec' });
      const current = deployment(1, {}, groupState({ Promoted: true, DesiredTotal: 10, PlacedAllocs: 4 }));
      const placed = Array.from({ length: 4 }, (_, i) =>
        makeAlloc(v1, i, `n${i}`, { DeploymentID: 'deploy-v1', DeploymentStatus: i < healthy ? health(true) : null }),
      );
      const old = Array.from({ length: 6 }, (_, i) => makeAlloc(v0, i + 4, `n${i + 4}`));
      const result = run({
        job: v1,
        jobVersions: [v0],
        allocs: [...placed, ...old],
        nodes: nodesFor(10),
        deployment: current,
      });
      expect(result.desiredTGUpdates).toEqual({ web: counts({ DestructiveUpdate: healthy, Ignore: 10 - healthy }) });
      expect(indexes(result.place.map((request) => request.name))).toEqual(range(4, 3 + healthy));
    },
  );
});
