// biome-ignore-all lint/suspicious/noTemplateCurlyInString: constraint targets are Nomad interpolations
/**
 * The placement function over hand-built snapshots: which nodes are candidates, drivers, CPU, memory and disk
 * against what nodes offer and hold, the bin-packing score against Nomad's formula computed here, the job
 * anti-affinity and reschedule penalty, the failed-group metrics with coalesced failures, the resources granted,
 * and determinism from the seed.
 */
import { describe, expect, it } from 'vitest';
import type { AllocMetric } from '../../../packages/core/src/scheduler/cluster/allocations/resources.ts';
import { place } from '../../../packages/core/src/scheduler/placement/place.ts';
import { makeAlloc, makeJob, makeNode, requests, task } from './fixtures.ts';

/** Nomad's ScoreFitBinPack over 18, written out for the expected values. */
const binpack = (cpuFree: number, memoryFree: number) =>
  Math.min(18, Math.max(0, 20 - (10 ** cpuFree + 10 ** memoryFree))) / 18;

const withoutTime = (metric: AllocMetric) => ({ ...metric, AllocationTime: 0 });

describe('candidates: ready, eligible, undrained nodes of the job’s pool and datacenters', () => {
  const ready = makeNode({ datacenter: 'us-east-1a' });
  const otherDc = makeNode({ datacenter: 'eu-west-1' });
  const down = makeNode({ datacenter: 'us-east-1b', status: 'down' });
  const initializing = makeNode({ datacenter: 'us-east-1b', status: 'initializing' });
  const ineligible = makeNode({ datacenter: 'us-east-1b', eligibility: 'ineligible' });
  const draining = makeNode({ datacenter: 'us-east-1b', draining: true });
  const otherPool = makeNode({ datacenter: 'us-east-1b', pool: 'gpu' });
  const secondReady = makeNode({ datacenter: 'us-east-1b' });
  const nodes = [ready, otherDc, down, initializing, ineligible, draining, otherPool, secondReady];

  it('places only on ready nodes whose datacenter a glob matches, and counts them by datacenter', () => {
    const job = makeJob({ Datacenters: ['us-east-*'], TaskGroups: [{ Name: 'web', Count: 6, Tasks: [task('a')] }] });
    const result = place({ nodes, allocs: [] }, job, requests(job, 'web', 6), 'seed-1');
    expect(result.failed).toEqual({});
    expect(new Set(result.placements.map((p) => p.node.ID))).toEqual(new Set([ready.ID, secondReady.ID]));
    for (const placement of result.placements) {
      expect(placement.metrics.NodesInPool).toBe(2);
      expect(placement.metrics.NodesAvailable).toEqual({ 'us-east-1a': 1, 'us-east-1b': 1 });
      expect(placement.metrics.NodePool).toBe('default');
    }
  });

  it('reads the node pool: `all` is every pool, a named pool only its nodes', () => {
    const all = makeJob({ NodePool: 'all', TaskGroups: [{ Name: 'web', Count: 1, Tasks: [task('a')] }] });
    expect(place({ nodes, allocs: [] }, all, requests(all, 'web', 1), 's').placements[0]?.metrics.NodesInPool).toBe(4);
    const gpu = makeJob({ NodePool: 'gpu', TaskGroups: [{ Name: 'web', Count: 2, Tasks: [task('a')] }] });
    const result = place({ nodes, allocs: [] }, gpu, requests(gpu, 'web', 2), 's');
    expect(result.placements.map((p) => p.node.ID)).toEqual([otherPool.ID, otherPool.ID]);
  });

  it('fails the group with NodesInPool 0 when no node is a candidate, coalescing the other requests', () => {
    const job = makeJob({ Datacenters: ['ap-*'], TaskGroups: [{ Name: 'web', Count: 3, Tasks: [task('a')] }] });
    const result = place({ nodes, allocs: [] }, job, requests(job, 'web', 3), 'seed');
    expect(result.placements).toEqual([]);
    expect(withoutTime(result.failed.web as AllocMetric)).toMatchObject({
      NodesEvaluated: 0,
      NodesInPool: 0,
      NodesAvailable: {},
      CoalescedFailures: 2,
    });
  });
});

