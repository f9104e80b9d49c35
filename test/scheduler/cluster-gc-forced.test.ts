/**
 * `PUT /v1/system/gc` queued as Nomad's `System.GarbageCollect` (`cluster/system/forced-gc.ts`): the request is one
 * item, run in the background under a claim. Requests before a run are one run, a request during a run is one more,
 * two consumers at once run it once, a run whose process died is taken over after its lease (not before), a forged
 * lease does not hold it off, and a run that fails leaves the request for the next. On DynamoDB Local.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  forcedGcKey,
  forcedGcLeaseMs,
  forcedGcPending,
  requestForcedGc,
  runForcedGc,
} from '../../packages/core/src/scheduler/cluster/system/forced-gc.ts';
import { runRequestedGc, sweepScheduler } from '../../packages/core/src/scheduler/sweep.ts';
import { EvaluationWorker } from '../../packages/core/src/scheduler/worker/evaluation-worker.ts';
import { ready, webJob } from '../support/cluster-allocations.ts';
import { nodeTokens, registerNode } from '../support/cluster-nodes.ts';
import { type SchedulerHarness, startScheduler } from '../support/scheduler-harness.ts';

describe('the forced garbage collection, queued and claimed (DynamoDB Local)', () => {
  let h: SchedulerHarness;
  let root: string;
  let node: { ID: string; SecretID: string };
  const store = () => h.core.store;
  const jobStatus = async (id: string) => (await h.call('GET', `/v1/job/${id}`, { token: root })).status;
  /** A batch job run to completion: dead, its allocation complete. */
  const finishedBatch = async (id: string) => {
    const job = webJob(id, {
      Type: 'batch',
      TaskGroups: [
        {
          Name: 'web',
          Count: 1,
          Tasks: [{ Name: 't', Driver: 'raw_exec', Config: { command: 'true' }, Resources: { CPU: 20, MemoryMB: 16 } }],
        },
      ],
    });
    const out = await h.call('PUT', '/v1/jobs', { token: root, body: { Job: job } });
    expect((await new EvaluationWorker(h.scheduler).runDue()).get(out.body.EvalID)).toBe('complete');
    const [alloc] = await h.scheduler.allocations.ofJob('default', id);
    const report = await h.call('PUT', `/v1/client/node/${node.ID}/allocations`, {
      token: node.SecretID,
      body: { Allocs: [{ ID: alloc?.ID, ClientStatus: 'complete' }] },
    });
    expect(report.status).toBe(200);
    expect((await h.call('GET', `/v1/job/${id}`, { token: root })).body.Status).toBe('dead');
  };
  const request = () => store().get(forcedGcKey.pk, forcedGcKey.sk);

  beforeAll(async () => {
    h = await startScheduler();
    const tokens = await nodeTokens(h);
    root = tokens.root;
    ({ node } = (await registerNode(h, tokens.writer)) as unknown as { node: { ID: string; SecretID: string } });
    await ready(h, node);
  });
  afterAll(() => h.close());

  it('requests made before a run are one run; a request made during a run is one more', async () => {
    await finishedBatch('coalesced');
    const answers = await Promise.all([1, 2, 3].map(() => h.call('PUT', '/v1/system/gc', { token: root })));
    expect(answers.map((out) => [out.status, out.text])).toEqual([
      [200, ''],
      [200, ''],
      [200, ''],
    ]);
    // Answered, nothing reaped yet: one request waits.
    expect(await jobStatus('coalesced')).toBe(200);
    expect(await forcedGcPending(store())).toBe(true);
    expect(await runRequestedGc(h.core)).toBe(1);
    expect(await jobStatus('coalesced')).toBe(404);
    expect(await forcedGcPending(store())).toBe(false);
    // Nothing requested: nothing runs.
    expect(await runRequestedGc(h.core)).toBe(0);

    // Requested again while the run is under way: the run may have read the state before it, so it runs again.
    await requestForcedGc(store(), h.clock);
    let calls = 0;
    const runs = await runForcedGc(store(), h.clock, async () => {
      calls++;
      if (calls === 1) await requestForcedGc(store(), h.clock);
    });
    expect([runs, calls]).toEqual([2, 2]);
    expect(await forcedGcPending(store())).toBe(false);
  });

  it('two consumers at once: one claims and runs it, the other finds it held and runs nothing', async () => {
    await requestForcedGc(store(), h.clock);
    let open: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    let calls = 0;
    let claimed: () => void = () => {};
    const running = new Promise<void>((resolve) => {
      claimed = resolve;
    });
    const first = runForcedGc(store(), h.clock, async () => {
      calls++;
      claimed();
      await gate;
    });
    await running;
    expect(await request()).toMatchObject({ holder: expect.any(String), until: h.clock.now() + forcedGcLeaseMs });
    // The sweep (the backstop) and another stream delivery at the same moment.
    expect(await runRequestedGc(h.core)).toBe(0);
    await sweepScheduler(h.core, { gc: false });
    expect(await forcedGcPending(store())).toBe(true);
    open();
    expect(await first).toBe(1);
    expect(calls).toBe(1);
    expect(await forcedGcPending(store())).toBe(false);
  });

  it('a run whose process died is taken over once its lease is past, not before; a forged lease does not hold it', async () => {
    await finishedBatch('orphaned');
    await requestForcedGc(store(), h.clock);
    // A claim as a run makes it, by a process that then died.
    await store().update(forcedGcKey, { set: { holder: 'died', until: h.clock.now() + forcedGcLeaseMs } });
    await sweepScheduler(h.core, { gc: false });
    expect(await jobStatus('orphaned')).toBe(200);
    expect(await forcedGcPending(store())).toBe(true);
    h.clock.advance(forcedGcLeaseMs / 1000);
    await ready(h, node);
    await sweepScheduler(h.core, { gc: false });
    expect(await jobStatus('orphaned')).toBe(404);
    expect(await forcedGcPending(store())).toBe(false);

    // A lease a year ahead (forged, or a skewed clock) is no lease.
    await finishedBatch('forged-lease');
    await requestForcedGc(store(), h.clock);
    await store().update(forcedGcKey, { set: { holder: 'forger', until: h.clock.now() + 365 * 86_400_000 } });
    expect(await runRequestedGc(h.core)).toBe(1);
    expect(await jobStatus('forged-lease')).toBe(404);
  });

  it('a run that fails gives the request back: the next consumer runs it', async () => {
    await requestForcedGc(store(), h.clock);
    await expect(
      runForcedGc(store(), h.clock, async () => {
        throw new Error('the table went away');
      }),
    ).rejects.toThrow('the table went away');
    expect(await request()).toMatchObject({ until: 0 });
    expect(await runRequestedGc(h.core)).toBe(1);
    expect(await forcedGcPending(store())).toBe(false);
  });
});
