import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobPk, NODE_POOL_PK } from '../../packages/core/src/scheduler/keys.ts';
import { type SchedulerService, startSchedulerInMemory } from '../support/scheduler-harness.ts';

const hours = (n: number) => n * 3600 * 1e9;

describe('node pools', () => {
  let h: SchedulerService;
  let root: string;
  const mgmt = (method: string, path: string, body?: unknown) =>
    h.call(method, path, { token: root, ...(body === undefined ? {} : { body }) });
  const index = () => h.scheduler.state.currentIndex();
  const storedPool = (name: string) => h.core.store.get(NODE_POOL_PK, name);
  const eventsSince = async (after: number) =>
    (await h.scheduler.state.eventsAfter(after)).flatMap((batch) => batch.events);

  beforeAll(async () => {
    h = await startSchedulerInMemory();
    root = await h.bootstrap();
  });
  afterAll(() => h.close());

  it('has the built-in pools all and default, as Nomad creates them', async () => {
    const list = await mgmt('GET', '/v1/node/pools');
    expect(list.status).toBe(200);
    expect(list.headers.get('X-Nomad-Index')).toMatch(/^\d+$/);
    expect(list.body.map((pool: { Name: string }) => pool.Name)).toEqual(['all', 'default']);
    const pool = await mgmt('GET', '/v1/node/pool/default');
    expect(pool.body).toMatchObject({
      Name: 'default',
      Description: 'Default node pool.',
      Meta: null,
      SchedulerConfiguration: null,
      NodeIdentityTTL: hours(24),
      CreateIndex: 1,
      ModifyIndex: 1,
    });
    expect(pool.body.Hash).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    expect((await mgmt('GET', '/v1/node/pool/all')).body.Description).toBe('Node pool with all nodes in the cluster.');
    expect(await storedPool('default')).toBeUndefined();
  });

  it('creates a pool with its TTL, meta and scheduler configuration, one index and one event', async () => {
    const before = await index();
    const out = await mgmt('PUT', '/v1/node/pools', {
      Name: 'prod-east',
      Description: 'east racks',
      Meta: { env: 'prod' },
      SchedulerConfiguration: { SchedulerAlgorithm: 'spread', MemoryOversubscriptionEnabled: true },
      NodeIdentityTTL: '12h',
    });
    expect(out.status).toBe(200);
    expect(out.text).toBe('');
    expect(Number(out.headers.get('X-Nomad-Index'))).toBe(before + 1);
    const pool = (await mgmt('GET', '/v1/node/pool/prod-east')).body;
    expect(pool).toMatchObject({
      Name: 'prod-east',
      Description: 'east racks',
      Meta: { env: 'prod' },
      SchedulerConfiguration: { SchedulerAlgorithm: 'spread', MemoryOversubscriptionEnabled: true },
      NodeIdentityTTL: hours(12),
      CreateIndex: before + 1,
      ModifyIndex: before + 1,
    });
    expect(await storedPool('prod-east')).toMatchObject({ Name: 'prod-east', NodeIdentityTTL: hours(12) });
    expect(await h.scheduler.nodePools.nodeIdentityTtl('prod-east')).toBe(hours(12));
    const events = await eventsSince(before);
    expect(events).toEqual([
      {
        Topic: 'NodePool',
        Type: 'NodePoolUpserted',
        Key: 'prod-east',
        Namespace: '',
        FilterKeys: null,
        Payload: { NodePool: pool },
        Index: before + 1,
      },
    ]);
  });

  it('takes a TTL in nanoseconds, defaults an unset one to 24h, keeps an unchanged pool at its index', async () => {
    expect((await mgmt('POST', '/v1/node/pool/batch', { Name: 'batch', NodeIdentityTTL: hours(2) })).status).toBe(200);
    expect((await mgmt('GET', '/v1/node/pool/batch')).body.NodeIdentityTTL).toBe(hours(2));
    const created = await mgmt('PUT', '/v1/node/pool/plain', { Name: 'plain' });
    const pool = (await mgmt('GET', '/v1/node/pool/plain')).body;
    expect(pool.NodeIdentityTTL).toBe(hours(24));
    const before = await index();
    const again = await mgmt('PUT', '/v1/node/pool/plain', { Name: 'plain', NodeIdentityTTL: '24h' });
    expect(again.headers.get('X-Nomad-Index')).toBe(created.headers.get('X-Nomad-Index'));
    expect(await index()).toBe(before);
    const changed = await mgmt('PUT', '/v1/node/pool/plain', { Name: 'plain', Description: 'now described' });
    expect((await mgmt('GET', '/v1/node/pool/plain')).body).toMatchObject({
      Description: 'now described',
      CreateIndex: pool.CreateIndex,
      ModifyIndex: Number(changed.headers.get('X-Nomad-Index')),
    });
  });

  it('refuses bad pools with a 400 that names the problem, and writes nothing', async () => {
    const before = await index();
    const refuse = async (path: string, body: unknown, pattern: RegExp, status = 400) => {
      const out = await mgmt('PUT', path, body);
      expect(out.status).toBe(status);
      expect(out.text).toMatch(pattern);
    };
    await refuse('/v1/node/pools', { Name: 'has space' }, /invalid node pool "has space": invalid name "has space"/);
    await refuse('/v1/node/pools', { Name: 'dot.name' }, /invalid name/);
    await refuse('/v1/node/pools', { Name: '' }, /invalid name ""/);
    await refuse('/v1/node/pools', {}, /invalid name ""/);
    await refuse('/v1/node/pools', { Name: 'x'.repeat(129) }, /invalid name/);
    await refuse('/v1/node/pools', { Name: 'long', Description: 'd'.repeat(257) }, /description longer than 256/);
    await refuse(
      '/v1/node/pools',
      { Name: 'two', Description: 'd'.repeat(257), SchedulerConfiguration: { SchedulerAlgorithm: 'random' } },
      /description longer than 256; invalid scheduler algorithm "random"/,
    );
    await refuse('/v1/node/pools', { Name: 'meta', Meta: { k: 'v'.repeat(70_000) } }, /Meta is 70001 bytes/);
    await refuse('/v1/node/pools', { Name: 'meta', Meta: { '': 'v' } }, /Meta keys must not be empty/);
    await refuse('/v1/node/pools', { Name: 'meta', Meta: { k: 1 } }, /Request decode failed: Meta.k/);
    await refuse('/v1/node/pools', { Name: 'ttl', NodeIdentityTTL: 'soon' }, /NodeIdentityTTL: time: invalid duration/);
    await refuse('/v1/node/pools', { Name: 'ttl', NodeIdentityTTL: -5 }, /NodeIdentityTTL: must be a duration from 0/);
    await refuse('/v1/node/pools', { Name: 'ttl', NodeIdentityTTL: '-1h' }, /NodeIdentityTTL/);
    // Past what a JSON (and DynamoDB) number holds exactly: refused, not a 500 from the store.
    await refuse(
      '/v1/node/pools',
      { Name: 'ttl', NodeIdentityTTL: '8760h' },
      /NodeIdentityTTL: must be a duration from 0 to 9007199254740991 nanoseconds/,
    );
    await refuse('/v1/node/pools', { Name: 'ttl', NodeIdentityTTL: 2 ** 60 }, /about 104 days/);
    await refuse('/v1/node/pools', '{"Name": ', /Request decode failed/);
    await refuse('/v1/node/pool/other', { Name: 'another' }, /^Node pool name does not match request path$/);
    await refuse('/v1/node/pools', { Name: 'default' }, /^modifying node pool "default" is not allowed$/);
    await refuse(
      '/v1/node/pool/all',
      { Name: 'all', Description: 'mine' },
      /^modifying node pool "all" is not allowed$/,
    );
    const deleteBuiltIn = await mgmt('DELETE', '/v1/node/pool/default');
    expect(deleteBuiltIn.status).toBe(400);
    expect(deleteBuiltIn.text).toBe('deleting node pool "default" is not allowed');
    expect(await index()).toBe(before);
    expect((await mgmt('GET', '/v1/node/pool/default')).body.Description).toBe('Default node pool.');
    expect(await storedPool('has space')).toBeUndefined();
  });

  it('deletes an unused pool with its event; 404 for none; 409 while a node or a live job uses it', async () => {
    await mgmt('PUT', '/v1/node/pools', { Name: 'temp' });
    const before = await index();
    const deleted = await mgmt('DELETE', '/v1/node/pool/temp');
    expect(deleted.status).toBe(200);
    expect(Number(deleted.headers.get('X-Nomad-Index'))).toBe(before + 1);
    expect(await storedPool('temp')).toBeUndefined();
    expect((await mgmt('GET', '/v1/node/pool/temp')).status).toBe(404);
    expect((await mgmt('GET', '/v1/node/pool/temp')).text).toBe('node pool not found');
    expect((await eventsSince(before)).map((event) => [event.Type, event.Key])).toEqual([['NodePoolDeleted', 'temp']]);
    const missing = await mgmt('DELETE', '/v1/node/pool/temp');
    expect(missing.status).toBe(404);
    expect(missing.text).toBe('node pool temp not found');

    await mgmt('PUT', '/v1/node/pools', { Name: 'busy' });
    await h.core.store.put({
      pk: jobPk('default'),
      sk: 'web',
      ID: 'web',
      Namespace: 'default',
      NodePool: 'busy',
      Status: 'running',
    });
    const inUse = await mgmt('DELETE', '/v1/node/pool/busy');
    expect(inUse.status).toBe(409);
    expect(inUse.text).toBe('node pool "busy" has non-terminal jobs');
    await h.core.store.put({
      pk: jobPk('default'),
      sk: 'web',
      ID: 'web',
      Namespace: 'default',
      NodePool: 'busy',
      Status: 'dead',
    });
    let nodes: string[] = ['node-1'];
    h.scheduler.nodePools.addUsageCheck(async (pool) =>
      pool === 'busy' && nodes.length > 0 ? `node pool "${pool}" has nodes` : undefined,
    );
    const withNodes = await mgmt('DELETE', '/v1/node/pool/busy');
    expect(withNodes.status).toBe(409);
    expect(withNodes.text).toBe('node pool "busy" has nodes');
    expect(await storedPool('busy')).toBeDefined();
    nodes = [];
    expect((await mgmt('DELETE', '/v1/node/pool/busy')).status).toBe(200);
    await h.core.store.delete({ pk: jobPk('default'), sk: 'web' });
  });

  it('lists with prefix, filter, pagination and reverse, as Nomad pages', async () => {
    for (const name of ['pg-a', 'pg-b', 'pg-c', 'pg-d'])
      await mgmt('PUT', '/v1/node/pools', { Name: name, Meta: { tier: name === 'pg-c' ? 'gold' : 'lead' } });
    const names = (body: Array<{ Name: string }>) => body.map((pool) => pool.Name);
    expect(names((await mgmt('GET', '/v1/node/pools?prefix=pg-')).body)).toEqual(['pg-a', 'pg-b', 'pg-c', 'pg-d']);
    const first = await mgmt('GET', '/v1/node/pools?prefix=pg-&per_page=2');
    expect(names(first.body)).toEqual(['pg-a', 'pg-b']);
    expect(first.headers.get('X-Nomad-NextToken')).toBe('pg-c');
    const second = await mgmt('GET', '/v1/node/pools?prefix=pg-&per_page=2&next_token=pg-c');
    expect(names(second.body)).toEqual(['pg-c', 'pg-d']);
    expect(second.headers.get('X-Nomad-NextToken')).toBeNull();
    expect(names((await mgmt('GET', '/v1/node/pools?prefix=pg-&reverse=true&per_page=3')).body)).toEqual([
      'pg-d',
      'pg-c',
      'pg-b',
    ]);
    const filtered = await mgmt('GET', `/v1/node/pools?filter=${encodeURIComponent('Meta.tier == "gold"')}`);
    expect(names(filtered.body)).toEqual(['pg-c']);
    const matching = await mgmt('GET', `/v1/node/pools?filter=${encodeURIComponent('Name matches "^pg-[ab]$"')}`);
    expect(names(matching.body)).toEqual(['pg-a', 'pg-b']);
    const bad = await mgmt('GET', `/v1/node/pools?filter=${encodeURIComponent('Name ==')}`);
    expect(bad.status).toBe(400);
    expect(bad.text).toMatch(/^failed to create result paginator: failed to read filter expression/);
    const perPage = await mgmt('GET', '/v1/node/pools?per_page=many');
    expect(perPage.status).toBe(400);
    expect(perPage.text).toBe('Expect a number for `per_page` query string parameter');
  });

  it('answers a blocking list when a pool changes', async () => {
    const now = Number((await mgmt('GET', '/v1/node/pools')).headers.get('X-Nomad-Index'));
    const waiting = mgmt('GET', `/v1/node/pools?index=${now}&wait=5s`);
    await mgmt('PUT', '/v1/node/pools', { Name: 'late' });
    const answer = await waiting;
    expect(Number(answer.headers.get('X-Nomad-Index'))).toBeGreaterThan(now);
    expect(answer.body.map((pool: { Name: string }) => pool.Name)).toContain('late');
  });

  it('lists a pool’s nodes and jobs: none until they exist, 400 for prefix', async () => {
    expect((await mgmt('GET', '/v1/node/pool/default/nodes')).body).toEqual([]);
    expect((await mgmt('GET', '/v1/node/pool/nowhere/nodes')).body).toEqual([]);
    expect((await mgmt('GET', '/v1/node/pool/default/jobs')).body).toEqual([]);
    const prefixed = await mgmt('GET', '/v1/node/pool/default/nodes?prefix=ab');
    expect(prefixed.status).toBe(400);
    expect(prefixed.text).toBe('prefix argument not allowed');
    expect((await mgmt('GET', '/v1/node/pool/default/jobs?prefix=ab')).text).toBe('prefix argument not allowed');

    h.scheduler.nodePools.listMembersWith(async (pool) =>
      pool === 'default'
        ? [
            { ID: 'b-node', NodePool: 'default' },
            { ID: 'a-node', NodePool: 'default' },
          ]
        : [],
    );
    expect((await mgmt('GET', '/v1/node/pool/default/nodes')).body.map((node: { ID: string }) => node.ID)).toEqual([
      'a-node',
      'b-node',
    ]);
    h.scheduler.nodePools.listMembersWith(async () => []);

    await h.core.store.put({
      pk: jobPk('default'),
      sk: 'api',
      ID: 'api',
      Name: 'api',
      Namespace: 'default',
      NodePool: 'late',
      Status: 'running',
      TaskGroups: [{ Name: 'not in a stub' }],
    });
    const jobs = await mgmt('GET', '/v1/node/pool/late/jobs');
    expect(jobs.body).toEqual([{ ID: 'api', Name: 'api', Namespace: 'default', NodePool: 'late', Status: 'running' }]);
    expect((await mgmt('GET', '/v1/node/pool/late/jobs?namespace=other')).body).toEqual([]);
    await h.core.store.delete({ pk: jobPk('default'), sk: 'api' });
  });

  it('creates a missing pool inside a registration’s own transaction (ensureWrite)', async () => {
    const before = await index();
    const written = await h.scheduler.state.commit(async (at) => {
      const { pool, creation } = await h.scheduler.nodePools.ensureWrite('auto-pool', at);
      expect(pool).toMatchObject({ Name: 'auto-pool', NodeIdentityTTL: hours(24), CreateIndex: at, ModifyIndex: at });
      return {
        items: creation?.items ?? [],
        tables: creation?.tables ?? [],
        events: creation?.events ?? [],
      };
    });
    expect(written).toBe(before + 1);
    expect((await mgmt('GET', '/v1/node/pool/auto-pool')).body).toMatchObject({
      Name: 'auto-pool',
      CreateIndex: written,
    });
    expect((await eventsSince(before)).map((event) => [event.Type, event.Key])).toEqual([
      ['NodeRegistration', 'auto-pool'],
    ]);
    await h.scheduler.state.commit(async (at) => {
      const { pool, creation } = await h.scheduler.nodePools.ensureWrite('auto-pool', at);
      expect(creation).toBeUndefined();
      expect(pool.CreateIndex).toBe(written);
      return undefined;
    });
    await h.scheduler.state.commit(async (at) => {
      expect((await h.scheduler.nodePools.ensureWrite('default', at)).creation).toBeUndefined();
      return undefined;
    });
  });
});
