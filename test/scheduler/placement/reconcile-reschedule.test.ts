/**
 * The reconciler and failed allocations: rescheduled by the group's ReschedulePolicy (service: unlimited, exponential
 * 30 s to 1 h; batch: one attempt in 24 h, 5 s constant), now when the delay has passed, else by a follow-up evaluation.
 */
import { describe, expect, it } from 'vitest';
import { counts, finished, makeAlloc, makeJob, makeNode, ns, now, run, second, summary } from './reconcile-fixtures.ts';

const nodes = [makeNode('n1'), makeNode('n2')];
const rescheduled = (id: string) => ({ id, description: 'alloc was rescheduled because it failed' });
const event = (at: number, prev: string, node: string, delaySeconds: number) => ({
  RescheduleTime: ns(at),
  PrevAllocID: prev,
  PrevNodeID: node,
  Delay: delaySeconds * 1e9,
});

describe('reconcile: rescheduling a service job', () => {
  const job = makeJob();
  const running = [makeAlloc(job, 0, 'n1'), makeAlloc(job, 2, 'n2')];
  const failedAt = (ago: number, overrides = {}) =>
    makeAlloc(job, 1, 'n1', { ClientStatus: 'failed', TaskStates: finished(now - ago, true), ...overrides });

  it('waits for the first delay (30 s) with a follow-up evaluation', () => {
    const result = run({ job, allocs: [...running, failedAt(10 * second)], nodes });
    expect(summary(result)).toEqual({ place: [], stop: [], inplace: [] });
    expect(result.followups).toEqual([
      {
        at: now + 20 * second,
        allocIds: ['alloc-web-1'],
        triggeredBy: 'alloc-reschedule',
        statusDescription: 'created for delayed rescheduling',
      },
    ]);
    expect(result.followupAt).toBe(now + 20 * second);
    expect(result.desiredTGUpdates).toEqual({ web: counts({ Ignore: 3, RescheduleLater: 1 }) });
  });

  it('reschedules once the delay has passed: same name, the failed node penalised, the tracker carried', () => {
    const result = run({ job, allocs: [...running, failedAt(31 * second)], nodes });
    expect(summary(result)).toEqual({
      place: [{ name: 'web.web[1]', previous: 'alloc-web-1', replacing: 'reschedule' }],
      stop: [rescheduled('alloc-web-1')],
      inplace: [],
    });
    expect(result.place[0]?.penaltyNodeIds).toEqual(['n1']);
    expect(result.place[0]?.rescheduleTracker).toEqual({
      Events: [event(now, 'alloc-web-1', 'n1', 30)],
      LastReschedule: 'ok',
    });
    expect(result.followups).toEqual([]);
    expect(result.desiredTGUpdates).toEqual({ web: counts({ Place: 1, Stop: 1, Ignore: 2 }) });
  });

  it('doubles the delay after each reschedule and penalises every node of the lineage', () => {
    const tracker = { Events: [event(now - 200 * second, 'alloc-old', 'n2', 30)], LastReschedule: 'ok' as const };
    const waiting = run({ job, allocs: [...running, failedAt(50 * second, { RescheduleTracker: tracker })], nodes });
    expect(waiting.followupAt).toBe(now + 10 * second);
    const result = run({ job, allocs: [...running, failedAt(61 * second, { RescheduleTracker: tracker })], nodes });
    expect(result.place[0]?.penaltyNodeIds).toEqual(['n1', 'n2']);
    expect(result.place[0]?.rescheduleTracker?.Events).toEqual([
      event(now - 200 * second, 'alloc-old', 'n2', 30),
      event(now, 'alloc-web-1', 'n1', 60),
    ]);
  });

  it('caps the delay at an hour, and starts over after a failure longer than that after the last reschedule', () => {
    const long = { Events: [event(now - 50 * 60 * second, 'alloc-old', 'n2', 40 * 60)], LastReschedule: 'ok' as const };
    const capped = run({ job, allocs: [...running, failedAt(10 * second, { RescheduleTracker: long })], nodes });
    expect(capped.followupAt).toBe(now - 10 * second + 3600 * second);
    const old = { Events: [event(now - 3 * 3600 * second, 'alloc-old', 'n2', 40 * 60)], LastReschedule: 'ok' as const };
    const reset = run({ job, allocs: [...running, failedAt(10 * second, { RescheduleTracker: old })], nodes });
    expect(reset.followupAt).toBe(now + 20 * second);
  });

  it('reschedules at once in the follow-up evaluation made for it, and makes no second follow-up', () => {
    const mine = run({ job, allocs: [...running, failedAt(10 * second, { FollowupEvalID: 'eval-1' })], nodes });
    expect(summary(mine).place).toEqual([{ name: 'web.web[1]', previous: 'alloc-web-1', replacing: 'reschedule' }]);
    const other = run({ job, allocs: [...running, failedAt(10 * second, { FollowupEvalID: 'eval-0' })], nodes });
    expect(summary(other)).toEqual({ place: [], stop: [], inplace: [] });
    expect(other.followups).toEqual([]);
    expect(other.desiredTGUpdates).toEqual({ web: counts({ Ignore: 3 }) });
  });

  it('batches follow-ups within 5 s of a batch’s first; a later batch is Nomad’s alloc-failure evaluation', () => {
    const two = makeJob({ TaskGroups: [{ Name: 'web', Count: 3, Tasks: [{ Name: 'server', Driver: 'raw_exec' }] }] });
    const failed = (index: number, ago: number) =>
      makeAlloc(two, index, 'n1', { ClientStatus: 'failed', TaskStates: finished(now - ago, true) });
    const result = run({
      job: two,
      allocs: [failed(0, 10 * second), failed(1, 8 * second), failed(2, 1 * second)],
      nodes,
    });
    expect(result.followups).toEqual([
      {
        at: now + 20 * second,
        allocIds: ['alloc-web-0', 'alloc-web-1'],
        triggeredBy: 'alloc-reschedule',
        statusDescription: 'created for delayed rescheduling',
      },
      { at: now + 29 * second, allocIds: ['alloc-web-2'], triggeredBy: 'alloc-failure', statusDescription: '' },
    ]);
    expect(result.desiredTGUpdates).toEqual({ web: counts({ Ignore: 3, RescheduleLater: 3 }) });
  });

  it('does not count a failed allocation already replaced', () => {
    const replaced = failedAt(3600 * second, { NextAllocation: 'alloc-web-1b' });
    const replacement = makeAlloc(job, 1, 'n2', { ID: 'alloc-web-1b', PreviousAllocation: 'alloc-web-1' });
    const result = run({ job, allocs: [...running, replaced, replacement], nodes });
    expect(summary(result)).toEqual({ place: [], stop: [], inplace: [] });
    expect(result.desiredTGUpdates).toEqual({ web: counts({ Ignore: 3 }) });
  });
});