describe('drivers', () => {
  it('filters a node whose driver is unhealthy as "missing drivers", and accepts a driver attribute alone', () => {
    const unhealthy = makeNode({ rawExec: false });
    const byAttribute = { ...makeNode({ rawExec: false, attributes: { 'driver.raw_exec': 'true' } }), Drivers: null };
    const job = makeJob();
    const onlyUnhealthy = place({ nodes: [unhealthy], allocs: [] }, job, requests(job, 'web', 1), 's');
    expect(onlyUnhealthy.placements).toEqual([]);
    expect(onlyUnhealthy.failed.web).toMatchObject({
      NodesEvaluated: 1,
      NodesFiltered: 1,
      ConstraintFiltered: { 'missing drivers': 1 },
    });
    const viaAttribute = place({ nodes: [byAttribute], allocs: [] }, job, requests(job, 'web', 1), 's');
    expect(viaAttribute.placements.map((p) => p.node.ID)).toEqual([byAttribute.ID]);
  });

  it('needs every task’s driver: a group with a docker task fits no raw_exec node', () => {
    const job = makeJob({
      TaskGroups: [{ Name: 'web', Count: 1, Tasks: [task('a'), { ...task('b'), Driver: 'docker' }] }],
    });
    const result = place({ nodes: [makeNode(), makeNode()], allocs: [] }, job, requests(job, 'web', 1), 's');
    expect(result.failed.web).toMatchObject({
      NodesEvaluated: 2,
      NodesFiltered: 2,
      ConstraintFiltered: { 'missing drivers': 2 },
    });
  });

  it('remembers a refused node class for the rest of the call: "computed class ineligible"', () => {
    const good = makeNode({ cpu: 8000 });
    const bad = makeNode({ rawExec: false });
    const job = makeJob({ TaskGroups: [{ Name: 'web', Count: 3, Tasks: [task('a')] }] });
    const result = place({ nodes: [good, bad], allocs: [] }, job, requests(job, 'web', 3), 'x');
    expect(result.placements.map((p) => p.node.ID)).toEqual([good.ID, good.ID, good.ID]);
    const filtered = result.placements.map((p) => p.metrics.ConstraintFiltered);
    expect(filtered).toContainEqual({ 'missing drivers': 1 });
    expect(filtered).toContainEqual({ 'computed class ineligible': 1 });
    expect(filtered.filter((each) => each?.['missing drivers'])).toHaveLength(1);
  });
});

