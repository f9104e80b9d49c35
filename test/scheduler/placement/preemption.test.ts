/**
 * Preemption in placement (Nomad's `preemption.go` and the `evict` path of its `BinPackIterator`): which allocations
 * of lower-priority jobs a placement evicts when its group fits no node, exact from hand-built snapshots. Every
 * placement scenario runs both ways (`place-both.ts`): with the priorities given up front, and read lazily as the
 * worker reads them, with one plan asserted.
 */
import { describe, expect, it } from 'vitest';
import type { Allocation } from '../../../packages/core/src/scheduler/cluster/allocations/model.ts';
import type { PlacementSettings } from '../../../packages/core/src/scheduler/cluster/scheduler-config/model.ts';
import { place } from '../../../packages/core/src/scheduler/placement/place.ts';
import {
  parallelPenalty,
  preemptFor,
  preemptForPorts,
  preemptionScore,
  resourceDistance,
} from '../../../packages/core/src/scheduler/placement/preemption.ts';
import { groupKey, priorityKey } from '../../../packages/core/src/scheduler/placement/types.ts';
import { placeBoth } from './place-both.ts';
import { makeAlloc, makeJob, makeNode, requests, task } from './fixtures.ts';

const settings = (preempt: boolean, algorithm: 'binpack' | 'spread' = 'binpack'): PlacementSettings => ({
  algorithm,
  preempt,
  nodeLimit: 100,
  memoryOversubscription: false,
});

const prioritiesOf = (entries: Array<[{ ID: string; Namespace: string }, number]>) =>
  new Map(entries.map(([job, priority]) => [priorityKey(job.Namespace, job.ID), priority]));

