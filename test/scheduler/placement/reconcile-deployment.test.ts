/**
 * The reconciler and deployments: a new job or spec under an update block creates one; a rolling update waits for
 * the deployment's allocations to be healthy; a deployment for an older version is cancelled; a complete one succeeds.
 */
import { describe, expect, it } from 'vitest';
import { deployment, groupState, health } from './deployment-fixtures.ts';
import { changeTask, counts, makeAlloc, makeJob, makeNode, ns, now, run, summary } from './reconcile-fixtures.ts';

const nodes = [makeNode('n1'), makeNode('n2', { Status: 'down' })];

describe('reconcile: deployments', () => {
  const v0 = makeJob();
  const v1 = changeTask(v0, { Config: { command: 'python3', args: ['-m', 'http.server', '9000'] } });

  it('creates a deployment for a new service job, none for a batch job', () => {
    const result = run({ job: v0, allocs: [], nodes });
    expect(result.deployment).toEqual({
      ...deployment(0, { ID: 'eval-1', CreateIndex: 0, ModifyIndex: 0, CreateTime: ns(now) }),
      TaskGroups: { web: groupState({ DesiredTotal: 3 }) },
    });
    expect(result.deploymentUpdates).toEqual([]);
    expect(run({ job: makeJob({ Type: 'batch' }), allocs: [], nodes }).deployment).toBeUndefined();
    const named = run({
      job: v0,
      allocs: [],
      nodes,
      newDeploymentId: 'd-1',
      evaluation: { ID: 'e', TriggeredBy: 'x', Priority: 70 },
    });
    expect([named.deployment?.ID, named.deployment?.EvalPriority]).toEqual(['d-1', 70]);
  });

  it('creates none when the version already runs and nothing changed', () => {
    const allocs = [makeAlloc(v0, 0, 'n1'), makeAlloc(v0, 1, 'n1')];
    const result = run({ job: v0, allocs, nodes });
    expect(summary(result).place).toEqual([{ name: 'web.web[2]' }]);
    expect(result.deployment).toBeUndefined();
  });

  it('creates none for a service job whose update block is empty (max_parallel 0: Nomad’s UpdateStrategy.IsEmpty)', () => {
    // The canonicalised block keeps its other defaults; max_parallel 0 alone makes it empty.
    const empty = { MaxParallel: 0, Stagger: 30e9, HealthCheck: 'checks', MinHealthyTime: 10e9, Canary: 0 };
    const tasks = [{ Name: 'server', Driver: 'raw_exec', Config: { command: 'python3', args: ['-m', 'http.server'] } }];
    const job = makeJob({ Update: empty, TaskGroups: [{ Name: 'web', Count: 3, Update: empty, Tasks: tasks }] });
    const created = run({ job, allocs: [], nodes });
    expect(summary(created).place).toHaveLength(3);
    expect(created.deployment).toBeUndefined();
    // A changed spec replaces every allocation at once, still with no deployment.
    const allocs = [0, 1, 2].map((index) => makeAlloc(job, index, 'n1'));
    const changed = changeTask(job, { Config: { command: 'python3', args: ['-m', 'http.server', '9000'] } });
    const updated = run({ job: changed, jobVersions: [job], allocs, nodes });
    expect(summary(updated).stop).toHaveLength(3);
    expect(updated.deployment).toBeUndefined();
    expect(updated.desiredTGUpdates).toEqual({ web: counts({ DestructiveUpdate: 3 }) });
  });

  it('replaces the next allocation only once the deployment’s placed ones are healthy', () => {
    const current = deployment(1);
    const placed = (healthy: boolean | null) =>
      makeAlloc(v1, 0, 'n1', { ID: 'alloc-web-0b', DeploymentID: 'deploy-v1', DeploymentStatus: health(healthy) });
    const old = [makeAlloc(v0, 1, 'n1'), makeAlloc(v0, 2, 'n1')];
    const waiting = run({ job: v1, jobVersions: [v0], allocs: [placed(null), ...old], nodes, deployment: current });
    expect(summary(waiting)).toEqual({ place: [], stop: [], inplace: [] });
    expect(waiting.desiredTGUpdates).toEqual({ web: counts({ Ignore: 3 }) });
    expect(waiting.deployment).toBeUndefined();
    const next = run({ job: v1, jobVersions: [v0], allocs: [placed(true), ...old], nodes, deployment: current });
    expect(summary(next).stop).toEqual([
      { id: 'alloc-web-1', description: 'alloc is being updated due to job update' },
    ]);
    expect(next.desiredTGUpdates).toEqual({ web: counts({ DestructiveUpdate: 1, Ignore: 2 }) });
    const unhealthy = run({ job: v1, jobVersions: [v0], allocs: [placed(false), ...old], nodes, deployment: current });
    expect(summary(unhealthy).stop).toEqual([]);
  });

  it('cancels a deployment of an older version, and one of a stopped job', () => {
    const allocs = [0, 1, 2].map((index) => makeAlloc(v0, index, 'n1'));
    const newer = run({ job: v1, jobVersions: [v0], allocs, nodes, deployment: deployment(0) });
    expect(newer.deploymentUpdates).toEqual([
      { DeploymentID: 'deploy-v0', Status: 'cancelled', StatusDescription: 'Cancelled due to newer version of job' },
    ]);
    expect(newer.deployment?.JobVersion).toBe(1);
    expect(newer.deployment?.TaskGroups.web?.DesiredTotal).toBe(3);
    const stopped = run({ job: { ...v0, Stop: true }, allocs, nodes, deployment: deployment(0) });
    expect(stopped.deploymentUpdates).toEqual([
      { DeploymentID: 'deploy-v0', Status: 'cancelled', StatusDescription: 'Cancelled because job is stopped' },
    ]);
    const done = run({
      job: v1,
      jobVersions: [v0],
      allocs,
      nodes,
      deployment: deployment(0, { Status: 'successful' }),
    });
    expect(done.deploymentUpdates).toEqual([]);
  });

  it('marks the deployment successful once every allocation is placed and healthy', () => {
    const healthy = [0, 1, 2].map((index) =>
      makeAlloc(v1, index, 'n1', { DeploymentID: 'deploy-v1', DeploymentStatus: health(true) }),
    );
    const current = deployment(1, {}, groupState({ HealthyAllocs: 3, PlacedAllocs: 3 }));
    const result = run({ job: v1, allocs: healthy, nodes, deployment: current });
    expect(result.deploymentUpdates).toEqual([
      { DeploymentID: 'deploy-v1', Status: 'successful', StatusDescription: 'Deployment completed successfully' },
    ]);
    const short = run({
      job: v1,
      allocs: healthy,
      nodes,
      deployment: deployment(1, {}, groupState({ HealthyAllocs: 2 })),
    });
    expect(short.deploymentUpdates).toEqual([]);
  });

  it('places only lost replacements while the deployment is paused, and leaves a failure of it to the deployment', () => {
    const paused = deployment(1, { Status: 'paused' });
    const allocs = [
      makeAlloc(v1, 0, 'n1', { DeploymentID: 'deploy-v1', ClientStatus: 'failed' }),
      makeAlloc(v1, 1, 'n2', { DeploymentID: 'deploy-v1' }),
      makeAlloc(v0, 2, 'n1'),
    ];
    const result = run({ job: v1, jobVersions: [v0], allocs, nodes, deployment: paused });
    expect(summary(result)).toEqual({
      place: [{ name: 'web.web[1]', previous: 'alloc-web-1', replacing: 'lost' }],
      stop: [{ id: 'alloc-web-1', description: 'alloc is lost since its node is down', clientStatus: 'lost' }],
      inplace: [],
    });
    expect(result.desiredTGUpdates).toEqual({ web: counts({ Place: 1, Stop: 1, Ignore: 2 }) });
  });

  it('names the deployment placements join, and moves in-place updates into it with their health reset', () => {
    const tweak = changeTask(v0, { KillTimeout: 30e9 });
    const allocs = [0, 1, 2].map((index) =>
      makeAlloc(v0, index, 'n1', { DeploymentID: 'deploy-v0', DeploymentStatus: health(true) }),
    );
    const result = run({
      job: tweak,
      jobVersions: [v0],
      allocs,
      nodes,
      deployment: deployment(0, { Status: 'successful' }),
    });
    expect(result.deploymentId).toBe('eval-1');
    expect(result.deployment?.TaskGroups.web?.DesiredTotal).toBe(3);
    expect(result.inplace.map((alloc) => [alloc.ID, alloc.DeploymentID, alloc.DeploymentStatus])).toEqual([
      ['alloc-web-0', 'eval-1', null],
      ['alloc-web-1', 'eval-1', null],
      ['alloc-web-2', 'eval-1', null],
    ]);
    const running = run({ job: v1, jobVersions: [v0], allocs: [], nodes, deployment: deployment(1) });
    expect([running.deploymentId, running.deployment]).toEqual(['deploy-v1', undefined]);
    const none = run({ job: makeJob({ Type: 'batch' }), allocs: [], nodes });
    expect(none.deploymentId).toBeUndefined();
  });
});
