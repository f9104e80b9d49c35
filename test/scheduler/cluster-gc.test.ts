import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweepTokens } from '../../packages/core/src/entry-points/expiry-sweeps.ts';
import { Allocations } from '../../packages/core/src/scheduler/cluster/allocations/store.ts';
import { Evaluations } from '../../packages/core/src/scheduler/cluster/evaluations/store.ts';
import { forcedGcKey, forcedGcPending } from '../../packages/core/src/scheduler/cluster/system/forced-gc.ts';
import { GarbageCollector } from '../../packages/core/src/scheduler/cluster/system/gc.ts';
import {
  forcedGcThresholds,
  gcThresholdsFromEnvironment,
  nomadGcThresholds,
} from '../../packages/core/src/scheduler/cluster/system/thresholds.ts';
import {
  GC_LAST_SK,
  GC_PK,
  jobPk,
  jobSummaryPk,
  jobVersionPk,
  META_PK,
  NODE_COUNT_SK,
} from '../../packages/core/src/scheduler/keys.ts';
import type { SchedulerEvent } from '../../packages/core/src/scheduler/state.ts';
import { runTriggeredEvaluations, sweepScheduler } from '../../packages/core/src/scheduler/sweep.ts';
import type { EvaluationWorker } from '../../packages/core/src/scheduler/worker/evaluation-worker.ts';
import { groupJob, managementCall, ready, reportAllocs, withWorker } from '../support/cluster-allocations.ts';
import { nodeTokens, registerNode } from '../support/cluster-nodes.ts';
import { type SchedulerHarness, startScheduler, startSchedulerInMemory } from '../support/scheduler-harness.ts';

type Registered = Awaited<ReturnType<typeof registerNode>>['node'];

const hour = 3600;

/** A batch job of `count` allocations of group `web` in `pool`. */
const batchJob = (id: string, pool: string, count: number, overrides: Record<string, unknown> = {}) =>
  groupJob(id, { count, command: 'true', cpu: 100, memoryMB: 64 }, { Type: 'batch', NodePool: pool, ...overrides });

/** A service job of one allocation of group `web` in pool `gc` that runs `command`. */
const serviceJob = (id: string, command = 'sleep', overrides: Record<string, unknown> = {}) =>
  groupJob(id, { command, cpu: 100, memoryMB: 64 }, { NodePool: 'gc', ...overrides });

