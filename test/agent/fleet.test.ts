/**
 * The simulated fleet against the scheduler service over HTTP (its node listener, on DynamoDB Local, with a clock the
 * test moves): 100 seeded nodes register and report ready, their beats keep them so, a stopped fleet goes down at
 * the sweep once its deadlines pass, and beats bring it back. The fleet's loop beats each node when its TTL says,
 * by the moved clock: no test sleeps through a TTL.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Fleet } from '../../packages/agent/src/fleet/fleet.ts';
import { ProtocolClient } from '../../packages/agent/src/protocol.ts';
import { beatKind, ClusterNodes } from '../../packages/core/src/scheduler/cluster/nodes/store.ts';
import { schedulerNodeListener } from '../../packages/core/src/scheduler/composition/scheduler-app.ts';
import { sweepScheduler } from '../../packages/core/src/scheduler/sweep.ts';
import { type SchedulerHarness, startScheduler } from '../support/scheduler-harness.ts';

/** Each node's boot is two writes at the scheduler's one index (registration, ready), so they queue: 100 keep it short. */
const count = 100;
let h: SchedulerHarness;
let server: Server;
let client: ProtocolClient;
let root: string;
let fleet: Fleet;

beforeAll(async () => {
  h = await startScheduler();
  root = await h.bootstrap();
  server = createServer(schedulerNodeListener({ core: async () => h.core }));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  client = new ProtocolClient({ servers: [`http://127.0.0.1:${(server.address() as AddressInfo).port}`] });
  const minted = await h.call('PUT', '/v1/acl/identity/client-introduction-token', {
    token: root,
    body: { TTL: '30m' },
  });
  expect(minted.status).toBe(200);
  fleet = new Fleet({
    client,
    count,
    seed: 7,
    introToken: minted.body.JWT,
    // One at a time: every registration and status change is a commit at the one scheduler index, and DynamoDB
    // Local makes concurrent transactions on one item wait for its lock (seconds) where DynamoDB cancels them.
    concurrency: 1,
    now: () => h.clock.now(),
  });
});

afterAll(async () => {
  await fleet?.stop();
  client?.close();
  server?.close();
  await h?.close();
});

// biome-ignore lint/suspicious/noExplicitAny: node stubs as the service lists them
const listed = async (): Promise<any[]> => (await h.call('GET', '/v1/nodes', { token: root })).body;
const byStatus = (stubs: Array<{ Status: string }>) => {
  const counts: Record<string, number> = {};
  for (const stub of stubs) counts[stub.Status] = (counts[stub.Status] ?? 0) + 1;
  return counts;
};

describe('a simulated fleet of 100 nodes', () => {
  it('registers every node, each with its seeded attributes, and reports them ready', {
    timeout: 300_000,
  }, async () => {
    await fleet.registerAll();
    expect([...fleet.stats.failures]).toEqual([]);
    expect(fleet.statusCounts()).toEqual({ unregistered: 0, initializing: 0, ready: count });
    const stubs = await listed();
    expect(stubs).toHaveLength(count);
    expect(byStatus(stubs)).toEqual({ ready: count });
    expect(new Set(stubs.map((stub) => stub.ID))).toEqual(new Set(fleet.ids));
    const seeded = fleet.node(17);
    const stored = await h.call('GET', `/v1/node/${seeded.ID}`, { token: root });
    expect(stored.body).toMatchObject({
      Name: seeded.Name,
      Datacenter: seeded.Datacenter,
      NodeClass: seeded.NodeClass,
      Attributes: seeded.Attributes,
      Meta: seeded.Meta,
      SecretID: '',
    });
    expect(stored.body.Events.map((event: { Subsystem: string }) => event.Subsystem)).toContain('Driver');
  });

  it('beats each node when its TTL says (one loop, the moved clock), and the nodes stay ready', {
    timeout: 300_000,
  }, async () => {
    const before = fleet.stats.beats;
    fleet.start();
    // Every TTL handed out is under twice the base (10 s here) less the sweep period: 20 s on, each node is due once,
    // and none is past its deadline (TTL + 10 s of grace), which a beat's sweep would mark down.
    h.clock.advance(20);
    for (let waited = 0; fleet.stats.beats < before + count && waited < 120_000; waited += 50) await sleep(50);
    await fleet.stop();
    expect(fleet.stats.beats).toBeGreaterThanOrEqual(before + count);
    expect([...fleet.stats.failures]).toEqual([]);
    expect(byStatus(await listed())).toEqual({ ready: count });
    // No blocking poll and no read per beat: each node read its map once, at boot, and `AllocIndex` never moved.
    expect(fleet.stats.allocationReads).toBe(count);
  });

  it('reads a node’s allocation map again only when its AllocIndex moved past the map it holds', {
    timeout: 60_000,
  }, async () => {
    const reads = fleet.stats.allocationReads;
    await fleet.beatSome([17, 18]);
    expect(fleet.stats.allocationReads).toBe(reads);
    // What the cluster's second part does when it places on node 17: one write that moves the node's allocation
    // index and the allocations table's index together.
    const key = ClusterNodes.beatKey(fleet.ids[17] as string);
    const moved = await h.scheduler.state.commit(async (index) => {
      const { mac: _mac, ...beat } = (await h.core.store.get(key.pk, key.sk)) as Record<string, unknown>;
      return {
        items: [{ put: h.core.store.signed(beatKind, { ...beat, allocIndex: index } as never) }],
        tables: ['allocs'],
      };
    });
    const beat = await client.updateStatus(fleet.ids[17] as string, fleet.credentialOf(17), 'ready');
    expect(beat.AllocIndex).toBe(moved);
    await fleet.beatSome([17, 18]);
    expect(fleet.stats.allocationReads).toBe(reads + 1);
    // Read at the moved index: the next beats carry the same index and read nothing more; node 18 never moved.
    await fleet.beatSome([17, 18]);
    expect(fleet.stats.allocationReads).toBe(reads + 1);
    const map = await client.allocations(fleet.ids[17] as string, fleet.credentialOf(17), 0, 0);
    expect(map).toEqual({ Allocs: {}, Index: moved });
    expect([...fleet.stats.failures]).toEqual([]);
  });

  it('goes down at the sweep once its beats stop past TTL and grace, and comes back when they resume', {
    timeout: 300_000,
  }, async () => {
    h.clock.advance(2 * 10_000 + 10_000 + 1000);
    await sweepScheduler(h.core);
    expect(byStatus(await listed())).toEqual({ down: count });
    await fleet.beatAll();
    expect(byStatus(await listed())).toEqual({ initializing: count });
    await fleet.beatAll();
    expect(byStatus(await listed())).toEqual({ ready: count });
    const node = await h.call('GET', `/v1/node/${fleet.ids[0]}`, { token: root });
    expect(node.body.Events.map((event: { Message: string }) => event.Message)).toEqual(
      expect.arrayContaining(['Node heartbeat missed', 'Node reregistered by heartbeat']),
    );
  });
});
