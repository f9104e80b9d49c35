import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ALLOC_NODE_PREFIX } from '../../packages/core/src/scheduler/keys.ts';
import { Allocations } from '../../packages/core/src/scheduler/cluster/allocations/store.ts';
import { ClusterNodes } from '../../packages/core/src/scheduler/cluster/nodes/store.ts';
import { Scheduler } from '../../packages/core/src/scheduler/composition/scheduler-core.ts';
import { readSnapshot } from '../../packages/core/src/scheduler/worker/decide.ts';
import { marksOverflow } from '../../packages/core/src/scheduler/beat-marks.ts';
import { forcedGcKey } from '../../packages/core/src/scheduler/cluster/system/forced-gc.ts';
import { runTriggeredEvaluations } from '../../packages/core/src/scheduler/sweep.ts';
import type { EvaluationWorker } from '../../packages/core/src/scheduler/worker/evaluation-worker.ts';
import { groupJob, managementCall, withReadyNode } from '../support/cluster-allocations.ts';
import { registerNode } from '../support/cluster-nodes.ts';
import { type SchedulerHarness, startScheduler } from '../support/scheduler-harness.ts';

/**
 * The marks on a node's beat (`scheduler/beat-marks.ts`): the allocation mark moves with every write that changes an
 * allocation in the node's partition, the node mark with every write of the node, so a process's snapshot
 * (`worker/decide.ts`), which reads a node or its allocations again only when its mark moved, sees every change: a
 * placement by another process, a client's report, a stop, a garbage collection's delete, a drain, an eligibility
 * change, node events, a registration, a purge, a write that forgot the mark.
 */
const job = (id: string, count: number, type = 'service') =>
  groupJob(id, { count, command: 'true', cpu: 100, memoryMB: 64 }, { Type: type });

type Registered = Awaited<ReturnType<typeof registerNode>>['node'];

