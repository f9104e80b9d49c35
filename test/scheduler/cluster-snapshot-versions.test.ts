import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSnapshot } from '../../packages/core/src/scheduler/worker/decide.ts';
import { EvaluationWorker } from '../../packages/core/src/scheduler/worker/evaluation-worker.ts';
import { groupJob, ready } from '../support/cluster-allocations.ts';
import { nodeTokens, registerNode } from '../support/cluster-nodes.ts';
import { type SchedulerHarness, startScheduler } from '../support/scheduler-harness.ts';

/** A job of `count` allocations of 1,500 MHz and 256 MB in group `web` (the test node offers 3,900 MHz). */
const cpuJob = (id: string, count: number) => groupJob(id, { count, cpu: 1500 });

describe("an evaluation's snapshot reads allocations only of nodes whose allocation version is above 0 (DynamoDB Local)", () => {
  let h: SchedulerHarness;
  let root: string;
  let writer: string;
  const mgmt = (method: string, path: string, body?: unknown) =>
    h.call(method, path, { token: root, ...(body === undefined ? {} : { body }) });

  beforeAll(async () => {
    h = await startScheduler();
    ({ root, writer } = await nodeTokens(h));
  });
  afterAll(() => h.close());

  it('a node registered again after a purge, with allocations left in its partition, starts above version 0: no over-commit', async () => {
    const { node } = await registerNode(h, writer);
    await ready(h, node);
    const idle = (await registerNode(h, writer, { NodePool: 'spare' })).node;
    const worker = new EvaluationWorker(h.scheduler);
    const first = await mgmt('PUT', '/v1/jobs', { Job: cpuJob('first', 2) });
    expect(await worker.runDue()).toEqual(new Map([[first.body.EvalID, 'complete']]));
    const placed = await h.scheduler.allocations.onNode(node.ID);
    expect(placed).toHaveLength(2);

    // Purged (its beat deleted), then registered again with the same ID and secret: its allocations are still there.
    expect((await mgmt('PUT', `/v1/node/${node.ID}/purge`)).status).toBe(200);
    expect(await h.scheduler.nodes.beat(node.ID)).toBeUndefined();
    const again = await registerNode(h, writer, { ID: node.ID, SecretID: node.SecretID, Name: node.Name });
    await ready(h, node);
    const beat = await h.scheduler.nodes.beat(node.ID);
    expect(beat?.allocIndex).toBe(again.answer.Index);
    expect(again.answer.AllocIndex).toBe(again.answer.Index);
    expect(beat?.allocIndex).toBeGreaterThan(0);
    // A node that never had an allocation stays at version 0.
    expect((await h.scheduler.nodes.beat(idle.ID))?.allocIndex ?? 0).toBe(0);

    // 2 × 1,500 MHz are on the node's 3,900: a third allocation does not fit, and is not placed.
    const second = await mgmt('PUT', '/v1/jobs', { Job: cpuJob('second', 1) });
    const snapshot = await readSnapshot(h.scheduler, 'default', 'second', undefined);
    expect(snapshot.versions.get(node.ID)).toBe(beat?.allocIndex);
    expect(snapshot.nodeAllocs.map((alloc) => alloc.ID).sort()).toEqual(placed.map((alloc) => alloc.ID).sort());

    // (The node's return also evaluates `first`, whose allocations are on it: nothing to change there.)
    expect((await worker.runDue()).get(second.body.EvalID)).toBe('blocked');
    expect(await h.scheduler.allocations.onNode(node.ID)).toHaveLength(2);
    expect((await mgmt('GET', `/v1/evaluation/${second.body.EvalID}`)).body.FailedTGAllocs.web).toBeDefined();
  });
});
