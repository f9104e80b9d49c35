// biome-ignore-all lint/suspicious/noTemplateCurlyInString: spread attributes and affinity targets are Nomad interpolations
/**
 * The `affinity` and `spread` blocks: their scores as Nomad's NodeAffinityIterator and SpreadIterator compute them
 * (checked against the formulas written out here), and their effect on where a job's allocations land.
 */
import { describe, expect, it } from 'vitest';
import { place } from '../../../packages/core/src/scheduler/placement/place.ts';
import { makeAlloc, makeJob, makeNode, requests, task } from './fixtures.ts';

const byValue = (values: Array<string | undefined>) =>
  values.reduce<Record<string, number>>((counts, value) => {
    counts[value ?? ''] = (counts[value ?? ''] ?? 0) + 1;
    return counts;
  }, {});

describe('affinity', () => {
  const gold = [
    makeNode({ meta: { tier: 'gold' }, cpu: 16000, memoryMB: 32768 }),
    makeNode({ meta: { tier: 'gold' }, cpu: 16000, memoryMB: 32768 }),
  ];
  const silver = [
    makeNode({ meta: { tier: 'silver' }, cpu: 2000, memoryMB: 4096 }),
    makeNode({ meta: { tier: 'silver' }, cpu: 2000, memoryMB: 4096 }),
  ];
  const nodes = [...gold, ...silver];

  it('draws placements to matching nodes against bin-packing, scoring weight / Σ|weight|', () => {
    const job = makeJob({
      Affinities: [{ LTarget: '${meta.tier}', RTarget: 'gold', Operand: '=', Weight: 100 }],
      TaskGroups: [{ Name: 'web', Count: 4, Tasks: [task('a', 200, 256)] }],
    });
    const result = place({ nodes, allocs: [] }, job, requests(job, 'web', 4), 's');
    expect(byValue(result.placements.map((p) => p.node.Meta?.tier))).toEqual({ gold: 4 });
    const metas = result.placements[0]?.metrics.ScoreMetaData ?? [];
    for (const meta of metas) {
      const tier = nodes.find((node) => node.ID === meta.NodeID)?.Meta?.tier;
      expect(meta.Scores['node-affinity']).toBe(tier === 'gold' ? 1 : 0);
      expect(meta.NormScore).toBeCloseTo((meta.Scores.binpack as number) / 2 + (tier === 'gold' ? 0.5 : 0), 12);
    }
  });

  it('pushes placements away with a negative weight, merging the job’s, group’s and task’s affinities', () => {
    const job = makeJob({
      Affinities: [{ LTarget: '${meta.tier}', RTarget: 'gold', Operand: '=', Weight: -50 }],
      TaskGroups: [
        {
          Name: 'web',
          Count: 2,
          Affinities: [{ LTarget: '${meta.tier}', RTarget: 'silver', Operand: '=', Weight: 25 }],
          Tasks: [
            task('a', 100, 128, {
              Affinities: [{ LTarget: '${node.unique.id}', RTarget: silver[0]?.ID, Operand: '=', Weight: 25 }],
            }),
          ],
        },
      ],
    });
    const result = place({ nodes, allocs: [] }, job, requests(job, 'web', 2), 's');
    expect(byValue(result.placements.map((p) => p.node.Meta?.tier))).toEqual({ silver: 2 });
    const scores = Object.fromEntries(
      (result.placements[0]?.metrics.ScoreMetaData ?? []).map((meta) => [meta.NodeID, meta.Scores['node-affinity']]),
    );
    expect(scores[silver[0]?.ID as string]).toBe(50 / 100);
    expect(scores[silver[1]?.ID as string]).toBe(25 / 100);
    expect(scores[gold[0]?.ID as string]).toBe(-50 / 100);
  });

  it('scores every candidate when a group has affinities (the limit rises to max(count, 100))', () => {
    const many = Array.from({ length: 30 }, (_, i) => makeNode({ meta: { tier: i === 17 ? 'gold' : 'bronze' } }));
    const job = makeJob({
      Affinities: [{ LTarget: '${meta.tier}', RTarget: 'gold', Operand: '=', Weight: 100 }],
      TaskGroups: [{ Name: 'web', Count: 1, Tasks: [task('a')] }],
    });
    const result = place({ nodes: many, allocs: [] }, job, requests(job, 'web', 1), 'any-seed');
    expect(result.placements[0]?.node.ID).toBe(many[17]?.ID);
    expect(result.placements[0]?.metrics.NodesEvaluated).toBe(30);
  });
});

