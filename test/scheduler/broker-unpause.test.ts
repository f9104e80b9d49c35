/**
 * Unpausing the evaluation broker takes effect at once (Nomad's leader re-enables its broker and restores the pending
 * evaluations when `PauseEvalBroker` goes back to false): the configuration write that unpauses is on the table's
 * stream, and its consumer (`worker/evaluation-trigger.ts` `brokerUnpaused`, the function both the Lambda and the
 * local stream poller call) runs what waited, with no sweep. On DynamoDB Local, with the stream's records made from
 * the stored items as the stream carries them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Evaluations } from '../../packages/core/src/scheduler/cluster/evaluations/store.ts';
import { SCHEDULER_CONFIG_PK, SCHEDULER_CONFIG_SK } from '../../packages/core/src/scheduler/keys.ts';
import { runTriggeredEvaluations } from '../../packages/core/src/scheduler/sweep.ts';
import { brokerUnpaused, type StreamChange } from '../../packages/core/src/scheduler/worker/evaluation-trigger.ts';
import { managementCall, webJob, withReadyNode } from '../support/cluster-allocations.ts';
import { type SchedulerHarness, startScheduler } from '../support/scheduler-harness.ts';

const configPath = '/v1/operator/scheduler/configuration';

describe('unpausing the evaluation broker (DynamoDB Local)', () => {
  let h: SchedulerHarness;
  let root: string;
  const mgmt = managementCall(() => ({ h, root }));
  const storedConfig = async () =>
    (await h.core.store.get(SCHEDULER_CONFIG_PK, SCHEDULER_CONFIG_SK)) as Record<string, unknown> | undefined;
  /** The configuration written with `PauseEvalBroker`, and the stream's record of that write. */
  const setPaused = async (paused: boolean): Promise<StreamChange> => {
    const old = await storedConfig();
    const out = await mgmt('PUT', configPath, { PauseEvalBroker: paused });
    expect([out.status, out.body.Updated]).toEqual([200, true]);
    const image = (await storedConfig()) as Record<string, unknown>;
    return old ? { eventName: 'MODIFY', oldImage: old, newImage: image } : { eventName: 'INSERT', newImage: image };
  };
  const evaluationRecord = async (id: string): Promise<StreamChange> => {
    const key = Evaluations.key(id);
    return { eventName: 'INSERT', newImage: (await h.core.store.get(key.pk, key.sk)) as Record<string, unknown> };
  };
  const submit = async (id: string) => {
    const out = await mgmt('PUT', '/v1/jobs', { Job: webJob(id) });
    expect(out.status).toBe(200);
    return out.body.EvalID as string;
  };

  beforeAll(async () => {
    ({ h, root } = await withReadyNode(await startScheduler()));
  });
  afterAll(() => h.close());

  it('an evaluation registered under a paused broker stays pending; the unpausing write runs it, with no sweep', async () => {
    const pausing = await setPaused(true);
    // Pausing is no unpausing: its record runs nothing.
    expect(brokerUnpaused(pausing)).toBe(false);
    const first = await submit('held-a');
    const second = await submit('held-b');
    // The stream delivers both evaluations while paused: neither is taken.
    const whilePaused = await runTriggeredEvaluations(h.core, [
      pausing,
      await evaluationRecord(first),
      await evaluationRecord(second),
    ]);
    expect(whilePaused.outcomes).toEqual(
      new Map([
        [first, 'paused'],
        [second, 'paused'],
      ]),
    );
    for (const id of [first, second]) expect((await h.scheduler.evaluations.get(id))?.Status).toBe('pending');
    expect(await h.scheduler.allocations.ofJob('default', 'held-a')).toEqual([]);

    // The write that unpauses: its record alone (no evaluation record, no sweep) runs both.
    const unpausing = await setPaused(false);
    expect(brokerUnpaused(unpausing)).toBe(true);
    const { outcomes, firstFailed } = await runTriggeredEvaluations(h.core, [unpausing]);
    expect(outcomes).toEqual(
      new Map([
        [first, 'complete'],
        [second, 'complete'],
      ]),
    );
    expect(firstFailed).toBeUndefined();
    for (const [id, job] of [
      [first, 'held-a'],
      [second, 'held-b'],
    ] as const) {
      expect(await h.scheduler.evaluations.get(id)).toMatchObject({
        Status: 'complete',
        QueuedAllocations: { web: 0 },
      });
      expect(await h.scheduler.allocations.ofJob('default', job)).toHaveLength(1);
    }
    // The same record delivered again (a retried batch): nothing is left to run, nothing is written.
    const index = await h.scheduler.state.currentIndex();
    expect((await runTriggeredEvaluations(h.core, [unpausing])).outcomes.size).toBe(0);
    expect(await h.scheduler.state.currentIndex()).toBe(index);
  });

  it('a configuration write that leaves the broker paused, or was never paused, runs nothing', async () => {
    await setPaused(true);
    const id = await submit('still-held');
    const stillPaused = await setPaused(true);
    expect(brokerUnpaused(stillPaused)).toBe(false);
    expect((await runTriggeredEvaluations(h.core, [stillPaused])).outcomes.size).toBe(0);
    expect((await h.scheduler.evaluations.get(id))?.Status).toBe('pending');
    // A record that claims an unpausing while the stored configuration still pauses (a forged or stale image): the
    // worker reads the configuration again and takes nothing.
    const forged: StreamChange = {
      eventName: 'MODIFY',
      oldImage: { ...stillPaused.newImage, PauseEvalBroker: true },
      newImage: { ...stillPaused.newImage, PauseEvalBroker: false },
    };
    expect(brokerUnpaused(forged)).toBe(true);
    expect((await runTriggeredEvaluations(h.core, [forged])).outcomes).toEqual(new Map([[id, 'paused']]));
    expect((await h.scheduler.evaluations.get(id))?.Status).toBe('pending');
    const unpausing = await setPaused(false);
    expect((await runTriggeredEvaluations(h.core, [unpausing])).outcomes).toEqual(new Map([[id, 'complete']]));
    // Unpaused to unpaused: not an unpausing.
    expect(brokerUnpaused(await setPaused(false))).toBe(false);
  });
});
