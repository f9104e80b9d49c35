import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClusterNodes } from '../../packages/core/src/scheduler/cluster/nodes/store.ts';
import { META_PK, NODE_COUNT_SK } from '../../packages/core/src/scheduler/keys.ts';
import { introduction, nodeTokens, registerNode } from '../support/cluster-nodes.ts';
import { type SchedulerService, startSchedulerInMemory } from '../support/scheduler-harness.ts';

describe('cluster nodes: drain, eligibility, purge and evaluate', () => {
  let h: SchedulerService;
  let root: string;
  let reader: string;
  let writer: string;

  beforeAll(async () => {
    h = await startSchedulerInMemory();
    ({ root, reader, writer } = await nodeTokens(h));
  });
  afterAll(() => h.close());

  const read = async (id: string) => (await h.call('GET', `/v1/node/${id}`, { token: reader })).body;
  const eventsSince = async (index: number) =>
    (await h.scheduler.state.eventsAfter(index)).flatMap((batch) => batch.events);

  it('drains a node, updates the drain, refuses eligible while draining, and cancels it, as Nomad', async () => {
    const { node } = await registerNode(h, writer);
    const path = `/v1/node/${node.ID}/drain`;
    const spec = { DrainSpec: { Deadline: 3600e9, IgnoreSystemJobs: false }, Meta: { reason: 'kernel upgrade' } };
    expect((await h.call('PUT', path, { body: spec })).status).toBe(403);
    expect((await h.call('PUT', path, { token: reader, body: spec })).status).toBe(403);
    const unknown = await h.call('PUT', `/v1/node/${crypto.randomUUID()}/drain`, { token: writer, body: spec });
    expect(unknown.status).toBe(404);
    expect(unknown.text).toBe('node not found');

    const before = await h.scheduler.state.currentIndex();
    const drained = await h.call('PUT', path, { token: writer, body: spec });
    expect(drained.status).toBe(200);
    expect(drained.body).toEqual({ EvalIDs: null, EvalCreateIndex: 0, NodeModifyIndex: before + 1, Index: before + 1 });
    expect(drained.headers.get('X-Nomad-Index')).toBe(String(before + 1));
    const accessor = (await h.call('GET', '/v1/acl/token/self', { token: writer })).body.AccessorID;
    const now = h.clock.now();
    const after = await read(node.ID);
    expect(after.DrainStrategy).toEqual({
      Deadline: 3600e9,
      IgnoreSystemJobs: false,
      ForceDeadline: new Date(now + 3600_000).toISOString(),
      StartedAt: new Date(now).toISOString(),
    });
    expect(after.SchedulingEligibility).toBe('ineligible');
    expect(after.Drain).toBe(true);
    expect(after.LastDrain).toMatchObject({
      Status: 'draining',
      AccessorID: accessor,
      Meta: { reason: 'kernel upgrade' },
    });
    expect(after.Events.at(-1)).toMatchObject({ Message: 'Node drain strategy set', Subsystem: 'Drain' });
    const [event] = await eventsSince(before);
    expect(event).toMatchObject({ Topic: 'Node', Type: 'NodeDrain', Key: node.ID, Namespace: '' });
    expect(event?.Payload.Node).toMatchObject({ ID: node.ID, Drain: true, SecretID: '' });
    expect((await h.call('GET', '/v1/nodes?filter=Drain%20%3D%3D%20true', { token: reader })).body).toEqual([
      expect.objectContaining({ ID: node.ID, Drain: true }),
    ]);

    // The same drain again changes nothing: no write, no event.
    const again = await h.call('POST', path, { token: writer, body: spec });
    expect(again.body.NodeModifyIndex).toBe(before + 1);
    expect(await h.scheduler.state.currentIndex()).toBe(before + 1);

    h.clock.advance(60);
    const updated = await h.call('PUT', path, {
      token: writer,
      body: { DrainSpec: { Deadline: 0, IgnoreSystemJobs: true } },
    });
    expect(updated.status).toBe(200);
    const second = await read(node.ID);
    expect(second.DrainStrategy).toMatchObject({
      Deadline: 0,
      IgnoreSystemJobs: true,
      ForceDeadline: '0001-01-01T00:00:00Z',
    });
    expect(second.DrainStrategy.StartedAt).toBe(after.DrainStrategy.StartedAt);
    expect(second.Events.at(-1).Message).toBe('Node drain strategy updated');

    const eligible = await h.call('PUT', `/v1/node/${node.ID}/eligibility`, {
      token: writer,
      body: { Eligibility: 'eligible' },
    });
    expect(eligible.status).toBe(400);
    expect(eligible.text).toBe("can not set node's scheduling eligibility to eligible while it is draining");

    const cancelled = await h.call('PUT', path, { token: writer, body: { DrainSpec: null, MarkEligible: true } });
    expect(cancelled.status).toBe(200);
    const done = await read(node.ID);
    expect(done.DrainStrategy).toBeNull();
    expect(done.Drain).toBe(false);
    expect(done.SchedulingEligibility).toBe('eligible');
    expect(done.LastDrain.Status).toBe('canceled');
    expect(done.Events.at(-1).Message).toBe('Node drain disabled');
  });

  it('refuses a negative drain deadline (but Nomad’s -force, -1s) and a malformed drain, writing nothing', async () => {
    const { node } = await registerNode(h, writer);
    const before = await h.scheduler.state.currentIndex();
    const path = `/v1/node/${node.ID}/drain`;
    for (const [body, problem] of [
      [{ DrainSpec: { Deadline: -5 } }, /invalid DrainSpec.Deadline -5: a deadline may not be negative/],
      [{ DrainSpec: { Deadline: '1h' } }, /Request decode failed: DrainSpec.Deadline/],
      [{ DrainSpec: { Deadline: 1.5 } }, /Request decode failed: DrainSpec.Deadline/],
      [{ Meta: { a: 1 } }, /Request decode failed: Meta.a/],
    ] as const) {
      const out = await h.call('PUT', path, { token: writer, body });
      expect(out.status).toBe(400);
      expect(out.text).toMatch(problem);
    }
    expect(await h.scheduler.state.currentIndex()).toBe(before);
    const forced = await h.call('PUT', path, { token: writer, body: { DrainSpec: { Deadline: -1e9 } } });
    expect(forced.status).toBe(200);
    expect((await read(node.ID)).DrainStrategy).toMatchObject({
      Deadline: -1e9,
      ForceDeadline: '0001-01-01T00:00:00Z',
    });
  });

  it('of concurrent identical drains, one changes the node and publishes the one event', async () => {
    const { node } = await registerNode(h, writer);
    const before = await h.scheduler.state.currentIndex();
    const answers = await Promise.all(
      Array.from({ length: 6 }, () =>
        h.call('PUT', `/v1/node/${node.ID}/drain`, { token: writer, body: { DrainSpec: { Deadline: 600e9 } } }),
      ),
    );
    expect(answers.map((answer) => answer.status)).toEqual(Array(6).fill(200));
    expect(new Set(answers.map((answer) => answer.body.NodeModifyIndex)).size).toBe(1);
    const drains = (await eventsSince(before)).filter((event) => event.Type === 'NodeDrain' && event.Key === node.ID);
    expect(drains).toHaveLength(1);
    expect(
      (await read(node.ID)).Events.filter((event: { Message: string }) => event.Message.startsWith('Node drain')),
    ).toHaveLength(1);
  });

  it('marks a node ineligible and eligible again; the same eligibility again writes nothing', async () => {
    const { node } = await registerNode(h, writer);
    const path = `/v1/node/${node.ID}/eligibility`;
    expect((await h.call('PUT', path, { token: reader, body: { Eligibility: 'ineligible' } })).status).toBe(403);
    const bad = await h.call('PUT', path, { token: writer, body: { Eligibility: 'maybe' } });
    expect(bad.status).toBe(400);
    expect(bad.text).toBe('invalid scheduling eligibility "maybe"');
    const before = await h.scheduler.state.currentIndex();
    const off = await h.call('POST', path, { token: writer, body: { Eligibility: 'ineligible' } });
    expect(off.body).toMatchObject({ NodeModifyIndex: before + 1, Index: before + 1 });
    const node1 = await read(node.ID);
    expect(node1.SchedulingEligibility).toBe('ineligible');
    expect(node1.Events.at(-1)).toMatchObject({
      Message: 'Node marked as ineligible for scheduling',
      Subsystem: 'Cluster',
    });
    expect((await eventsSince(before)).map((event) => event.Type)).toEqual(['NodeEligibility']);
    expect(
      (await h.call('PUT', path, { token: writer, body: { Eligibility: 'ineligible' } })).body.NodeModifyIndex,
    ).toBe(before + 1);
    expect(await h.scheduler.state.currentIndex()).toBe(before + 1);
    await h.call('PUT', path, { token: writer, body: { Eligibility: 'eligible' } });
    expect((await read(node.ID)).Events.at(-1).Message).toBe('Node marked as eligible for scheduling');
  });

  it('purges a node: gone from every read, its secret dead, one NodeDeregistration; it must be introduced again', async () => {
    const { node, identity } = await registerNode(h, writer, { NodePool: 'purge-pool' });
    const count = async () => Number((await h.core.store.get(META_PK, NODE_COUNT_SK))?.value);
    const nodesBefore = await count();
    expect((await h.call('DELETE', '/v1/node/pool/purge-pool', { token: root })).status).toBe(409);
    expect((await h.call('PUT', `/v1/node/${node.ID}/purge`, { token: reader })).status).toBe(403);
    const before = await h.scheduler.state.currentIndex();
    const purged = await h.call('PUT', `/v1/node/${node.ID}/purge`, { token: writer });
    expect(purged.status).toBe(200);
    expect(purged.body).toEqual({ EvalIDs: null, EvalCreateIndex: 0, NodeModifyIndex: before + 1, Index: before + 1 });
    const events = await eventsSince(before);
    expect(events.map((event) => [event.Type, event.Key])).toEqual([['NodeDeregistration', node.ID]]);
    expect((events[0]?.Payload.Node as { SecretID?: string } | undefined)?.SecretID).toBe('');
    expect(await count()).toBe(nodesBefore - 1);
    expect((await h.call('GET', `/v1/node/${node.ID}`, { token: reader })).status).toBe(404);
    const key = ClusterNodes.beatKey(node.ID);
    expect(await h.core.store.get(key.pk, key.sk)).toBeUndefined();
    for (const token of [node.SecretID, identity]) {
      const beat = await h.call('PUT', `/v1/client/node/${node.ID}/status`, { token, body: { Status: 'ready' } });
      expect(beat.status).toBe(404);
      expect(beat.text).toBe('node not found');
    }
    const again = await h.call('POST', '/v1/client/register', { token: node.SecretID, body: { Node: node } });
    expect(again.status).toBe(403);
    const missing = await h.call('PUT', `/v1/node/${node.ID}/purge`, { token: writer });
    expect(missing.status).toBe(404);
    const reintroduced = await h.call('POST', '/v1/client/register', {
      token: await introduction(h, writer, { NodePool: 'purge-pool' }),
      body: { Node: node },
    });
    expect(reintroduced.status).toBe(200);
    expect((await read(node.ID)).Events.map((event: { Message: string }) => event.Message)).toEqual([
      'Node registered',
    ]);
  });

  it('keeps a pool with nodes from being deleted and lists its nodes', async () => {
    const fresh = await startSchedulerInMemory();
    try {
      const tokens = await nodeTokens(fresh);
      const { node } = await registerNode(fresh, tokens.writer, { NodePool: 'busy' });
      const refused = await fresh.call('DELETE', '/v1/node/pool/busy', { token: tokens.root });
      expect(refused.status).toBe(409);
      expect(refused.text).toContain('node pool "busy" has nodes');
      const members = await fresh.call('GET', '/v1/node/pool/busy/nodes', { token: tokens.root });
      expect(members.body.map((stub: { ID: string }) => stub.ID)).toEqual([node.ID]);
      await fresh.call('PUT', `/v1/node/${node.ID}/purge`, { token: tokens.writer });
      expect((await fresh.call('DELETE', '/v1/node/pool/busy', { token: tokens.root })).status).toBe(200);
    } finally {
      await fresh.close();
    }
  });

  it('evaluates a node: node:write, 404 for none, no evaluation until jobs exist', async () => {
    const { node } = await registerNode(h, writer);
    expect((await h.call('PUT', `/v1/node/${node.ID}/evaluate`, { token: reader })).status).toBe(403);
    expect((await h.call('PUT', `/v1/node/${crypto.randomUUID()}/evaluate`, { token: writer })).status).toBe(404);
    const before = await h.scheduler.state.currentIndex();
    const out = await h.call('POST', `/v1/node/${node.ID}/evaluate`, { token: writer });
    expect(out.status).toBe(200);
    expect(out.body).toEqual({
      EvalIDs: null,
      EvalCreateIndex: 0,
      NodeModifyIndex: (await read(node.ID)).ModifyIndex,
      Index: (await read(node.ID)).ModifyIndex,
    });
    expect(await h.scheduler.state.currentIndex()).toBe(before);
  });
});