describe('garbage collection: jobs, evaluations, allocations (DynamoDB Local)', () => {
  let h: SchedulerHarness;
  let root: string;
  let writer: string;
  let worker: EvaluationWorker;
  const mgmt = managementCall(() => ({ h, root }));
  const report = (node: Registered, allocs: Array<{ ID: string; ClientStatus: string }>) =>
    reportAllocs(h, node, allocs);
  /** A batch job placed on `node` and run to completion: its allocations reported complete, the job dead. */
  const finishedBatch = async (id: string, node: Registered, count = 2, overrides: Record<string, unknown> = {}) => {
    const out = await mgmt('PUT', '/v1/jobs', { Job: batchJob(id, String(node.NodePool), count, overrides) });
    expect(out.status).toBe(200);
    expect((await worker.runDue()).get(out.body.EvalID)).toBe('complete');
    const allocs = await h.scheduler.allocations.ofJob('default', id);
    expect(allocs).toHaveLength(count);
    await report(
      node,
      allocs.map((alloc) => ({ ID: alloc.ID, ClientStatus: 'complete' })),
    );
    expect((await mgmt('GET', `/v1/job/${encodeURIComponent(id)}`)).body.Status).toBe('dead');
    return { evalId: out.body.EvalID as string, allocIds: allocs.map((alloc) => alloc.ID) };
  };
  /** Every stored item of the job and its evaluations and allocations that the collection deletes. */
  const storedItems = async (id: string, evalIds: string[], allocs: Array<{ ID: string; NodeID: string }>) => {
    const store = h.core.store;
    const keys = [
      { pk: jobPk('default'), sk: id },
      { pk: jobSummaryPk('default'), sk: id },
      ...evalIds.map((evalId) => Evaluations.key(evalId)),
      ...allocs.flatMap((alloc) => [
        Allocations.key(alloc.NodeID, alloc.ID),
        Allocations.jobLinkKey('default', id, alloc.ID),
        Allocations.idLinkKey(alloc.ID),
      ]),
    ];
    const found = await Promise.all(keys.map((key) => store.get(key.pk, key.sk)));
    const versions = await store.list(jobVersionPk('default', id));
    return found.filter((item) => item !== undefined).length + versions.length;
  };
  /**
   * `PUT /v1/system/gc`: an empty 200 at once with the request recorded, then (with `run`) the collection run as the
   * table stream's consumer runs it on the request's record, which leaves no request behind.
   */
  const forceGc = async (run = true) => {
    const out = await mgmt('PUT', '/v1/system/gc');
    expect([out.status, out.text]).toEqual([200, '']);
    const request = await h.core.store.get(forcedGcKey.pk, forcedGcKey.sk);
    expect(request).toMatchObject({ request: expect.any(String), requestedAt: h.clock.now() });
    if (run) {
      await runTriggeredEvaluations(h.core, [{ eventName: 'INSERT', newImage: request }]);
      expect(await forcedGcPending(h.core.store)).toBe(false);
    }
    return out;
  };
  const eventsAfter = async (index: number): Promise<SchedulerEvent[]> =>
    (await h.scheduler.state.eventsAfter(index)).flatMap((batch) => batch.events);
  /** A node kept alive through the clock's moves (a heartbeat before each sweep). */
  let node: Registered;

  beforeAll(async () => {
    ({ h, root, writer, worker } = await withWorker(await startScheduler()));
    ({ node } = await registerNode(h, writer, { NodePool: 'gc' }));
    await ready(h, node);
  });
  afterAll(() => h.close());

  it('reaps a finished batch job after job_gc_threshold, not before, with JobBatchDeregistered', {
    timeout: 60_000,
  }, async () => {
    const { evalId } = await finishedBatch('finished', node);
    const allocs = await h.scheduler.allocations.ofJob('default', 'finished');
    const before = await storedItems('finished', [evalId], allocs);
    // The job, its summary, its version, the evaluation and two allocations with two links each.
    expect(before).toBe(10);

    // Six minutes short of the threshold (the sweep collects once every five minutes: `gc-interval.ts`).
    h.clock.advance(4 * hour - 6 * 60);
    await ready(h, node);
    const early = await h.scheduler.state.currentIndex();
    await sweepScheduler(h.core);
    expect((await mgmt('GET', '/v1/job/finished')).status).toBe(200);
    expect(await storedItems('finished', [evalId], allocs)).toBe(10);
    expect((await eventsAfter(early)).filter((event) => event.Type === 'JobBatchDeregistered')).toEqual([]);

    h.clock.advance(6 * 60 + 60);
    await ready(h, node);
    const start = await h.scheduler.state.currentIndex();
    await sweepScheduler(h.core);
    expect((await mgmt('GET', '/v1/job/finished')).status).toBe(404);
    expect((await mgmt('GET', '/v1/job/finished/summary')).status).toBe(404);
    expect((await mgmt('GET', `/v1/evaluation/${evalId}`)).status).toBe(404);
    for (const alloc of allocs) expect((await mgmt('GET', `/v1/allocation/${alloc.ID}`)).status).toBe(404);
    expect(await storedItems('finished', [evalId], allocs)).toBe(0);

    const reaped = (await eventsAfter(start)).filter((event) => event.Type === 'JobBatchDeregistered');
    expect(reaped).toHaveLength(1);
    expect(reaped[0]).toMatchObject({
      Topic: 'Job',
      Key: 'finished',
      Namespace: 'default',
      FilterKeys: null,
      Payload: { Deleted: true, Job: { ID: 'finished', Status: 'dead', Type: 'batch' } },
    });
    // The stream carries it as Nomad's.
    const stream = await h.open(`/v1/event/stream?topic=Job:finished&index=${start}`, root);
    try {
      const frame = await stream.nextEvents();
      expect(frame.Index).toBe(reaped[0]?.Index);
      expect(frame.Events[0]).toMatchObject({ Topic: 'Job', Type: 'JobBatchDeregistered', Key: 'finished' });
    } finally {
      await stream.close();
    }
  });

  it('never reaps a running job, its evaluation or its allocations, even when forced', {
    timeout: 60_000,
  }, async () => {
    const out = await mgmt('PUT', '/v1/jobs', {
      Job: serviceJob('serving'),
    });
    expect(out.status).toBe(200);
    await worker.runDue();
    const [alloc] = await h.scheduler.allocations.ofJob('default', 'serving');
    if (!alloc) throw new Error('not placed');
    await report(node, [{ ID: alloc.ID, ClientStatus: 'running' }]);
    h.clock.advance(48 * hour);
    await ready(h, node);
    await forceGc();
    expect((await mgmt('GET', '/v1/job/serving')).body.Status).toBe('running');
    expect((await mgmt('GET', `/v1/evaluation/${out.body.EvalID}`)).status).toBe(200);
    expect((await mgmt('GET', `/v1/allocation/${alloc.ID}`)).body.ClientStatus).toBe('running');
  });

  it('PUT /v1/system/gc answers at once, and its run reaps what has finished, a stopped service job included', {
    timeout: 60_000,
  }, async () => {
    const batch = await finishedBatch('just-done', node, 1);
    const stopped = await mgmt('PUT', '/v1/jobs', {
      Job: serviceJob('to-stop'),
    });
    await worker.runDue();
    expect(await h.scheduler.deployments.ofJob('default', 'to-stop')).toHaveLength(1);
    const [alloc] = await h.scheduler.allocations.ofJob('default', 'to-stop');
    if (!alloc) throw new Error('not placed');
    await report(node, [{ ID: alloc.ID, ClientStatus: 'running' }]);
    const deregistered = await mgmt('DELETE', '/v1/job/to-stop');
    await worker.runDue();
    await report(node, [{ ID: alloc.ID, ClientStatus: 'complete' }]);
    expect((await mgmt('GET', '/v1/job/to-stop')).body).toMatchObject({ Status: 'dead', Stop: true });

    // Under Nomad's thresholds nothing of the two is old enough.
    await sweepScheduler(h.core, { gc: nomadGcThresholds });
    expect((await mgmt('GET', '/v1/job/just-done')).status).toBe(200);
    expect((await mgmt('GET', '/v1/job/to-stop')).status).toBe(200);

    const start = await h.scheduler.state.currentIndex();
    // Answered before anything is reaped (Nomad enqueues its forced GC): the index is the one before the run.
    const forced = await forceGc(false);
    expect(Number(forced.headers.get('X-Nomad-Index'))).toBe(start);
    for (const id of ['just-done', 'to-stop']) expect((await mgmt('GET', `/v1/job/${id}`)).status).toBe(200);
    // The sweep is the backstop of the stream's consumer: it runs the request, once.
    await sweepScheduler(h.core, { gc: false });
    expect(await forcedGcPending(h.core.store)).toBe(false);
    for (const id of ['just-done', 'to-stop']) expect((await mgmt('GET', `/v1/job/${id}`)).status).toBe(404);
    const toStopAllocs = [alloc];
    expect(await storedItems('to-stop', [stopped.body.EvalID, deregistered.body.EvalID], toStopAllocs)).toBe(0);
    expect(
      await storedItems(
        'just-done',
        [batch.evalId],
        batch.allocIds.map((ID) => ({ ID, NodeID: node.ID })),
      ),
    ).toBe(0);
    const reaped = (await eventsAfter(start)).filter((event) => event.Type === 'JobBatchDeregistered');
    expect(reaped.map((event) => event.Key).sort()).toEqual(['just-done', 'to-stop']);
    // The stopped service job's finished deployment went with it.
    expect(await h.scheduler.deployments.ofJob('default', 'to-stop')).toEqual([]);
    // Nothing else of theirs is left in the lists.
    const allocations = (await mgmt('GET', '/v1/allocations')).body as Array<{ JobID: string }>;
    expect(allocations.filter((entry) => ['just-done', 'to-stop'].includes(entry.JobID))).toEqual([]);
    const evaluations = (await mgmt('GET', '/v1/evaluations')).body as Array<{ JobID: string }>;
    expect(evaluations.filter((entry) => ['just-done', 'to-stop'].includes(entry.JobID))).toEqual([]);
    // Run again: nothing more to do, no write.
    const after = await h.scheduler.state.currentIndex();
    await forceGc();
    expect(await h.scheduler.state.currentIndex()).toBe(after);
  });

  it('keeps a parameterized parent that is not stopped, reaps its finished child and counts it out', {
    timeout: 60_000,
  }, async () => {
    const parent = batchJob('dispatcher', 'gc', 1, { ParameterizedJob: { Payload: 'optional' } });
    expect((await mgmt('PUT', '/v1/jobs', { Job: parent })).status).toBe(200);
    const dispatched = await mgmt('POST', '/v1/job/dispatcher/dispatch', {});
    expect(dispatched.status).toBe(200);
    const child = dispatched.body.DispatchedJobID as string;
    await worker.runDue();
    const [alloc] = await h.scheduler.allocations.ofJob('default', child);
    if (!alloc) throw new Error('not placed');
    await report(node, [{ ID: alloc.ID, ClientStatus: 'complete' }]);
    expect((await mgmt('GET', '/v1/job/dispatcher/summary')).body.Children).toEqual({
      Pending: 0,
      Running: 0,
      Dead: 1,
    });

    await forceGc();
    expect((await mgmt('GET', '/v1/job/dispatcher')).body.Status).toBe('running');
    expect((await mgmt('GET', `/v1/job/${encodeURIComponent(child)}`)).status).toBe(404);
    expect((await mgmt('GET', '/v1/job/dispatcher/summary')).body.Children).toEqual({
      Pending: 0,
      Running: 0,
      Dead: 0,
    });

    // Stopped, the parent goes too (Nomad's jobIsGCable), in the same run as a child that finished meanwhile.
    const another = await mgmt('POST', '/v1/job/dispatcher/dispatch', {});
    const second = another.body.DispatchedJobID as string;
    await worker.runDue();
    const [secondAlloc] = await h.scheduler.allocations.ofJob('default', second);
    if (!secondAlloc) throw new Error('not placed');
    await report(node, [{ ID: secondAlloc.ID, ClientStatus: 'complete' }]);
    expect((await mgmt('DELETE', '/v1/job/dispatcher')).status).toBe(200);
    const start = await h.scheduler.state.currentIndex();
    await forceGc();
    expect((await mgmt('GET', '/v1/job/dispatcher')).status).toBe(404);
    expect((await mgmt('GET', `/v1/job/${encodeURIComponent(second)}`)).status).toBe(404);
    const reaped = (await eventsAfter(start)).filter((event) => event.Type === 'JobBatchDeregistered');
    expect(reaped.map((event) => event.Key).sort()).toEqual(['dispatcher', second].sort());
    expect(await h.scheduler.jobs.summaries.get('default', 'dispatcher')).toBeUndefined();
  });

  it('reaps old terminal evaluations of a job that stays, after eval_gc_threshold', { timeout: 60_000 }, async () => {
    // A service job whose allocation failed and was not replaced (no reschedule) keeps running nothing, and is not
    // dead while it is not stopped: the job stays; its old complete evaluation goes after an hour.
    const out = await mgmt('PUT', '/v1/jobs', {
      Job: serviceJob('flaky'),
    });
    await worker.runDue();
    const [first] = await h.scheduler.allocations.ofJob('default', 'flaky');
    if (!first) throw new Error('not placed');
    await report(node, [{ ID: first.ID, ClientStatus: 'running' }]);
    // Registered again with a change: a new evaluation replaces the allocation (the old one stopped).
    const changed = await mgmt('PUT', '/v1/jobs', {
      Job: serviceJob('flaky', 'sleep2', { Meta: { v: '2' } }),
    });
    await worker.runDue();
    await report(node, [{ ID: first.ID, ClientStatus: 'complete' }]);
    const second = (await h.scheduler.allocations.ofJob('default', 'flaky')).find((alloc) => alloc.ID !== first.ID);
    if (!second) throw new Error('not replaced');
    await report(node, [{ ID: second.ID, ClientStatus: 'running' }]);

    h.clock.advance(30 * 60);
    await ready(h, node);
    await sweepScheduler(h.core);
    expect((await mgmt('GET', `/v1/evaluation/${out.body.EvalID}`)).status).toBe(200);

    h.clock.advance(31 * 60);
    await ready(h, node);
    await sweepScheduler(h.core);
    expect((await mgmt('GET', '/v1/job/flaky')).status).toBe(200);
    // The first evaluation's only allocation is terminal and old: both go. The second's allocation runs: both stay.
    expect((await mgmt('GET', `/v1/evaluation/${out.body.EvalID}`)).status).toBe(404);
    expect((await mgmt('GET', `/v1/allocation/${first.ID}`)).status).toBe(404);
    expect(await h.core.store.get(Allocations.idLinkKey(first.ID).pk, first.ID)).toBeUndefined();
    expect((await mgmt('GET', `/v1/evaluation/${changed.body.EvalID}`)).status).toBe(200);
    expect((await mgmt('GET', `/v1/allocation/${second.ID}`)).body.ClientStatus).toBe('running');
  });

  it('a run deletes at most its bound; the next run takes the rest', { timeout: 90_000 }, async () => {
    for (const id of ['bulk-a', 'bulk-b', 'bulk-c']) await finishedBatch(id, node, 1);
    const s = h.scheduler;
    // Each job is its evaluation, its allocation (three items) and nine for itself: 13.
    const bounded = new GarbageCollector(
      s.state,
      s.namespaces,
      s.jobs,
      s.evaluations,
      s.allocations,
      s.deployments,
      s.nodes,
      { maxDeletes: 30 },
    );
    const zero = forcedGcThresholds;
    const first = await bounded.collect(zero);
    expect(first.jobs).toBe(2);
    const statuses = await Promise.all(
      ['bulk-a', 'bulk-b', 'bulk-c'].map(async (id) => (await mgmt('GET', `/v1/job/${id}`)).status),
    );
    expect(statuses.filter((status) => status === 200)).toHaveLength(1);
    const second = await bounded.collect(zero);
    expect(second.jobs).toBe(1);
    for (const id of ['bulk-a', 'bulk-b', 'bulk-c']) expect((await mgmt('GET', `/v1/job/${id}`)).status).toBe(404);
  });

  it('reaps a node down for longer than node_gc_threshold, not before, and publishes nothing for it', {
    timeout: 60_000,
  }, async () => {
    const { node: doomed } = await registerNode(h, writer, { NodePool: 'gc-nodes' });
    await ready(h, doomed);
    const countBefore = Number((await h.core.store.get(META_PK, NODE_COUNT_SK))?.value);
    // Its beats stop; the main node's go on.
    h.clock.advance(60);
    await ready(h, node);
    await sweepScheduler(h.core);
    const down = (await mgmt('GET', `/v1/node/${doomed.ID}`)).body;
    expect(down.Status).toBe('down');

    h.clock.advance(23 * hour);
    await ready(h, node);
    await sweepScheduler(h.core);
    expect((await mgmt('GET', `/v1/node/${doomed.ID}`)).status).toBe(200);

    h.clock.advance(hour + 60);
    await ready(h, node);
    const start = await h.scheduler.state.currentIndex();
    await sweepScheduler(h.core);
    expect((await mgmt('GET', `/v1/node/${doomed.ID}`)).status).toBe(404);
    expect(await h.scheduler.nodes.beat(doomed.ID)).toBeUndefined();
    expect(Number((await h.core.store.get(META_PK, NODE_COUNT_SK))?.value)).toBe(countBefore - 1);
    // Nomad's NodeBatchDeregister is not one of the messages its event stream publishes.
    const mentions = (await eventsAfter(start)).filter((event) => event.Key === doomed.ID);
    expect(mentions).toEqual([]);
    // The node that beats stays.
    expect((await mgmt('GET', `/v1/node/${node.ID}`)).body.Status).toBe('ready');
  });

  it('the sweep collects once every five minutes across processes; the forced run at once', {
    timeout: 60_000,
  }, async () => {
    h.clock.advance(hour);
    await ready(h, node);
    await sweepScheduler(h.core);
    await finishedBatch('between-runs', node, 1);
    // Past every threshold (one second short of the interval): the sweeps of this interval leave it.
    h.clock.advance(5 * 60 - 1);
    await ready(h, node);
    await Promise.all([
      sweepScheduler(h.core, { gc: forcedGcThresholds }),
      sweepScheduler(h.core, { gc: forcedGcThresholds }),
    ]);
    expect((await mgmt('GET', '/v1/job/between-runs')).status).toBe(200);
    // The interval over, one sweep collects it.
    h.clock.advance(1);
    await sweepScheduler(h.core, { gc: forcedGcThresholds });
    expect((await mgmt('GET', '/v1/job/between-runs')).status).toBe(404);
    // A last run claimed in the future (a forged or skewed item) does not stop the collection.
    await finishedBatch('after-forgery', node, 1);
    await h.core.store.put({ pk: GC_PK, sk: GC_LAST_SK, at: h.clock.now() + 365 * 24 * hour * 1000 });
    await sweepScheduler(h.core, { gc: forcedGcThresholds });
    expect((await mgmt('GET', '/v1/job/after-forgery')).status).toBe(404);
  });

  it('concurrent runs reap each job once, with one event each', { timeout: 90_000 }, async () => {
    const ids = ['race-a', 'race-b', 'race-c'];
    for (const id of ids) await finishedBatch(id, node, 2);
    const start = await h.scheduler.state.currentIndex();
    const s = h.scheduler;
    const collector = () =>
      new GarbageCollector(s.state, s.namespaces, s.jobs, s.evaluations, s.allocations, s.deployments, s.nodes);
    await Promise.all([collector().collect(forcedGcThresholds), collector().collect(forcedGcThresholds)]);
    // What a lost race left (a job whose evaluations the other run took first) goes in the next run.
    await collector().collect(forcedGcThresholds);
    for (const id of ids) expect((await mgmt('GET', `/v1/job/${id}`)).status).toBe(404);
    const reaped = (await eventsAfter(start)).filter((event) => event.Type === 'JobBatchDeregistered');
    expect(reaped.map((event) => event.Key).sort()).toEqual(ids);
  });

  it('PUT /v1/system/reconcile/summaries counts a wrong summary again from the allocations', {
    timeout: 60_000,
  }, async () => {
    await finishedBatch('recount', node, 2);
    const right = await h.scheduler.jobs.summaries.get('default', 'recount');
    expect(right?.Summary.web).toMatchObject({ Complete: 2, Starting: 0, Running: 0 });
    await h.core.store.put({
      pk: jobSummaryPk('default'),
      sk: 'recount',
      ...right,
      Summary: { web: { ...right?.Summary.web, Complete: 0, Running: 7 } },
    });
    const reconciled = await mgmt('PUT', '/v1/system/reconcile/summaries');
    expect(reconciled.status).toBe(200);
    expect(reconciled.text).toBe('');
    const index = Number(reconciled.headers.get('X-Nomad-Index'));
    const summary = (await mgmt('GET', '/v1/job/recount/summary')).body;
    expect(summary.Summary.web).toEqual({ ...right?.Summary.web, Complete: 2, Running: 0, Queued: 0 });
    expect(summary.ModifyIndex).toBe(index);
    // Right again: a second reconciliation rewrites nothing.
    const quiet = await h.scheduler.state.currentIndex();
    expect((await mgmt('PUT', '/v1/system/reconcile/summaries')).status).toBe(200);
    expect(await h.scheduler.state.currentIndex()).toBe(quiet);
  });
});

