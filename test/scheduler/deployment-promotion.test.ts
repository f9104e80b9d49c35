/**
 * Promotion and health counting as pure functions (Nomad's UpdateDeploymentPromotion and updateDeploymentWithAlloc):
 * which canaries count, the multierror text naming every short group, what a promotion changes, and how a verdict
 * moves a group's counts and progress deadline.
 */
import { describe, expect, it } from 'vitest';
import type { Allocation } from '../../packages/core/src/scheduler/cluster/allocations/model.ts';
import { withAllocHealth, withPlacement } from '../../packages/core/src/scheduler/cluster/deployments/health.ts';
import type {
  ClusterDeployment,
  DeploymentState,
} from '../../packages/core/src/scheduler/cluster/deployments/model.ts';
import { promote } from '../../packages/core/src/scheduler/cluster/deployments/promotion.ts';

const zero = '0001-01-01T00:00:00Z';
const state = (overrides: Partial<DeploymentState> = {}): DeploymentState => ({
  AutoRevert: false,
  AutoPromote: false,
  ProgressDeadline: 0,
  RequireProgressBy: zero,
  Promoted: false,
  PlacedCanaries: null,
  DesiredCanaries: 0,
  DesiredTotal: 2,
  PlacedAllocs: 0,
  HealthyAllocs: 0,
  UnhealthyAllocs: 0,
  ...overrides,
});
const deployment = (groups: Record<string, DeploymentState>): ClusterDeployment => ({
  ID: 'd1',
  Namespace: 'default',
  JobID: 'web',
  JobVersion: 1,
  JobModifyIndex: 5,
  JobSpecModifyIndex: 5,
  JobCreateIndex: 1,
  IsMultiregion: false,
  TaskGroups: groups,
  Status: 'running',
  StatusDescription: 'Deployment is running but requires manual promotion',
  EvalPriority: 50,
  CreateIndex: 6,
  ModifyIndex: 6,
  CreateTime: 0,
  ModifyTime: 0,
});
const alloc = (id: string, group: string, healthy: boolean | null, overrides: Partial<Allocation> = {}) =>
  ({
    ID: id,
    TaskGroup: group,
    DeploymentID: 'd1',
    DesiredStatus: 'run',
    ClientStatus: 'running',
    DeploymentStatus: { Healthy: healthy, Timestamp: '2026-01-01T00:00:10.000Z', Canary: true, ModifyIndex: 7 },
    ...overrides,
  }) as Allocation;

describe('promotion', () => {
  const groups = {
    web: state({ DesiredCanaries: 1, PlacedCanaries: ['c1'] }),
    api: state({
      DesiredCanaries: 2,
      PlacedCanaries: ['c2', 'c3'],
      ProgressDeadline: 60e9,
      RequireProgressBy: '2026-01-01T00:01:00.000Z',
    }),
    plain: state(),
  };

  it('names every group short of healthy canaries, in Go’s multierror text; terminal canaries do not count', () => {
    const allocs = [
      alloc('c1', 'web', null),
      alloc('c2', 'api', true),
      alloc('c3', 'api', true, { ClientStatus: 'failed' }),
    ];
    expect(() => promote(deployment(groups), allocs, true, [], 9, 0)).toThrow(
      '2 errors occurred:\n\t* Task group "api" has 1/2 healthy allocations\n\t* Task group "web" has 0/1 healthy allocations\n\n',
    );
    // Only the chosen group is checked.
    expect(() => promote(deployment(groups), allocs, false, ['web'], 9, 0)).toThrow(
      '1 error occurred:\n\t* Task group "web" has 0/1 healthy allocations\n\n',
    );
  });

  it('promotes the chosen groups, restarts their deadline and turns their healthy canaries into allocations', () => {
    const allocs = [alloc('c1', 'web', null), alloc('c2', 'api', true), alloc('c3', 'api', true)];
    const nowNs = Date.parse('2026-01-01T00:00:30.000Z') * 1e6;
    const { deployment: after, promoted } = promote(deployment(groups), allocs, false, ['api'], 9, nowNs);
    expect(after.TaskGroups.api).toMatchObject({ Promoted: true, RequireProgressBy: '2026-01-01T00:01:30.000Z' });
    expect(after.TaskGroups.web?.Promoted).toBe(false);
    // web still waits: the description stays.
    expect(after.StatusDescription).toBe('Deployment is running but requires manual promotion');
    expect([after.ModifyIndex, after.ModifyTime]).toEqual([9, nowNs]);
    expect(
      promoted.map((a) => [a.ID, a.DeploymentStatus?.Canary, a.DeploymentStatus?.ModifyIndex, a.ModifyIndex]),
    ).toEqual([
      ['c2', false, 9, 9],
      ['c3', false, 9, 9],
    ]);
    const all = promote(deployment(groups), [...allocs.slice(1), alloc('c1', 'web', true)], true, [], 10, nowNs);
    expect(all.deployment.StatusDescription).toBe('Deployment is running');
    expect(Object.values(all.deployment.TaskGroups).every((group) => group.Promoted)).toBe(true);
  });
});

describe('health counts', () => {
  const base = deployment({ web: state({ ProgressDeadline: 60e9, RequireProgressBy: '2026-01-01T00:01:00.000Z' }) });
  const nowNs = Date.parse('2026-01-01T00:00:20.000Z') * 1e6;

  it('a first verdict counts once; healthy then unhealthy moves; the same verdict or a recovery changes nothing', () => {
    const healthy = withAllocHealth(base, alloc('a', 'web', null), alloc('a', 'web', true), 8, nowNs);
    expect(healthy?.TaskGroups.web).toMatchObject({
      HealthyAllocs: 1,
      UnhealthyAllocs: 0,
      // The verdict's time plus the deadline, later than the one set at placement.
      RequireProgressBy: '2026-01-01T00:01:10.000Z',
    });
    expect(healthy?.ModifyIndex).toBe(8);
    const turned = withAllocHealth(
      healthy as ClusterDeployment,
      alloc('a', 'web', true),
      alloc('a', 'web', false),
      9,
      nowNs,
    );
    expect(turned?.TaskGroups.web).toMatchObject({ HealthyAllocs: 0, UnhealthyAllocs: 1 });
    expect(withAllocHealth(base, alloc('a', 'web', true), alloc('a', 'web', true), 9, nowNs)).toBeUndefined();
    expect(withAllocHealth(base, alloc('a', 'web', false), alloc('a', 'web', true), 9, nowNs)).toBeUndefined();
    // Another deployment's or an unknown group's allocation is not counted.
    expect(withAllocHealth(base, alloc('a', 'db', null), alloc('a', 'db', true), 9, nowNs)).toBeUndefined();
    const foreign = { DeploymentID: 'd2' };
    expect(
      withAllocHealth(base, alloc('a', 'web', null, foreign), alloc('a', 'web', true, foreign), 9, nowNs),
    ).toBeUndefined();
  });

  it('the progress deadline starts at the first placement only', () => {
    const group = state({ ProgressDeadline: 60e9 });
    const started = withPlacement(group, Date.parse('2026-01-01T00:00:00.000Z') * 1e6);
    expect(started.RequireProgressBy).toBe('2026-01-01T00:01:00.000Z');
    expect(withPlacement(started, nowNs)).toBe(started);
    expect(withPlacement(state(), nowNs).RequireProgressBy).toBe(zero);
  });
});
