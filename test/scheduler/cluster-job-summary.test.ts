import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EvaluationWorker } from '../../packages/core/src/scheduler/worker/evaluation-worker.ts';
import { groupJob, managementCall, ready, reportAllocs, withWorker } from '../support/cluster-allocations.ts';
import { registerNode } from '../support/cluster-nodes.ts';
import { type SchedulerHarness, startScheduler } from '../support/scheduler-harness.ts';

type Registered = Awaited<ReturnType<typeof registerNode>>['node'];

const counts = (overrides: Record<string, number> = {}) => ({
  Queued: 0,
  Complete: 0,
  Failed: 0,
  Running: 0,
  Starting: 0,
  Lost: 0,
  Unknown: 0,
  ...overrides,
});

/** A batch job (no deployment) of `count` allocations of group `web` in `pool`. */
const batchJob = (id: string, pool: string, count: number, memoryMB = 256, overrides: Record<string, unknown> = {}) =>
  groupJob(id, { count, cpu: 100, memoryMB }, { Type: 'batch', NodePool: pool, ...overrides });

describe('job summaries, kept with the writes they count (DynamoDB Local)', () => {
  let h: SchedulerHarness;
  let root: string;
  let writer: string;
  let worker: EvaluationWorker;
  const mgmt = managementCall(() => ({ h, root }));
  /** The summary as the route answers it, checked against the stored item and the jobs list's stub. */
  const summaryOf = async (job: string) => {
    const out = await mgmt('GET', `/v1/job/${encodeURIComponent(job)}/summary`);
    expect(out.status).toBe(200);
    expect(await h.scheduler.jobs.summaries.get('default', job)).toEqual(out.body);
    const stub = (await mgmt('GET', `/v1/jobs?prefix=${encodeURIComponent(job)}`)).body.find(
      (entry: { ID: string }) => entry.ID === job,
    );
    expect(stub.JobSummary).toEqual(out.body);
    return out.body;
  };
  const report = (node: Registered, allocs: Array<{ ID: string; ClientStatus: string }>) =>
    reportAllocs(h, node, allocs);

  beforeAll(async () => {
    ({ h, root, writer, worker } = await withWorker(await startScheduler()));
  });
  afterAll(() => h.close());

  it('counts a job’s allocations through its life: registered, placed, running, complete and failed', async () => {
    const { node } = await registerNode(h, writer, { NodePool: 'life' });
    await ready(h, node);
    const registered = await mgmt('PUT', '/v1/jobs', { Job: batchJob('life', 'life', 3) });
    expect(registered.status).toBe(200);
    expect(await summaryOf('life')).toEqual({
      JobID: 'life',
      Namespace: 'default',
      Summary: { web: counts() },
      Children: { Pending: 0, Running: 0, Dead: 0 },
      CreateIndex: registered.body.Index,
      ModifyIndex: registered.body.Index,
    });

    expect((await worker.runDue()).get(registered.body.EvalID)).toBe('complete');
    const placed = await h.scheduler.allocations.ofJob('default', 'life');
    expect(placed).toHaveLength(3);
    const afterPlacing = await summaryOf('life');
    expect(afterPlacing.Summary).toEqual({ web: counts({ Starting: 3 }) });
    // Written with the placements: the summary's index is the allocations'.
    expect(afterPlacing.ModifyIndex).toBe(Math.max(...placed.map((alloc) => alloc.CreateIndex)));

    const [a, b, c] = placed.map((alloc) => alloc.ID) as [string, string, string];
    const running = await report(node, [
      { ID: a, ClientStatus: 'running' },
      { ID: b, ClientStatus: 'running' },
    ]);
    const afterRunning = await summaryOf('life');
    expect(afterRunning.Summary).toEqual({ web: counts({ Running: 2, Starting: 1 }) });
    expect(afterRunning.ModifyIndex).toBe(running);

    await report(node, [
      { ID: a, ClientStatus: 'complete' },
      { ID: b, ClientStatus: 'failed' },
      { ID: c, ClientStatus: 'running' },
    ]);
    expect((await summaryOf('life')).Summary).toEqual({ web: counts({ Running: 1, Complete: 1, Failed: 1 }) });
    // A report that changes no client status leaves the summary as it is.
    const before = await summaryOf('life');
    await report(node, [{ ID: c, ClientStatus: 'running' }]);
    expect(await summaryOf('life')).toEqual(before);
  });

  it('Queued holds what the evaluation could not place, and goes as the allocation is placed', async () => {
    const { node } = await registerNode(h, writer, { NodePool: 'queue' });
    await ready(h, node);
    const out = await mgmt('PUT', '/v1/jobs', { Job: batchJob('queued', 'queue', 2, 2000) });
    expect((await worker.runDue()).get(out.body.EvalID)).toBe('blocked');
    // One of the two fits the node (4,096 MB, 256 reserved).
    expect((await summaryOf('queued')).Summary).toEqual({ web: counts({ Starting: 1, Queued: 1 }) });

    const { node: more } = await registerNode(h, writer, { NodePool: 'queue' });
    await ready(h, more);
    await worker.runDue();
    expect((await summaryOf('queued')).Summary).toEqual({ web: counts({ Starting: 2 }) });
  });

  it('a parameterized job counts its dispatched children by status', async () => {
    const { node } = await registerNode(h, writer, { NodePool: 'kids' });
    await ready(h, node);
    const parent = batchJob('parent', 'kids', 1, 128, { ParameterizedJob: { Payload: 'optional' } });
    expect((await mgmt('PUT', '/v1/jobs', { Job: parent })).status).toBe(200);
    const none = await summaryOf('parent');
    expect(none.Children).toEqual({ Pending: 0, Running: 0, Dead: 0 });

    const dispatched = await mgmt('POST', '/v1/job/parent/dispatch', {});
    expect(dispatched.status).toBe(200);
    const child = dispatched.body.DispatchedJobID as string;
    expect((await summaryOf('parent')).Children).toEqual({ Pending: 1, Running: 0, Dead: 0 });
    expect((await summaryOf(child)).Summary).toEqual({ web: counts() });

    expect((await worker.runDue()).get(dispatched.body.EvalID)).toBe('complete');
    expect((await mgmt('GET', `/v1/job/${encodeURIComponent(child)}`)).body.Status).toBe('running');
    expect((await summaryOf('parent')).Children).toEqual({ Pending: 0, Running: 1, Dead: 0 });

    // Purged, the child leaves its parent's count and its own summary goes.
    expect((await mgmt('DELETE', `/v1/job/${encodeURIComponent(child)}?purge=true`)).status).toBe(200);
    expect((await summaryOf('parent')).Children).toEqual({ Pending: 0, Running: 0, Dead: 0 });
    expect(await h.scheduler.jobs.summaries.get('default', child)).toBeUndefined();
  });
});
