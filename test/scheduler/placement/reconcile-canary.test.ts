/**
 * The reconciler and canaries: a destructive change under `update { canary = N }` places N canaries of the new
 * version beside the old allocations and replaces nothing until the deployment promotes them; then the old
 * allocation holding a canary's name stops and the rest roll. Unpromoted canaries of a cancelled or failed deployment stop.
 */
import { describe, expect, it } from 'vitest';
import { deployment, groupState, health } from './deployment-fixtures.ts';
import { changeTask, counts, makeAlloc, makeJob, makeNode, run, summary } from './reconcile-fixtures.ts';

const nodes = [makeNode('n1')];
const notNeeded = (id: string) => ({ id, description: 'alloc not needed due to job update' });

describe('reconcile: canaries', () => {
  const v0 = makeJob({ Update: { Canary: 1, MaxParallel: 1 } });
  const v1 = changeTask(v0, { Config: { command: 'python3', args: ['-m', 'http.server', '9000'] } });
  const old = [0, 1, 2].map((index) => makeAlloc(v0, index, 'n1'));
  const canary = makeAlloc(v1, 0, 'n1', {
    ID: 'canary-0',
    DeploymentID: 'deploy-v1',
    DeploymentStatus: health(true, true),
  });
  const canaryState = (promoted: boolean) =>
    groupState({ DesiredCanaries: 1, PlacedCanaries: ['canary-0'], Promoted: promoted, HealthyAllocs: 1 });

  it('places the canaries first, under the names being replaced, and a deployment that needs promotion', () => {
    const result = run({ job: v1, jobVersions: [v0], allocs: old, nodes });
    expect(summary(result)).toEqual({ place: [{ name: 'web.web[0]' }], stop: [], inplace: [] });
    expect(result.place[0]?.canary).toBe(true);
    expect(result.desiredTGUpdates).toEqual({ web: counts({ Canary: 1, Ignore: 3 }) });
    expect(result.deployment?.TaskGroups.web).toEqual(groupState({ DesiredCanaries: 1, DesiredTotal: 3 }));
    expect(result.deployment?.StatusDescription).toBe('Deployment is running but requires manual promotion');
    const auto = changeTask(makeJob({ Update: { Canary: 2, MaxParallel: 1, AutoPromote: true } }), { Env: { A: '1' } });
    const autoResult = run({ job: auto, jobVersions: [v0], allocs: old, nodes });
    expect(summary(autoResult).place).toEqual([{ name: 'web.web[0]' }, { name: 'web.web[1]' }]);
    expect(autoResult.deployment?.StatusDescription).toBe('Deployment is running pending automatic promotion');
    expect(autoResult.deployment?.TaskGroups.web?.AutoPromote).toBe(true);
  });

  it('replaces nothing while the canaries wait for promotion', () => {
    const current = deployment(1, {}, canaryState(false));
    const result = run({ job: v1, jobVersions: [v0], allocs: [...old, canary], nodes, deployment: current });
    expect(summary(result)).toEqual({ place: [], stop: [], inplace: [] });
    expect(result.desiredTGUpdates).toEqual({ web: counts({ Ignore: 4 }) });
    expect(result.deployment).toBeUndefined();
    expect(result.deploymentUpdates).toEqual([]);
  });

  it('once promoted, stops the old allocation of the canary’s name and rolls the rest', () => {
    const current = deployment(1, {}, canaryState(true));
    const result = run({ job: v1, jobVersions: [v0], allocs: [...old, canary], nodes, deployment: current });
    expect(summary(result)).toEqual({
      place: [{ name: 'web.web[1]', previous: 'alloc-web-1', replacing: 'update' }],
      stop: [notNeeded('alloc-web-0'), { id: 'alloc-web-1', description: 'alloc is being updated due to job update' }],
      inplace: [],
    });
    expect(result.desiredTGUpdates).toEqual({ web: counts({ Stop: 1, DestructiveUpdate: 1, Ignore: 2 }) });
  });

  it('stops the unpromoted canaries of a deployment cancelled by a newer version, and places new ones', () => {
    const v2 = changeTask(v1, { Env: { B: '2' } });
    const latest = deployment(1, {}, canaryState(false));
    const result = run({ job: v2, jobVersions: [v0, v1], allocs: [...old, canary], nodes, deployment: latest });
    expect(result.deploymentUpdates).toEqual([
      { DeploymentID: 'deploy-v1', Status: 'cancelled', StatusDescription: 'Cancelled due to newer version of job' },
    ]);
    expect(summary(result)).toEqual({ place: [{ name: 'web.web[0]' }], stop: [notNeeded('canary-0')], inplace: [] });
    expect(result.desiredTGUpdates).toEqual({ web: counts({ Stop: 1, Canary: 1, Ignore: 3 }) });
    expect(result.deployment?.JobVersion).toBe(2);
  });

  it('stops the unpromoted canaries of a failed deployment and places nothing new', () => {
    const failed = deployment(1, { Status: 'failed' }, canaryState(false));
    const result = run({ job: v1, jobVersions: [v0], allocs: [...old, canary], nodes, deployment: failed });
    expect(summary(result)).toEqual({ place: [], stop: [notNeeded('canary-0')], inplace: [] });
    expect(result.desiredTGUpdates).toEqual({ web: counts({ Stop: 1, Ignore: 3 }) });
  });
});