describe('spread', () => {
  const dc1 = [makeNode({ datacenter: 'dc1' }), makeNode({ datacenter: 'dc1' })];
  const dc2 = [makeNode({ datacenter: 'dc2' }), makeNode({ datacenter: 'dc2' })];
  const dc3 = [makeNode({ datacenter: 'dc3' }), makeNode({ datacenter: 'dc3' })];

  it('places by the targets’ percentages of the count', () => {
    const job = makeJob({
      Spreads: [
        {
          Attribute: '${node.datacenter}',
          Weight: 100,
          SpreadTarget: [
            { Value: 'dc1', Percent: 70 },
            { Value: 'dc2', Percent: 30 },
          ],
        },
      ],
      TaskGroups: [{ Name: 'web', Count: 10, Tasks: [task('a', 100, 64)] }],
    });
    const result = place({ nodes: [...dc1, ...dc2], allocs: [] }, job, requests(job, 'web', 10), 's');
    expect(byValue(result.placements.map((p) => p.node.Datacenter))).toEqual({ dc1: 7, dc2: 3 });
    // the first placement's boost: (desired − (used + 1)) / desired × weight share
    const first = result.placements[0]?.metrics.ScoreMetaData ?? [];
    for (const meta of first) {
      const dc = [...dc1, ...dc2].find((node) => node.ID === meta.NodeID)?.Datacenter;
      expect(meta.Scores['allocation-spread']).toBeCloseTo(dc === 'dc1' ? (7 - 1) / 7 : (3 - 1) / 3, 12);
    }
  });

  it('counts the job’s running allocations, and gives values without a target the rest as "*"', () => {
    const job = makeJob({
      Spreads: [{ Attribute: '${node.datacenter}', Weight: 50, SpreadTarget: [{ Value: 'dc1', Percent: 50 }] }],
      TaskGroups: [{ Name: 'web', Count: 6, Tasks: [task('a', 100, 64)] }],
    });
    const running = [makeAlloc(job, 'web', dc1[0] as never), makeAlloc(job, 'web', dc1[1] as never)];
    const result = place({ nodes: [...dc1, ...dc2, ...dc3], allocs: running }, job, requests(job, 'web', 4, 2), 's');
    const placed = byValue(result.placements.map((p) => p.node.Datacenter));
    expect(placed.dc1).toBe(1); // 3 of 6 in dc1 with the two running
    expect((placed.dc2 ?? 0) + (placed.dc3 ?? 0)).toBe(3);
  });

  it('spreads evenly without targets', () => {
    const job = makeJob({
      Spreads: [{ Attribute: '${node.datacenter}', Weight: 50 }],
      TaskGroups: [{ Name: 'web', Count: 9, Tasks: [task('a', 100, 64)] }],
    });
    const result = place({ nodes: [...dc1, ...dc2, ...dc3], allocs: [] }, job, requests(job, 'web', 9), 'seed');
    expect(byValue(result.placements.map((p) => p.node.Datacenter))).toEqual({ dc1: 3, dc2: 3, dc3: 3 });
  });

  it('scores −1 a node without the attribute', () => {
    const job = makeJob({
      Spreads: [{ Attribute: '${meta.zone}', Weight: 50, SpreadTarget: [{ Value: 'a', Percent: 100 }] }],
      TaskGroups: [{ Name: 'web', Count: 2, Tasks: [task('a', 100, 64)] }],
    });
    const zoned = makeNode({ meta: { zone: 'a' } });
    const bare = makeNode();
    const result = place({ nodes: [zoned, bare], allocs: [] }, job, requests(job, 'web', 1), 's');
    expect(result.placements[0]?.node.ID).toBe(zoned.ID);
    const bareScore = result.placements[0]?.metrics.ScoreMetaData?.find((meta) => meta.NodeID === bare.ID);
    expect(bareScore?.Scores['allocation-spread']).toBe(-1);
  });
});
