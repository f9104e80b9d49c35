// biome-ignore-all lint/suspicious/noTemplateCurlyInString: constraint targets are Nomad interpolations
/**
 * The two stacks' shapes: the generic one's limited candidate set (2 for batch, ⌈log₂ n⌉ for service), its skipping
 * of nodes that score 0 or less while others remain, its going round the shuffled nodes from where it stopped; the
 * system one's single node per request, its filtered-not-failed rule, and the feasible nodes of a system job.
 */
import { describe, expect, it } from 'vitest';
import {
  candidateLimit,
  feasibleSystemNodes,
  inPlaceUpdate,
  place,
  placementReady,
} from '../../../packages/core/src/scheduler/placement/place.ts';
import { makeAlloc, makeJob, makeNode, requests, task } from './fixtures.ts';

describe('the generic stack', () => {
  it('limits the scored nodes as Nomad: 2 for batch, max(2, ⌈log₂ n⌉) for service', () => {
    expect([1, 2, 4, 5, 1000, 5000].map((n) => candidateLimit('service', n))).toEqual([2, 2, 2, 3, 10, 13]);
    expect(candidateLimit('batch', 5000)).toBe(2);
    const nodes = Array.from({ length: 20 }, () => makeNode());
    const batch = makeJob({ Type: 'batch', TaskGroups: [{ Name: 'work', Count: 5, Tasks: [task('a')] }] });
    for (const placement of place({ nodes, allocs: [] }, batch, requests(batch, 'work', 5), 's').placements)
      expect(placement.metrics.NodesEvaluated).toBe(2);
  });

  it('goes round the shuffled nodes: consecutive placements look at the next nodes, not the same ones', () => {
    const nodes = Array.from({ length: 8 }, () => makeNode());
    const batch = makeJob({ Type: 'batch', TaskGroups: [{ Name: 'work', Count: 4, Tasks: [task('a')] }] });
    const result = place({ nodes, allocs: [] }, batch, requests(batch, 'work', 4), 'round');
    const seen = result.placements.flatMap((p) => (p.metrics.ScoreMetaData ?? []).map((meta) => meta.NodeID));
    expect(new Set(seen).size).toBe(8);
  });

  it('skips up to three nodes scoring 0 or less while others remain (the reschedule penalty’s nodes)', () => {
    const nodes = Array.from({ length: 5 }, () => makeNode());
    const penalized = nodes.slice(0, 3).map((node) => node.ID);
    const batch = makeJob({ Type: 'batch', TaskGroups: [{ Name: 'work', Count: 1, Tasks: [task('a')] }] });
    for (const seed of ['a', 'b', 'c', 'd', 'e', 'f']) {
      const result = place(
        { nodes, allocs: [] },
        batch,
        [{ group: 'work', name: 'example.work[0]', penaltyNodeIds: penalized }],
        seed,
      );
      expect(penalized).not.toContain(result.placements[0]?.node.ID);
    }
  });

  it('falls back to a skipped node when nothing else is left', () => {
    const nodes = [makeNode(), makeNode()];
    const batch = makeJob({ Type: 'batch', TaskGroups: [{ Name: 'work', Count: 1, Tasks: [task('a')] }] });
    const result = place(
      { nodes, allocs: [] },
      batch,
      [{ group: 'work', name: 'example.work[0]', penaltyNodeIds: nodes.map((node) => node.ID) }],
      's',
    );
    expect(result.placements).toHaveLength(1);
    expect(result.placements[0]?.metrics.ScoreMetaData?.[0]?.Scores['node-reschedule-penalty']).toBe(-1);
  });

  it('places several groups of one job, each failing or succeeding on its own', () => {
    const node = makeNode({ cpu: 1000, memoryMB: 1024 });
    const job = makeJob({
      TaskGroups: [
        { Name: 'small', Count: 2, Tasks: [task('a', 100, 100)] },
        { Name: 'huge', Count: 2, Tasks: [task('a', 5000, 100)] },
      ],
    });
    const result = place(
      { nodes: [node], allocs: [] },
      job,
      [...requests(job, 'huge', 2), ...requests(job, 'small', 2)],
      's',
    );
    expect(result.placements.map((p) => p.request.group)).toEqual(['small', 'small']);
    expect(Object.keys(result.failed)).toEqual(['huge']);
    expect(result.failed.huge).toMatchObject({ DimensionExhausted: { cpu: 1 }, CoalescedFailures: 1 });
    expect(() => place({ nodes: [node], allocs: [] }, job, requests(job, 'nope', 1), 's')).toThrow(/task group "nope"/);
  });
});

