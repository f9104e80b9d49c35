/**
 * Allocation items written before the compact form (`cluster/allocations/item-form.ts`): the allocation whole, `Job`
 * null, as every earlier release wrote it and local tables still hold it. Each read path (by ID, a node's, a job's,
 * every allocation, the snapshot's verified cache, the public and the client routes) answers exactly what it answered
 * from that item, and the same again once a write has re-stored it compact (DynamoDB Local).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Allocations, allocationKind } from '../../packages/core/src/scheduler/cluster/allocations/store.ts';
import { allocationOf, webJob, withReadyNode } from '../support/cluster-allocations.ts';
import type { registerNode } from '../support/cluster-nodes.ts';
import { type SchedulerHarness, startScheduler } from '../support/scheduler-harness.ts';

describe('allocation items stored whole before the compact form', () => {
  let h: SchedulerHarness;
  let root: string;
  let node: Awaited<ReturnType<typeof registerNode>>['node'];

  beforeAll(async () => {
    ({ h, root, node } = await withReadyNode(await startScheduler()));
  });
  afterAll(() => h.close());

  it('read as they are stored, by every path, before and after a write stores them compact', async () => {
    const submitted = await h.call('PUT', '/v1/jobs', { token: root, body: { Job: webJob('legacy') } });
    expect(submitted.status).toBe(200);
    const index = await h.scheduler.state.currentIndex();
    const alloc = await allocationOf(h, { id: 'legacy', evalId: submitted.body.EvalID }, node, 3, {
      CreateIndex: index,
      ModifyIndex: index,
      AllocModifyIndex: index,
      Metrics: {
        NodesEvaluated: 1,
        NodesFiltered: 0,
        NodesInPool: 1,
        NodePool: 'default',
        NodesAvailable: { dc1: 1 },
        ClassFiltered: null,
        ConstraintFiltered: null,
        NodesExhausted: 0,
        ClassExhausted: null,
        DimensionExhausted: null,
        QuotaExhausted: null,
        ResourcesExhausted: null,
        Scores: null,
        ScoreMetaData: [{ NodeID: node.ID, Scores: { binpack: 0.4, 'job-anti-affinity': 0 }, NormScore: 0.2 }],
        AllocationTime: 5000,
        CoalescedFailures: 0,
      },
    });
    const store = h.scheduler.state.store;
    const key = Allocations.key(node.ID, alloc.ID);
    // As every release before the compact form wrote it: the allocation whole, Job null, and its two links.
    await store.transact([
      { put: store.signed(allocationKind, { ...key, ...alloc, Job: null }), when: { absent: true } },
      ...h.scheduler.allocations.created(alloc).slice(1),
    ]);
    expect(await store.get(key.pk, key.sk)).toHaveProperty('ID', alloc.ID);

    const reads = async () => {
      const allocations = h.scheduler.allocations;
      const fresh = new Allocations(h.scheduler.state, h.scheduler.jobs, h.scheduler.evaluations);
      return {
        byId: await allocations.get(alloc.ID),
        onNode: await allocations.onNode(node.ID),
        ofJob: await allocations.ofJob('default', 'legacy'),
        list: (await allocations.list()).filter((one) => one.ID === alloc.ID),
        // A process's first snapshot (a whole read) and its next (through the held, verified items).
        snapshot: [await fresh.onNodeForSnapshot(node.ID), await fresh.onNodeForSnapshot(node.ID)],
        route: (await h.call('GET', `/v1/allocation/${alloc.ID}`, { token: root })).body,
        stubs: (await h.call('GET', '/v1/allocations?resources=true&task_states=true', { token: root })).body,
        client: (await h.call('GET', `/v1/client/allocation/${alloc.ID}`, { token: node.SecretID })).body,
      };
    };
    const before = await reads();
    const expected = JSON.parse(JSON.stringify({ ...alloc, Job: null }));
    expect(before.byId).toStrictEqual(expected);
    expect(before.onNode).toStrictEqual([expected]);
    expect(before.ofJob).toStrictEqual([expected]);
    expect(before.list).toStrictEqual([expected]);
    expect(before.snapshot).toStrictEqual([[expected], [expected]]);
    expect(before.route).toMatchObject({ ID: alloc.ID, Name: 'legacy.web[3]', NodeID: node.ID });
    expect(before.client.Alloc ?? before.client).toMatchObject({ ID: alloc.ID, JobVersion: alloc.JobVersion });

    // A write of the allocation (here its own, unchanged) stores it compact: no ID, no job, no empty fields.
    await store.transact([h.scheduler.allocations.updated(alloc, alloc)]);
    const compact = await store.get(key.pk, key.sk);
    expect(compact).not.toHaveProperty('ID');
    expect(compact).not.toHaveProperty('NodeID');
    expect(compact).not.toHaveProperty('DesiredTransition');
    expect(compact).toHaveProperty('Name', 3);

    const after = await reads();
    expect(after).toStrictEqual(before);
    // The same fields and values; only their order differs: DynamoDB hands a map's attributes back in an order of
    // its own, the compact item's read restores the model's order (Nomad's struct order).
    expect(Object.keys(after.route).slice(0, 5)).toEqual(['ID', 'Namespace', 'EvalID', 'Name', 'NodeID']);
  });
});
