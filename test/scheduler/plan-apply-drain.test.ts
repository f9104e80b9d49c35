import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EvaluationWorker } from '../../packages/core/src/scheduler/worker/evaluation-worker.ts';
import { allocationOf, applyPlan, nodeVersions, ready, webJob } from '../support/cluster-allocations.ts';
import { nodeTokens, registerNode } from '../support/cluster-nodes.ts';
import { type SchedulerHarness, startScheduler } from '../support/scheduler-harness.ts';

type Registered = Awaited<ReturnType<typeof registerNode>>['node'];

/**
 * A drain or an eligibility change moves the node's allocation version, the one plan apply's conditional write checks
 * (`cluster/evaluations/plan-apply.ts`): a plan computed before the change does not place onto the node after it.
 * On DynamoDB Local, whose conditional writes are the guard.
 */
describe('plan apply against a drain or an eligibility change written in between (DynamoDB Local)', () => {
  let h: SchedulerHarness;
  let root: string;
  let writer: string;
  const mgmt = (method: string, path: string, body?: unknown) =>
    h.call(method, path, { token: root, ...(body === undefined ? {} : { body }) });
  const node = async (): Promise<Registered> => {
    const { node } = await registerNode(h, writer);
    await ready(h, node);
    return node;
  };
  const submitted = async (id: string) => {
    const out = await mgmt('PUT', '/v1/jobs', { Job: webJob(id) });
    expect(out.status).toBe(200);
    return out.body.EvalID as string;
  };

  beforeAll(async () => {
    h = await startScheduler();
    ({ root, writer } = await nodeTokens(h));
  });
  afterAll(() => h.close());

  it('a drain moves the version: the plan computed before it is rejected for the node, nothing placed there', async () => {
    const target = await node();
    const evalId = await submitted('before-drain');
    const versions = await nodeVersions(h, [target.ID]);
    const alloc = await allocationOf(h, { id: 'before-drain', evalId }, target);
    // The interleaving: the plan is computed, the drain is written, then the plan is applied.
    const drained = await mgmt('PUT', `/v1/node/${target.ID}/drain`, { DrainSpec: { Deadline: 3_600_000_000_000 } });
    expect(drained.status).toBe(200);
    const beat = await h.scheduler.nodes.beat(target.ID);
    expect(beat?.allocIndex).toBe(drained.body.NodeModifyIndex);
    expect(beat?.allocIndex).toBeGreaterThan(versions.get(target.ID) ?? 0);
    const applied = await applyPlan(h, { place: [alloc], nodeVersions: versions });
    expect([...applied.rejectedNodes]).toEqual([target.ID]);
    expect(applied.placed).toEqual([]);
    expect(await h.scheduler.allocations.onNode(target.ID)).toEqual([]);
    // Its node map announces the change once: the agent reads its (empty) map again.
    const map = await h.call('GET', `/v1/client/node/${target.ID}/allocations`, { token: target.SecretID });
    expect(map.body.Allocs).toEqual({});
  });

  it('an eligibility change moves the version: the earlier plan is rejected; the worker places on another node', async () => {
    const target = await node();
    const other = await node();
    const evalId = await submitted('before-ineligible');
    const versions = await nodeVersions(h, [target.ID]);
    const alloc = await allocationOf(h, { id: 'before-ineligible', evalId }, target);
    const marked = await mgmt('PUT', `/v1/node/${target.ID}/eligibility`, { Eligibility: 'ineligible' });
    expect(marked.status).toBe(200);
    const applied = await applyPlan(h, { place: [alloc], nodeVersions: versions });
    expect([...applied.rejectedNodes]).toEqual([target.ID]);
    expect(await h.scheduler.allocations.onNode(target.ID)).toEqual([]);
    // The same change the other way: eligible again also moves the version.
    const before = (await h.scheduler.nodes.beat(target.ID))?.allocIndex ?? 0;
    await mgmt('PUT', `/v1/node/${target.ID}/eligibility`, { Eligibility: 'eligible' });
    expect((await h.scheduler.nodes.beat(target.ID))?.allocIndex).toBeGreaterThan(before);
    await mgmt('PUT', `/v1/node/${target.ID}/eligibility`, { Eligibility: 'ineligible' });
    // The job's own evaluation, run now, sees the node ineligible and places on the other.
    const outcome = await new EvaluationWorker(h.scheduler).runDue();
    expect(outcome.get(evalId)).toBe('complete');
    const placed = await h.scheduler.allocations.ofJob('default', 'before-ineligible');
    expect(placed.map((alloc) => alloc.NodeID)).toEqual([other.ID]);
  });

  it('a drain or eligibility request that changes nothing moves nothing', async () => {
    const target = await node();
    const before = (await h.scheduler.nodes.beat(target.ID))?.allocIndex ?? 0;
    expect((await mgmt('PUT', `/v1/node/${target.ID}/eligibility`, { Eligibility: 'eligible' })).status).toBe(200);
    expect((await mgmt('PUT', `/v1/node/${target.ID}/drain`, { DrainSpec: null })).status).toBe(200);
    expect((await h.scheduler.nodes.beat(target.ID))?.allocIndex ?? 0).toBe(before);
  });
});