describe('CPU, memory and disk', () => {
  const job = (cpu: number, memoryMB: number, diskMB = 300) =>
    makeJob({
      TaskGroups: [{ Name: 'web', Count: 1, EphemeralDisk: { SizeMB: diskMB }, Tasks: [task('a', cpu, memoryMB)] }],
    });

  it.each([
    ['cpu', 4001, 100, 300],
    ['memory', 100, 8193, 300],
    ['disk', 100, 100, 100_001],
  ])('exhausts a node on %s', (dimension, cpu, memoryMB, diskMB) => {
    const node = makeNode({ cpu: 4000, memoryMB: 8192, diskMB: 100_000, nodeClass: 'big' });
    const asked = job(cpu, memoryMB, diskMB);
    const result = place({ nodes: [node], allocs: [] }, asked, requests(asked, 'web', 1), 's');
    expect(result.placements).toEqual([]);
    expect(result.failed.web).toMatchObject({
      NodesEvaluated: 1,
      NodesFiltered: 0,
      NodesExhausted: 1,
      ClassExhausted: { big: 1 },
      DimensionExhausted: { [dimension]: 1 },
    });
  });

  it('subtracts reserved resources and what running allocations hold, but not finished ones', () => {
    const node = makeNode({ cpu: 4000, memoryMB: 8192, reserved: { cpu: 1000, memoryMB: 1024 } });
    const other = makeJob({ ID: 'other' });
    const running = makeAlloc(other, 'web', node, { cpu: 2000, memoryMB: 1000 });
    const finished = makeAlloc(other, 'web', node, { cpu: 3000, memoryMB: 7000 }, { ClientStatus: 'complete' });
    const fits = job(1000, 6168);
    const placed = place({ nodes: [node], allocs: [running, finished] }, fits, requests(fits, 'web', 1), 's');
    expect(placed.placements).toHaveLength(1);
    // used 3000 of 3000 CPU and 7168 of 7168 MB: a perfect fit scores the maximum
    expect(placed.placements[0]?.metrics.ScoreMetaData?.[0]?.Scores.binpack).toBe(1);
    const tooMuch = job(1001, 100);
    const refused = place({ nodes: [node], allocs: [running, finished] }, tooMuch, requests(tooMuch, 'web', 1), 's');
    expect(refused.failed.web?.DimensionExhausted).toEqual({ cpu: 1 });
    expect(refused.failed.web?.ResourcesExhausted).toEqual({
      a: expect.objectContaining({ CPU: 1001, MemoryMB: 0 }),
    });
  });

  it('counts the placements made earlier in the same call', () => {
    const node = makeNode({ cpu: 1000, memoryMB: 1024 });
    const asked = makeJob({ TaskGroups: [{ Name: 'web', Count: 3, Tasks: [task('a', 400, 100)] }] });
    const result = place({ nodes: [node], allocs: [] }, asked, requests(asked, 'web', 3), 's');
    expect(result.placements).toHaveLength(2);
    expect(result.failed.web).toMatchObject({ DimensionExhausted: { cpu: 1 }, CoalescedFailures: 0 });
  });

  it('frees what the allocation a request replaces holds, and holds it again when the request fails', () => {
    const node = makeNode({ cpu: 1000, memoryMB: 1024 });
    const asked = makeJob({ TaskGroups: [{ Name: 'web', Count: 1, Tasks: [task('a', 800, 800)] }] });
    const old = makeAlloc(asked, 'web', node, { cpu: 800, memoryMB: 800 });
    const replaced = place(
      { nodes: [node], allocs: [old] },
      asked,
      [{ group: 'web', name: 'example.web[0]', previousAlloc: old }],
      's',
    );
    expect(replaced.placements.map((p) => p.node.ID)).toEqual([node.ID]);
    const bigger = makeJob({ TaskGroups: [{ Name: 'web', Count: 2, Tasks: [task('a', 900, 800)] }] });
    const failing = place(
      { nodes: [node], allocs: [old] },
      bigger,
      [
        { group: 'web', name: 'example.web[0]', previousAlloc: { ...old, AllocatedResources: old.AllocatedResources } },
        { group: 'web', name: 'example.web[1]' },
      ],
      's',
    );
    // the first fits only because the old allocation stops; the second then finds the node full
    expect(failing.placements).toHaveLength(1);
    expect(failing.failed.web?.DimensionExhausted).toEqual({ cpu: 1 });
  });

  it('sums a group’s tasks, overlapping a prestart task with the main ones and adding a sidecar', () => {
    const node = makeNode({ cpu: 1000, memoryMB: 4096 });
    const lifecycle = makeJob({
      TaskGroups: [
        {
          Name: 'web',
          Count: 1,
          Tasks: [
            task('main', 400, 100),
            task('init', 600, 100, { Lifecycle: { Hook: 'prestart', Sidecar: false } }),
            task('proxy', 500, 100, { Lifecycle: { Hook: 'prestart', Sidecar: true } }),
          ],
        },
      ],
    });
    // main + sidecar = 900 CPU; prestart = init + sidecar = 1100: more than the node's 1000
    const result = place({ nodes: [node], allocs: [] }, lifecycle, requests(lifecycle, 'web', 1), 's');
    expect(result.failed.web?.DimensionExhausted).toEqual({ cpu: 1 });
    const smallerInit = makeJob({
      TaskGroups: [
        {
          Name: 'web',
          Count: 1,
          Tasks: [
            task('main', 400, 100),
            task('init', 450, 100, { Lifecycle: { Hook: 'prestart', Sidecar: false } }),
            task('proxy', 500, 100, { Lifecycle: { Hook: 'prestart', Sidecar: true } }),
          ],
        },
      ],
    });
    const placed = place({ nodes: [node], allocs: [] }, smallerInit, requests(smallerInit, 'web', 1), 's');
    expect(placed.placements[0]?.metrics.ScoreMetaData?.[0]?.Scores.binpack).toBeCloseTo(
      binpack(1 - 950 / 1000, 1 - 200 / 4096),
      12,
    );
  });
});

