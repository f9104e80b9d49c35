/**
 * Attack class: reaching node pools and namespaces past what a token's `node_pool` and `namespace` rules grant
 * (Nomad's `acl/acl.go` and `nomad/{node_pool,namespace}_endpoint.go`).
 *
 * Attackers: client tokens with narrow rules: `node_pool "prod-*" { policy = "read" }`; a broad glob with a narrower
 * one beside it (`"*"` write, `"prod-*"` read: the closest glob applies, not the union); single capabilities
 * (`write` without `delete`, `delete` without `read`); a `deny` in a second policy; namespace rules with globs and a
 * denied glob; an anonymous caller; a namespace `write` and `operator` token creating namespaces; a token with every
 * pool capability subscribing to the `NodePool` topic.
 * They try: writing, creating and deleting pools outside (and inside) their rights, reading a pool outside the glob,
 * near-miss names (`prod`, `xprod-a`, `PROD-a`), listing, reading a pool's nodes without `node:read` or outside the
 * glob (`all` included), deleting a pool a node is in, creating,
 * changing and deleting namespaces, reading namespaces the rules hide, streaming pool events.
 * They must never reach: a changed or new pool item, a deleted pool, a namespace item, a pool or namespace they may
 * not read (in a list or by name), a `NodePool` event. Each refusal is a 403 `Permission denied` with nothing written.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NAMESPACE_PK, NODE_POOL_PK } from '../../packages/core/src/scheduler/keys.ts';
import { registerNode } from '../support/cluster-nodes.ts';
import { type SchedulerService, startSchedulerInMemory } from '../support/scheduler-harness.ts';

describe('attack: node pools and namespaces past their rules', () => {
  let h: SchedulerService;
  let root: string;
  const mgmt = (method: string, path: string, body?: unknown) =>
    h.call(method, path, { token: root, ...(body === undefined ? {} : { body }) });
  const as = (token: string) => (method: string, path: string, body?: unknown) =>
    h.call(method, path, { token, ...(body === undefined ? {} : { body }) });
  const names = (body: Array<{ Name: string }>) => body.map((item) => item.Name);

  /** A client token holding one policy per rules text. */
  async function tokenWith(...rules: string[]): Promise<string> {
    const policies: string[] = [];
    for (const text of rules) {
      const name = `p-${Math.random().toString(36).slice(2, 10)}`;
      const out = await mgmt('POST', `/v1/acl/policy/${name}`, { Rules: text });
      expect(out.status).toBe(200);
      policies.push(name);
    }
    const token = await mgmt('POST', '/v1/acl/token', { Type: 'client', Policies: policies });
    expect(token.status).toBe(200);
    return token.body.SecretID as string;
  }

  /** Refused with Nomad's 403, and the table index did not move. */
  async function refused(call: Promise<{ status: number; text: string }>): Promise<void> {
    const before = await h.scheduler.state.currentIndex();
    const out = await call;
    expect(out.status).toBe(403);
    expect(out.text).toBe('Permission denied');
    expect(await h.scheduler.state.currentIndex()).toBe(before);
  }

  beforeAll(async () => {
    h = await startSchedulerInMemory();
    root = await h.bootstrap();
    for (const name of ['prod-a', 'prod-b', 'prod', 'xprod-a', 'PROD-a', 'dev', 'secret'])
      expect((await mgmt('PUT', '/v1/node/pools', { Name: name, Description: 'original' })).status).toBe(200);
    for (const name of ['prod-web', 'prod-api', 'dev', 'ops'])
      expect((await mgmt('PUT', '/v1/namespace', { Name: name })).status).toBe(200);
  });
  afterAll(() => h.close());

  it('a "prod-*" read token reads prod pools only, and writes or deletes none', async () => {
    const call = as(await tokenWith('node_pool "prod-*" { policy = "read" }'));
    expect(names((await call('GET', '/v1/node/pools')).body)).toEqual(['prod-a', 'prod-b']);
    expect((await call('GET', '/v1/node/pool/prod-a')).status).toBe(200);
    for (const outside of ['dev', 'prod', 'xprod-a', 'PROD-a', 'default', 'all', 'missing'])
      await refused(call('GET', `/v1/node/pool/${outside}`));
    await refused(call('PUT', '/v1/node/pool/prod-a', { Name: 'prod-a', Description: 'mine' }));
    await refused(call('POST', '/v1/node/pools', { Name: 'prod-a', Description: 'mine' }));
    await refused(call('PUT', '/v1/node/pools', { Name: 'prod-new' }));
    await refused(call('DELETE', '/v1/node/pool/prod-a'));
    await refused(call('DELETE', '/v1/node/pool/dev'));
    // The nodes of a pool also need node:read.
    await refused(call('GET', '/v1/node/pool/prod-a/nodes'));
    expect(await h.core.store.get(NODE_POOL_PK, 'prod-a')).toMatchObject({ Description: 'original' });
    expect(await h.core.store.get(NODE_POOL_PK, 'prod-new')).toBeUndefined();
  });

  it('the closest glob applies, not the union; deny in any policy wins; capabilities are separate', async () => {
    const layered = as(await tokenWith('node_pool "*" { policy = "write" }\nnode_pool "prod-*" { policy = "read" }'));
    await refused(layered('PUT', '/v1/node/pool/prod-a', { Name: 'prod-a', Description: 'mine' }));
    await refused(layered('DELETE', '/v1/node/pool/prod-b'));
    expect((await layered('PUT', '/v1/node/pool/dev', { Name: 'dev', Description: 'ok' })).status).toBe(200);

    const denied = as(await tokenWith('node_pool "*" { policy = "write" }', 'node_pool "secret" { policy = "deny" }'));
    await refused(denied('GET', '/v1/node/pool/secret'));
    await refused(denied('PUT', '/v1/node/pool/secret', { Name: 'secret', Description: 'mine' }));
    await refused(denied('DELETE', '/v1/node/pool/secret'));
    expect(names((await denied('GET', '/v1/node/pools')).body)).not.toContain('secret');

    const writer = as(await tokenWith('node_pool "dev" { capabilities = ["write"] }'));
    expect((await writer('PUT', '/v1/node/pool/dev', { Name: 'dev', Description: 'written' })).status).toBe(200);
    await refused(writer('DELETE', '/v1/node/pool/dev'));
    await refused(writer('GET', '/v1/node/pool/dev'));
    expect((await writer('GET', '/v1/node/pools')).body).toEqual([]);

    const deleter = as(await tokenWith('node_pool "xprod-*" { capabilities = ["delete"] }'));
    await refused(deleter('GET', '/v1/node/pool/xprod-a'));
    expect((await deleter('DELETE', '/v1/node/pool/xprod-a')).status).toBe(200);
    expect(await h.core.store.get(NODE_POOL_PK, 'xprod-a')).toBeUndefined();
    expect(await h.core.store.get(NODE_POOL_PK, 'secret')).toMatchObject({ Description: 'original' });
  });

  it('a pool’s node list needs node:read and read on that pool: no node leaks through a pool outside the glob', async () => {
    const writer = await tokenWith('node { policy = "write" }');
    const { node } = await registerNode(h, writer, { NodePool: 'dev' });
    const both = as(await tokenWith('node { policy = "read" }\nnode_pool "prod-*" { policy = "read" }'));
    for (const pool of ['dev', 'all', 'default', 'prod']) await refused(both('GET', `/v1/node/pool/${pool}/nodes`));
    expect((await both('GET', '/v1/node/pool/prod-a/nodes')).body).toEqual([]);
    const poolOnly = as(await tokenWith('node_pool "*" { policy = "read" }'));
    await refused(poolOnly('GET', '/v1/node/pool/dev/nodes'));
    await refused(poolOnly('GET', '/v1/node/pool/all/nodes'));
    const ids = (body: Array<{ ID: string }>) => body.map((stub) => stub.ID);
    expect(ids((await mgmt('GET', '/v1/node/pool/dev/nodes')).body)).toEqual([node.ID]);
    // In use: not deleted, even by a token that may delete it.
    const deleter = as(await tokenWith('node_pool "dev" { policy = "write" }'));
    const inUse = await deleter('DELETE', '/v1/node/pool/dev');
    expect(inUse.status).toBe(409);
    expect(inUse.text).toBe('node pool "dev" has nodes');
    expect(await h.core.store.get(NODE_POOL_PK, 'dev')).toBeDefined();
  });

  it('anonymous sees no pool and no namespace without an anonymous policy', async () => {
    expect((await h.call('GET', '/v1/node/pools')).body).toEqual([]);
    expect((await h.call('GET', '/v1/namespaces')).body).toEqual([]);
    await refused(h.call('GET', '/v1/node/pool/default'));
    await refused(h.call('GET', '/v1/namespace/default'));
    await refused(h.call('PUT', '/v1/node/pools', { body: { Name: 'anon' } }));
  });

  it('a namespace list shows only the namespaces a token may use; the closest glob decides', async () => {
    const prod = as(await tokenWith('namespace "prod-*" { policy = "read" }'));
    expect(names((await prod('GET', '/v1/namespaces')).body)).toEqual(['prod-api', 'prod-web']);
    expect((await prod('GET', '/v1/namespace/prod-web')).status).toBe(200);
    await refused(prod('GET', '/v1/namespace/dev'));
    await refused(prod('GET', '/v1/namespace/default'));

    const allButProd = as(await tokenWith('namespace "*" { policy = "read" }\nnamespace "prod-*" { policy = "deny" }'));
    expect(names((await allButProd('GET', '/v1/namespaces')).body)).toEqual(['default', 'dev', 'ops']);
    await refused(allButProd('GET', '/v1/namespace/prod-api'));

    const exact = as(await tokenWith('namespace "ops" { capabilities = ["list-jobs"] }'));
    expect(names((await exact('GET', '/v1/namespaces')).body)).toEqual(['ops']);
  });

  it('only a management token creates, changes or deletes a namespace', async () => {
    const broad = as(
      await tokenWith(
        'namespace "*" { policy = "write" }\noperator { policy = "write" }\nnode_pool "*" { policy = "write" }',
      ),
    );
    await refused(broad('PUT', '/v1/namespace', { Name: 'attacker' }));
    await refused(broad('POST', '/v1/namespace/attacker', { Name: 'attacker' }));
    await refused(broad('PUT', '/v1/namespace/dev', { Name: 'dev', Description: 'taken' }));
    await refused(broad('DELETE', '/v1/namespace/dev'));
    expect(await h.core.store.get(NAMESPACE_PK, 'attacker')).toBeUndefined();
    expect(await h.core.store.get(NAMESPACE_PK, 'dev')).toMatchObject({ Description: '' });
  });

  it('the NodePool topic streams to a management token only', async () => {
    const everything = await tokenWith('node_pool "*" { policy = "write" }\nnode { policy = "write" }');
    for (const topic of ['NodePool', 'NodePool:prod-a', '*']) {
      const out = await h.stream(`/v1/event/stream?topic=${encodeURIComponent(topic)}`, everything);
      expect(out.status).toBe(403);
    }
    const reader = await h.open(
      `/v1/event/stream?topic=NodePool&index=${await h.scheduler.state.currentIndex()}`,
      root,
    );
    await mgmt('PUT', '/v1/node/pools', { Name: 'streamed' });
    const batch = await reader.nextEvents(5000);
    expect(batch.Events.map((event: { Type: string; Key: string }) => [event.Type, event.Key])).toEqual([
      ['NodePoolUpserted', 'streamed'],
    ]);
    await reader.close();
  });
});