describe('reconcile: rescheduling a batch job', () => {
  const job = makeJob({ Type: 'batch' });
  const done = makeAlloc(job, 0, 'n1', { ClientStatus: 'complete', TaskStates: finished(now - 100 * second, false) });

  it('reschedules a failure after 5 s, and never replaces a completed allocation', () => {
    const failed = makeAlloc(job, 1, 'n2', { ClientStatus: 'failed', TaskStates: finished(now - 6 * second, true) });
    const result = run({ job, allocs: [done, failed, makeAlloc(job, 2, 'n1')], nodes });
    expect(summary(result)).toEqual({
      place: [{ name: 'web.web[1]', previous: 'alloc-web-1', replacing: 'reschedule' }],
      stop: [rescheduled('alloc-web-1')],
      inplace: [],
    });
    expect(result.place[0]?.rescheduleTracker).toEqual({
      Events: [event(now, 'alloc-web-1', 'n2', 5)],
      LastReschedule: 'ok',
    });
    expect(result.desiredTGUpdates).toEqual({ web: counts({ Place: 1, Stop: 1, Ignore: 2 }) });
  });

  it('leaves failed an allocation whose one attempt in 24 h is spent', () => {
    const tracker = { Events: [event(now - 3600 * second, 'alloc-first', 'n1', 5)], LastReschedule: 'ok' as const };
    const failed = makeAlloc(job, 1, 'n2', {
      ClientStatus: 'failed',
      TaskStates: finished(now - 60 * second, true),
      RescheduleTracker: tracker,
    });
    const result = run({ job, allocs: [done, failed, makeAlloc(job, 2, 'n1')], nodes });
    expect(summary(result)).toEqual({ place: [], stop: [], inplace: [] });
    expect(result.followups).toEqual([]);
    expect(result.desiredTGUpdates).toEqual({ web: counts({ Ignore: 3 }) });
  });

  it('may reschedule again once the earlier attempt is out of the 24 h interval', () => {
    const tracker = {
      Events: [event(now - 25 * 3600 * second, 'alloc-first', 'n1', 5)],
      LastReschedule: 'ok' as const,
    };
    const failed = makeAlloc(job, 1, 'n2', {
      ClientStatus: 'failed',
      TaskStates: finished(now - 60 * second, true),
      RescheduleTracker: tracker,
    });
    const result = run({ job, allocs: [done, failed, makeAlloc(job, 2, 'n1')], nodes });
    expect(summary(result).place).toEqual([{ name: 'web.web[1]', previous: 'alloc-web-1', replacing: 'reschedule' }]);
    expect(result.place[0]?.penaltyNodeIds).toEqual(['n2', 'n1']);
    expect(result.place[0]?.rescheduleTracker?.Events).toEqual([event(now, 'alloc-web-1', 'n2', 5)]);
  });

  it('reschedules a spent allocation when forced (job evaluate -force-reschedule)', () => {
    const tracker = { Events: [event(now - 3600 * second, 'alloc-first', 'n1', 5)], LastReschedule: 'ok' as const };
    const failed = makeAlloc(job, 1, 'n2', {
      ClientStatus: 'failed',
      TaskStates: finished(now - 60 * second, true),
      RescheduleTracker: tracker,
      DesiredTransition: { Migrate: null, Reschedule: null, ForceReschedule: true, NoShutdownDelay: null },
    });
    const result = run({ job, allocs: [done, failed, makeAlloc(job, 2, 'n1')], nodes });
    expect(summary(result)).toEqual({
      place: [{ name: 'web.web[1]', previous: 'alloc-web-1', replacing: 'reschedule' }],
      stop: [rescheduled('alloc-web-1')],
      inplace: [],
    });
  });

  it('reschedules a running allocation stopped with alloc stop -reschedule, stopping it once as migrated', () => {
    const stopped = makeAlloc(job, 1, 'n2', {
      ModifyTime: ns(now - 10 * second),
      DesiredTransition: { Migrate: true, Reschedule: true, ForceReschedule: null, NoShutdownDelay: null },
    });
    const result = run({ job, allocs: [done, stopped, makeAlloc(job, 2, 'n1')], nodes });
    expect(summary(result)).toEqual({
      place: [{ name: 'web.web[1]', previous: 'alloc-web-1', replacing: 'reschedule' }],
      stop: [{ id: 'alloc-web-1', description: 'alloc is being migrated' }],
      inplace: [],
    });
    expect(result.place[0]?.penaltyNodeIds).toEqual([]);
    expect(result.desiredTGUpdates).toEqual({ web: counts({ Place: 1, Migrate: 1, Ignore: 2 }) });
  });
});
