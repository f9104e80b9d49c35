/** The reconciler for system and sysbatch jobs: one allocation per eligible node, stopped where the node left the set. */
import { describe, expect, it } from 'vitest';
import { changeTask, counts, makeAlloc, makeJob, makeNode, run, summary } from './reconcile-fixtures.ts';

const group = (count = 1) => [{ Name: 'agent', Count: count, Tasks: [{ Name: 'server', Driver: 'raw_exec' }] }];
const onNode = (job: ReturnType<typeof makeJob>, nodeId: string, overrides = {}) =>
  makeAlloc(job, 0, nodeId, { ID: `alloc-${nodeId}`, TaskGroup: 'agent', Name: 'sys.agent[0]', ...overrides });

describe('reconcile: system jobs', () => {
  const job = makeJob({ ID: 'sys', Type: 'system', TaskGroups: group() });
  const n = [makeNode('n1'), makeNode('n2'), makeNode('n3')];

  it('places one allocation per eligible node', () => {
    const result = run({ job, allocs: [], nodes: [], eligibleNodes: n });
    expect(summary(result)).toEqual({
      place: ['n1', 'n2', 'n3'].map((nodeId) => ({ name: 'sys.agent[0]', nodeId })),
      stop: [],
      inplace: [],
    });
    expect(result.desiredTGUpdates).toEqual({ agent: counts({ Place: 3 }) });
  });

  it('keeps what runs, places on a new node, stops where the node left the set and marks a down node’s lost', () => {
    const down = makeNode('n4', { Status: 'down' });
    const gone = makeNode('n5', { NodePool: 'other' });
    const allocs = [onNode(job, 'n1'), onNode(job, 'n2'), onNode(job, 'n4'), onNode(job, 'n5')];
    const result = run({ job, allocs, nodes: [n[0]!, n[1]!, down, gone], eligibleNodes: n });
    expect(summary(result)).toEqual({
      place: [{ name: 'sys.agent[0]', nodeId: 'n3' }],
      stop: [
        { id: 'alloc-n4', description: 'alloc is lost since its node is down', clientStatus: 'lost' },
        { id: 'alloc-n5', description: 'alloc not needed due to job update' },
      ],
      inplace: [],
    });
    expect(result.desiredTGUpdates).toEqual({ agent: counts({ Place: 3, Stop: 1, Ignore: 2 }) });
  });

  it('ignores an allocation on a node that stopped being eligible, until the job changes', () => {
    const ineligible = makeNode('n2', { SchedulingEligibility: 'ineligible' });
    const allocs = [onNode(job, 'n1'), onNode(job, 'n2')];
    const same = run({ job, allocs, nodes: [n[0]!, ineligible], eligibleNodes: [n[0]!] });
    expect(summary(same)).toEqual({ place: [], stop: [], inplace: [] });
    expect(same.desiredTGUpdates).toEqual({ agent: counts({ Place: 2, Ignore: 2 }) });
    const v1 = changeTask(job, { KillTimeout: 30e9 });
    const changed = run({ job: v1, jobVersions: [job], allocs, nodes: [n[0]!, ineligible], eligibleNodes: [n[0]!] });
    expect(summary(changed)).toEqual({
      place: [],
      stop: [{ id: 'alloc-n2', description: 'alloc not needed due to job update' }],
      inplace: ['alloc-n1@1'],
    });
    expect(changed.desiredTGUpdates).toEqual({ agent: counts({ Place: 1, Stop: 1, InPlaceUpdate: 1 }) });
  });

  it('replaces changed allocations destructively, max_parallel at a time, counting the rest as candidates', () => {
    const v1 = changeTask(job, { Config: { command: 'sleep' } });
    const allocs = n.map((node) => onNode(job, node.ID));
    const result = run({ job: v1, jobVersions: [job], allocs, nodes: n, eligibleNodes: n });
    expect(summary(result)).toEqual({
      place: [{ name: 'sys.agent[0]', nodeId: 'n1', previous: 'alloc-n1', replacing: 'update' }],
      stop: [{ id: 'alloc-n1', description: 'alloc is being updated due to job update' }],
      inplace: [],
    });
    expect(result.desiredTGUpdates).toEqual({ agent: counts({ Place: 3, DestructiveUpdate: 3 }) });
  });

  it('stops an allocation marked to migrate without placing it elsewhere', () => {
    const draining = makeNode('n1', {
      DrainStrategy: { Deadline: 0, IgnoreSystemJobs: false, ForceDeadline: '', StartedAt: '' },
    });
    const migrate = { Migrate: true, Reschedule: null, ForceReschedule: null, NoShutdownDelay: null };
    const result = run({
      job,
      allocs: [onNode(job, 'n1', { DesiredTransition: migrate })],
      nodes: [draining],
      eligibleNodes: [],
    });
    expect(summary(result)).toEqual({
      place: [],
      stop: [{ id: 'alloc-n1', description: 'alloc not needed as node is tainted' }],
      inplace: [],
    });
    expect(result.desiredTGUpdates).toEqual({ agent: counts({ Migrate: 1 }) });
  });

  it('stops every allocation of a stopped job', () => {
    const allocs = [onNode(job, 'n1'), onNode(job, 'n2')];
    const result = run({ job: { ...job, Stop: true }, allocs, nodes: n, eligibleNodes: n });
    expect(summary(result).stop).toEqual([
      { id: 'alloc-n1', description: 'alloc not needed due to job update' },
      { id: 'alloc-n2', description: 'alloc not needed due to job update' },
    ]);
    expect(result.place).toEqual([]);
    expect(result.desiredTGUpdates).toEqual({ agent: counts({ Stop: 2 }) });
  });
});

describe('reconcile: sysbatch jobs', () => {
  const job = makeJob({ ID: 'sys', Type: 'sysbatch', TaskGroups: group() });
  const n = [makeNode('n1'), makeNode('n2')];

  it('does not run a completed allocation again until the job changes', () => {
    const allocs = [onNode(job, 'n1', { ClientStatus: 'complete' })];
    const result = run({ job, allocs, nodes: n, eligibleNodes: n });
    expect(summary(result)).toEqual({
      place: [{ name: 'sys.agent[0]', nodeId: 'n2' }],
      stop: [],
      inplace: [],
    });
    expect(result.desiredTGUpdates).toEqual({ agent: counts({ Place: 2, Ignore: 1 }) });
    // A change that needs no restart leaves it done (Nomad counts it an in-place update, with nothing to send).
    const tweak = run({
      job: changeTask(job, { KillTimeout: 30e9 }),
      jobVersions: [job],
      allocs,
      nodes: n,
      eligibleNodes: n,
    });
    expect(summary(tweak)).toEqual({ place: [{ name: 'sys.agent[0]', nodeId: 'n2' }], stop: [], inplace: [] });
    expect(tweak.desiredTGUpdates).toEqual({ agent: counts({ Place: 2, InPlaceUpdate: 1 }) });
    const v1 = changeTask(job, { Config: { command: 'again' } });
    const rerun = run({ job: v1, jobVersions: [job], allocs, nodes: n, eligibleNodes: n });
    expect(summary(rerun).place).toEqual([
      { name: 'sys.agent[0]', nodeId: 'n2' },
      { name: 'sys.agent[0]', nodeId: 'n1', previous: 'alloc-n1', replacing: 'update' },
    ]);
    expect(rerun.desiredTGUpdates).toEqual({ agent: counts({ Place: 2, DestructiveUpdate: 1 }) });
  });
});
