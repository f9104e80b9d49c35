/**
 * Attacks on the node sweep that heartbeats run (`packages/core/src/scheduler/cluster/nodes/sweep-lease.ts`,
 * docs/security.md "Cluster nodes"): a node (or anyone) using the sweep's lease to force sweeps or to put off
 * another node's. Who can reach it: any caller of `PUT /v1/client/node/:id/status`; only a beat the service accepted
 * (the node's own secret or identity) may take the lease, nothing in a request sets its length, and a lease item a
 * table writer forges to last longer than one period is taken over.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { heartbeatSettings, sweepPeriodMs } from '../../packages/core/src/scheduler/cluster/nodes/store.ts';
import { type SweepLease, sweepLeaseKey } from '../../packages/core/src/scheduler/cluster/nodes/sweep-lease.ts';
import { nodeTokens, registerNode } from '../support/cluster-nodes.ts';
import { type SchedulerService, startSchedulerInMemory } from '../support/scheduler-harness.ts';

describe('attacks on the node sweep’s lease', () => {
  let h: SchedulerService;
  let writer: string;

  beforeAll(async () => {
    h = await startSchedulerInMemory();
    ({ writer } = await nodeTokens(h));
  });
  afterAll(() => h.close());

  const beat = (node: { ID: string }, token: string, body: Record<string, unknown> = { Status: 'ready' }) =>
    h.call('PUT', `/v1/client/node/${node.ID}/status`, { token, body });
  const lease = async () => (await h.core.store.get(sweepLeaseKey.pk, sweepLeaseKey.sk)) as SweepLease | undefined;
  const taken = async () => (await lease())?.taken ?? 0;
  const statusOf = async (id: string) => (await h.scheduler.nodes.beat(id))?.status;
  const period = async () => sweepPeriodMs(await h.scheduler.nodes.count());

  it('a node spamming beats runs at most one sweep a period, and its spam neither lengthens the lease nor puts off a silent node’s', async () => {
    const { node: spammer } = await registerNode(h, writer);
    const { node: silent } = await registerNode(h, writer);
    expect((await beat(spammer, spammer.SecretID)).status).toBe(200);
    const silentBeat = await beat(silent, silent.SecretID);
    const silentDeadline = h.clock.now() + silentBeat.body.HeartbeatTTL / 1e6 + heartbeatSettings.graceMs;
    const periodMs = await period();
    const start = await taken();
    const startedAt = h.clock.now();
    let downAt: number | undefined;
    // 40 beats every half second, fields of its own choosing in the body, until the silent node is down.
    for (let step = 0; step < 80 && downAt === undefined; step++) {
      h.clock.advance(0.5);
      const answers = await Promise.all(
        Array.from({ length: 40 }, () =>
          beat(spammer, spammer.SecretID, { Status: 'ready', Until: 0, SweepLease: { until: 1 }, Period: 1 }),
        ),
      );
      expect(answers.every((answer) => answer.status === 200)).toBe(true);
      const held = await lease();
      // The lease is never set from the request, nor beyond one period of the server's clock.
      expect(held?.until ?? 0).toBeLessThanOrEqual(h.clock.now() + periodMs);
      if ((await statusOf(silent.ID)) === 'down') downAt = h.clock.now();
    }
    expect(downAt).toBeDefined();
    expect(downAt as number).toBeGreaterThan(silentDeadline);
    expect(downAt as number).toBeLessThanOrEqual(silentDeadline + periodMs + 500);
    // 40 beats a step, yet about one lease a period.
    const elapsed = (downAt as number) - startedAt;
    expect((await taken()) - start).toBeLessThanOrEqual(Math.ceil(elapsed / periodMs) + 1);
  });

  it('beats the service refuses (another node’s secret, an unknown node, no credential) never take the lease', async () => {
    const { node: victim } = await registerNode(h, writer);
    const { node: attacker } = await registerNode(h, writer);
    expect((await beat(victim, victim.SecretID)).status).toBe(200);
    h.clock.advance((await period()) / 1000 + 1);
    const before = await lease();
    for (let i = 0; i < 20; i++) {
      expect((await beat(victim, attacker.SecretID)).status).toBe(403);
      expect((await beat({ ID: crypto.randomUUID() }, attacker.SecretID)).status).toBe(404);
      expect((await h.call('PUT', `/v1/client/node/${victim.ID}/status`, { body: { Status: 'ready' } })).status).toBe(
        403,
      );
      expect((await beat(attacker, attacker.SecretID, { Status: 'down' })).status).toBe(400);
    }
    expect(await lease()).toEqual(before);
    // The node's own beat is what takes it.
    expect((await beat(attacker, attacker.SecretID)).status).toBe(200);
    expect(await taken()).toBe((before?.taken ?? 0) + 1);
  });

  it('a lease forged to last a day does not put the sweep off: the next accepted beat takes it over', async () => {
    const { node: alive } = await registerNode(h, writer);
    const { node: silent } = await registerNode(h, writer);
    expect((await beat(alive, alive.SecretID)).status).toBe(200);
    expect((await beat(silent, silent.SecretID)).status).toBe(200);
    // `alive` beats (and sweeps) before `silent`'s deadline (TTL in [10 s, 20 s − S), grace 10 s), then past it.
    h.clock.advance(19);
    expect((await beat(alive, alive.SecretID)).status).toBe(200);
    expect(await statusOf(silent.ID)).toBe('ready');
    h.clock.advance(11);
    await h.core.store.put({
      ...sweepLeaseKey,
      until: h.clock.now() + 86_400_000,
      holder: 'a table writer',
      taken: 1_000,
    });
    expect((await beat(alive, alive.SecretID)).status).toBe(200);
    expect(await statusOf(silent.ID)).toBe('down');
    const held = await lease();
    expect(held?.holder).not.toBe('a table writer');
    expect(held?.until).toBe(h.clock.now() + (await period()));
  });
});