describe('the garbage collection thresholds: operator configuration', () => {
  it('are Nomad’s defaults unless the environment sets a Go duration', () => {
    expect(gcThresholdsFromEnvironment({})).toEqual({
      jobMs: 4 * 3_600_000,
      evalMs: 3_600_000,
      batchEvalMs: 24 * 3_600_000,
      deploymentMs: 3_600_000,
      nodeMs: 24 * 3_600_000,
    });
    expect(
      gcThresholdsFromEnvironment({
        KEYHAVEN_SCHEDULER_JOB_GC_THRESHOLD: '90m',
        KEYHAVEN_SCHEDULER_EVAL_GC_THRESHOLD: '0',
      }),
    ).toMatchObject({ jobMs: 90 * 60_000, evalMs: 0, batchEvalMs: 24 * 3_600_000 });
    expect(() => gcThresholdsFromEnvironment({ KEYHAVEN_SCHEDULER_DEPLOYMENT_GC_THRESHOLD: '2 days' })).toThrow(
      /^KEYHAVEN_SCHEDULER_DEPLOYMENT_GC_THRESHOLD is not a valid duration/,
    );
    expect(() => gcThresholdsFromEnvironment({ KEYHAVEN_SCHEDULER_JOB_GC_THRESHOLD: '-1h' })).toThrow(
      /KEYHAVEN_SCHEDULER_JOB_GC_THRESHOLD must be a non-negative duration/,
    );
  });
});

describe('a threshold setting that is not a duration (in memory)', () => {
  it('turns the collection off, logged naming it; the rest of the sweep runs', async () => {
    const errors: Array<{ message: string; error?: unknown }> = [];
    const h = await startSchedulerInMemory({
      log: { info: () => {}, error: (message, fields) => errors.push({ message, error: fields?.error }) },
    });
    const variable = 'KEYHAVEN_SCHEDULER_JOB_GC_THRESHOLD';
    const before = process.env[variable];
    try {
      const { writer } = await nodeTokens(h);
      const { node: late } = await registerNode(h, writer);
      await ready(h, late);
      process.env[variable] = 'soon';
      h.clock.advance(60);
      await sweepTokens(h.core);
      expect(errors).toEqual([
        {
          message: 'scheduler garbage collection is off: a threshold setting is not a duration',
          error: expect.stringContaining(`${variable} is not a valid duration: "soon"`),
        },
      ]);
      // The heartbeat sweep still ran.
      expect((await h.scheduler.nodes.get(late.ID))?.Status).toBe('down');
    } finally {
      if (before === undefined) delete process.env[variable];
      else process.env[variable] = before;
      await h.close();
    }
  });
});
