import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Evaluations } from '../../packages/core/src/scheduler/cluster/evaluations/store.ts';
import { runTriggeredEvaluations } from '../../packages/core/src/scheduler/sweep.ts';
import { type StreamChange, writtenPending } from '../../packages/core/src/scheduler/worker/evaluation-trigger.ts';
import { evalLeaseKey } from '../../packages/core/src/scheduler/worker/evaluation-worker.ts';
import { ready, webJob } from '../support/cluster-allocations.ts';
import { nodeTokens, registerNode } from '../support/cluster-nodes.ts';
import { type SchedulerService, startSchedulerInMemory } from '../support/scheduler-harness.ts';

/**
 * The evaluation queue fed by the table's stream (`scheduler/worker/evaluation-trigger.ts`): an evaluation written
 * pending runs at once, through the function both the Lambda (`functions/jobs/evaluation-trigger.ts`) and the local
 * stream poller call; a record delivered twice runs its evaluation once.
 */
describe('the evaluation trigger', () => {
  let h: SchedulerService;
  let root: string;
  const submit = async (id: string, count = 1) => {
    const out = await h.call('PUT', '/v1/jobs', { token: root, body: { Job: webJob(id, countOf(count)) } });
    expect(out.status).toBe(200);
    return out.body.EvalID as string;
  };
  /** The stream's record of the evaluation item as it is stored now (an INSERT, or a MODIFY from `old`). */
  const recordOf = async (id: string, old?: Record<string, unknown>): Promise<StreamChange> => {
    const key = Evaluations.key(id);
    const item = (await h.core.store.get(key.pk, key.sk)) as Record<string, unknown>;
    return old ? { eventName: 'MODIFY', oldImage: old, newImage: item } : { eventName: 'INSERT', newImage: item };
  };
  const evaluation = async (id: string) => h.scheduler.evaluations.get(id);
  const allocsOf = (job: string) => h.scheduler.allocations.ofJob('default', job);

  beforeAll(async () => {
    h = await startSchedulerInMemory();
    const tokens = await nodeTokens(h);
    root = tokens.root;
    const { node } = await registerNode(h, tokens.writer);
    await ready(h, node);
  });
  afterAll(() => h.close());

  it('runs an evaluation written pending at once: its allocations placed, the evaluation complete', async () => {
    const id = await submit('triggered', 2);
    const { outcomes, firstFailed } = await runTriggeredEvaluations(h.core, [await recordOf(id)]);
    expect(outcomes).toEqual(new Map([[id, 'complete']]));
    expect(firstFailed).toBeUndefined();
    expect(await evaluation(id)).toMatchObject({ Status: 'complete', QueuedAllocations: { web: 0 } });
    expect(await allocsOf('triggered')).toHaveLength(2);
  });

  it('runs a record delivered twice once: the second delivery is skipped and writes nothing', async () => {
    const id = await submit('twice', 2);
    const record = await recordOf(id);
    expect((await runTriggeredEvaluations(h.core, [record])).outcomes.get(id)).toBe('complete');
    const after = await evaluation(id);
    const index = await h.scheduler.state.currentIndex();
    // The same record again (Lambda's retry of the batch): read again from the table, no longer pending.
    expect((await runTriggeredEvaluations(h.core, [record])).outcomes).toEqual(new Map([[id, 'skipped']]));
    expect(await evaluation(id)).toEqual(after);
    expect(await h.scheduler.state.currentIndex()).toBe(index);
    expect(await allocsOf('twice')).toHaveLength(2);
  });

  it('runs the same record delivered twice at once (two consumers) once: the other finds the job leased, then done', async () => {
    const id = await submit('together', 3);
    const record = await recordOf(id);
    const noWait = { pause: async () => {} };
    const [first, second] = await Promise.all([
      runTriggeredEvaluations(h.core, [record], noWait),
      runTriggeredEvaluations(h.core, [record], noWait),
    ]);
    expect([first.outcomes.get(id), second.outcomes.get(id)].sort()).toEqual(['complete', 'skipped']);
    expect(await allocsOf('together')).toHaveLength(3);
    const runs = (await h.scheduler.evaluations.ofJob('default', 'together')).filter((e) => e.Status === 'complete');
    expect(runs.map((e) => e.ID)).toEqual([id]);
  });

  it('runs the newest of a job written in one batch and cancels the older with it', async () => {
    const older = await submit('batched', 1);
    const newer = await submit('batched', 2);
    const { outcomes } = await runTriggeredEvaluations(h.core, [await recordOf(older), await recordOf(newer)]);
    expect(outcomes.get(newer)).toBe('complete');
    expect(await evaluation(older)).toMatchObject({
      Status: 'canceled',
      StatusDescription: `canceled after more recent eval was processed: ${newer}`,
    });
    expect(await allocsOf('batched')).toHaveLength(2);
  });

  it('tries a job whose lease another worker holds again after a pause, and runs it once the lease is free', async () => {
    const id = await submit('leased', 1);
    const lease = evalLeaseKey('default', 'leased');
    const now = h.clock.now();
    await h.core.store.put({ ...lease, evalId: 'other', holder: 'another worker', until: now + 60_000, attempts: 1 });
    const pauses: number[] = [];
    const { outcomes } = await runTriggeredEvaluations(h.core, [await recordOf(id)], {
      busyPauseMs: 250,
      pause: async (ms) => {
        pauses.push(ms);
        // The other worker finishes while this one waits.
        if (pauses.length === 2) await h.core.store.delete(lease);
      },
    });
    expect(pauses).toEqual([250, 250]);
    expect(outcomes.get(id)).toBe('complete');
    expect(await allocsOf('leased')).toHaveLength(1);
  });

  it('leaves a job still leased after the retries to the sweep: the evaluation stays pending on the queue', async () => {
    const id = await submit('held', 1);
    const lease = evalLeaseKey('default', 'held');
    await h.core.store.put({ ...lease, evalId: 'x', holder: 'another', until: h.clock.now() + 60_000, attempts: 1 });
    let pauses = 0;
    const { outcomes } = await runTriggeredEvaluations(h.core, [await recordOf(id)], {
      busyRetries: 3,
      pause: async () => {
        pauses++;
      },
    });
    expect(pauses).toBe(3);
    expect(outcomes.get(id)).toBe('busy');
    expect(await evaluation(id)).toMatchObject({ Status: 'pending' });
    await h.core.store.delete(lease);
  });

  it('does not run a follow-up evaluation before its WaitUntil', async () => {
    const id = await submit('later', 1);
    const stored = (await evaluation(id)) as NonNullable<Awaited<ReturnType<typeof evaluation>>>;
    const waitUntil = new Date(h.clock.now() + 30_000).toISOString();
    await h.scheduler.state.commit(async () => ({
      items: [h.scheduler.evaluations.put({ ...stored, WaitUntil: waitUntil }, stored)],
      tables: ['evals'],
      events: [],
    }));
    expect((await runTriggeredEvaluations(h.core, [await recordOf(id)])).outcomes).toEqual(new Map([[id, 'skipped']]));
    expect(await evaluation(id)).toMatchObject({ Status: 'pending', WaitUntil: waitUntil });
    expect(await allocsOf('later')).toHaveLength(0);
  });

  it('takes only evaluations written pending: inserted, or changed to pending from another status', async () => {
    const image = { pk: 'sched#eval#03', sk: 'e1', Status: 'pending' };
    expect(writtenPending({ eventName: 'INSERT', newImage: image })).toBe('e1');
    expect(writtenPending({ eventName: 'MODIFY', oldImage: { ...image, Status: 'blocked' }, newImage: image })).toBe(
      'e1',
    );
    // Pending before and after (a rewrite that changed something else), a status other than pending, a removal.
    expect(writtenPending({ eventName: 'MODIFY', oldImage: image, newImage: image })).toBeUndefined();
    expect(writtenPending({ eventName: 'INSERT', newImage: { ...image, Status: 'complete' } })).toBeUndefined();
    expect(writtenPending({ eventName: 'REMOVE', oldImage: image })).toBeUndefined();
    // Items of other partitions that carry a `Status`: the evaluation queue and lease partitions, a job, a node.
    for (const pk of ['sched#eval-queue#03', 'sched#eval-lease#01', 'sched#job#02', 'sched#node#04'])
      expect(writtenPending({ eventName: 'INSERT', newImage: { ...image, pk } }), pk).toBeUndefined();
  });
});

/** A job spec's count of its one group. */
function countOf(count: number): Record<string, unknown> {
  return {
    TaskGroups: [
      {
        Name: 'web',
        Count: count,
        Tasks: [
          { Name: 'server', Driver: 'raw_exec', Config: { command: 'true' }, Resources: { CPU: 100, MemoryMB: 64 } },
        ],
      },
    ],
  };
}