describe('sticky ephemeral disks (Nomad’s preferred node)', () => {
  const roomy = makeNode({ cpu: 16000, memoryMB: 32768 });
  const snug = makeNode({ cpu: 1000, memoryMB: 1024 });
  const job = (sticky: boolean) =>
    makeJob({
      TaskGroups: [
        { Name: 'web', Count: 1, EphemeralDisk: { Sticky: sticky, SizeMB: 300 }, Tasks: [task('a', 200, 200)] },
      ],
    });

  it('tries the previous allocation’s node first when the disk is sticky', () => {
    const previous = makeAlloc(job(true), 'web', roomy);
    const request = [{ group: 'web', name: 'example.web[0]', previousAlloc: previous, replacing: 'update' as const }];
    const sticky = place({ nodes: [roomy, snug], allocs: [previous] }, job(true), request, 's');
    expect(sticky.placements[0]?.node.ID).toBe(roomy.ID);
    expect(sticky.placements[0]?.metrics.NodesEvaluated).toBe(1);
    const loose = place({ nodes: [roomy, snug], allocs: [previous] }, job(false), request, 's');
    expect(loose.placements[0]?.node.ID).toBe(snug.ID);
  });

  it('places normally when the previous node is gone or full', () => {
    const gone = { ...roomy, Status: 'down' as const };
    const previous = makeAlloc(job(true), 'web', gone);
    const request = [{ group: 'web', name: 'example.web[0]', previousAlloc: previous, replacing: 'lost' as const }];
    expect(place({ nodes: [gone, snug], allocs: [] }, job(true), request, 's').placements[0]?.node.ID).toBe(snug.ID);
    const tight = makeNode({ cpu: 250, memoryMB: 16384 });
    const onTight = makeAlloc(job(true), 'web', tight, { cpu: 100 });
    const other = makeAlloc(makeJob({ ID: 'other' }), 'web', tight, { cpu: 100 });
    const bigger = makeJob({
      TaskGroups: [{ Name: 'web', Count: 1, EphemeralDisk: { Sticky: true }, Tasks: [task('a', 200, 200)] }],
    });
    const moved = place(
      { nodes: [tight, snug], allocs: [onTight, other] },
      bigger,
      [{ group: 'web', name: 'example.web[0]', previousAlloc: onTight, replacing: 'update' }],
      's',
    );
    expect(moved.placements[0]?.node.ID).toBe(snug.ID);
    expect(moved.placements[0]?.metrics.NodesEvaluated).toBe(2); // the metrics of the second, normal, selection
  });
});

describe('loading', () => {
  it('placementReady resolves for a job with a regexp constraint (RE2 loaded) and one without', async () => {
    const job = makeJob({ Constraints: [{ LTarget: '${attr.kernel.name}', RTarget: '^lin', Operand: 'regexp' }] });
    await expect(placementReady(job)).resolves.toBeUndefined();
    await expect(placementReady(makeJob())).resolves.toBeUndefined();
    const node = makeNode({ attributes: { 'kernel.name': 'linux' } });
    expect(place({ nodes: [node], allocs: [] }, job, requests(job, 'web', 1), 's').placements).toHaveLength(1);
  });
});