describe('the preemption choice (pure)', () => {
  const node = makeNode({ cpu: 4000, memoryMB: 8192 });
  const low = makeJob({ ID: 'low', Priority: 20 });
  const mid = makeJob({ ID: 'mid', Priority: 40 });
  const near = makeJob({ ID: 'near', Priority: 85 });
  const capacity = { cpu: 4000, memoryMB: 8192, diskMB: 100_000 };
  const priorities = prioritiesOf([
    [low, 20],
    [mid, 40],
    [near, 85],
  ]);
  const priorityOf = (alloc: { Namespace: string; JobID: string }) =>
    priorities.get(priorityKey(alloc.Namespace, alloc.JobID));
  const usedBy = (allocs: Allocation[]) => ({
    cpu: allocs.reduce((sum, alloc) => sum + (alloc.AllocatedResources.Tasks.main?.Cpu.CpuShares ?? 0), 0),
    memoryMB: allocs.reduce((sum, alloc) => sum + (alloc.AllocatedResources.Tasks.main?.Memory.MemoryMB ?? 0), 0),
    diskMB: allocs.reduce((sum, alloc) => sum + alloc.AllocatedResources.Shared.DiskMB, 0),
  });
  const job = { ID: 'sys', Namespace: 'default', Priority: 90 };
  type Choice = Parameters<typeof preemptFor>[0];
  /** The choice on `node` among `allocs` (using what they hold) for `ask`, by the priority-90 job `sys`. */
  const choose = (allocs: Allocation[], ask: Choice['ask'], overrides: Partial<Choice> = {}) =>
    preemptFor({ capacity, used: usedBy(allocs), allocs, ask, job, priorityOf, ...overrides });

  it('takes the lowest priority first, the closest in size, and only as many as the ask needs', () => {
    const small = makeAlloc(low, 'web', node, { cpu: 500, memoryMB: 1000, diskMB: 0 });
    const exact = makeAlloc(low, 'web', node, { cpu: 1000, memoryMB: 2000, diskMB: 0 });
    const big = makeAlloc(mid, 'web', node, { cpu: 2500, memoryMB: 5000, diskMB: 0 });
    const allocs = [small, exact, big];
    const chosen = choose(allocs, { cpu: 1000, memoryMB: 2000, diskMB: 0 });
    // Free: 0 CPU, 192 MB. The priority-20 group first; `exact` is at distance 0 and covers the ask alone.
    expect(chosen?.map((alloc) => alloc.ID)).toEqual([exact.ID]);
  });

  it('goes on to the next priority when the lowest does not cover the ask, then trims what is not needed', () => {
    const small = makeAlloc(low, 'web', node, { cpu: 500, memoryMB: 1000, diskMB: 0 });
    const big = makeAlloc(mid, 'web', node, { cpu: 3500, memoryMB: 7000, diskMB: 0 });
    const allocs = [small, big];
    const chosen = choose(allocs, { cpu: 2000, memoryMB: 4000, diskMB: 0 });
    // `small` (priority 20) is taken first but does not cover; `big` (40) does. Trimmed farthest-first from the
    // ask: `small` is at distance √(0.75²+0.75²) ≈ 1.06, `big` at √(0.75²+0.75²) too; the stable order keeps `small`
    // first, which alone does not cover, so both stay.
    expect(chosen?.map((alloc) => alloc.ID)).toEqual([small.ID, big.ID]);
    expect(resourceDistance({ cpu: 2000, memoryMB: 4000, diskMB: 0 }, { cpu: 500, memoryMB: 1000, diskMB: 0 })).toBe(
      Math.sqrt(0.75 ** 2 + 0.75 ** 2),
    );
  });

  it('never evicts a job within 10 of the placing priority, of unknown priority, or of the job itself', () => {
    const nearAlloc = makeAlloc(near, 'web', node, { cpu: 4000, memoryMB: 8192, diskMB: 0 });
    const unknown = makeAlloc(makeJob({ ID: 'unknown' }), 'web', node, { cpu: 4000, memoryMB: 8192, diskMB: 0 });
    const own = makeAlloc({ ID: 'sys', Namespace: 'default' }, 'web', node, { cpu: 4000, memoryMB: 8192, diskMB: 0 });
    for (const alloc of [nearAlloc, unknown, own])
      expect(choose([alloc], { cpu: 100, memoryMB: 100, diskMB: 0 })).toBeNull();
    // Priority 80 against 90: a gap of exactly 10 is enough (Nomad skips only a gap below 10).
    const eighty = makeAlloc(makeJob({ ID: 'eighty' }), 'web', node, { cpu: 4000, memoryMB: 8192, diskMB: 0 });
    expect(
      choose([eighty], { cpu: 100, memoryMB: 100, diskMB: 0 }, { priorityOf: () => 80 })?.map((alloc) => alloc.ID),
    ).toEqual([eighty.ID]);
  });

  it('answers null when evicting every candidate still does not make room', () => {
    const alloc = makeAlloc(low, 'web', node, { cpu: 1000, memoryMB: 1000, diskMB: 0 });
    expect(
      choose([alloc], { cpu: 2000, memoryMB: 100, diskMB: 0 }, { used: { cpu: 4000, memoryMB: 8192, diskMB: 0 } }),
    ).toBeNull();
  });

  it('Nomad’s max_parallel penalty: a group already evicted max_parallel times in the plan is 50 further away', () => {
    expect([parallelPenalty(0, 5), parallelPenalty(1, 0), parallelPenalty(1, 1), parallelPenalty(2, 3)]).toEqual([
      0, 0, 50, 100,
    ]);
    const exact = makeAlloc(low, 'x', node, { cpu: 1000, memoryMB: 2000, diskMB: 0 });
    const larger = makeAlloc(low, 'y', node, { cpu: 1500, memoryMB: 3000, diskMB: 0 });
    const allocs = [exact, larger];
    const input = {
      capacity,
      used: { cpu: 4000, memoryMB: 8192, diskMB: 0 },
      allocs,
      ask: { cpu: 1000, memoryMB: 2000, diskMB: 0 },
      job,
      priorityOf,
    };
    expect(preemptFor(input)?.map((alloc) => alloc.ID)).toEqual([exact.ID]);
    const penalised = preemptFor({ ...input, penaltyOf: (alloc) => (alloc.TaskGroup === 'x' ? 50 : 0) });
    expect(penalised?.map((alloc) => alloc.ID)).toEqual([larger.ID]);
  });

  it('scores a node by the priorities it would evict (Nomad’s logistic curve, 0.5 at a net priority of 2048)', () => {
    const one = preemptionScore([20]);
    expect(one).toBe(1 / (1 + Math.exp(0.0048 * (20 + 1 - 2048))));
    expect(preemptionScore([20, 20, 20])).toBeLessThan(one);
    expect(preemptionScore([50])).toBeLessThan(one);
  });
});

