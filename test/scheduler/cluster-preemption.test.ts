/**
 * Preemption end to end over DynamoDB Local: the scheduler configuration route (Nomad's shape, defaults, `?cas=`,
 * validation), a system job evicting a lower-priority service allocation on a full node (the evicted allocation's
 * `evict` with `PreemptedByAllocation`, the new one's `PreemptedAllocations`, in one write with the `PlanResult`
 * events and a `preemption` evaluation of the evicted job), the job plan's `Annotations.PreemptedAllocs`, and the
 * rules: a service job preempts only once the operator enables it, equal priority never; and `PauseEvalBroker`.
 * Placement reads other jobs' priorities only when it needs them (counted in DynamoDB's GetItems), and a system job
 * evicts a lower-priority allocation for the GPU it holds (Nomad's PreemptForDevice).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EvaluationWorker } from '../../packages/core/src/scheduler/worker/evaluation-worker.ts';
import { managementCall, ready, webJob, withWorker } from '../support/cluster-allocations.ts';
import { gpuResources, registerNode } from '../support/cluster-nodes.ts';
import { type SchedulerHarness, startScheduler } from '../support/scheduler-harness.ts';

const configPath = '/v1/operator/scheduler/configuration';

/** A job of one group `g` asking `cpu` MHz and `memory` MB per allocation, in node pool `pool`. */
const job = (id: string, pool: string, type: string, priority: number, cpu: number, memory: number) =>
  webJob(id, {
    Type: type,
    Priority: priority,
    NodePool: pool,
    TaskGroups: [
      {
        Name: 'g',
        Count: 1,
        Tasks: [
          { Name: 't', Driver: 'raw_exec', Config: { command: 'sleep' }, Resources: { CPU: cpu, MemoryMB: memory } },
        ],
      },
    ],
  });

