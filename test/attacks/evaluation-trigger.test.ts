/**
 * Attack class: running scheduler work nobody asked for through the evaluation trigger on the table's stream
 * (`functions/jobs/evaluation-trigger.ts`, `scheduler/worker/evaluation-trigger.ts`).
 *
 * Attackers: someone who can write the table (an evaluation item forged, or a stored one edited back to `pending`),
 * and the stream itself (a record whose image says `pending` while the table says otherwise; a record delivered again).
 * They try: to have the worker run an evaluation again or one that was never submitted.
 * They must never reach: a run (no outcome but `skipped`, the scheduler's index unmoved, no allocation written).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Evaluations } from '../../packages/core/src/scheduler/cluster/evaluations/store.ts';
import type { Item } from '../../packages/core/src/storage/store.ts';
import { runTriggeredEvaluations } from '../../packages/core/src/scheduler/sweep.ts';
import { ready, webJob } from '../support/cluster-allocations.ts';
import { nodeTokens, registerNode } from '../support/cluster-nodes.ts';
import { type SchedulerService, startSchedulerInMemory } from '../support/scheduler-harness.ts';

describe('attack: evaluations run through the stream trigger that nobody submitted', () => {
  let h: SchedulerService;
  let evalId: string;
  let stored: Item;
  const insert = (image: Record<string, unknown>) => ({ eventName: 'INSERT' as const, newImage: image });

  beforeAll(async () => {
    h = await startSchedulerInMemory();
    const { root, writer } = await nodeTokens(h);
    const { node } = await registerNode(h, writer);
    await ready(h, node);
    const out = await h.call('PUT', '/v1/jobs', { token: root, body: { Job: webJob('victim') } });
    evalId = out.body.EvalID;
    const key = Evaluations.key(evalId);
    const record = insert((await h.core.store.get(key.pk, key.sk)) as Record<string, unknown>);
    expect((await runTriggeredEvaluations(h.core, [record])).outcomes.get(evalId)).toBe('complete');
    stored = (await h.core.store.get(key.pk, key.sk)) as Item;
    expect(stored.Status).toBe('complete');
  });
  afterAll(() => h.close());

  /** Delivers `records` and checks that nothing ran: every outcome skipped, the index unmoved, the allocations kept. */
  async function nothingRuns(records: ReturnType<typeof insert>[]) {
    const index = await h.scheduler.state.currentIndex();
    const allocs = await h.scheduler.allocations.ofJob('default', 'victim');
    const { outcomes } = await runTriggeredEvaluations(h.core, records);
    expect([...outcomes.values()].every((outcome) => outcome === 'skipped')).toBe(true);
    expect(await h.scheduler.state.currentIndex()).toBe(index);
    expect(await h.scheduler.allocations.ofJob('default', 'victim')).toEqual(allocs);
  }

  it('a record whose image says pending for an evaluation the table holds complete: skipped', async () => {
    await nothingRuns([insert({ ...stored, Status: 'pending' })]);
  });

  it('the stored evaluation edited back to pending without the keyring: its MAC fails, it reads as absent', async () => {
    const edited = { ...stored, Status: 'pending' };
    await h.core.store.put(edited);
    await nothingRuns([insert(edited)]);
    expect(await h.scheduler.evaluations.get(evalId)).toBeUndefined();
    await h.core.store.put(stored);
  });

  it('an evaluation item forged under a new ID (its MAC copied from another): absent, nothing runs', async () => {
    const id = randomUUID();
    const forged = { ...stored, ...Evaluations.key(id), ID: id, Status: 'pending' };
    await h.core.store.put(forged);
    await nothingRuns([insert(forged)]);
    expect(await h.scheduler.evaluations.get(id)).toBeUndefined();
  });
});
