/**
 * Attack class: altering a compact allocation item (`cluster/allocations/item-form.ts`) so that its read restores
 * something else than what was written.
 *
 * Attacker: whoever can write the table (storage is untrusted, `docs/security.md`).
 * They try, on a placed allocation's item, keeping its `mac`: adding a field the item leaves out (a `DesiredStatus`
 * of `stop`, a `ClientStatus`, a `DesiredTransition`), adding `ID` so that the item reads as one stored whole,
 * changing the name's index, removing a field so that it reads as its default, and copying the item to another
 * node's partition (the item's `NodeID` and `ID` are its key).
 * They must never reach: a read of the altered allocation by any path (by ID, the node's, the job's, the snapshot's,
 * the public and the client routes): each altered item reads as absent, as any item whose MAC does not verify.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Allocations } from '../../packages/core/src/scheduler/cluster/allocations/store.ts';
import type { Item } from '../../packages/core/src/storage/store.ts';
import { allocationOf, applyPlan, readyNodes, webJob } from '../support/cluster-allocations.ts';
import { nodeTokens, type registerNode } from '../support/cluster-nodes.ts';
import { type SchedulerService, startSchedulerInMemory } from '../support/scheduler-harness.ts';

describe('attack: a table writer alters a compact allocation item', () => {
  let h: SchedulerService;
  let root: string;
  let nodeA: Awaited<ReturnType<typeof registerNode>>['node'];
  let nodeB: Awaited<ReturnType<typeof registerNode>>['node'];

  beforeAll(async () => {
    h = await startSchedulerInMemory();
    const tokens = await nodeTokens(h);
    root = tokens.root;
    [nodeA, nodeB] = await readyNodes(h, tokens.writer, {}, {});
  });
  afterAll(() => h.close());

  const alterations: Array<[string, (item: Item) => Item]> = [
    ['adds DesiredStatus stop', (item) => ({ ...item, DesiredStatus: 'stop' })],
    ['adds ClientStatus running', (item) => ({ ...item, ClientStatus: 'running' })],
    ['adds a DesiredTransition', (item) => ({ ...item, DesiredTransition: { Migrate: true } })],
    ['adds ID, to be read as an item stored whole', (item) => ({ ...item, ID: item.sk, NodeID: nodeA.ID })],
    ['changes the name’s index', (item) => ({ ...item, Name: 7 })],
    [
      'removes NodeName, to be read as its default',
      (item) => {
        const { NodeName: _name, ...rest } = item;
        return rest as Item;
      },
    ],
  ];

  for (const [index, [name, alter]] of alterations.entries())
    it(`${name}: the allocation reads as absent by every path`, async () => {
      const submitted = await h.call('PUT', '/v1/jobs', { token: root, body: { Job: webJob(`tamper${index}`) } });
      const alloc = await allocationOf(h, { id: `tamper${index}`, evalId: submitted.body.EvalID }, nodeA, 1);
      expect((await applyPlan(h, { place: [alloc] })).placed).toHaveLength(1);
      const key = Allocations.key(nodeA.ID, alloc.ID);
      const store = h.scheduler.state.store;
      const item = (await store.get(key.pk, key.sk)) as Item;
      expect(item).not.toHaveProperty('ID');
      expect(await h.scheduler.allocations.get(alloc.ID)).toBeDefined();

      await store.put(alter(item));
      expect(await h.scheduler.allocations.get(alloc.ID)).toBeUndefined();
      expect(await h.scheduler.allocations.onNode(nodeA.ID)).not.toContainEqual(
        expect.objectContaining({ ID: alloc.ID }),
      );
      expect(await h.scheduler.allocations.ofJob('default', `tamper${index}`)).toEqual([]);
      const fresh = new Allocations(h.scheduler.state, h.scheduler.jobs, h.scheduler.evaluations);
      expect((await fresh.onNodeForSnapshot(nodeA.ID)).map((one) => one.ID)).not.toContain(alloc.ID);
      const route = await h.call('GET', `/v1/allocation/${alloc.ID}`, { token: root });
      expect(route.status).toBe(404);
      const client = await h.call('GET', `/v1/client/allocation/${alloc.ID}`, { token: nodeA.SecretID });
      expect(client.status).not.toBe(200);
      expect(JSON.stringify(client.body ?? '')).not.toContain('"DesiredStatus":"stop"');
    });

  it('copied to another node’s partition (its NodeID is its key), it reads on neither node', async () => {
    const submitted = await h.call('PUT', '/v1/jobs', { token: root, body: { Job: webJob('moved') } });
    const alloc = await allocationOf(h, { id: 'moved', evalId: submitted.body.EvalID }, nodeA, 0);
    expect((await applyPlan(h, { place: [alloc] })).placed).toHaveLength(1);
    const store = h.scheduler.state.store;
    const key = Allocations.key(nodeA.ID, alloc.ID);
    const item = (await store.get(key.pk, key.sk)) as Item;
    await store.put({ ...item, pk: Allocations.key(nodeB.ID, alloc.ID).pk });
    expect(await h.scheduler.allocations.onNode(nodeB.ID)).toEqual([]);
    const fresh = new Allocations(h.scheduler.state, h.scheduler.jobs, h.scheduler.evaluations);
    expect(await fresh.onNodeForSnapshot(nodeB.ID)).toEqual([]);
    const foreign = await h.call('GET', `/v1/client/allocation/${alloc.ID}`, { token: nodeB.SecretID });
    expect(foreign.status).toBe(403);
    // The genuine item, in its own node's partition, still reads as written.
    expect((await h.scheduler.allocations.get(alloc.ID))?.NodeID).toBe(nodeA.ID);
  });
});
