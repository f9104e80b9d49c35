import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { beatKind, ClusterNodes, nodeKind } from '../../packages/core/src/scheduler/cluster/nodes/store.ts';
import { claimsOf, clientNode, introduction, nodeTokens, registerNode } from '../support/cluster-nodes.ts';
import { type SchedulerService, startSchedulerInMemory } from '../support/scheduler-harness.ts';

/**
 * Attacks on the cluster's nodes and the client protocol (`docs/security.md` §12): a node acting on another node, a
 * node's credential used as an ACL token, a `node:read` token writing, introduction tokens that are expired, foreign,
 * forged or for another pool or name, a stream leaking nodes to a token without `node:read`, a table writer moving a
 * node's items, and the SecretID anywhere a read, an event or the audit log shows.
 */
describe('attacks on cluster nodes and the client protocol', () => {
  let h: SchedulerService;
  let root: string;
  let reader: string;
  let writer: string;
  let auditDir: string;

  beforeAll(async () => {
    auditDir = mkdtempSync(path.join(tmpdir(), 'keyhaven-node-audit-'));
    h = await startSchedulerInMemory({ audit: { path: path.join(auditDir, 'audit.log') } });
    ({ root, reader, writer } = await nodeTokens(h));
  });
  afterAll(async () => {
    await h.close();
    rmSync(auditDir, { recursive: true, force: true });
  });

  const read = async (id: string) => (await h.call('GET', `/v1/node/${id}`, { token: root })).body;

  it('a node cannot beat, send events, read allocations or register for another node, by secret or identity', async () => {
    const a = await registerNode(h, writer);
    const b = await registerNode(h, writer);
    const before = await h.scheduler.state.currentIndex();
    const bBefore = await read(b.node.ID);
    for (const credential of [a.node.SecretID, a.identity]) {
      for (const [method, url, body] of [
        ['PUT', `/v1/client/node/${b.node.ID}/status`, { Status: 'ready' }],
        ['PUT', `/v1/client/node/${b.node.ID}/status`, { Status: 'initializing', NodeEvent: { Message: 'pwned' } }],
        ['PUT', `/v1/client/node/${b.node.ID}/events`, { Events: [{ Message: 'pwned' }] }],
        ['GET', `/v1/client/node/${b.node.ID}/allocations`, undefined],
      ] as const) {
        const out = await h.call(method, url, { token: credential, ...(body ? { body } : {}) });
        expect(out.status, `${method} ${url}`).toBe(403);
        expect(out.text).toBe('Permission denied');
      }
      // Registering B's ID with A's credential and B's attributes (without B's secret) is refused.
      const hijack = await h.call('POST', '/v1/client/register', {
        token: credential,
        body: { Node: { ...b.node, SecretID: a.node.SecretID, HTTPAddr: '203.0.113.9:4646' } },
      });
      expect(hijack.status).toBe(403);
    }
    expect(await h.scheduler.state.currentIndex()).toBe(before);
    expect(await read(b.node.ID)).toEqual(bBefore);
  });

  it('a node sees only its own AllocIndex, and a forged one on its beat item is not taken', async () => {
    const a = await registerNode(h, writer);
    const b = await registerNode(h, writer);
    const store = h.core.store;
    // Node A's allocations moved (what the cluster's second part writes): A's beat item carries its index, signed.
    const aKey = ClusterNodes.beatKey(a.node.ID);
    const aBeat = (await store.get(aKey.pk, aKey.sk)) as Record<string, unknown>;
    const { mac: _mac, ...unsigned } = aBeat;
    await store.put(store.signed(beatKind, { ...unsigned, allocIndex: 4242 } as never));
    const aAnswer = await h.call('PUT', `/v1/client/node/${a.node.ID}/status`, {
      token: a.identity,
      body: { Status: 'initializing' },
    });
    expect(aAnswer.status).toBe(200);
    expect(aAnswer.body.AllocIndex).toBe(4242);
    // B's answers, by secret or identity, carry B's own index, never A's; B cannot ask with A's path.
    for (const token of [b.node.SecretID, b.identity]) {
      const own = await h.call('PUT', `/v1/client/node/${b.node.ID}/status`, {
        token,
        body: { Status: 'initializing' },
      });
      expect(own.status).toBe(200);
      expect(own.body.AllocIndex).toBe(0);
      const other = await h.call('PUT', `/v1/client/node/${a.node.ID}/status`, {
        token,
        body: { Status: 'initializing' },
      });
      expect(other.status).toBe(403);
      expect(other.text).not.toContain('4242');
    }
    const again = await h.call('POST', '/v1/client/register', { token: b.node.SecretID, body: { Node: b.node } });
    expect(again.status).toBe(200);
    expect(again.body.AllocIndex).toBe(0);
    // A's own re-registration keeps its index (the beat item is rewritten with it).
    const aAgain = await h.call('POST', '/v1/client/register', { token: a.node.SecretID, body: { Node: a.node } });
    expect(aAgain.status).toBe(200);
    expect(aAgain.body.AllocIndex).toBe(4242);
    // A table writer raising B's index without the keyring's MAC gets B's beat refused (the item does not verify).
    const bKey = ClusterNodes.beatKey(b.node.ID);
    await store.put({ ...((await store.get(bKey.pk, bKey.sk)) as object), allocIndex: 9999 } as never);
    const forged = await h.call('PUT', `/v1/client/node/${b.node.ID}/status`, {
      token: b.identity,
      body: { Status: 'initializing' },
    });
    expect(forged.status).toBe(404);
    expect(forged.text).not.toContain('9999');
  });

  it('a node’s secret or identity is no ACL token: every other route refuses it', async () => {
    const a = await registerNode(h, writer);
    for (const credential of [a.node.SecretID, a.identity]) {
      for (const [method, url, body] of [
        ['GET', '/v1/nodes', undefined],
        ['GET', `/v1/node/${a.node.ID}`, undefined],
        ['PUT', `/v1/node/${a.node.ID}/drain`, { DrainSpec: null, MarkEligible: true }],
        ['PUT', `/v1/node/${a.node.ID}/eligibility`, { Eligibility: 'eligible' }],
        ['PUT', `/v1/node/${a.node.ID}/purge`, undefined],
        ['PUT', '/v1/acl/identity/client-introduction-token', {}],
        ['GET', '/v1/acl/tokens', undefined],
        ['GET', '/v1/acl/token/self', undefined],
        ['GET', '/v1/node/pools', undefined],
        ['GET', '/v1/event/stream?topic=Node', undefined],
      ] as const) {
        const out = await h.call(method, url, { token: credential, ...(body ? { body } : {}) });
        expect(out.status, `${method} ${url}`).toBe(403);
      }
    }
  });

  it('a node:read token reads nodes but drains, changes eligibility, purges, evaluates and introduces nothing', async () => {
    const { node } = await registerNode(h, writer);
    const before = await h.scheduler.state.currentIndex();
    expect((await h.call('GET', `/v1/node/${node.ID}`, { token: reader })).status).toBe(200);
    for (const [url, body] of [
      [`/v1/node/${node.ID}/drain`, { DrainSpec: { Deadline: 1e9 } }],
      [`/v1/node/${node.ID}/eligibility`, { Eligibility: 'ineligible' }],
      [`/v1/node/${node.ID}/purge`, undefined],
      [`/v1/node/${node.ID}/evaluate`, undefined],
      ['/v1/acl/identity/client-introduction-token', { NodePool: 'default' }],
    ] as const) {
      for (const method of ['PUT', 'POST']) {
        const out = await h.call(method, url, { token: reader, ...(body ? { body } : {}) });
        expect(out.status, `${method} ${url}`).toBe(403);
      }
    }
    expect(await h.scheduler.state.currentIndex()).toBe(before);
    expect((await read(node.ID)).SchedulingEligibility).toBe('eligible');
  });

  it('registers nothing with an introduction token that is expired, foreign, forged, or for another pool or name', async () => {
    const other = await startSchedulerInMemory();
    try {
      const otherTokens = await nodeTokens(other);
      const node = clientNode({ NodePool: 'edge' });
      const register = (token: string) => h.call('POST', '/v1/client/register', { token, body: { Node: node } });
      const genuine = await introduction(h, writer, { NodePool: 'edge', NodeName: node.Name, TTL: '1m' });
      const claims = claimsOf(genuine);
      const [header, , signature] = genuine.split('.');
      const forgedClaims = Buffer.from(JSON.stringify({ ...claims, nomad_node_pool: 'default' })).toString('base64url');
      const attempts: Array<[string, string]> = [
        ['foreign: signed by another service', await introduction(other, otherTokens.writer, { NodePool: 'edge' })],
        ['another pool', await introduction(h, writer, { NodePool: 'core' })],
        ['another name', await introduction(h, writer, { NodePool: 'edge', NodeName: 'not-this-node' })],
        ['claims changed, signature kept', `${header}.${forgedClaims}.${signature}`],
        [
          'alg none',
          `${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.`,
        ],
        [
          'HS256 under a guessed key',
          await new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).sign(new TextEncoder().encode('secret')),
        ],
        ['a node identity for another node', (await registerNode(h, writer)).identity],
        ['an ACL token with node:write', writer],
      ];
      const before = await h.scheduler.state.currentIndex();
      for (const [what, token] of attempts) {
        const out = await register(token);
        expect(out.status, what).toBe(403);
        expect(out.text, what).toBe('Permission denied');
      }
      h.clock.advance(61);
      expect((await register(genuine)).status).toBe(403);
      expect(await h.scheduler.state.currentIndex()).toBe(before);
      expect((await h.call('GET', `/v1/node/${node.ID}`, { token: root })).status).toBe(404);
      const fresh = await register(await introduction(h, writer, { NodePool: 'edge', NodeName: node.Name }));
      expect(fresh.status).toBe(200);
    } finally {
      await other.close();
    }
  });

  it('streams nodes only to node:read: no Node or NodeDrain topic, no wildcard, and nothing after the grant ends', async () => {
    await h.call('POST', '/v1/acl/policy/jobs-only', {
      token: root,
      body: { Rules: 'namespace "*" { policy = "read" }' },
    });
    const jobsOnly = (
      await h.call('POST', '/v1/acl/token', { token: root, body: { Type: 'client', Policies: ['jobs-only'] } })
    ).body.SecretID;
    for (const url of [
      '/v1/event/stream?topic=Node',
      '/v1/event/stream?topic=NodeDrain',
      '/v1/event/stream',
      '/v1/event/stream?topic=*',
      '/v1/event/stream?topic=NodePool',
    ]) {
      expect((await h.stream(url, jobsOnly)).status, url).toBe(403);
    }
    // A Job stream sees nothing of nodes, whatever the node does.
    const jobs = await h.open('/v1/event/stream?topic=Job&namespace=*', jobsOnly);
    await jobs.next();
    // A node:read token's stream ends when its policy goes, before the next node event reaches it.
    await h.call('POST', '/v1/acl/policy/short-read', { token: root, body: { Rules: 'node { policy = "read" }' } });
    const short = (
      await h.call('POST', '/v1/acl/token', { token: root, body: { Type: 'client', Policies: ['short-read'] } })
    ).body.SecretID;
    const nodes = await h.open(`/v1/event/stream?topic=Node&index=${await h.scheduler.state.currentIndex()}`, short);
    await nodes.next();
    const { node } = await registerNode(h, writer);
    expect((await nodes.nextEvents()).Events[0].Key).toBe(node.ID);
    await h.call('DELETE', '/v1/acl/policy/short-read', { token: root });
    await h.call('PUT', `/v1/client/node/${node.ID}/status`, { token: node.SecretID, body: { Status: 'ready' } });
    expect(await nodes.ended(5000)).toBe(true);
    // Only heartbeats reached the job stream meanwhile.
    for (let i = 0; i < 3; i++) expect(await jobs.next(2000)).toEqual({});
    await jobs.close();
  });

  it('a table writer gains nothing by moving or forging a node’s items', async () => {
    const a = await registerNode(h, writer);
    const b = await registerNode(h, writer);
    const store = h.core.store;
    // A's beat copied onto B's key: B's secret no longer matches there, and A's secret does not either.
    const aBeat = ClusterNodes.beatKey(a.node.ID);
    const bBeat = ClusterNodes.beatKey(b.node.ID);
    const copied = { ...(await store.get(aBeat.pk, aBeat.sk)), pk: bBeat.pk, sk: bBeat.sk };
    await store.put(copied);
    for (const token of [a.node.SecretID, b.node.SecretID]) {
      const out = await h.call('PUT', `/v1/client/node/${b.node.ID}/status`, { token, body: { Status: 'ready' } });
      expect([403, 404]).toContain(out.status);
    }
    // A node item written without the keyring's MAC does not exist.
    const forged = clientNode();
    const key = ClusterNodes.nodeKey(forged.ID);
    await store.put({ pk: key.pk, sk: key.sk, ID: forged.ID, Name: 'forged', NodePool: 'default', Status: 'ready' });
    expect((await h.call('GET', `/v1/node/${forged.ID}`, { token: root })).status).toBe(404);
    expect(
      (await h.call('GET', '/v1/nodes', { token: root })).body.map((stub: { ID: string }) => stub.ID),
    ).not.toContain(forged.ID);
    // A genuine node item moved to another ID does not verify there.
    const aNode = ClusterNodes.nodeKey(a.node.ID);
    const moved = await store.get(aNode.pk, aNode.sk);
    const target = ClusterNodes.nodeKey(forged.ID);
    await store.put({ ...(moved as object), pk: target.pk, sk: target.sk } as never);
    expect(store.verified(nodeKind, await store.get(target.pk, target.sk))).toBeUndefined();
    expect((await h.call('GET', `/v1/node/${forged.ID}`, { token: root })).status).toBe(404);
  });

  it('never shows a SecretID: not in reads, events, the table or the audit log', async () => {
    const { node, identity } = await registerNode(h, writer);
    const start = 0;
    await h.call('PUT', `/v1/client/node/${node.ID}/status`, { token: node.SecretID, body: { Status: 'ready' } });
    await h.call('PUT', `/v1/client/node/${node.ID}/events`, {
      token: identity,
      body: { Events: [{ Message: 'hello' }] },
    });
    await h.call('POST', '/v1/client/register', { token: node.SecretID, body: { Node: node } });
    await h.call('PUT', `/v1/node/${node.ID}/drain`, { token: writer, body: { DrainSpec: { Deadline: 1e9 } } });
    const reads = [
      (await h.call('GET', `/v1/node/${node.ID}`, { token: reader })).text,
      (await h.call('GET', '/v1/nodes?resources=true&os=true', { token: reader })).text,
      (await h.call('GET', '/v1/node/pool/default/nodes', { token: root })).text,
    ];
    expect(JSON.parse(reads[0] as string).SecretID).toBe('');
    const events = JSON.stringify(await h.scheduler.state.eventsAfter(start));
    expect(events).toContain(node.ID);
    await h.call('PUT', `/v1/node/${node.ID}/purge`, { token: writer });
    const table = JSON.stringify(await h.core.store.scan());
    const audit = readFileSync(path.join(auditDir, 'audit.log'), 'utf8');
    expect(audit).toContain('/v1/client/register');
    for (const [where, text] of [
      ['reads', reads.join('\n')],
      ['events', events],
      ['table', table],
      ['audit log', audit],
    ] as const) {
      expect(text, where).not.toContain(node.SecretID);
    }
  });
});