describe('scores', () => {
  it('bin-packs as Nomad’s ScoreFitBinPack, preferring the fuller node', () => {
    const roomy = makeNode({ cpu: 8000, memoryMB: 16384 });
    const snug = makeNode({ cpu: 2000, memoryMB: 4096 });
    const job = makeJob({ TaskGroups: [{ Name: 'web', Count: 1, Tasks: [task('a', 500, 1024)] }] });
    const result = place({ nodes: [roomy, snug], allocs: [] }, job, requests(job, 'web', 1), 'any');
    const placement = result.placements[0];
    expect(placement?.node.ID).toBe(snug.ID);
    const scores = Object.fromEntries((placement?.metrics.ScoreMetaData ?? []).map((meta) => [meta.NodeID, meta]));
    expect(scores[snug.ID]?.Scores.binpack).toBeCloseTo(binpack(0.75, 0.75), 12);
    expect(scores[roomy.ID]?.Scores.binpack).toBeCloseTo(binpack(1 - 500 / 8000, 1 - 1024 / 16384), 12);
    expect(scores[snug.ID]).toEqual({
      NodeID: snug.ID,
      Scores: { binpack: expect.any(Number), 'job-anti-affinity': 0, 'node-reschedule-penalty': 0, 'node-affinity': 0 },
      NormScore: scores[snug.ID]?.Scores.binpack,
    });
  });

  it('scores down a node already running the group: −(collisions + 1) / count, averaged with binpack', () => {
    const node = makeNode({ cpu: 4000, memoryMB: 8192 });
    const job = makeJob({ TaskGroups: [{ Name: 'web', Count: 4, Tasks: [task('a', 100, 100)] }] });
    const existing = [makeAlloc(job, 'web', node, { cpu: 100, memoryMB: 100 })];
    const result = place({ nodes: [node], allocs: existing }, job, requests(job, 'web', 1), 's');
    const meta = result.placements[0]?.metrics.ScoreMetaData?.[0];
    const pack = binpack(1 - 200 / 4000, 1 - 200 / 8192);
    expect(meta?.Scores['job-anti-affinity']).toBe(-2 / 4);
    expect(meta?.NormScore).toBeCloseTo((pack - 0.5) / 2, 12);
  });

  it('scores a penalty node −1 (Nomad’s reschedule penalty)', () => {
    const penalized = makeNode({ cpu: 2000, memoryMB: 2048 });
    const other = makeNode({ cpu: 8000, memoryMB: 16384 });
    const job = makeJob({ TaskGroups: [{ Name: 'web', Count: 1, Tasks: [task('a', 500, 512)] }] });
    const result = place(
      { nodes: [penalized, other], allocs: [] },
      job,
      [{ group: 'web', name: 'example.web[0]', penaltyNodeIds: [penalized.ID] }],
      's',
    );
    expect(result.placements[0]?.node.ID).toBe(other.ID);
    const meta = result.placements[0]?.metrics.ScoreMetaData?.find((entry) => entry.NodeID === penalized.ID);
    expect(meta?.Scores['node-reschedule-penalty']).toBe(-1);
    expect(meta?.NormScore).toBeCloseTo((binpack(0.75, 0.75) - 1) / 2, 12);
  });
});

