/**
 * Properties of the system reconciler over generated states (fast-check): never throws, never changes its input,
 * deterministic; at most one live allocation per node and name after its decisions; every placement on an eligible
 * node with nothing live of that name there; an allocation stopped at most once and only one still desired to run
 * (or, as lost, one told to stop on a down node).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Allocation } from '../../../packages/core/src/scheduler/cluster/allocations/model.ts';
import { reconcile } from '../../../packages/core/src/scheduler/placement/reconcile.ts';
import type { ReconcileInput } from '../../../packages/core/src/scheduler/placement/types.ts';
import { changeTask, makeAlloc, makeJob, makeNode, now } from './reconcile-fixtures.ts';

const nodeIds = ['n0', 'n1', 'n2', 'n3', 'n4'];

const scenario = fc.record({
  type: fc.constantFrom('system', 'sysbatch'),
  version: fc.nat(2),
  stopped: fc.boolean(),
  nodeStatus: fc.array(fc.constantFrom('ready', 'ready', 'down', 'ineligible', 'draining', 'other-pool'), {
    minLength: 5,
    maxLength: 5,
  }),
  eligible: fc.array(fc.boolean(), { minLength: 5, maxLength: 5 }),
  allocs: fc.array(
    fc.record({
      node: fc.constantFrom(...nodeIds, 'gone'),
      version: fc.nat(2),
      desired: fc.constantFrom('run', 'run', 'stop'),
      client: fc.constantFrom('pending', 'running', 'running', 'complete', 'failed'),
      migrate: fc.boolean(),
      createIndex: fc.nat(50),
    }),
    { maxLength: 8 },
  ),
});

type Scenario = typeof scenario extends fc.Arbitrary<infer T> ? T : never;

function inputOf(s: Scenario): ReconcileInput {
  const v0 = makeJob({
    ID: 'sys',
    Type: s.type,
    TaskGroups: [{ Name: 'agent', Count: 1, Tasks: [{ Name: 't', Driver: 'raw_exec' }] }],
  });
  const versions = [v0, changeTask(v0, { KillTimeout: 9e9 }, 1), changeTask(v0, { Driver: 'exec' }, 2)];
  const nodes = nodeIds.map((id, i) => {
    const status = s.nodeStatus[i];
    if (status === 'down') return makeNode(id, { Status: 'down' });
    if (status === 'ineligible') return makeNode(id, { SchedulingEligibility: 'ineligible' });
    if (status === 'other-pool') return makeNode(id, { NodePool: 'other' });
    if (status === 'draining')
      return makeNode(id, {
        DrainStrategy: { Deadline: 0, IgnoreSystemJobs: false, ForceDeadline: '', StartedAt: '' },
      });
    return makeNode(id);
  });
  const ready = (i: number) => s.nodeStatus[i] === 'ready' && s.eligible[i];
  const allocs: Allocation[] = s.allocs.map((a, i) =>
    makeAlloc(versions[a.version]!, 0, a.node, {
      ID: `a${i}`,
      TaskGroup: 'agent',
      Name: 'sys.agent[0]',
      DesiredStatus: a.desired as Allocation['DesiredStatus'],
      ClientStatus: a.client as Allocation['ClientStatus'],
      DesiredTransition: { Migrate: a.migrate || null, Reschedule: null, ForceReschedule: null, NoShutdownDelay: null },
      CreateIndex: a.createIndex,
    }),
  );
  return {
    jobId: 'sys',
    job: { ...versions[s.version]!, Stop: s.stopped },
    allocs,
    jobVersions: versions,
    nodes,
    eligibleNodes: nodes.filter((_, i) => ready(i)),
    evaluation: { ID: 'eval-1', TriggeredBy: 'node-update' },
    now,
  };
}

const live = (alloc: Allocation) =>
  alloc.DesiredStatus === 'run' && !['complete', 'failed', 'lost'].includes(alloc.ClientStatus);

describe('reconcile: system properties', () => {
  it('holds its invariants over generated states', () => {
    fc.assert(
      fc.property(scenario, (s) => {
        const input = inputOf(s);
        const before = structuredClone(input);
        const result = reconcile(input);
        expect(input).toEqual(before);
        expect(reconcile(structuredClone(input))).toEqual(result);
        const stopped = new Set(result.stop.map((stop) => stop.alloc.ID));
        expect(stopped.size).toBe(result.stop.length);
        for (const stop of result.stop) if (stop.alloc.DesiredStatus !== 'run') expect(stop.clientStatus).toBe('lost');
        const eligible = new Set((input.eligibleNodes ?? []).map((node) => node.ID));
        const after = new Map<string, number>();
        for (const alloc of input.allocs)
          if (live(alloc) && !stopped.has(alloc.ID)) after.set(alloc.NodeID, (after.get(alloc.NodeID) ?? 0) + 1);
        for (const request of result.place) {
          expect(request.nodeId).toBeDefined();
          expect(eligible.has(request.nodeId as string)).toBe(true);
          after.set(request.nodeId as string, (after.get(request.nodeId as string) ?? 0) + 1);
        }
        const duplicated =
          input.allocs.filter((alloc) => live(alloc)).length !==
          new Set(input.allocs.filter(live).map((a) => a.NodeID)).size;
        if (!duplicated) for (const [, n] of after) expect(n).toBeLessThanOrEqual(1);
        if (input.job?.Stop) expect(result.place).toEqual([]);
      }),
      { numRuns: 400, seed: 41 },
    );
  });
});
