import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClusterNodes } from '../../packages/core/src/scheduler/cluster/nodes/store.ts';
import { META_PK, NODE_POOL_PK } from '../../packages/core/src/scheduler/keys.ts';
import { claimsOf, clientNode, introduction, nodeTokens, registerNode } from '../support/cluster-nodes.ts';
import { type SchedulerService, startSchedulerInMemory } from '../support/scheduler-harness.ts';

describe('cluster nodes: introduction, registration, heartbeats and reads', () => {
  let h: SchedulerService;
  let root: string;
  let reader: string;
  let writer: string;

  beforeAll(async () => {
    h = await startSchedulerInMemory();
    ({ root, reader, writer } = await nodeTokens(h));
  });
  afterAll(() => h.close());

  const beatOf = (id: string) => {
    const key = ClusterNodes.beatKey(id);
    return h.core.store.get(key.pk, key.sk);
  };

  it('mints introduction tokens for node:write only, with Nomad’s claims and TTL limits', async () => {
    const path = '/v1/acl/identity/client-introduction-token';
    expect((await h.call('PUT', path, { body: {} })).status).toBe(403);
    expect((await h.call('PUT', path, { token: reader, body: {} })).status).toBe(403);
    const minted = await h.call('POST', path, { token: writer, body: { NodeName: 'web-1', NodePool: 'gpu' } });
    expect(minted.status).toBe(200);
    const claims = claimsOf(minted.body.JWT);
    expect(claims).toMatchObject({
      nomad_node_pool: 'gpu',
      nomad_node_name: 'web-1',
      sub: 'node-introduction:global:gpu:web-1:default',
      aud: 'nomadproject.io',
    });
    expect(Number(claims.exp) - Number(claims.iat)).toBe(300);
    const capped = claimsOf(await introduction(h, writer, { TTL: '2h' }));
    expect(Number(capped.exp) - Number(capped.iat)).toBe(1800);
    expect(capped.nomad_node_pool).toBe('default');
    const nanos = claimsOf(await introduction(h, root, { TTL: 60e9 }));
    expect(Number(nanos.exp) - Number(nanos.iat)).toBe(60);
    for (const [body, problem] of [
      [{ TTL: '-5m' }, /TTL may not be negative/],
      [{ TTL: -1 }, /TTL may not be negative/],
      [{ TTL: 'soon' }, /invalid duration "soon"/],
      [{ NodePool: 'bad pool!' }, /invalid node pool/],
    ] as const) {
      const out = await h.call('PUT', path, { token: writer, body });
      expect(out.status).toBe(400);
      expect(out.text).toMatch(problem);
    }
  });

  it('registers a new node with an introduction token: initializing, its identity, one event, no secret stored', async () => {
    const index = await h.scheduler.state.currentIndex();
    const node = clientNode();
    const token = await introduction(h, writer, { NodeName: node.Name });
    const out = await h.call('POST', '/v1/client/register', { token, body: { Node: { ...node, Status: 'ready' } } });
    expect(out.status).toBe(200);
    expect(out.headers.get('X-Nomad-Index')).toBe(String(index + 1));
    expect(out.body).toMatchObject({
      Index: index + 1,
      NodeModifyIndex: index + 1,
      EvalIDs: [],
      EvalCreateIndex: 0,
      AllocIndex: 0,
    });
    expect(out.body.HeartbeatTTL).toBeGreaterThanOrEqual(10e9);
    expect(out.body.HeartbeatTTL).toBeLessThan(20e9);
    expect(claimsOf(out.body.SignedIdentity)).toMatchObject({
      nomad_node_id: node.ID,
      nomad_node_pool: 'default',
      nomad_node_datacenter: 'dc1',
      sub: `node:global:default:${node.ID}:default`,
    });
    const identityClaims = claimsOf(out.body.SignedIdentity);
    expect(Number(identityClaims.exp) - Number(identityClaims.iat)).toBe(24 * 3600);

    const read = await h.call('GET', `/v1/node/${node.ID}`, { token: reader });
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({
      ID: node.ID,
      SecretID: '',
      Name: node.Name,
      Status: 'initializing',
      SchedulingEligibility: 'eligible',
      NodePool: 'default',
      DrainStrategy: null,
      Drain: false,
      Attributes: node.Attributes,
      CreateIndex: index + 1,
      ModifyIndex: index + 1,
    });
    expect(read.body.Events).toEqual([
      {
        Message: 'Node registered',
        Subsystem: 'Cluster',
        Details: null,
        Timestamp: expect.any(String),
        CreateIndex: index + 1,
      },
    ]);
    expect(read.body.ComputedClass).toMatch(/^v1:\d+$/);

    const [batch] = await h.scheduler.state.eventsAfter(index);
    expect(batch?.events.map((event) => [event.Topic, event.Type, event.Key])).toEqual([
      ['Node', 'NodeRegistration', node.ID],
    ]);
    expect((batch?.events[0]?.Payload.Node as { SecretID?: string } | undefined)?.SecretID).toBe('');
    const everything = JSON.stringify(await h.core.store.scan());
    expect(everything).not.toContain(node.SecretID);
    expect((await beatOf(node.ID))?.status).toBe('initializing');
    expect((await h.core.store.get(META_PK, 'nodes#count'))?.value).toBeGreaterThanOrEqual(1);
  });

  it('creates a missing pool at registration, in the same write, with its own event', async () => {
    const index = await h.scheduler.state.currentIndex();
    const { node } = await registerNode(h, writer, { NodePool: 'gpu-east' });
    const pool = await h.core.store.get(NODE_POOL_PK, 'gpu-east');
    expect(pool).toMatchObject({ Name: 'gpu-east', NodeIdentityTTL: 24 * 3600 * 1e9, CreateIndex: index + 1 });
    const [batch] = await h.scheduler.state.eventsAfter(index);
    expect(batch?.events.map((event) => [event.Topic, event.Type, event.Key])).toEqual([
      ['NodePool', 'NodeRegistration', 'gpu-east'],
      ['Node', 'NodeRegistration', node.ID],
    ]);
    // A second node in the pool creates nothing more.
    const after = await h.scheduler.state.currentIndex();
    await registerNode(h, writer, { NodePool: 'gpu-east' });
    const [next] = await h.scheduler.state.eventsAfter(after);
    expect(next?.events.map((event) => event.Type)).toEqual(['NodeRegistration']);
  });

  it('refuses a registration whose introduction token does not fit, is expired or is missing, writing nothing', async () => {
    const index = await h.scheduler.state.currentIndex();
    const node = clientNode({ NodePool: 'batch' });
    const register = (token: string | undefined) =>
      h.call('POST', '/v1/client/register', { ...(token ? { token } : {}), body: { Node: node } });
    expect((await register(undefined)).status).toBe(403);
    expect((await register(await introduction(h, writer, { NodePool: 'other' }))).status).toBe(403);
    expect(
      (await register(await introduction(h, writer, { NodePool: 'batch', NodeName: 'someone-else' }))).status,
    ).toBe(403);
    const expiring = await introduction(h, writer, { NodePool: 'batch', TTL: '1m' });
    h.clock.advance(61);
    const expired = await register(expiring);
    expect(expired.status).toBe(403);
    expect(expired.text).toBe('Permission denied');
    // A node secret or an ACL token is not an introduction.
    expect((await register(node.SecretID)).status).toBe(403);
    expect((await register(writer)).status).toBe(403);
    expect(await h.scheduler.state.currentIndex()).toBe(index);
    expect((await h.call('GET', `/v1/node/${node.ID}`, { token: reader })).status).toBe(404);
    expect(await h.core.store.get(NODE_POOL_PK, 'batch')).toBeUndefined();
  });

  it('refuses a malformed node or one too large, naming what is wrong, writing nothing', async () => {
    const token = await introduction(h, writer);
    const index = await h.scheduler.state.currentIndex();
    const many = Object.fromEntries(Array.from({ length: 1025 }, (_, i) => [`attr.${i}`, 'x']));
    const cases: Array<[Record<string, unknown> | string, RegExp]> = [
      [{ Node: { ...clientNode(), ID: '' } }, /^missing node ID for client registration$/],
      [{ Node: { ...clientNode(), ID: 'not-a-uuid' } }, /invalid node ID "not-a-uuid"/],
      [{ Node: { ...clientNode(), Datacenter: '' } }, /^missing datacenter for client registration$/],
      [{ Node: { ...clientNode(), Name: '' } }, /^missing node name for client registration$/],
      [{ Node: { ...clientNode(), Attributes: {} } }, /^missing attributes for client registration$/],
      [{ Node: { ...clientNode(), SecretID: '' } }, /^missing node secret ID for client registration$/],
      [{ Node: { ...clientNode(), Attributes: many } }, /Node.Attributes has 1025 entries; at most 1024/],
      [{ Node: { ...clientNode(), Meta: { k: 'v'.repeat(5000) } } }, /Node.Meta\["k"\] is longer than 4096/],
      [{ Node: { ...clientNode(), NodePool: 'all' } }, /not allowed to register in node pool "all"/],
      [{ Node: { ...clientNode(), Attributes: { a: 5 } } }, /Request decode failed: Node.Attributes.a/],
      [
        { Node: { ...clientNode(), NodeResources: { Cpu: { CpuShares: 'lots' } } } },
        /Node.NodeResources.Cpu.CpuShares/,
      ],
      [{}, /^missing node for client registration$/],
      ['{"Node": ', /Request decode failed/],
    ];
    for (const [body, problem] of cases) {
      const out = await h.call('POST', '/v1/client/register', { token, body });
      expect(out.status, out.text).toBe(400);
      expect(out.text).toMatch(problem);
    }
    expect(await h.scheduler.state.currentIndex()).toBe(index);
  });

  it('lets a known node register again with its own secret, keeping its status; a wrong secret is refused', async () => {
    const { node } = await registerNode(h, writer);
    await h.call('PUT', `/v1/client/node/${node.ID}/status`, { token: node.SecretID, body: { Status: 'ready' } });
    const again = await h.call('POST', '/v1/client/register', {
      token: node.SecretID,
      body: { Node: { ...node, Attributes: { ...(node.Attributes as object), 'kernel.version': '6.1' } } },
    });
    expect(again.status).toBe(200);
    const read = (await h.call('GET', `/v1/node/${node.ID}`, { token: reader })).body;
    expect(read.Status).toBe('ready');
    expect(read.Attributes['kernel.version']).toBe('6.1');
    const index = await h.scheduler.state.currentIndex();
    const stolen = await h.call('POST', '/v1/client/register', {
      token: await introduction(h, writer),
      body: { Node: { ...node, SecretID: crypto.randomUUID() } },
    });
    expect(stolen.status).toBe(403);
    expect(stolen.text).toBe('node secret ID does not match. Not registering node.');
    expect(await h.scheduler.state.currentIndex()).toBe(index);
  });

  it('heartbeats: a status change is one write and one event; a beat that changes nothing writes only the deadline', async () => {
    const { node, identity } = await registerNode(h, writer);
    const stream = await h.open(
      `/v1/event/stream?topic=Node:${node.ID}&index=${await h.scheduler.state.currentIndex()}`,
      reader,
    );
    await stream.next();
    const ready = await h.call('PUT', `/v1/client/node/${node.ID}/status`, {
      token: identity,
      body: { Status: 'ready' },
    });
    expect(ready.status).toBe(200);
    expect(ready.body.HeartbeatTTL).toBeGreaterThanOrEqual(10e9);
    expect(ready.body.SignedIdentity).toBeUndefined();
    // The node's allocation index, what its allocation read answers as `Index` (0: no allocations yet).
    expect(ready.body.AllocIndex).toBe(0);
    const batch = await stream.nextEvents();
    expect(batch.Events.map((event: { Type: string }) => event.Type)).toEqual(['NodeStreamEvent']);
    expect(batch.Events[0].Payload.Node).toMatchObject({ ID: node.ID, Status: 'ready', SecretID: '' });

    const index = await h.scheduler.state.currentIndex();
    const before = (await beatOf(node.ID))?.deadline as number;
    // 10 s past the first beat: the new deadline (now + a TTL of 10 to 20 s + grace) is later whatever the stagger.
    h.clock.advance(10);
    const plain = await h.call('PUT', `/v1/client/node/${node.ID}/status`, {
      token: node.SecretID,
      body: { Status: 'ready' },
    });
    expect(plain.status).toBe(200);
    expect(plain.body.Index).toBe(ready.body.Index);
    expect(plain.body.AllocIndex).toBe(0);
    expect(plain.headers.get('X-Nomad-Index')).toBe(String(ready.body.Index));
    expect(await h.scheduler.state.currentIndex()).toBe(index);
    expect((await beatOf(node.ID))?.deadline).toBeGreaterThan(before);
    expect((await h.call('GET', `/v1/node/${node.ID}`, { token: reader })).body.ModifyIndex).toBe(ready.body.Index);

    const withEvent = await h.call('PUT', `/v1/client/node/${node.ID}/status`, {
      token: identity,
      body: {
        Status: 'ready',
        NodeEvent: { Message: 'Driver docker unhealthy', Subsystem: 'Driver', Details: { driver: 'docker' } },
      },
    });
    expect(withEvent.body.Index).toBe(index + 1);
    const evented = await stream.nextEvents();
    expect(evented.Events[0].Payload.Node.Events.at(-1)).toMatchObject({
      Message: 'Driver docker unhealthy',
      Subsystem: 'Driver',
      Details: { driver: 'docker' },
      CreateIndex: index + 1,
    });
    await stream.close();

    for (const [body, problem] of [
      [{ Status: 'down' }, /^invalid status for node$/],
      [{}, /^invalid status for node$/],
      [{ Status: 'ready', NodeEvent: { Message: '' } }, /Message is empty/],
    ] as const) {
      const out = await h.call('PUT', `/v1/client/node/${node.ID}/status`, { token: identity, body });
      expect(out.status).toBe(400);
      expect(out.text).toMatch(problem);
    }
    const unknown = crypto.randomUUID();
    const missing = await h.call('PUT', `/v1/client/node/${unknown}/status`, {
      token: unknown,
      body: { Status: 'ready' },
    });
    expect(missing.status).toBe(404);
    expect(missing.text).toBe('node not found');
  });

  it('grows the heartbeat TTL with the cluster as Nomad does: nodes / 50 per second, plus a stagger under one TTL', async () => {
    const { node } = await registerNode(h, writer);
    const count = await h.core.store.get(META_PK, 'nodes#count');
    await h.core.store.put({ pk: META_PK, sk: 'nodes#count', value: 10_000 });
    try {
      // The count is read at most every 30 s per process.
      h.clock.advance(30);
      const ttls: number[] = [];
      for (let i = 0; i < 5; i++) {
        const out = await h.call('PUT', `/v1/client/node/${node.ID}/status`, {
          token: node.SecretID,
          body: { Status: 'initializing' },
        });
        ttls.push(out.body.HeartbeatTTL);
      }
      for (const ttl of ttls) {
        expect(ttl).toBeGreaterThanOrEqual(200e9);
        expect(ttl).toBeLessThan(400e9);
      }
    } finally {
      await h.core.store.put({ pk: META_PK, sk: 'nodes#count', value: count?.value ?? 0 });
      h.clock.advance(30);
    }
  });

  it('renews a node identity at a heartbeat once 67% of its lifetime has passed', async () => {
    const { node, identity } = await registerNode(h, writer);
    h.clock.advance(15 * 3600);
    const early = await h.call('PUT', `/v1/client/node/${node.ID}/status`, {
      token: identity,
      body: { Status: 'initializing' },
    });
    expect(early.body.SignedIdentity).toBeUndefined();
    h.clock.advance(2 * 3600);
    const late = await h.call('PUT', `/v1/client/node/${node.ID}/status`, {
      token: identity,
      body: { Status: 'initializing' },
    });
    expect(late.status).toBe(200);
    const renewed = claimsOf(late.body.SignedIdentity);
    expect(renewed.nomad_node_id).toBe(node.ID);
    expect(Number(renewed.iat)).toBeGreaterThan(Number(claimsOf(identity).iat));
    h.clock.advance(8 * 3600);
    // The old identity has expired: refused; the renewed one and the secret still work.
    expect(
      (await h.call('PUT', `/v1/client/node/${node.ID}/status`, { token: identity, body: { Status: 'ready' } })).status,
    ).toBe(403);
    expect(
      (
        await h.call('PUT', `/v1/client/node/${node.ID}/status`, {
          token: late.body.SignedIdentity,
          body: { Status: 'ready' },
        })
      ).status,
    ).toBe(200);
  });

  it('records node events a node sends, keeping the last ten', async () => {
    const { node, identity } = await registerNode(h, writer);
    for (let round = 0; round < 3; round++) {
      const events = Array.from({ length: 5 }, (_, i) => ({ Message: `event ${round}.${i}`, Subsystem: 'Test' }));
      const out = await h.call('PUT', `/v1/client/node/${node.ID}/events`, {
        token: identity,
        body: { Events: events },
      });
      expect(out.status).toBe(200);
      expect(out.headers.get('X-Nomad-Index')).toBe(String(out.body.Index));
    }
    const read = (await h.call('GET', `/v1/node/${node.ID}`, { token: reader })).body;
    expect(read.Events.map((event: { Message: string }) => event.Message)).toEqual([
      ...Array.from({ length: 5 }, (_, i) => `event 1.${i}`),
      ...Array.from({ length: 5 }, (_, i) => `event 2.${i}`),
    ]);
    const tooMany = Array.from({ length: 11 }, () => ({ Message: 'x' }));
    for (const [body, problem] of [
      [{ Events: tooMany }, /11 node events given; at most 10/],
      [{ Events: [] }, /^no node events given$/],
      [{ Events: [{ Message: 'x', Timestamp: 'yesterday' }] }, /Timestamp "yesterday" is not an RFC 3339 time/],
    ] as const) {
      const out = await h.call('PUT', `/v1/client/node/${node.ID}/events`, { token: identity, body });
      expect(out.status).toBe(400);
      expect(out.text).toMatch(problem);
    }
  });

  it('answers the client’s allocation map (empty until jobs exist) as a blocking query', async () => {
    const { node, identity } = await registerNode(h, writer);
    const out = await h.call('GET', `/v1/client/node/${node.ID}/allocations`, { token: identity });
    expect(out.status).toBe(200);
    expect(out.body).toEqual({ Allocs: {}, Index: 0 });
    expect(out.headers.get('X-Nomad-Index')).toBe('1');
    // Nothing writes allocations yet: the query waits out its wait (on the service's clock) and answers the same.
    let answered = false;
    const blocked = h
      .call('GET', `/v1/client/node/${node.ID}/allocations?index=1&wait=10s`, { token: node.SecretID })
      .finally(() => {
        answered = true;
      });
    await new Promise((resolve) => setTimeout(resolve, 250));
    expect(answered).toBe(false);
    h.clock.advance(11);
    const out2 = await blocked;
    expect(out2.status).toBe(200);
    expect(out2.body).toEqual({ Allocs: {}, Index: 0 });
    expect((await h.call('GET', `/v1/node/${node.ID}/allocations`, { token: reader })).body).toEqual([]);
  });

  it('lists node stubs with prefix, filter, os, resources and pages, for node:read only', async () => {
    const fresh = await startSchedulerInMemory();
    try {
      const tokens = await nodeTokens(fresh);
      const nodes = [];
      for (let i = 0; i < 5; i++)
        nodes.push((await registerNode(fresh, tokens.writer, { NodeClass: i % 2 ? 'odd' : 'even' })).node);
      await fresh.call('PUT', `/v1/client/node/${nodes[0]?.ID}/status`, {
        token: nodes[0]?.SecretID,
        body: { Status: 'ready' },
      });
      const ids = nodes.map((node) => node.ID).sort();
      expect((await fresh.call('GET', '/v1/nodes')).status).toBe(403);
      const all = await fresh.call('GET', '/v1/nodes', { token: tokens.reader });
      expect(all.status).toBe(200);
      expect(all.body.map((stub: { ID: string }) => stub.ID)).toEqual(ids);
      expect(all.headers.get('X-Nomad-Index')).toBe(String(await fresh.scheduler.state.tableIndex(['nodes'])));
      expect(all.body[0]).toEqual({
        Address: '10.0.0.7',
        ID: ids[0],
        Datacenter: 'dc1',
        Name: expect.any(String),
        NodeClass: expect.any(String),
        NodePool: 'default',
        Version: '1.11.0',
        Drain: false,
        SchedulingEligibility: 'eligible',
        Status: expect.any(String),
        StatusDescription: '',
        Drivers: expect.any(Object),
        HostVolumes: null,
        LastDrain: null,
        CreateIndex: expect.any(Number),
        ModifyIndex: expect.any(Number),
      });
      const withOs = await fresh.call('GET', '/v1/nodes?os=true&resources=true', { token: tokens.reader });
      expect(withOs.body[0].Attributes).toEqual({ 'os.name': 'debian' });
      expect(withOs.body[0].NodeResources.Memory).toEqual({ MemoryMB: 4096 });
      const prefix = (ids[2] as string).slice(0, 6);
      const byPrefix = await fresh.call('GET', `/v1/nodes?prefix=${prefix}`, { token: tokens.reader });
      expect(byPrefix.body.map((stub: { ID: string }) => stub.ID)).toEqual(ids.filter((id) => id.startsWith(prefix)));
      const filter = encodeURIComponent('NodeClass == "odd" and Status != "ready"');
      const filtered = await fresh.call('GET', `/v1/nodes?filter=${filter}`, { token: tokens.reader });
      expect(filtered.body.map((stub: { ID: string }) => stub.ID)).toEqual(
        nodes
          .filter((_, i) => i % 2 === 1)
          .map((node) => node.ID)
          .sort(),
      );
      const ready = await fresh.call(
        'GET',
        `/v1/nodes?filter=${encodeURIComponent('Drain == false and Status == "ready"')}`,
        {
          token: tokens.reader,
        },
      );
      expect(ready.body.map((stub: { ID: string }) => stub.ID)).toEqual([nodes[0]?.ID]);
      const bad = await fresh.call('GET', `/v1/nodes?filter=${encodeURIComponent('Status ==')}`, {
        token: tokens.reader,
      });
      expect(bad.status).toBe(400);
      expect(bad.text).toMatch(/^failed to create result paginator: failed to read filter expression: /);
      const missingField = await fresh.call('GET', `/v1/nodes?filter=${encodeURIComponent('Nope == "x"')}`, {
        token: tokens.reader,
      });
      expect(missingField.status).toBe(400);
      expect(missingField.text).toMatch(/^failed to read result page: /);
      const page = await fresh.call('GET', '/v1/nodes?per_page=2', { token: tokens.reader });
      expect(page.body.map((stub: { ID: string }) => stub.ID)).toEqual(ids.slice(0, 2));
      expect(page.headers.get('X-Nomad-NextToken')).toBe(ids[2]);
      const rest = await fresh.call('GET', `/v1/nodes?per_page=3&next_token=${ids[2]}`, { token: tokens.reader });
      expect(rest.body.map((stub: { ID: string }) => stub.ID)).toEqual(ids.slice(2));
      expect(rest.headers.get('X-Nomad-NextToken')).toBeNull();
      expect((await fresh.call('GET', '/v1/nodes?per_page=x', { token: tokens.reader })).status).toBe(400);
    } finally {
      await fresh.close();
    }
  });

  it('blocks a node read until the node changes', async () => {
    const { node, identity } = await registerNode(h, writer);
    const index = await h.scheduler.state.tableIndex(['nodes']);
    const blocked = h.call('GET', `/v1/node/${node.ID}?index=${index}&wait=5s`, { token: reader });
    await new Promise((resolve) => setTimeout(resolve, 150));
    await h.call('PUT', `/v1/client/node/${node.ID}/status`, { token: identity, body: { Status: 'ready' } });
    const out = await blocked;
    expect(out.status).toBe(200);
    expect(out.body.Status).toBe('ready');
    expect(Number(out.headers.get('X-Nomad-Index'))).toBeGreaterThan(index);
    expect(out.headers.get('X-Nomad-KnownLeader')).toBe('true');
    expect(out.headers.get('X-Nomad-LastContact')).toBe('0');
  });
});
