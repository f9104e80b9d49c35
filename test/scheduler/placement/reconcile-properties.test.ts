/**
 * Properties of the reconciler over generated jobs, allocations, nodes and deployments (fast-check): it never throws,
 * never changes its input, answers the same for the same input, stops an allocation at most once and only a live one
 * (or one told to stop whose node is down, as lost), never places more than the count besides destructive updates,
 * and its DestructiveUpdate, InPlaceUpdate and Canary counts are the decisions it makes (Canary
 * counted before Nomad's cut to the count).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Allocation } from '../../../packages/core/src/scheduler/cluster/allocations/model.ts';
import type { ReconcileInput } from '../../../packages/core/src/scheduler/placement/types.ts';
import { reconcile } from '../../../packages/core/src/scheduler/placement/reconcile.ts';
import { deployment, groupState, health } from './deployment-fixtures.ts';
import { changeTask, finished, makeAlloc, makeJob, makeNode, now, second } from './reconcile-fixtures.ts';

const nodeIds = ['n0', 'n1', 'n2', 'n3'];

const allocSpec = fc.record({
  index: fc.nat(7),
  node: fc.constantFrom(...nodeIds, 'gone'),
  version: fc.nat(2),
  desired: fc.constantFrom('run', 'run', 'run', 'stop'),
  client: fc.constantFrom('pending', 'running', 'running', 'complete', 'failed', 'lost'),
  failedAgo: fc.nat(120),
  migrate: fc.boolean(),
  healthy: fc.constantFrom(null, true, false),
  inDeployment: fc.boolean(),
  canary: fc.boolean(),
});

const scenario = fc.record({
  type: fc.constantFrom('service', 'batch'),
  count: fc.nat(6),
  version: fc.nat(2),
  canary: fc.nat(2),
  maxParallel: fc.nat(3),
  stopped: fc.boolean(),
  purged: fc.boolean(),
  allocs: fc.array(allocSpec, { maxLength: 10 }),
  nodeStatus: fc.array(fc.constantFrom('ready', 'ready', 'down', 'disconnected', 'draining'), {
    minLength: 4,
    maxLength: 4,
  }),
  deployment: fc.option(
    fc.record({
      version: fc.nat(2),
      status: fc.constantFrom('running', 'paused', 'failed', 'successful', 'cancelled'),
      promoted: fc.boolean(),
    }),
  ),
});

type Scenario = typeof scenario extends fc.Arbitrary<infer T> ? T : never;

function inputOf(s: Scenario): ReconcileInput {
  const update = s.type === 'service' ? { Update: { MaxParallel: s.maxParallel, Canary: s.canary } } : {};
  const v0 = makeJob({
    Type: s.type,
    ...update,
    TaskGroups: [{ Name: 'web', Count: s.count, Tasks: [{ Name: 'server', Driver: 'raw_exec' }] }],
  });
  const versions = [v0, changeTask(v0, { KillTimeout: 9e9 }, 1), changeTask(v0, { Driver: 'exec' }, 2)];
  const job = versions[s.version]!;
  const canaryIds: string[] = [];
  const allocs: Allocation[] = s.allocs.map((a, i) => {
    const id = `a${i}`;
    if (a.canary && a.inDeployment) canaryIds.push(id);
    return makeAlloc(versions[a.version]!, a.index, a.node, {
      ID: id,
      DesiredStatus: a.desired as Allocation['DesiredStatus'],
      ClientStatus: a.client as Allocation['ClientStatus'],
      TaskStates:
        a.client === 'failed' || a.client === 'complete'
          ? finished(now - a.failedAgo * second, a.client === 'failed')
          : null,
      DesiredTransition: { Migrate: a.migrate || null, Reschedule: null, ForceReschedule: null, NoShutdownDelay: null },
      DeploymentID: a.inDeployment ? `deploy-v${s.deployment?.version ?? 0}` : '',
      DeploymentStatus: a.healthy === null && !a.canary ? null : health(a.healthy, a.canary),
    });
  });
  const nodes = nodeIds.map((id, i) => {
    const status = s.nodeStatus[i]!;
    return status === 'draining'
      ? makeNode(id, {
          DrainStrategy: {
            Deadline: 3600e9,
            IgnoreSystemJobs: false,
            ForceDeadline: new Date(now + 3600e3).toISOString(),
            StartedAt: new Date(now).toISOString(),
          },
        })
      : makeNode(id, { Status: status as 'ready' | 'down' | 'disconnected' });
  });
  const latest = s.deployment
    ? deployment(
        s.deployment.version,
        { Status: s.deployment.status },
        groupState({
          DesiredCanaries: canaryIds.length ? 1 : 0,
          PlacedCanaries: canaryIds,
          Promoted: s.deployment.promoted,
        }),
      )
    : undefined;
  return {
    jobId: 'web',
    job: s.purged ? undefined : { ...job, Stop: s.stopped },
    allocs,
    jobVersions: versions.filter((version) => version.Version !== 2 || s.version === 2),
    nodes,
    evaluation: { ID: 'eval-1', TriggeredBy: 'job-register' },
    now,
    ...(latest ? { deployment: latest } : {}),
  };
}

describe('reconcile: properties', () => {
  it('holds its invariants over generated states', () => {
    fc.assert(
      fc.property(scenario, (s) => {
        const input = inputOf(s);
        const before = structuredClone(input);
        const result = reconcile(input);
        expect(input).toEqual(before);
        expect(reconcile(structuredClone(input))).toEqual(result);

        const stopped = result.stop.map((stop) => stop.alloc.ID);
        expect(new Set(stopped).size).toBe(stopped.length);
        const byId = new Map(input.allocs.map((alloc) => [alloc.ID, alloc]));
        for (const stop of result.stop) {
          const alloc = byId.get(stop.alloc.ID);
          expect(alloc).toBeDefined();
          if (alloc?.DesiredStatus !== 'run') expect(stop.clientStatus).toBe('lost');
        }
        const counts = result.desiredTGUpdates.web;
        const updates = result.place.filter((request) => request.replacing === 'update');
        const count = input.job?.Stop ? 0 : (input.job?.TaskGroups[0]?.Count ?? 0);
        expect(result.place.length - updates.length).toBeLessThanOrEqual(count);
        if (counts) {
          expect(counts.DestructiveUpdate).toBe(updates.length);
          expect(counts.InPlaceUpdate).toBe(result.inplace.length);
          // Nomad cuts the placements to the count after counting the canaries: the count may exceed what is placed.
          const canaries = result.place.filter((request) => request.canary && !request.previousAlloc).length;
          expect(counts.Canary).toBeGreaterThanOrEqual(canaries);
          if (result.place.length - updates.length < count) expect(counts.Canary).toBe(canaries);
        }
        for (const request of result.place) expect(request.name).toMatch(/^web\.web\[\d+\]$/);
      }),
      { numRuns: 400, seed: 41 },
    );
  });
});