describe('preemption and the scheduler configuration (DynamoDB Local)', () => {
  let h: SchedulerHarness;
  let root: string;
  let writer: string;
  let worker: EvaluationWorker;
  const mgmt = managementCall(() => ({ h, root }));
  const allocsOf = (id: string) => h.scheduler.allocations.ofJob('default', id);
  /**
   * `placed` evicted allocation `evictedId` in one write after index `before`: the evicted one marked, at the index
   * that created `placed`, and that write's PlanResult events those of both and of the evicted job's preemption
   * evaluation. The evicted allocation as stored, and that evaluation.
   */
  const evictedInOneWrite = async (
    placed: { ID: string; CreateIndex: number } | undefined,
    evictedId: string,
    before: number,
  ) => {
    const evicted = await h.scheduler.allocations.get(evictedId);
    expect(evicted).toMatchObject({
      DesiredStatus: 'evict',
      DesiredDescription: `Preempted by alloc ID ${placed?.ID}`,
      PreemptedByAllocation: placed?.ID,
    });
    expect(evicted?.ModifyIndex).toBe(placed?.CreateIndex);
    const events = (await h.scheduler.state.eventsAfter(before + 1)).flatMap((batch) => batch.events);
    const planResult = events.filter((event) => event.Type === 'PlanResult');
    expect(planResult.map((event) => [event.Topic, event.Key]).sort()).toEqual(
      [
        ['Allocation', placed?.ID],
        ['Allocation', evictedId],
        ['Evaluation', expect.any(String)],
      ].sort(),
    );
    const evaluation = planResult.find((event) => event.Topic === 'Evaluation')?.Payload.Evaluation as Record<
      string,
      unknown
    >;
    return { evicted, evaluation };
  };

  /** A ready node in its own pool, filled by a priority-20 service job's one allocation (3800 of 3900 MHz). */
  const fullNode = async (pool: string) => {
    const { node } = await registerNode(h, writer, { NodePool: pool });
    await ready(h, node);
    const filler = `filler-${pool}`;
    const out = await mgmt('PUT', '/v1/jobs', { Job: job(filler, pool, 'service', 20, 3800, 3000) });
    expect(out.status).toBe(200);
    expect((await worker.runDue()).get(out.body.EvalID)).toBe('complete');
    const [alloc] = await allocsOf(filler);
    expect(alloc?.NodeID).toBe(node.ID);
    return { node, filler, alloc: alloc as NonNullable<typeof alloc> };
  };

  beforeAll(async () => {
    ({ h, root, writer, worker } = await withWorker(await startScheduler()));
  });
  afterAll(() => h.close());

  it('answers Nomad’s default configuration before any write', async () => {
    const out = await mgmt('GET', configPath);
    expect(out.status).toBe(200);
    expect(out.body).toEqual({
      SchedulerConfig: {
        SchedulerAlgorithm: 'binpack',
        PreemptionConfig: {
          SystemSchedulerEnabled: true,
          SysBatchSchedulerEnabled: false,
          BatchSchedulerEnabled: false,
          ServiceSchedulerEnabled: false,
        },
        MemoryOversubscriptionEnabled: false,
        RejectJobRegistration: false,
        PauseEvalBroker: false,
        NodeLimitForFeasibilityChecks: 0,
        CreateIndex: 1,
        ModifyIndex: 1,
      },
      Index: 1,
      LastContact: 0,
      KnownLeader: true,
      NextToken: '',
    });
  });

  it('refuses what it cannot honour and invalid input with a 400, storing nothing', async () => {
    const bad = await mgmt('PUT', configPath, { SchedulerAlgorithm: 'random' });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('invalid scheduler algorithm: random');
    const limit = await mgmt('PUT', configPath, { NodeLimitForFeasibilityChecks: -1 });
    expect(limit.status).toBe(400);
    expect(limit.text).toContain('NodeLimitForFeasibilityChecks');
    const cas = await h.call('PUT', `${configPath}?cas=abc`, { token: root, body: {} });
    expect(cas.status).toBe(400);
    expect(cas.text).toContain('Error parsing cas value');
    expect((await h.scheduler.schedulerConfig.get()).ModifyIndex).toBe(1);
  });

  it('writes with and without ?cas= as Nomad: {Updated, Index}; a stale cas writes nothing', async () => {
    const stale = await h.call('PUT', `${configPath}?cas=7`, {
      token: root,
      body: { SchedulerAlgorithm: 'spread' },
    });
    expect(stale.status).toBe(200);
    expect(stale.body).toEqual({ Updated: false, Index: 1 });
    expect((await h.scheduler.schedulerConfig.get()).SchedulerAlgorithm).toBe('binpack');
    const fresh = await h.call('POST', `${configPath}?cas=1`, {
      token: root,
      body: { SchedulerAlgorithm: 'binpack', PreemptionConfig: { SystemSchedulerEnabled: true } },
    });
    expect(fresh.body.Updated).toBe(true);
    expect(fresh.headers.get('x-nomad-index')).toBe(String(fresh.body.Index));
    const read = (await mgmt('GET', configPath)).body;
    expect(read.SchedulerConfig).toMatchObject({ CreateIndex: fresh.body.Index, ModifyIndex: fresh.body.Index });
    expect(read.Index).toBe(fresh.body.Index);
  });

  it('PauseEvalBroker stops the worker taking evaluations; unpaused, they run', async () => {
    const { node } = await registerNode(h, writer, { NodePool: 'paused' });
    await ready(h, node);
    const paused = await mgmt('PUT', configPath, {
      PauseEvalBroker: true,
      PreemptionConfig: { SystemSchedulerEnabled: true },
    });
    expect(paused.body.Updated).toBe(true);
    expect((await mgmt('GET', configPath)).body.SchedulerConfig.PauseEvalBroker).toBe(true);
    const out = await mgmt('PUT', '/v1/jobs', { Job: job('waiting', 'paused', 'service', 50, 100, 100) });
    expect((await worker.runDue()).get(out.body.EvalID)).toBe('paused');
    expect((await worker.runEvaluations([out.body.EvalID])).get(out.body.EvalID)).toBe('paused');
    expect((await mgmt('GET', `/v1/evaluation/${out.body.EvalID}`)).body.Status).toBe('pending');
    expect(await allocsOf('waiting')).toEqual([]);
    await mgmt('PUT', configPath, { PreemptionConfig: { SystemSchedulerEnabled: true } });
    expect((await worker.runDue()).get(out.body.EvalID)).toBe('complete');
    expect(await allocsOf('waiting')).toHaveLength(1);
  });

  it('MemoryOversubscriptionEnabled grants the job’s memory_max to its allocations', async () => {
    const { node } = await registerNode(h, writer, { NodePool: 'oversub' });
    await ready(h, node);
    const withMax = (id: string) => {
      const spec = job(id, 'oversub', 'batch', 50, 100, 256);
      const groups = spec.TaskGroups as Array<{ Tasks: Array<{ Resources: Record<string, number> }> }>;
      for (const group of groups) for (const each of group.Tasks) each.Resources.MemoryMaxMB = 1024;
      return spec;
    };
    const memoryOf = async (id: string) => (await allocsOf(id))[0]?.AllocatedResources.Tasks.t?.Memory;
    const off = await mgmt('PUT', '/v1/jobs', { Job: withMax('capped') });
    expect((await worker.runDue()).get(off.body.EvalID)).toBe('complete');
    expect(await memoryOf('capped')).toEqual({ MemoryMB: 256, MemoryMaxMB: 0 });
    await mgmt('PUT', configPath, {
      MemoryOversubscriptionEnabled: true,
      PreemptionConfig: { SystemSchedulerEnabled: true },
    });
    const on = await mgmt('PUT', '/v1/jobs', { Job: withMax('burst') });
    expect((await worker.runDue()).get(on.body.EvalID)).toBe('complete');
    expect(await memoryOf('burst')).toEqual({ MemoryMB: 256, MemoryMaxMB: 1024 });
    await mgmt('PUT', configPath, { PreemptionConfig: { SystemSchedulerEnabled: true } });
  });

  it('a system job of priority 90 evicts a priority-20 service allocation on a full node, in one write', async () => {
    const { node, filler, alloc } = await fullNode('sys');
    const before = await h.scheduler.state.currentIndex();
    const out = await mgmt('PUT', '/v1/jobs', { Job: job('agent', 'sys', 'system', 90, 500, 256) });
    expect((await worker.runDue()).get(out.body.EvalID)).toBe('complete');

    const [placed] = await allocsOf('agent');
    expect(placed).toMatchObject({ NodeID: node.ID, DesiredStatus: 'run', PreemptedAllocations: [alloc.ID] });
    // The placement and the eviction are one write: one index, the PlanResult events of both, and the preempted
    // job's evaluation.
    const { evicted, evaluation } = await evictedInOneWrite(placed, alloc.ID, before);
    expect(evaluation).toMatchObject({
      JobID: filler,
      TriggeredBy: 'preemption',
      Status: 'pending',
      Priority: 20,
      Type: 'service',
    });
    const stored = (await mgmt('GET', `/v1/evaluation/${evaluation.ID}`)).body;
    expect(stored).toMatchObject({ JobID: filler, TriggeredBy: 'preemption' });
    // The node's map carries the eviction, so its agent stops the allocation.
    const map = await h.call('GET', `/v1/client/node/${node.ID}/allocations`, { token: node.SecretID });
    expect(map.body.Allocs[alloc.ID]).toBe(evicted?.AllocModifyIndex);
    // The list stub shows both sides.
    const stubs = (await mgmt('GET', `/v1/job/${filler}/allocations`)).body as Array<Record<string, unknown>>;
    expect(stubs.find((stub) => stub.ID === alloc.ID)).toMatchObject({ PreemptedByAllocation: placed?.ID });
    // The preempted job's evaluation runs: no room left for it, so it blocks.
    expect((await worker.runDue()).get(evaluation.ID as string)).toBe('blocked');
  });

  it('with the default configuration a service job does not preempt; its plan shows no preemption', async () => {
    await fullNode('svc');
    const spec = job('urgent', 'svc', 'service', 90, 500, 256);
    const plan = await mgmt('PUT', '/v1/job/urgent/plan', { Job: spec });
    expect(plan.status).toBe(200);
    expect(plan.body.Annotations.PreemptedAllocs).toBeNull();
    expect(plan.body.FailedTGAllocs.g.DimensionExhausted).toEqual({ cpu: 1 });
    const out = await mgmt('PUT', '/v1/jobs', { Job: spec });
    expect((await worker.runDue()).get(out.body.EvalID)).toBe('blocked');
    expect(await allocsOf('urgent')).toEqual([]);
    expect((await allocsOf('filler-svc'))[0]?.DesiredStatus).toBe('run');
  });

  it('equal priority never preempts, even a system job', async () => {
    const { alloc } = await fullNode('peer');
    const out = await mgmt('PUT', '/v1/jobs', { Job: job('peer-agent', 'peer', 'system', 20, 500, 256) });
    await worker.runDue();
    expect(await allocsOf('peer-agent')).toEqual([]);
    expect((await h.scheduler.allocations.get(alloc.ID))?.DesiredStatus).toBe('run');
    expect((await mgmt('GET', `/v1/evaluation/${out.body.EvalID}`)).body.Status).toBe('complete');
  });

  it('with ServiceSchedulerEnabled a service job of priority 90 preempts; its plan shows it first', async () => {
    const { alloc } = await fullNode('svc-on');
    const set = await mgmt('PUT', configPath, {
      PreemptionConfig: { SystemSchedulerEnabled: true, ServiceSchedulerEnabled: true },
    });
    expect(set.body.Updated).toBe(true);
    const spec = job('urgent-on', 'svc-on', 'service', 90, 500, 256);
    const plan = await mgmt('PUT', '/v1/job/urgent-on/plan', { Job: spec });
    expect(plan.body.FailedTGAllocs).toBeNull();
    expect(plan.body.Annotations.PreemptedAllocs).toHaveLength(1);
    expect(plan.body.Annotations.PreemptedAllocs[0]).toMatchObject({ ID: alloc.ID, JobID: 'filler-svc-on' });
    expect(plan.body.Annotations.DesiredTGUpdates.g).toMatchObject({ Place: 1, Preemptions: 1 });
    // The plan wrote nothing.
    expect((await h.scheduler.allocations.get(alloc.ID))?.DesiredStatus).toBe('run');

    const out = await mgmt('PUT', '/v1/jobs', { Job: spec });
    expect((await worker.runDue()).get(out.body.EvalID)).toBe('complete');
    const [placed] = await allocsOf('urgent-on');
    expect(placed?.PreemptedAllocations).toEqual([alloc.ID]);
    expect(await h.scheduler.allocations.get(alloc.ID)).toMatchObject({
      DesiredStatus: 'evict',
      PreemptedByAllocation: placed?.ID,
    });
    await mgmt('PUT', configPath, { PreemptionConfig: { SystemSchedulerEnabled: true } });
  });
  /** The GetItems of job items other than `own` that DynamoDB serves while `run` runs. */
  const otherJobReads = async (own: string, run: () => Promise<unknown>): Promise<string[]> => {
    const reads: string[] = [];
    const name = `jobReads-${Math.random()}`;
    h.client.middlewareStack.add(
      (next, context) => async (args) => {
        const key = (args.input as { Key?: { pk?: { S?: string }; sk?: { S?: string } } }).Key;
        const pk = key?.pk?.S ?? '';
        if (context.commandName === 'GetItemCommand' && pk.startsWith('sched#job#') && key?.sk?.S !== own)
          reads.push(key?.sk?.S ?? '');
        return next(args);
      },
      { step: 'initialize', name },
    );
    try {
      await run();
    } finally {
      h.client.middlewareStack.remove(name);
    }
    return reads;
  };

  it('a system job that fits everywhere reads no other job’s priority; one that evicts reads only the evicted job’s', async () => {
    // Two nodes, each running another job's allocation with room to spare.
    for (const [i, pool] of ['lazy', 'lazy'].entries()) {
      const { node } = await registerNode(h, writer, { NodePool: pool });
      await ready(h, node);
      const out = await mgmt('PUT', '/v1/jobs', { Job: job(`neighbour-${i}`, pool, 'service', 20 + i, 1000, 500) });
      expect((await worker.runDue()).get(out.body.EvalID)).toBe('complete');
    }
    let evalId = '';
    const fits = await otherJobReads('lazy-agent', async () => {
      const out = await mgmt('PUT', '/v1/jobs', { Job: job('lazy-agent', 'lazy', 'system', 90, 500, 256) });
      evalId = out.body.EvalID;
      expect((await worker.runDue()).get(evalId)).toBe('complete');
    });
    expect(await allocsOf('lazy-agent')).toHaveLength(2);
    expect(fits).toEqual([]);
    // Before lazy reads, the same evaluation read both neighbours' jobs. Now only a node that does not fit reads:
    // over a full node (its filler at priority 20) and one with room (a neighbour at 21), a system job reads the
    // filler's priority alone.
    const { alloc, filler } = await fullNode('lazy-full');
    const { node: roomy } = await registerNode(h, writer, { NodePool: 'lazy-full' });
    await ready(h, roomy);
    const neighbour = await mgmt('PUT', '/v1/jobs', {
      Job: job('neighbour-full', 'lazy-full', 'service', 21, 1000, 500),
    });
    expect((await worker.runDue()).get(neighbour.body.EvalID)).toBe('complete');
    expect((await allocsOf('neighbour-full'))[0]?.NodeID).toBe(roomy.ID);
    const evicting = await otherJobReads('lazy-evictor', async () => {
      const out = await mgmt('PUT', '/v1/jobs', { Job: job('lazy-evictor', 'lazy-full', 'system', 90, 500, 256) });
      expect((await worker.runDue()).get(out.body.EvalID)).toBe('complete');
    });
    expect((await h.scheduler.allocations.get(alloc.ID))?.DesiredStatus).toBe('evict');
    expect(await allocsOf('lazy-evictor')).toHaveLength(2);
    expect(new Set(evicting)).toEqual(new Set([filler]));
  });

  it('a system job evicts a lower-priority allocation for the GPU it holds: store, events, preemption evaluation', async () => {
    const { node } = await registerNode(h, writer, {
      NodePool: 'gpu',
      NodeResources: gpuResources(),
    });
    await ready(h, node);
    const gpuJob = (id: string, type: string, priority: number, count: number) =>
      webJob(id, {
        Type: type,
        Priority: priority,
        NodePool: 'gpu',
        TaskGroups: [
          {
            Name: 'g',
            Count: 1,
            Tasks: [
              {
                Name: 't',
                Driver: 'raw_exec',
                Config: { command: 'sleep' },
                Resources: { CPU: 200, MemoryMB: 256, Devices: [{ Name: 'nvidia/gpu', Count: count }] },
              },
            ],
          },
        ],
      });
    // A priority-20 service job holds both GPUs, with CPU and memory to spare on the node.
    const held = await mgmt('PUT', '/v1/jobs', { Job: gpuJob('gpu-holder', 'service', 20, 2) });
    expect((await worker.runDue()).get(held.body.EvalID)).toBe('complete');
    const [holder] = await allocsOf('gpu-holder');
    expect(holder?.AllocatedResources?.Tasks.t?.Devices).toEqual([
      { Vendor: 'nvidia', Type: 'gpu', Name: 't4', DeviceIDs: ['GPU-1', 'GPU-2'] },
    ]);

    // The dry run shows the eviction and writes nothing.
    const plan = await mgmt('PUT', '/v1/job/gpu-agent/plan', { Job: gpuJob('gpu-agent', 'system', 90, 1) });
    expect(plan.status).toBe(200);
    expect(plan.body.FailedTGAllocs).toBeNull();
    expect(plan.body.Annotations.PreemptedAllocs.map((stub: { ID: string }) => stub.ID)).toEqual([holder?.ID]);
    expect(plan.body.Annotations.DesiredTGUpdates.g).toMatchObject({ Place: 1, Preemptions: 1 });
    expect((await h.scheduler.allocations.get(holder?.ID as string))?.DesiredStatus).toBe('run');

    const before = await h.scheduler.state.currentIndex();
    const out = await mgmt('PUT', '/v1/jobs', { Job: gpuJob('gpu-agent', 'system', 90, 1) });
    expect((await worker.runDue()).get(out.body.EvalID)).toBe('complete');
    const [placed] = await allocsOf('gpu-agent');
    expect(placed).toMatchObject({ NodeID: node.ID, DesiredStatus: 'run', PreemptedAllocations: [holder?.ID] });
    expect(placed?.AllocatedResources?.Tasks.t?.Devices).toEqual([
      { Vendor: 'nvidia', Type: 'gpu', Name: 't4', DeviceIDs: ['GPU-1'] },
    ]);
    const { evaluation } = await evictedInOneWrite(placed, holder?.ID as string, before);
    expect(evaluation).toMatchObject({ JobID: 'gpu-holder', TriggeredBy: 'preemption', Priority: 20 });
    // The evicted job's evaluation runs: one GPU is left, it asks two, so it blocks.
    expect((await worker.runDue()).get(evaluation.ID as string)).toBe('blocked');
  });
});