describe('placement with preemption', () => {
  const lowJob = makeJob({ ID: 'batchy', Type: 'service', Priority: 20 });
  const full = makeNode({ cpu: 2000, memoryMB: 2048 });
  const filler = makeAlloc(lowJob, 'web', full, { cpu: 2000, memoryMB: 2048, diskMB: 0 });
  const snapshot = { nodes: [full], allocs: [filler], priorities: prioritiesOf([[lowJob, 20]]) };
  /** A system job of one group `agent` of one task asking `cpu` MHz and `memoryMB` MB, at `priority`. */
  const agentJob = (priority: number, id = 'agent', cpu = 500, memoryMB = 256) =>
    makeJob({
      ID: id,
      Type: 'system',
      Priority: priority,
      TaskGroups: [{ Name: 'agent', Count: 1, Tasks: [task('agent', cpu, memoryMB)] }],
    });
  /** `job`'s one allocation placed on the full node (both ways), preemption on or off. */
  const placeOnFull = (job: ReturnType<typeof makeJob>, preempt: boolean) =>
    placeBoth(snapshot, job, [{ group: 'agent', name: 'agent.agent[0]', nodeId: full.ID }], 's', settings(preempt));

  it('a system job of priority 90 evicts the lower-priority allocation on a full node and is placed there', async () => {
    const result = await placeOnFull(agentJob(90), true);
    expect(result.failed).toEqual({});
    expect(result.placements).toHaveLength(1);
    expect(result.placements[0]?.node.ID).toBe(full.ID);
    expect(result.placements[0]?.preempted?.map((alloc) => alloc.ID)).toEqual([filler.ID]);
  });

  it('with preemption off for the job type, the same placement fails, exhausted on the node', async () => {
    const result = await placeOnFull(agentJob(90), false);
    expect(result.placements).toEqual([]);
    expect(result.failed.agent?.NodesExhausted).toBe(1);
    expect(result.failed.agent?.DimensionExhausted).toEqual({ cpu: 1 });
  });

  it('a service job preempts only when enabled, after a first pass without, and scores the preemption', async () => {
    const service = makeJob({
      ID: 'api',
      Priority: 80,
      TaskGroups: [{ Name: 'api', Count: 1, Tasks: [task('api', 500, 256)] }],
    });
    const off = await placeBoth(snapshot, service, requests(service, 'api', 1), 's', settings(false));
    expect(off.placements).toEqual([]);
    const on = await placeBoth(snapshot, service, requests(service, 'api', 1), 's', settings(true));
    expect(on.placements[0]?.preempted?.map((alloc) => alloc.ID)).toEqual([filler.ID]);
    const scores = on.placements[0]?.metrics.ScoreMetaData?.[0]?.Scores ?? {};
    expect(scores.preemption).toBe(preemptionScore([20]));
  });

  it('equal priority never preempts, nor a gap under 10', async () => {
    for (const priority of [20, 29]) {
      const job = agentJob(priority, `peer-${priority}`);
      const result = await placeBoth(
        snapshot,
        job,
        [{ group: 'agent', name: 'x', nodeId: full.ID }],
        's',
        settings(true),
      );
      expect(result.placements).toEqual([]);
    }
  });

  it('an evicted allocation frees its room for the later placements of the same call', async () => {
    const two = makeNode({ cpu: 2000, memoryMB: 2048 });
    const a = makeAlloc(lowJob, 'web', two, { cpu: 1000, memoryMB: 1024, diskMB: 0 });
    const b = makeAlloc(lowJob, 'web', two, { cpu: 1000, memoryMB: 1024, diskMB: 0 });
    const service = makeJob({
      ID: 'api',
      Priority: 80,
      TaskGroups: [{ Name: 'api', Count: 2, Tasks: [task('api', 1000, 1024)] }],
    });
    const result = await placeBoth(
      { nodes: [two], allocs: [a, b], priorities: prioritiesOf([[lowJob, 20]]) },
      service,
      requests(service, 'api', 2),
      's',
      settings(true),
    );
    expect(result.placements).toHaveLength(2);
    const evicted = result.placements.flatMap((placement) => placement.preempted?.map((alloc) => alloc.ID) ?? []);
    expect(evicted.sort()).toEqual([a.ID, b.ID].sort());
  });

  it('a static port held by a lower-priority allocation is freed by evicting it (Nomad’s PreemptForNetwork)', async () => {
    const node = makeNode({ cpu: 4000, memoryMB: 4096 });
    const portJob = (id: string, priority: number, type = 'service') =>
      makeJob({
        ID: id,
        Type: type,
        Priority: priority,
        TaskGroups: [
          {
            Name: 'g',
            Count: 1,
            Networks: [{ ReservedPorts: [{ Label: 'http', Value: 8080 }] }],
            Tasks: [task('t', 100, 64)],
          },
        ],
      });
    // The holder is placed through placement itself, so its resources carry the port as Nomad's would.
    const holderJob = portJob('holder', 20);
    const granted = place({ nodes: [node], allocs: [] }, holderJob, requests(holderJob, 'g', 1), 's').placements[0];
    const holder = {
      ...makeAlloc(holderJob, 'g', node),
      AllocatedResources: granted?.resources as Allocation['AllocatedResources'],
    };
    const snapshot = { nodes: [node], allocs: [holder], priorities: prioritiesOf([[holderJob, 20]]) };
    const system = portJob('sys-port', 90, 'system');
    const on = await placeBoth(
      snapshot,
      system,
      [{ group: 'g', name: 'sys-port.g[0]', nodeId: node.ID }],
      's',
      settings(true),
    );
    expect(on.placements[0]?.preempted?.map((alloc) => alloc.ID)).toEqual([holder.ID]);
    expect(on.placements[0]?.resources.Shared.Ports?.[0]?.Value).toBe(8080);
    const off = await placeBoth(
      snapshot,
      system,
      [{ group: 'g', name: 'sys-port.g[0]', nodeId: node.ID }],
      's',
      settings(false),
    );
    expect(off.placements).toEqual([]);
    expect(Object.keys(off.failed.g?.DimensionExhausted ?? {})[0]).toMatch(/^network: /);
    // A holder within 10 of the job's priority keeps its port, and the node is exhausted.
    const close = { ...snapshot, priorities: prioritiesOf([[holderJob, 85]]) };
    expect(
      (await placeBoth(close, system, [{ group: 'g', name: 'x', nodeId: node.ID }], 's', settings(true))).placements,
    ).toEqual([]);
    expect(preemptForPorts({ allocs: [holder], ports: [9090], job: system, priorityOf: () => 20 })).toBeNull();
  });

  it('a system job across two nodes spreads its evictions over groups past their max_parallel', async () => {
    const [one, two] = [makeNode({ cpu: 2000, memoryMB: 2048 }), makeNode({ cpu: 2000, memoryMB: 2048 })] as const;
    const fill = (node: typeof one) => [
      makeAlloc(lowJob, 'x', node, { cpu: 1000, memoryMB: 1024, diskMB: 0 }),
      makeAlloc(lowJob, 'y', node, { cpu: 1000, memoryMB: 1024, diskMB: 0 }),
    ];
    const allocs = [...fill(one), ...fill(two)];
    const system = agentJob(90, 'agent', 1000, 1024);
    const reqs = [one, two].map((node, i) => ({ group: 'agent', name: `agent.agent[${i}]`, nodeId: node.ID }));
    const evictedGroups = async (maxParallel: number) =>
      (
        await placeBoth(
          {
            nodes: [one, two],
            allocs,
            priorities: prioritiesOf([[lowJob, 20]]),
            maxParallel: new Map([
              [groupKey('default', lowJob.ID, 'x'), maxParallel],
              [groupKey('default', lowJob.ID, 'y'), maxParallel],
            ]),
          },
          system,
          reqs,
          's',
          settings(true),
        )
      ).placements.map((placement) => placement.preempted?.map((alloc) => alloc.TaskGroup));
    // Equal distances: without a penalty the first candidate (group x) goes on both nodes; with max_parallel 1 the
    // second node's x is 50 further (x already has an eviction in the plan), so y goes there.
    expect(await evictedGroups(0)).toEqual([['x'], ['x']]);
    expect(await evictedGroups(1)).toEqual([['x'], ['y']]);
  });

  it('memory oversubscription grants a task its memory_max; off, only its memory (Nomad’s)', () => {
    const node = makeNode({ cpu: 4000, memoryMB: 4096 });
    const job = makeJob({
      ID: 'big',
      TaskGroups: [
        {
          Name: 'g',
          Count: 1,
          Tasks: [task('t', 100, 256, { Resources: { CPU: 100, MemoryMB: 256, MemoryMaxMB: 1024 } })],
        },
      ],
    });
    const granted = (memoryOversubscription: boolean) =>
      place({ nodes: [node], allocs: [] }, job, requests(job, 'g', 1), 's', {
        ...settings(false),
        memoryOversubscription,
      }).placements[0]?.resources.Tasks.t?.Memory;
    expect(granted(true)).toEqual({ MemoryMB: 256, MemoryMaxMB: 1024 });
    expect(granted(false)).toEqual({ MemoryMB: 256, MemoryMaxMB: 0 });
  });

  it('the spread algorithm scores the emptier node higher (Nomad’s ScoreFitSpread)', () => {
    const empty = makeNode({ cpu: 4000, memoryMB: 4096 });
    const busy = makeNode({ cpu: 4000, memoryMB: 4096 });
    const held = makeAlloc(lowJob, 'web', busy, { cpu: 2000, memoryMB: 2048, diskMB: 0 });
    const service = makeJob({
      ID: 'api',
      Type: 'batch',
      TaskGroups: [{ Name: 'api', Count: 1, Tasks: [task('api', 100, 100)] }],
    });
    const snap = { nodes: [empty, busy], allocs: [held] };
    expect(
      place(snap, service, requests(service, 'api', 1), 's', settings(false, 'spread')).placements[0]?.node.ID,
    ).toBe(empty.ID);
    expect(
      place(snap, service, requests(service, 'api', 1), 's', settings(false, 'binpack')).placements[0]?.node.ID,
    ).toBe(busy.ID);
  });
});
