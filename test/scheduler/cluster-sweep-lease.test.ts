/**
 * The node sweep that heartbeats run (`packages/core/src/scheduler/cluster/nodes/sweep-lease.ts`), on DynamoDB Local
 * with the moved clock: a node that stops beating is marked down within its TTL, the grace and one sweep period
 * while the others keep beating, with no minute job; one sweeper at a time across processes; and most beats send
 * nothing for the lease (measured: lease writes against beats).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { heartbeatSettings, sweepPeriodMs } from '../../packages/core/src/scheduler/cluster/nodes/store.ts';
import { type SweepLease, sweepLeaseKey } from '../../packages/core/src/scheduler/cluster/nodes/sweep-lease.ts';
import { Scheduler } from '../../packages/core/src/scheduler/composition/scheduler-core.ts';
import { nodeTokens, registerNode } from '../support/cluster-nodes.ts';
import { type SchedulerHarness, startScheduler } from '../support/scheduler-harness.ts';

describe('the node sweep heartbeats run (DynamoDB Local)', () => {
  let h: SchedulerHarness;
  let writer: string;

  beforeAll(async () => {
    h = await startScheduler();
    ({ writer } = await nodeTokens(h));
  });
  afterAll(() => h.close());

  const beat = async (node: { ID: string; SecretID: string }) => {
    const out = await h.call('PUT', `/v1/client/node/${node.ID}/status`, {
      token: node.SecretID,
      body: { Status: 'ready' },
    });
    expect(out.status).toBe(200);
    return out.body as { HeartbeatTTL: number };
  };
  const lease = async () => (await h.core.store.get(sweepLeaseKey.pk, sweepLeaseKey.sk)) as SweepLease | undefined;
  const statusOf = async (id: string) => (await h.scheduler.nodes.beat(id))?.status;

  it('marks a silent node down within TTL + grace + one sweep period while the others beat; most beats write no lease', {
    timeout: 120_000,
  }, async () => {
    const nodes = [];
    for (let i = 0; i < 3; i++) nodes.push((await registerNode(h, writer)).node);
    for (const node of nodes) await beat(node);
    const [silent, ...alive] = nodes as [(typeof nodes)[0], ...typeof nodes];
    // The silent node's last beat, and the TTL it was given.
    const lastBeatAt = h.clock.now();
    const ttlMs = (await beat(silent)).HeartbeatTTL / 1e6;
    const periodMs = sweepPeriodMs(await h.scheduler.nodes.count());
    expect(periodMs).toBe(2_500);
    // The stagger leaves room for the period: a TTL in [base, 2·base − period).
    expect(ttlMs).toBeGreaterThanOrEqual(10_000);
    expect(ttlMs).toBeLessThan(20_000 - periodMs);
    const takenBefore = (await lease())?.taken ?? 0;
    const indexBefore = await h.scheduler.state.currentIndex();

    let downAt: number | undefined;
    let beats = 0;
    for (let step = 0; step < 80 && downAt === undefined; step++) {
      h.clock.advance(0.5);
      for (const node of alive) {
        await beat(node);
        beats++;
      }
      if ((await statusOf(silent.ID)) === 'down') downAt = h.clock.now();
    }
    expect(downAt).toBeDefined();
    const late = (downAt as number) - lastBeatAt;
    // Never before its deadline; at the latest one period (and this loop's step) after it.
    expect(late).toBeGreaterThan(ttlMs + heartbeatSettings.graceMs);
    expect(late).toBeLessThanOrEqual(ttlMs + heartbeatSettings.graceMs + periodMs + 500);
    const node = (await h.call('GET', `/v1/node/${silent.ID}`, { token: writer })).body;
    expect(node.Status).toBe('down');
    expect(node.Events.filter((event: { Message: string }) => event.Message === 'Node heartbeat missed')).toHaveLength(
      1,
    );
    for (const other of alive) expect(await statusOf(other.ID)).toBe('ready');
    // Exactly one write changed anything (the silent node's): the others' beats wrote no index.
    expect(await h.scheduler.state.currentIndex()).toBe(indexBefore + 1);
    // The lease was taken about once a period, not once a beat.
    const taken = ((await lease())?.taken ?? 0) - takenBefore;
    expect(taken).toBeGreaterThanOrEqual(1);
    expect(taken).toBeLessThanOrEqual(Math.ceil(late / periodMs) + 1);
    expect(taken * 4).toBeLessThan(beats);
  });

  it('one sweeper at a time: of processes whose beats land together past the lease, one takes it', {
    timeout: 60_000,
  }, async () => {
    const { node } = await registerNode(h, writer);
    await beat(node);
    h.clock.advance(sweepPeriodMs(await h.scheduler.nodes.count()) / 1000 + 1);
    const before = (await lease())?.taken ?? 0;
    // Four processes (each its own scheduler, as four Lambda instances): their accepted beats reach the lease at once.
    const processes = Array.from({ length: 4 }, () => new Scheduler(h.core));
    await Promise.all(processes.map((process) => process.nodeSweep.sweepIfDue()));
    expect(((await lease())?.taken ?? 0) - before).toBe(1);
    // Each now knows it is held: within the period none sends anything more.
    h.clock.advance(1);
    await Promise.all(processes.map((process) => process.nodeSweep.sweepIfDue()));
    expect(((await lease())?.taken ?? 0) - before).toBe(1);
  });
});