describe('the allocation mark: every write of allocations moves it, and a held snapshot sees the change (DynamoDB Local)', () => {
  let h: SchedulerHarness;
  let root: string;
  let node: Registered;
  let worker: EvaluationWorker;
  /** A second process over the same table: its own verified caches. */
  let other: Scheduler;
  const mgmt = managementCall(() => ({ h, root }));
  const beat = async () => (await h.scheduler.nodes.beat(node.ID)) ?? expect.fail('no beat');
  /** What a process's snapshot holds of the node's allocations now (terminal ones too), read as the snapshot reads. */
  const held = async (scheduler: Scheduler) =>
    scheduler.allocations.onNodeForSnapshot(node.ID, (await scheduler.nodes.beat(node.ID))?.allocItemsIndex);
  const submit = async (id: string, count: number, type = 'service') => {
    const out = await mgmt('PUT', '/v1/jobs', { Job: job(id, count, type) });
    expect(out.status).toBe(200);
    expect((await worker.runDue()).get(out.body.EvalID)).toBe('complete');
    return h.scheduler.allocations.ofJob('default', id);
  };

  beforeAll(async () => {
    ({ h, root, node, worker } = await withReadyNode(await startScheduler()));
    other = new Scheduler(h.core);
  });
  afterAll(() => h.close());

  it('a registration starts the mark; plan apply moves it with the version; a warm snapshot then reads no partition', async () => {
    const registered = await beat();
    expect(registered.allocItemsIndex).toBeGreaterThan(0);
    const placed = await submit('first', 2);
    expect(placed).toHaveLength(2);
    const after = await beat();
    expect(after.allocIndex).toBe(placed[0]?.CreateIndex);
    expect(after.allocItemsIndex).toBe(placed[0]?.CreateIndex);

    const first = await readSnapshot(h.scheduler, 'default', 'first');
    expect(first.nodeAllocs.map((alloc) => alloc.ID).sort()).toEqual(placed.map((alloc) => alloc.ID).sort());
    const list = vi.spyOn(h.core.store, 'list');
    try {
      const warm = await readSnapshot(h.scheduler, 'default', 'first');
      expect(warm.nodeAllocs).toEqual(first.nodeAllocs);
      const partitions = list.mock.calls
        .map(([partition]) => partition)
        .filter((pk) => pk.startsWith(ALLOC_NODE_PREFIX));
      expect(partitions).toEqual([]);
    } finally {
      list.mockRestore();
    }
  });

  it('placement by another process: the held snapshot reads the node again and finds the new allocations', async () => {
    const before = await held(other);
    const placed = await submit('second', 1);
    expect((await beat()).allocItemsIndex).toBe(placed[0]?.CreateIndex);
    const now = await held(other);
    expect(now.map((alloc) => alloc.ID).sort()).toEqual([...before, ...placed].map((alloc) => alloc.ID).sort());
    const snapshot = await readSnapshot(other, 'default', 'second');
    expect(snapshot.nodeAllocs.map((alloc) => alloc.ID)).toContain(placed[0]?.ID);
  });

  it("a client's report of complete moves the mark (not the version): the held snapshot drops the allocation", async () => {
    const [alloc] = await h.scheduler.allocations.ofJob('default', 'second');
    if (!alloc) throw new Error('not placed');
    await held(h.scheduler);
    await held(other);
    const version = (await beat()).allocIndex;
    const out = await h.call('PUT', `/v1/client/node/${node.ID}/allocations`, {
      token: node.SecretID,
      body: { Allocs: [{ ID: alloc.ID, ClientStatus: 'complete' }] },
    });
    expect(out.status).toBe(200);
    const stored = await h.scheduler.allocations.get(alloc.ID);
    expect(stored?.ClientStatus).toBe('complete');
    const after = await beat();
    expect(after.allocItemsIndex).toBe(stored?.ModifyIndex);
    expect(after.allocIndex).toBe(version);
    for (const scheduler of [h.scheduler, other]) {
      expect((await held(scheduler)).find((each) => each.ID === alloc.ID)?.ClientStatus).toBe('complete');
      const snapshot = await readSnapshot(scheduler, 'default', 'second');
      expect(snapshot.nodeAllocs.map((each) => each.ID)).not.toContain(alloc.ID);
    }
  });

  it('an allocation stop moves the mark: the held snapshot sees it marked to migrate', async () => {
    const [alloc] = await h.scheduler.allocations.ofJob('default', 'first');
    if (!alloc) throw new Error('not placed');
    await held(other);
    const out = await mgmt('PUT', `/v1/allocation/${alloc.ID}/stop`);
    expect(out.status).toBe(200);
    expect((await beat()).allocItemsIndex).toBe(out.body.Index);
    const seen = (await held(other)).find((each) => each.ID === alloc.ID);
    expect(seen?.DesiredTransition.Migrate).toBe(true);
    expect(seen?.ModifyIndex).toBe(out.body.Index);
  });

  it("a garbage collection's delete moves the mark: the held snapshot no longer has the allocation", async () => {
    const [alloc] = await submit('done', 1, 'batch');
    if (!alloc) throw new Error('not placed');
    const report = await h.call('PUT', `/v1/client/node/${node.ID}/allocations`, {
      token: node.SecretID,
      body: { Allocs: [{ ID: alloc.ID, ClientStatus: 'complete' }] },
    });
    expect(report.status).toBe(200);
    expect((await held(other)).map((each) => each.ID)).toContain(alloc.ID);
    const mark = (await beat()).allocItemsIndex;
    // Forced, as the table stream's consumer runs the request `PUT /v1/system/gc` records.
    expect((await mgmt('PUT', '/v1/system/gc')).status).toBe(200);
    const request = await h.core.store.get(forcedGcKey.pk, forcedGcKey.sk);
    await runTriggeredEvaluations(h.core, [{ eventName: 'INSERT', newImage: request }]);
    const key = Allocations.key(node.ID, alloc.ID);
    expect(await h.core.store.get(key.pk, key.sk)).toBeUndefined();
    expect((await beat()).allocItemsIndex).toBeGreaterThan(mark ?? 0);
    expect((await held(other)).map((each) => each.ID)).not.toContain(alloc.ID);
  });

  it('a write that does not name the mark moves it all the same; one that writes the beat without it is refused', async () => {
    const [alloc] = await h.scheduler.allocations.ofJob('default', 'first');
    if (!alloc) throw new Error('not placed');
    await held(other);
    const changed = { ...alloc, ClientDescription: 'changed by a bare write' };
    const index = await h.scheduler.state.commit(() => ({
      items: [h.scheduler.allocations.updated(changed, alloc)],
      tables: ['allocs'],
    }));
    expect((await beat()).allocItemsIndex).toBe(index);
    expect((await held(other)).find((each) => each.ID === alloc.ID)?.ClientDescription).toBe('changed by a bare write');

    // The beat written in the same transaction without the mark: a bug, refused before anything is written.
    const current = await beat();
    const before = await h.scheduler.state.currentIndex();
    await expect(
      h.scheduler.state.commit(() => ({
        items: [
          h.scheduler.allocations.updated({ ...changed, ClientDescription: 'never written' }, changed),
          { update: ClusterNodes.beatKey(node.ID), change: { set: { modifyIndex: current.modifyIndex } } },
        ],
        tables: ['allocs'],
      })),
    ).rejects.toThrow(/without moving the beat's allocItemsIndex/);
    expect(await h.scheduler.state.currentIndex()).toBe(before);
    expect((await h.scheduler.allocations.get(alloc.ID))?.ClientDescription).toBe('changed by a bare write');
    expect(await beat()).toEqual(current);
  });
  it('a write touching more nodes than its transaction has room for moves the overflow mark: held marks are dropped', async () => {
    const [alloc] = await h.scheduler.allocations.ofJob('default', 'first');
    if (!alloc) throw new Error('not placed');
    await readSnapshot(other, 'default', 'first');
    const mark = (await beat()).allocItemsIndex;
    // The allocation, deletes in the partitions of ten nodes that do not exist, and checks filling the transaction.
    const elsewhere = Array.from({ length: 10 }, () => crypto.randomUUID());
    const changed = { ...alloc, ClientDescription: 'changed by a write too wide for its marks' };
    const index = await h.scheduler.state.commit(() => ({
      items: [
        h.scheduler.allocations.updated(changed, alloc),
        ...elsewhere.map((id) => ({ delete: Allocations.key(id, crypto.randomUUID()) })),
        ...Array.from({ length: 80 }, () => ({
          check: Allocations.key(elsewhere[0] as string, crypto.randomUUID()),
          when: { absent: true as const },
        })),
      ],
      tables: ['allocs'],
    }));
    expect(await marksOverflow(h.core.store)).toBe(index);
    expect((await beat()).allocItemsIndex).toBe(mark);
    const snapshot = await readSnapshot(other, 'default', 'first');
    expect(snapshot.nodeAllocs.find((each) => each.ID === alloc.ID)?.ClientDescription).toBe(
      'changed by a write too wide for its marks',
    );
  });
});

describe('the node mark: every write of a node moves it, and a held snapshot sees the change (DynamoDB Local)', () => {
  let h: SchedulerHarness;
  let root: string;
  let writer: string;
  let node: Registered;
  let other: Scheduler;
  const mgmt = managementCall(() => ({ h, root }));
  const beat = async () => (await h.scheduler.nodes.beat(node.ID)) ?? expect.fail('no beat');
  /** The node as another process's snapshot holds it now. */
  const seen = async (id = node.ID) => (await other.nodes.snapshot()).nodes.find((each) => each.ID === id);

  beforeAll(async () => {
    ({ h, root, writer, node } = await withReadyNode(await startScheduler()));
    other = new Scheduler(h.core);
  });
  afterAll(() => h.close());

  it('a warm snapshot lists the 16 beat shards and reads no node; a registration is seen at once', async () => {
    const first = await other.nodes.snapshot();
    expect(first.nodes.map((each) => each.ID)).toEqual([node.ID]);
    expect(first.beats.get(node.ID)?.nodeItemIndex).toBe((await h.scheduler.nodes.get(node.ID))?.ModifyIndex);
    const list = vi.spyOn(h.core.store, 'list');
    const batchGet = vi.spyOn(h.core.store, 'batchGet');
    try {
      const warm = await other.nodes.snapshot();
      expect(warm.nodes).toEqual(first.nodes);
      expect(list.mock.calls.every(([partition]) => partition.startsWith('sched#node-beat#'))).toBe(true);
      expect(list).toHaveBeenCalledTimes(16);
      expect(batchGet).not.toHaveBeenCalled();
    } finally {
      list.mockRestore();
      batchGet.mockRestore();
    }
    const { node: added } = await registerNode(h, writer);
    expect((await seen(added.ID))?.ID).toBe(added.ID);
  });

  it('a drain, an eligibility change and node events each move the mark, and the held snapshot sees each', async () => {
    await seen();
    const drain = await mgmt('PUT', `/v1/node/${node.ID}/drain`, { DrainSpec: { Deadline: 600e9 } });
    expect(drain.status).toBe(200);
    const drained = await h.scheduler.nodes.get(node.ID);
    expect((await beat()).nodeItemIndex).toBe(drained?.ModifyIndex);
    expect((await seen())?.DrainStrategy?.Deadline).toBe(600e9);

    const undrain = await mgmt('PUT', `/v1/node/${node.ID}/drain`, { DrainSpec: null, MarkEligible: false });
    expect(undrain.status).toBe(200);
    expect((await seen())?.DrainStrategy).toBeNull();
    const eligible = await mgmt('PUT', `/v1/node/${node.ID}/eligibility`, { Eligibility: 'eligible' });
    expect(eligible.status).toBe(200);
    expect((await beat()).nodeItemIndex).toBe((await h.scheduler.nodes.get(node.ID))?.ModifyIndex);
    expect((await seen())?.SchedulingEligibility).toBe('eligible');

    const events = await h.call('PUT', `/v1/client/node/${node.ID}/events`, {
      token: node.SecretID,
      body: { Events: [{ Message: 'disk replaced', Subsystem: 'Cluster' }] },
    });
    expect(events.status).toBe(200);
    expect((await beat()).nodeItemIndex).toBe(events.body.Index);
    expect((await seen())?.Events.map((event) => event.Message)).toContain('disk replaced');
  });

  it('a purge removes the node from the held snapshot; a node item written without the mark moves it all the same', async () => {
    const { node: doomed } = await registerNode(h, writer);
    expect(await seen(doomed.ID)).toBeDefined();
    expect((await mgmt('PUT', `/v1/node/${doomed.ID}/purge`)).status).toBe(200);
    expect(await seen(doomed.ID)).toBeUndefined();

    // A bare commit of the node item: the commit moves the node's mark, and the held snapshot reads it again.
    const stored = (await h.scheduler.nodes.get(node.ID)) ?? expect.fail('no node');
    const index = await h.scheduler.state.commit((index) => ({
      items: [h.scheduler.nodes.nodeWrite({ ...stored, Name: 'renamed by a bare write', ModifyIndex: index }, stored)],
      tables: ['nodes'],
    }));
    expect((await beat()).nodeItemIndex).toBe(index);
    expect((await seen())?.Name).toBe('renamed by a bare write');
  });
});
