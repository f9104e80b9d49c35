import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredAllocation } from '../../packages/core/src/scheduler/cluster/allocations/store.ts';
import type { EvaluationWorker } from '../../packages/core/src/scheduler/worker/evaluation-worker.ts';
import { groupJob, managementCall, ready, withWorker } from '../support/cluster-allocations.ts';
import { clientNode, registerNode } from '../support/cluster-nodes.ts';
import { type SchedulerHarness, startScheduler } from '../support/scheduler-harness.ts';

type Registered = Awaited<ReturnType<typeof registerNode>>['node'];

/** A batch job (no deployment: its updates are not held back by health) of one group `web` in `pool`. */
const batchJob = (
  id: string,
  pool: string,
  overrides: Record<string, unknown> = {},
  task: Record<string, unknown> = {},
) => groupJob(id, { memoryMB: 1024, task }, { Type: 'batch', NodePool: pool, ...overrides });

const resources = (memoryMB: number) => ({
  ...(clientNode().NodeResources as Record<string, unknown>),
  Memory: { MemoryMB: memoryMB },
});

describe('the evaluation worker: in-place updates checked on their node, replacements as the reconciler decided', () => {
  let h: SchedulerHarness;
  let root: string;
  let writer: string;
  let worker: EvaluationWorker;
  const mgmt = managementCall(() => ({ h, root }));
  const allocsOf = async (job: string) =>
    (await h.scheduler.allocations.ofJob('default', job)).sort((a, b) => a.CreateIndex - b.CreateIndex);
  const submit = async (job: Record<string, unknown>) => {
    const out = await mgmt('PUT', '/v1/jobs', { Job: job });
    expect(out.status).toBe(200);
    return out.body.EvalID as string;
  };
  const node = async (pool: string, overrides: Record<string, unknown> = {}) => {
    const { node } = await registerNode(h, writer, { NodePool: pool, ...overrides });
    await ready(h, node);
    return node;
  };
  /** The node registers again with other resources (Nomad's Node.Register of a known node). */
  const reregister = async (registered: Registered, memoryMB: number) => {
    const out = await h.call('POST', '/v1/client/register', {
      token: registered.SecretID,
      body: { Node: { ...registered, NodeResources: resources(memoryMB) } },
    });
    expect(out.status).toBe(200);
    await ready(h, registered);
  };

  beforeAll(async () => {
    ({ h, root, writer, worker } = await withWorker(await startScheduler()));
  });
  afterAll(() => h.close());

  it('an update needing no restart stays in place where the node still takes it, and moves where it does not', async () => {
    const r1 = await node('racks', { Meta: { rack: 'r1' } });
    const r2 = await node('racks', { Meta: { rack: 'r2' } });
    const first = await submit(batchJob('racked', 'racks'));
    expect((await worker.runDue()).get(first)).toBe('complete');
    const [placed] = await allocsOf('racked');
    if (!placed) throw new Error('not placed');
    const [here, there] = placed.NodeID === r1.ID ? [r1, r2] : [r2, r1];
    const otherRack = there === r1 ? 'r1' : 'r2';

    // A kill timeout changes nothing that needs a restart: the allocation takes version 1 where it is.
    const second = await submit(batchJob('racked', 'racks', {}, { KillTimeout: 30e9 }));
    expect((await worker.runDue()).get(second)).toBe('complete');
    const [inPlace, ...none] = await allocsOf('racked');
    expect(none).toEqual([]);
    expect(inPlace).toMatchObject({
      ID: placed.ID,
      JobVersion: 1,
      EvalID: second,
      DesiredStatus: 'run',
      NodeID: here.ID,
    });
    expect(inPlace?.AllocatedResources.Tasks.server?.Memory.MemoryMB).toBe(1024);

    // A constraint its node now fails needs no restart either, but Nomad's in-place check re-runs feasibility on the
    // node: the update is destructive, the replacement placed on the node of the other rack.
    const constraint = { LTarget: '${meta.rack}', RTarget: otherRack, Operand: '=' };
    const third = await submit(batchJob('racked', 'racks', { Constraints: [constraint] }, { KillTimeout: 30e9 }));
    expect((await worker.runDue()).get(third)).toBe('complete');
    const [old, replacement, ...more] = await allocsOf('racked');
    expect(more).toEqual([]);
    expect(old).toMatchObject({
      ID: placed.ID,
      JobVersion: 1,
      DesiredStatus: 'stop',
      DesiredDescription: 'alloc is being updated due to job update',
      NextAllocation: replacement?.ID,
    });
    expect(replacement).toMatchObject({
      Name: 'racked.web[0]',
      JobVersion: 2,
      NodeID: there.ID,
      DesiredStatus: 'run',
      PreviousAllocation: placed.ID,
      RescheduleTracker: null,
    });
    const thirdEval = (await mgmt('GET', `/v1/evaluation/${third}`)).body;
    expect(thirdEval).toMatchObject({ Status: 'complete' });
    // Everything placed: no FailedTGAllocs (Nomad's Evaluation leaves it out empty).
    expect(thirdEval).not.toHaveProperty('FailedTGAllocs');
  });

  it('an in-place update its node no longer has room for is destructive; with no room anywhere the old one runs on', async () => {
    const only = await node('tight');
    const first = await submit(batchJob('grown', 'tight'));
    expect((await worker.runDue()).get(first)).toBe('complete');
    const [placed] = await allocsOf('grown');
    if (!placed) throw new Error('not placed');
    expect(placed.NodeID).toBe(only.ID);

    // The node comes back smaller: 1,000 MB (256 reserved) no longer holds the allocation's 1,024.
    await reregister(only, 1000);
    await worker.runDue();
    const second = await submit(batchJob('grown', 'tight', {}, { KillTimeout: 30e9 }));
    expect((await worker.runDue()).get(second)).toBe('blocked');
    // Destructive, and its replacement found no node: Nomad takes the stop back, the allocation keeps running.
    const [kept, ...none] = await allocsOf('grown');
    expect(none).toEqual([]);
    expect(kept).toMatchObject({ ID: placed.ID, JobVersion: 0, DesiredStatus: 'run', DesiredDescription: '' });
    expect(kept?.NextAllocation).toBe('');
    const evaluation = (await mgmt('GET', `/v1/evaluation/${second}`)).body;
    expect(evaluation).toMatchObject({ Status: 'complete', QueuedAllocations: { web: 1 } });
    expect(evaluation.FailedTGAllocs.web).toMatchObject({ NodesEvaluated: 1 });

    // Room again: the blocked evaluation runs, and the update now fits where the allocation is: in place.
    await reregister(only, 4096);
    const outcomes = await worker.runDue();
    expect(outcomes.get(evaluation.BlockedEval)).toBe('complete');
    const [updated, ...still] = await allocsOf('grown');
    expect(still).toEqual([]);
    expect(updated).toMatchObject({ ID: placed.ID, JobVersion: 1, DesiredStatus: 'run', NodeID: only.ID });
  });

  it('a reschedule carries the reconciler’s tracker; one that finds no node leaves the failed allocation marked, not stopped', async () => {
    const only = await node('resched');
    const first = await submit(batchJob('flaky', 'resched'));
    expect((await worker.runDue()).get(first)).toBe('complete');
    const [placed] = await allocsOf('flaky');
    if (!placed) throw new Error('not placed');
    const fail = async (alloc: StoredAllocation) => {
      const out = await h.call('PUT', `/v1/client/node/${alloc.NodeID}/allocations`, {
        token: only.SecretID,
        body: { Allocs: [{ ID: alloc.ID, ClientStatus: 'failed' }] },
      });
      expect(out.status).toBe(200);
    };
    await fail(placed);
    // No node may take the replacement.
    const ineligible = await mgmt('PUT', `/v1/node/${only.ID}/eligibility`, { Eligibility: 'ineligible' });
    expect(ineligible.status).toBe(200);
    const forced = await mgmt('PUT', '/v1/job/flaky/evaluate', {
      JobID: 'flaky',
      EvalOptions: { ForceReschedule: true },
    });
    expect(forced.status).toBe(200);
    await worker.runDue();
    const [unplaced, ...none] = await allocsOf('flaky');
    expect(none).toEqual([]);
    expect(unplaced).toMatchObject({
      ID: placed.ID,
      ClientStatus: 'failed',
      DesiredStatus: 'run',
      NextAllocation: '',
      RescheduleTracker: { Events: null, LastReschedule: 'no placement' },
    });
    const evaluation = (await mgmt('GET', `/v1/evaluation/${forced.body.EvalID}`)).body;
    expect(evaluation.FailedTGAllocs).not.toBeNull();
    expect(evaluation.BlockedEval).not.toBe('');

    // The node takes work again: the blocked evaluation reschedules it, the tracker the reconciler computed.
    expect((await mgmt('PUT', `/v1/node/${only.ID}/eligibility`, { Eligibility: 'eligible' })).status).toBe(200);
    expect((await worker.runDue()).get(evaluation.BlockedEval)).toBe('complete');
    const [previous, replacement] = await allocsOf('flaky');
    const now = h.clock.now() * 1e6;
    expect(replacement).toMatchObject({
      PreviousAllocation: placed.ID,
      DesiredStatus: 'run',
      RescheduleTracker: {
        // The batch default policy: a constant 5 s delay.
        Events: [{ RescheduleTime: now, PrevAllocID: placed.ID, PrevNodeID: only.ID, Delay: 5e9 }],
        LastReschedule: 'ok',
      },
    });
    expect(previous).toMatchObject({
      ID: placed.ID,
      DesiredStatus: 'stop',
      DesiredDescription: 'alloc was rescheduled because it failed',
      NextAllocation: replacement?.ID,
      RescheduleTracker: { Events: null, LastReschedule: 'ok' },
    });
  });
});