describe('what a placement grants', () => {
  it('gives each task its CPU and memory and the group its ephemeral disk', () => {
    const job = makeJob({
      TaskGroups: [
        {
          Name: 'web',
          Count: 1,
          EphemeralDisk: { SizeMB: 512 },
          Tasks: [task('a', 250, 128), task('b', 300, 256, { Lifecycle: { Hook: 'poststop', Sidecar: false } })],
        },
      ],
    });
    const result = place({ nodes: [makeNode()], allocs: [] }, job, requests(job, 'web', 1), 's');
    expect(result.placements[0]?.resources).toEqual({
      Tasks: {
        a: {
          Cpu: { CpuShares: 250, ReservedCores: null },
          Memory: { MemoryMB: 128, MemoryMaxMB: 0 },
          Networks: null,
          Devices: null,
        },
        b: {
          Cpu: { CpuShares: 300, ReservedCores: null },
          Memory: { MemoryMB: 256, MemoryMaxMB: 0 },
          Networks: null,
          Devices: null,
        },
      },
      TaskLifecycles: { a: null, b: { Hook: 'poststop', Sidecar: false } },
      Shared: { DiskMB: 512, Networks: null, Ports: null },
    });
    expect(result.placements[0]?.request).toEqual({ group: 'web', name: 'example.web[0]' });
  });
});

describe('determinism', () => {
  const nodes = Array.from({ length: 40 }, (_, i) =>
    makeNode({ cpu: 2000 + (i % 5) * 1000, memoryMB: 4096, datacenter: `dc${i % 3}` }),
  );
  const job = makeJob({ TaskGroups: [{ Name: 'web', Count: 30, Tasks: [task('a', 300, 256)] }] });
  const run = (seed: string) => place({ nodes, allocs: [] }, job, requests(job, 'web', 30), seed);
  const shape = (result: ReturnType<typeof run>) =>
    result.placements.map((p) => ({ node: p.node.ID, metrics: withoutTime(p.metrics) }));

  it('gives the same plan, metrics included, for the same seed, and another for another seed', () => {
    expect(shape(run('eval-1'))).toEqual(shape(run('eval-1')));
    expect(shape(run('eval-1')).map((p) => p.node)).not.toEqual(shape(run('eval-2')).map((p) => p.node));
  });

  it('evaluates the limited candidate set of a service job: ⌈log₂ 40⌉ = 6 scored nodes per placement', () => {
    for (const placement of run('eval-3').placements) {
      expect(placement.metrics.NodesEvaluated).toBe(6);
      expect(placement.metrics.ScoreMetaData).toHaveLength(5);
    }
  });
});

describe('reserved cores (resources.cores)', () => {
  const node = makeNode({ cpu: 4000, memoryMB: 8192 }); // 4 cores of 1,000 MHz, reservable 0–3
  const job = makeJob({
    TaskGroups: [{ Name: 'web', Count: 3, Tasks: [task('a', 100, 256, { Resources: { Cores: 2, MemoryMB: 256 } })] }],
  });

  it('reserves free cores, the task holding their MHz, until the node has too few: "cores"', () => {
    const result = place({ nodes: [node], allocs: [] }, job, requests(job, 'web', 3), 's');
    expect(result.placements.map((p) => p.resources.Tasks.a?.Cpu)).toEqual([
      { CpuShares: 2000, ReservedCores: [0, 1] },
      { CpuShares: 2000, ReservedCores: [2, 3] },
    ]);
    expect(result.failed.web).toMatchObject({ NodesExhausted: 1, DimensionExhausted: { cores: 1 } });
  });

  it('leaves the cores running allocations reserve, and counts their CPU', () => {
    const running = makeAlloc(makeJob({ ID: 'other' }), 'web', node, { cpu: 1000 });
    const pinned = running.AllocatedResources.Tasks.main;
    if (pinned) pinned.Cpu.ReservedCores = [1];
    const result = place({ nodes: [node], allocs: [running] }, job, requests(job, 'web', 1), 's');
    expect(result.placements[0]?.resources.Tasks.a?.Cpu).toEqual({ CpuShares: 2000, ReservedCores: [0, 2] });
    expect(result.placements[0]?.metrics.ScoreMetaData?.[0]?.Scores.binpack).toBeCloseTo(
      binpack(1 - 3000 / 4000, 1 - 556 / 8192),
      12,
    );
  });
});