describe('the system stack', () => {
  const linux = makeNode({ attributes: { 'kernel.name': 'linux' } });
  const darwin = makeNode({ attributes: { 'kernel.name': 'darwin' } });
  const full = makeNode({ attributes: { 'kernel.name': 'linux' }, cpu: 100 });
  const down = makeNode({ attributes: { 'kernel.name': 'linux' }, status: 'down' });
  const system = (type = 'system') =>
    makeJob({
      Type: type,
      Constraints: [{ LTarget: '${attr.kernel.name}', RTarget: 'linux', Operand: '=' }],
      TaskGroups: [{ Name: 'agent', Count: 1, Tasks: [task('a', 200, 64)] }],
    });
  const perNode = (nodeIds: string[]) =>
    nodeIds.map((nodeId, i) => ({ group: 'agent', name: `example.agent[${i}]`, nodeId }));

  it('checks each request on its own node only; a filtered node is not a failure while others place', () => {
    const job = system();
    const result = place(
      { nodes: [linux, darwin, down], allocs: [] },
      job,
      perNode([linux.ID, darwin.ID, down.ID]),
      's',
    );
    expect(result.placements.map((p) => p.node.ID)).toEqual([linux.ID]);
    expect(result.placements[0]?.metrics).toMatchObject({ NodesEvaluated: 1, NodesFiltered: 0, NodesInPool: 2 });
    expect(result.failed).toEqual({});
  });

  it('fails a group every request of which was filtered, with the filters merged, unless the job runs it already', () => {
    const job = system('sysbatch');
    const result = place({ nodes: [darwin, makeNode({ rawExec: false })], allocs: [] }, job, perNode([darwin.ID]), 's');
    expect(result.failed.agent).toMatchObject({
      NodesEvaluated: 1,
      NodesFiltered: 1,
      ConstraintFiltered: { '${attr.kernel.name} = linux': 1 },
    });
    const running = makeAlloc(job, 'agent', linux);
    expect(place({ nodes: [darwin, linux], allocs: [running] }, job, perNode([darwin.ID]), 's').failed).toEqual({});
  });

  it('fails an exhausted node’s request, coalescing the next', () => {
    const tiny = makeNode({ attributes: { 'kernel.name': 'linux' }, cpu: 100 });
    const result = place({ nodes: [full, tiny], allocs: [] }, system(), perNode([full.ID, tiny.ID]), 's');
    expect(result.placements).toEqual([]);
    expect(result.failed.agent).toMatchObject({ DimensionExhausted: { cpu: 1 }, CoalescedFailures: 1 });
  });

  it('lists the feasible nodes of a system group', () => {
    const job = system();
    expect(
      feasibleSystemNodes({ nodes: [linux, darwin, full, down], allocs: [] }, job, 'agent').map((n) => n.ID),
    ).toEqual([linux.ID, full.ID]);
  });
});

describe('in-place updates (Nomad’s genericAllocUpdateFn)', () => {
  const node = makeNode({ cpu: 1000, memoryMB: 2048, datacenter: 'dc1' });
  const version = (cpu: number, datacenters = ['dc1']) =>
    makeJob({
      Datacenters: datacenters,
      TaskGroups: [
        {
          Name: 'web',
          Count: 1,
          Networks: [{ ReservedPorts: [{ Label: 'http', Value: 8080 }] }],
          Tasks: [task('a', cpu, 256)],
        },
      ],
    });
  const running = makeAlloc(version(600), 'web', node, {
    cpu: 600,
    memoryMB: 256,
    ports: [{ Label: 'http', Value: 8080 }],
  });
  const neighbour = makeAlloc(makeJob({ ID: 'other' }), 'web', node, { cpu: 200, memoryMB: 256 });
  const check = inPlaceUpdate({ nodes: [node], allocs: [running, neighbour] }, 'eval-1');

  it('fits the new version on the node with the allocation’s own resources freed, keeping its ports', () => {
    const resources = check(running, version(800), node);
    expect(resources?.Tasks.a?.Cpu.CpuShares).toBe(800);
    expect(resources?.Shared.Ports).toEqual(running.AllocatedResources.Shared.Ports);
  });

  it('does not fit when the new version needs more than the node has left, or the node left the job’s datacenters', () => {
    expect(check(running, version(801), node)).toBeNull();
    expect(check(running, version(100, ['dc2']), node)).toBeNull();
  });
});
