import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Evaluation } from '../../packages/core/src/scheduler/cluster/evaluations/model.ts';
import { CapacityLog } from '../../packages/core/src/scheduler/cluster/nodes/capacity.ts';
import { runTriggeredEvaluations } from '../../packages/core/src/scheduler/sweep.ts';
import { EvaluationWorker } from '../../packages/core/src/scheduler/worker/evaluation-worker.ts';
import { ready, webJob } from '../support/cluster-allocations.ts';
import { nodeTokens, registerNode } from '../support/cluster-nodes.ts';
import { type SchedulerService, startSchedulerInMemory } from '../support/scheduler-harness.ts';

type Registered = Awaited<ReturnType<typeof registerNode>>['node'];

/**
 * Blocked evaluations wake only when room is made where they may place (Nomad's `nomad/blocked_evals.go`): a node
 * that becomes schedulable or an allocation that stops holding resources, on a node whose computed class the
 * evaluation did not find ineligible (or any node, when a constraint escaped the classes). Each case counts the
 * worker's runs (the outcomes of a pass) and the blocked evaluation's writes (its ModifyIndex).
 */
describe('blocked evaluations wake on capacity', () => {
  let h: SchedulerService;
  let root: string;
  let writer: string;
  let worker: EvaluationWorker;
  const submit = async (job: Record<string, unknown>) => {
    const out = await h.call('PUT', '/v1/jobs', { token: root, body: { Job: job } });
    expect(out.status).toBe(200);
    return out.body.EvalID as string;
  };
  const node = async (overrides: Record<string, unknown> = {}): Promise<Registered> => {
    const { node } = await registerNode(h, writer, overrides);
    await ready(h, node);
    return node;
  };
  const report = async (target: Registered, allocId: string, ClientStatus: string) => {
    const out = await h.call('PUT', `/v1/client/node/${target.ID}/allocations`, {
      token: target.SecretID,
      body: { Allocs: [{ ID: allocId, ClientStatus }] },
    });
    expect(out.status).toBe(200);
  };
  const blockedOf = async (job: string): Promise<Evaluation> => {
    const found = (await h.scheduler.evaluations.ofJob('default', job)).filter((e) => e.Status === 'blocked');
    expect(found).toHaveLength(1);
    return found[0] as Evaluation;
  };
  const sized = (id: string, cpu: number, extra: Record<string, unknown> = {}) =>
    webJob(id, {
      TaskGroups: [
        {
          Name: 'web',
          Count: 1,
          Tasks: [{ Name: 'server', Driver: 'raw_exec', Config: { command: 'true' }, Resources: { CPU: cpu } }],
        },
      ],
      ...extra,
    });
  // biome-ignore lint/suspicious/noTemplateCurlyInString: Nomad's interpolation syntax
  const onlyClass = (nodeClass: string) => [{ LTarget: '${node.class}', RTarget: nodeClass, Operand: '=' }];

  beforeAll(async () => {
    h = await startSchedulerInMemory();
    ({ root, writer } = await nodeTokens(h));
    worker = new EvaluationWorker(h.scheduler);
  });
  afterAll(() => h.close());

  it('an allocation turning running frees nothing: the blocked evaluation is not run; one completing wakes it', async () => {
    const small = await node({ NodeClass: 'small' });
    const filler = await submit(sized('filler', 3000, { Constraints: onlyClass('small') }));
    expect((await worker.runDue()).get(filler)).toBe('complete');
    const [fillerAlloc] = await h.scheduler.allocations.ofJob('default', 'filler');
    const big = await submit(sized('big', 2000, { Constraints: onlyClass('small') }));
    expect((await worker.runDue()).get(big)).toBe('blocked');
    const blocked = await blockedOf('big');
    const smallClass = (await h.scheduler.nodes.get(small.ID))?.ComputedClass as string;
    expect(blocked.ClassEligibility).toEqual({ [smallClass]: true });

    // Running: the node holds as much as before. The pass runs nothing and writes nothing to the blocked evaluation.
    await report(small, fillerAlloc?.ID as string, 'running');
    expect((await worker.runDue()).size).toBe(0);
    expect((await h.scheduler.evaluations.get(blocked.ID))?.ModifyIndex).toBe(blocked.ModifyIndex);

    // Complete: its 3000 MHz are free; the blocked evaluation runs once and places.
    await report(small, fillerAlloc?.ID as string, 'complete');
    expect(await worker.runDue()).toEqual(new Map([[blocked.ID, 'complete']]));
    expect((await h.scheduler.allocations.ofJob('default', 'big')).map((alloc) => alloc.NodeID)).toEqual([small.ID]);
    expect((await worker.runDue()).size).toBe(0);
  });

  it('a plan that stops an allocation makes no room yet: its client reporting it complete wakes the blocked evaluation', async () => {
    const node2 = await node({ NodeClass: 'stopping' });
    const occupant = await submit(sized('occupant', 3000, { Constraints: onlyClass('stopping') }));
    expect((await worker.runDue()).get(occupant)).toBe('complete');
    const [held] = await h.scheduler.allocations.ofJob('default', 'occupant');
    await report(node2, held?.ID as string, 'running');
    const waiter = await submit(sized('waiter', 2000, { Constraints: onlyClass('stopping') }));
    expect((await worker.runDue()).get(waiter)).toBe('blocked');
    const blocked = await blockedOf('waiter');

    // The occupant is stopped (Nomad's job deregister): the plan marks its allocation stop, the client still runs it.
    const stopped = await h.call('DELETE', '/v1/job/occupant', { token: root });
    expect(stopped.status).toBe(200);
    const before = await h.scheduler.state.currentIndex();
    // The pass runs the deregistration alone: the blocked evaluation is not run on the plan's stop.
    expect(await worker.runDue()).toEqual(new Map([[stopped.body.EvalID, 'complete']]));
    expect((await h.scheduler.allocations.get(held?.ID as string))?.DesiredStatus).toBe('stop');
    expect((await h.scheduler.allocations.get(held?.ID as string))?.ClientStatus).toBe('running');
    expect((await h.scheduler.evaluations.get(blocked.ID))?.ModifyIndex).toBe(blocked.ModifyIndex);
    expect((await h.scheduler.evaluations.get(blocked.ID))?.Status).toBe('blocked');
    // No room is recorded on the node by the stop: the records since the blocked snapshot do not name it.
    const recorded = await new CapacityLog(h.scheduler.state).since(blocked.SnapshotIndex);
    expect(recorded.map((room) => room.nodeId)).not.toContain(node2.ID);
    expect((await worker.runDue()).size).toBe(0);

    // The client reports the stopped allocation complete: the room exists now, recorded by that write, and it wakes.
    await report(node2, held?.ID as string, 'complete');
    const made = await new CapacityLog(h.scheduler.state).since(before);
    expect(made.filter((room) => room.nodeId === node2.ID)).toHaveLength(1);
    expect(await worker.runDue()).toEqual(new Map([[blocked.ID, 'complete']]));
    expect((await h.scheduler.evaluations.get(blocked.ID))?.Status).toBe('complete');
    const placed = await h.scheduler.allocations.ofJob('default', 'waiter');
    expect(placed.map((alloc) => [alloc.NodeID, alloc.DesiredStatus])).toEqual([[node2.ID, 'run']]);
    expect((await worker.runDue()).size).toBe(0);
  });

  it('room on a node of a class the evaluation found ineligible does not wake it; room on an unseen class does', async () => {
    const cpu = await node({ NodeClass: 'cpu' });
    const cpuClass = (await h.scheduler.nodes.get(cpu.ID))?.ComputedClass as string;
    const gpuJob = await submit(sized('gpu-only', 100, { Constraints: onlyClass('gpu') }));
    expect((await worker.runDue()).get(gpuJob)).toBe('blocked');
    const blocked = await blockedOf('gpu-only');
    expect(blocked.ClassEligibility?.[cpuClass]).toBe(false);
    expect(blocked.EscapedComputedClass).toBe(false);

    // Another node of the same class becomes ready: room made, but not where the job may go.
    const cpu2 = await node({ NodeClass: 'cpu' });
    expect((await h.scheduler.nodes.get(cpu2.ID))?.ComputedClass).toBe(cpuClass);
    expect((await new CapacityLog(h.scheduler.state).since(blocked.SnapshotIndex)).map((r) => r.nodeId)).toContain(
      cpu2.ID,
    );
    expect((await worker.runDue()).size).toBe(0);
    expect((await h.scheduler.evaluations.get(blocked.ID))?.ModifyIndex).toBe(blocked.ModifyIndex);

    // A node of the gpu class (never seen by the evaluation) becomes ready: it wakes, and places there.
    const gpu = await node({ NodeClass: 'gpu' });
    expect(await worker.runDue()).toEqual(new Map([[blocked.ID, 'complete']]));
    expect((await h.scheduler.allocations.ofJob('default', 'gpu-only')).map((alloc) => alloc.NodeID)).toEqual([gpu.ID]);
  });

  it('an evaluation whose constraint escaped the classes is woken by room on any node', async () => {
    const escaped = await submit(
      sized('escaped', 100, {
        // biome-ignore lint/suspicious/noTemplateCurlyInString: Nomad's interpolation syntax
        Constraints: [{ LTarget: '${attr.unique.hostname}', RTarget: 'no-such-host', Operand: '=' }],
      }),
    );
    expect((await worker.runDue()).get(escaped)).toBe('blocked');
    const blocked = await blockedOf('escaped');
    expect(blocked.EscapedComputedClass).toBe(true);
    await node({ NodeClass: 'cpu' });
    // Woken, run once, still nothing fits: blocked again, on the new snapshot (a second pass runs nothing).
    expect(await worker.runDue()).toEqual(new Map([[blocked.ID, 'blocked']]));
    const again = await h.scheduler.evaluations.get(blocked.ID);
    expect(again?.Status).toBe('blocked');
    expect(again?.SnapshotIndex).toBeGreaterThan(blocked.SnapshotIndex);
    expect((await worker.runDue()).size).toBe(0);
  });

  it('a node that takes no work makes no room; marked eligible, it does', async () => {
    const spare = await submit(sized('spare', 100, { Constraints: onlyClass('spare') }));
    expect((await worker.runDue()).get(spare)).toBe('blocked');
    const blocked = await blockedOf('spare');
    // The only spare node registers while ineligible: it takes no work, so it makes no room.
    const { node: late } = await registerNode(h, writer, { NodeClass: 'spare' });
    await h.call('PUT', `/v1/node/${late.ID}/eligibility`, { token: root, body: { Eligibility: 'ineligible' } });
    await ready(h, late);
    expect((await worker.runDue()).size).toBe(0);
    await h.call('PUT', `/v1/node/${late.ID}/eligibility`, { token: root, body: { Eligibility: 'eligible' } });
    // (The escaped evaluation of the case before wakes on any room, and runs too.)
    expect((await worker.runDue()).get(blocked.ID)).toBe('complete');
  });

  it('the stream wakes it: a record of room made, delivered to the trigger, runs the woken evaluation at once', async () => {
    const streamed = await submit(sized('streamed', 100, { Constraints: onlyClass('streamed') }));
    expect((await worker.runDue()).get(streamed)).toBe('blocked');
    const blocked = await blockedOf('streamed');
    const index = await h.scheduler.state.currentIndex();
    const fresh = await node({ NodeClass: 'streamed' });
    const [room] = await new CapacityLog(h.scheduler.state).since(index);
    expect(room?.nodeId).toBe(fresh.ID);
    const record = { eventName: 'INSERT' as const, newImage: { pk: 'sched#capacity#00', sk: 'x', nodeId: fresh.ID } };
    const { outcomes } = await runTriggeredEvaluations(h.core, [record]);
    expect(outcomes.get(blocked.ID)).toBe('complete');
    // Delivered again: nothing is blocked any more, nothing runs.
    expect((await runTriggeredEvaluations(h.core, [record])).outcomes.size).toBe(0);
  });
});