describe('devices (resources.device)', () => {
  const withGpus = () => {
    const node = makeNode();
    (node.NodeResources as Record<string, unknown>).Devices = [
      {
        Vendor: 'nvidia',
        Type: 'gpu',
        Name: '1080ti',
        Instances: [
          { ID: 'GPU-a', Healthy: true },
          { ID: 'GPU-b', Healthy: false },
          { ID: 'GPU-c', Healthy: true },
        ],
      },
    ];
    return node;
  };
  const asking = (device: Record<string, unknown>, count = 3) =>
    makeJob({
      TaskGroups: [
        {
          Name: 'ml',
          Count: count,
          Tasks: [task('train', 100, 256, { Resources: { CPU: 100, MemoryMB: 256, Devices: [device] } })],
        },
      ],
    });

  it('grants healthy instances no allocation holds, then exhausts the node on devices', () => {
    const node = withGpus();
    const job = asking({ Name: 'nvidia/gpu', Count: 1 });
    const result = place({ nodes: [node], allocs: [] }, job, requests(job, 'ml', 3), 's');
    expect(result.placements.map((p) => p.resources.Tasks.train?.Devices)).toEqual([
      [{ Vendor: 'nvidia', Type: 'gpu', Name: '1080ti', DeviceIDs: ['GPU-a'] }],
      [{ Vendor: 'nvidia', Type: 'gpu', Name: '1080ti', DeviceIDs: ['GPU-c'] }],
    ]);
    expect(result.failed.ml).toMatchObject({ DimensionExhausted: { 'devices: no devices match request': 1 } });
  });

  it('filters nodes without enough matching healthy instances as "missing devices"', () => {
    const gpus = withGpus();
    const plain = makeNode();
    for (const device of [{ Name: 'gpu', Count: 3 }, { Name: 'amd/gpu' }, { Name: 'nvidia/gpu/a100' }]) {
      const job = asking(device, 1);
      expect(place({ nodes: [gpus, plain], allocs: [] }, job, requests(job, 'ml', 1), 's').failed.ml).toMatchObject({
        NodesFiltered: 2,
        ConstraintFiltered: { 'missing devices': 2 },
      });
    }
    const fits = asking({ Name: 'gpu', Count: 2 }, 1);
    expect(place({ nodes: [gpus, plain], allocs: [] }, fits, requests(fits, 'ml', 1), 's').placements[0]?.node.ID).toBe(
      gpus.ID,
    );
  });

  it('does not evaluate device constraints: a request with them matches no device', () => {
    const job = asking(
      { Name: 'gpu', Constraints: [{ LTarget: '${device.attr.memory}', RTarget: '4 GiB', Operand: '>=' }] },
      1,
    );
    expect(
      place({ nodes: [withGpus()], allocs: [] }, job, requests(job, 'ml', 1), 's').failed.ml?.ConstraintFiltered,
    ).toEqual({
      'missing devices': 1,
    });
  });
});

describe('ScoreMetaData', () => {
  it('keeps the five best normalized scores of the nodes scored, highest first', () => {
    const nodes = Array.from({ length: 8 }, (_, i) => makeNode({ cpu: 1000 + i * 500, memoryMB: 2048 + i * 1024 }));
    const job = makeJob({
      Affinities: [{ LTarget: '${node.class}', RTarget: 'none', Operand: '=', Weight: 10 }],
      TaskGroups: [{ Name: 'web', Count: 1, Tasks: [task('a', 500, 512)] }],
    });
    const metric = place({ nodes, allocs: [] }, job, requests(job, 'web', 1), 's').placements[0]?.metrics;
    expect(metric?.NodesEvaluated).toBe(8);
    const expected = nodes
      .map((node, i) => ({
        id: node.ID,
        score: binpack(1 - 500 / (1000 + i * 500), 1 - 512 / (2048 + i * 1024)) / 2,
      }))
      .sort((a, b) => b.score - a.score)
      .slice(0, 5);
    expect(metric?.ScoreMetaData?.map((meta) => meta.NodeID)).toEqual(expected.map((each) => each.id));
    for (const [i, meta] of (metric?.ScoreMetaData ?? []).entries())
      expect(meta.NormScore).toBeCloseTo(expected[i]?.score as number, 12);
  });
});
