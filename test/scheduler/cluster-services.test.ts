import { createHash, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allocationServicesRemoval } from '../../packages/core/src/scheduler/cluster/services/store.ts';
import { serviceAllocPk, servicePk } from '../../packages/core/src/scheduler/keys.ts';
import { allocationOf, applyPlan, ready, webJob } from '../support/cluster-allocations.ts';
import { nodeTokens, registerNode } from '../support/cluster-nodes.ts';
import { serviceRegistrationFields } from '../support/nomad-fields.ts';
import { type SchedulerHarness, startScheduler } from '../support/scheduler-harness.ts';

type Registered = Awaited<ReturnType<typeof registerNode>>;

/** A registration as the agent sends it for a task `server` of allocation `allocId` (Nomad's ID form). */
function registration(
  node: Registered['node'],
  allocId: string,
  name: string,
  overrides: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    ID: `_nomad-task-${allocId}-server-${name}-http`,
    ServiceName: name,
    Namespace: 'default',
    NodeID: node.ID,
    Datacenter: '',
    JobID: 'web',
    AllocID: allocId,
    Tags: ['http'],
    Address: '10.0.0.7',
    Port: 25_000,
    ...overrides,
  };
}

/** The rendezvous ranking as Nomad's `HashWith` defines it, written out here as the test's own oracle. */
function nomadRank(services: Array<Record<string, unknown>>, key: string): string[] {
  const hashOf = (service: Record<string, unknown>) => {
    const port = Buffer.alloc(8);
    port.writeBigUInt64BE(BigInt(service.Port as number));
    const hash = createHash('sha256').update(port);
    for (const part of [service.AllocID, service.ID, service.Namespace, service.Address, service.ServiceName])
      hash.update(part as string);
    for (const tag of (service.Tags as string[]) ?? []) hash.update(tag);
    return hash.update(key).digest('hex');
  };
  return services
    .map((service) => ({ id: service.ID as string, hash: hashOf(service) }))
    .sort((a, b) => (a.hash < b.hash ? -1 : a.hash > b.hash ? 1 : 0))
    .map((entry) => entry.id);
}

describe('cluster services: Nomad’s service discovery, registered by nodes (DynamoDB Local)', () => {
  let h: SchedulerHarness;
  let root: string;
  let writer: string;
  let a: Registered;
  let b: Registered;
  const mgmt = (method: string, path: string, body?: unknown) =>
    h.call(method, path, { token: root, ...(body === undefined ? {} : { body }) });
  const register = (node: Registered, services: Array<Record<string, unknown>>, token = node.node.SecretID) =>
    h.call('PUT', '/v1/client/services', { token, body: { Services: services } });
  const evals: Record<string, string> = {};
  /** An allocation of `job` placed on `node` through the plan apply; its ID. */
  async function placed(node: Registered, namespace = 'default', job = 'web'): Promise<string> {
    const key = `${namespace}/${job}`;
    if (!evals[key]) {
      const out = await mgmt('PUT', '/v1/jobs', { Job: webJob(job, { Namespace: namespace }) });
      expect(out.status).toBe(200);
      evals[key] = out.body.EvalID;
    }
    const alloc = await allocationOf(h, { namespace, id: job, evalId: evals[key] as string }, node.node);
    await applyPlan(h, { place: [alloc] });
    return alloc.ID;
  }

  beforeAll(async () => {
    h = await startScheduler();
    ({ root, writer } = await nodeTokens(h));
    expect((await mgmt('PUT', '/v1/namespace', { Name: 'prod' })).status).toBe(200);
    a = await registerNode(h, writer);
    b = await registerNode(h, writer, { Datacenter: 'dc2' });
    await ready(h, a.node);
    await ready(h, b.node);
  });
  afterAll(() => h.close());

  it('a node registers its services: one index, the registrations, their links and ServiceRegistration events', async () => {
    const alloc = await placed(a);
    const before = await h.scheduler.state.currentIndex();
    const stream = await h.open(`/v1/event/stream?topic=Service&index=${before}`, root);
    await stream.next();
    const sent = [
      registration(a.node, alloc, 'api', { Tags: ['http', 'v1', 'http'] }),
      registration(a.node, alloc, 'api-admin', { Port: 25_001, Tags: null }),
    ];
    const out = await register(a, sent);
    expect(out.status).toBe(200);
    const index = before + 1;
    expect(out.body).toEqual({ Index: index });
    expect(out.headers.get('X-Nomad-Index')).toBe(String(index));

    const read = await mgmt('GET', '/v1/service/api');
    expect(read.status).toBe(200);
    expect(read.headers.get('X-Nomad-Index')).toBe(String(index));
    expect(read.body).toEqual([
      {
        ID: `_nomad-task-${alloc}-server-api-http`,
        ServiceName: 'api',
        Namespace: 'default',
        NodeID: a.node.ID,
        // The node's own datacenter, filled in; the tags de-duplicated.
        Datacenter: 'dc1',
        JobID: 'web',
        AllocID: alloc,
        Tags: ['http', 'v1'],
        Address: '10.0.0.7',
        Port: 25_000,
        CreateIndex: index,
        ModifyIndex: index,
      },
    ]);
    expect((await mgmt('GET', '/v1/service/api-admin')).body[0]).toMatchObject({ Tags: null, Port: 25_001 });

    // The store: each registration signed in its namespace's partition, a link in its allocation's.
    expect((await h.core.store.list(servicePk('default'))).map((item) => item.sk)).toEqual([
      `api#_nomad-task-${alloc}-server-api-http`,
      `api-admin#_nomad-task-${alloc}-server-api-admin-http`,
    ]);
    expect(await h.core.store.list(serviceAllocPk(alloc))).toHaveLength(2);

    const batch = await stream.nextEvents();
    expect(batch.Index).toBe(index);
    expect(
      batch.Events.map((event: Record<string, unknown>) => [
        event.Topic,
        event.Type,
        event.Key,
        event.Namespace,
        event.FilterKeys,
      ]),
    ).toEqual([
      ['Service', 'ServiceRegistration', `_nomad-task-${alloc}-server-api-http`, 'default', ['web', 'api']],
      ['Service', 'ServiceRegistration', `_nomad-task-${alloc}-server-api-admin-http`, 'default', ['web', 'api-admin']],
    ]);
    expect(batch.Events[0].Payload.Service).toEqual(read.body[0]);
    await stream.close();
  });

  it('registering the same again writes nothing; a change keeps CreateIndex and moves ModifyIndex', async () => {
    const alloc = await placed(a);
    const first = await register(a, [registration(a.node, alloc, 'cache')], a.identity);
    expect(first.status).toBe(200);
    const again = await register(a, [registration(a.node, alloc, 'cache', { Tags: ['http', 'http'] })]);
    expect(again.status).toBe(200);
    expect(again.body.Index).toBe(first.body.Index);
    expect(await h.scheduler.state.currentIndex()).toBe(first.body.Index);

    const moved = await register(a, [registration(a.node, alloc, 'cache', { Port: 26_000 })]);
    expect(moved.body.Index).toBe(first.body.Index + 1);
    const [stored] = (await mgmt('GET', '/v1/service/cache')).body;
    expect(stored).toMatchObject({ Port: 26_000, CreateIndex: first.body.Index, ModifyIndex: moved.body.Index });
  });

  it('lists services per namespace with the union of their tags; namespace=* covers every namespace', async () => {
    const [web, store] = [await placed(b, 'prod', 'web'), await placed(b, 'prod', 'store')];
    expect(
      (
        await register(b, [
          registration(b.node, web, 'api', { Namespace: 'prod', Tags: ['blue'] }),
          registration(b.node, store, 'db', { Namespace: 'prod', Tags: ['primary', 'db'], JobID: 'store' }),
        ])
      ).status,
    ).toBe(200);
    const other = await placed(a);
    expect((await register(a, [registration(a.node, other, 'api', { Tags: ['v2', 'http'] })])).status).toBe(200);

    const list = await mgmt('GET', '/v1/services');
    expect(list.status).toBe(200);
    expect(list.headers.get('X-Nomad-Index')).toBe(
      String(await h.scheduler.state.tableIndex(['service_registrations'])),
    );
    expect(list.body).toEqual([
      {
        Namespace: 'default',
        Services: [
          { ServiceName: 'api', Tags: ['http', 'v1', 'v2'] },
          { ServiceName: 'api-admin', Tags: [] },
          { ServiceName: 'cache', Tags: ['http'] },
        ],
      },
    ]);
    const all = await mgmt('GET', '/v1/services?namespace=*');
    expect(all.body.map((entry: { Namespace: string }) => entry.Namespace)).toEqual(['default', 'prod']);
    expect(all.body[1]).toEqual({
      Namespace: 'prod',
      Services: [
        { ServiceName: 'api', Tags: ['blue'] },
        { ServiceName: 'db', Tags: ['db', 'primary'] },
      ],
    });
    const filtered = await mgmt('GET', `/v1/services?namespace=*&filter=${encodeURIComponent('"db" in Tags')}`);
    expect(filtered.body).toEqual([{ Namespace: 'prod', Services: [{ ServiceName: 'db', Tags: ['db', 'primary'] }] }]);
    // A namespace with no registrations (or none at all) is an empty list, as Nomad answers it.
    await mgmt('PUT', '/v1/namespace', { Name: 'empty' });
    expect((await mgmt('GET', '/v1/services?namespace=empty')).body).toEqual([]);
    expect((await mgmt('GET', '/v1/service/nothing-here')).body).toEqual([]);
    expect((await mgmt('GET', '/v1/services?filter=Tags%20%3D%3D')).status).toBe(400);
  });

  it('reads a service by tag (filter), in pages, and picks instances with choose as Nomad’s rendezvous hashing', async () => {
    const sent: Array<Record<string, unknown>> = [];
    for (let n = 0; n < 5; n++)
      sent.push(
        registration(a.node, await placed(a), 'pool', { Port: 27_000 + n, Tags: n % 2 === 0 ? ['even'] : ['odd'] }),
      );
    expect((await register(a, sent)).status).toBe(200);
    const ids = sent.map((service) => service.ID as string).sort();
    const all = await mgmt('GET', '/v1/service/pool');
    expect(all.body.map((service: { ID: string }) => service.ID)).toEqual(ids);

    const even = await mgmt('GET', `/v1/service/pool?filter=${encodeURIComponent('"even" in Tags')}`);
    expect(even.body.map((service: { Port: number }) => service.Port).sort()).toEqual([27_000, 27_002, 27_004]);

    const page = await mgmt('GET', '/v1/service/pool?per_page=2');
    expect(page.body.map((service: { ID: string }) => service.ID)).toEqual(ids.slice(0, 2));
    expect(page.headers.get('X-Nomad-NextToken')).toBe(`default.${ids[2]}`);
    const rest = await mgmt('GET', `/v1/service/pool?per_page=2&next_token=default.${ids[4]}`);
    expect(rest.body.map((service: { ID: string }) => service.ID)).toEqual([ids[4]]);

    const stored = all.body as Array<Record<string, unknown>>;
    for (const key of ['alloc-1', 'alloc-2', 'some other key']) {
      const chosen = await mgmt('GET', `/v1/service/pool?choose=${encodeURIComponent(`2|${key}`)}`);
      expect(chosen.status).toBe(200);
      expect(chosen.body.map((service: { ID: string }) => service.ID)).toEqual(nomadRank(stored, key).slice(0, 2));
      // The same key picks the same instances every time.
      expect((await mgmt('GET', `/v1/service/pool?choose=${encodeURIComponent(`2|${key}`)}`)).body).toEqual(
        chosen.body,
      );
    }
    expect((await mgmt('GET', '/v1/service/pool?choose=9%7Ck')).body).toHaveLength(5);
    expect((await mgmt('GET', '/v1/service/pool?choose=0%7Ck')).body).toEqual([]);
    for (const bad of ['2', 'x|key', '2|', '-1|key']) {
      const refused = await mgmt('GET', `/v1/service/pool?choose=${encodeURIComponent(bad)}`);
      expect(refused.status, bad).toBe(400);
      expect(refused.text).toBe("failed to choose services: Parameter for choose must be in form '<number>|<key>'");
    }
  });

  it('deletes by ID with submit-job (empty answer) and by the node itself, each with a ServiceDeregistration event', async () => {
    const alloc = await placed(a);
    const [one, two] = [registration(a.node, alloc, 'gone'), registration(a.node, alloc, 'gone-too')];
    await register(a, [one as Record<string, unknown>, two as Record<string, unknown>]);
    const before = await h.scheduler.state.currentIndex();
    const stream = await h.open(`/v1/event/stream?topic=Service:web&index=${before}`, root);
    await stream.next();

    const deleted = await mgmt('DELETE', `/v1/service/gone/${encodeURIComponent(one?.ID as string)}`);
    expect(deleted.status).toBe(200);
    expect(deleted.text).toBe('');
    expect(deleted.headers.get('X-Nomad-Index')).toBe(String(before + 1));
    expect((await mgmt('GET', '/v1/service/gone')).body).toEqual([]);
    const first = await stream.nextEvents();
    expect(first.Events[0]).toMatchObject({
      Topic: 'Service',
      Type: 'ServiceDeregistration',
      Key: one?.ID,
      FilterKeys: ['web', 'gone'],
      Payload: { Service: { ID: one?.ID, AllocID: alloc } },
    });
    const missing = await mgmt('DELETE', `/v1/service/gone/${encodeURIComponent(one?.ID as string)}`);
    expect(missing.status).toBe(404);
    expect(missing.text).toBe('service registration not found');
    // Found by ID in the request's namespace only.
    expect((await mgmt('DELETE', `/v1/service/x/${encodeURIComponent(two?.ID as string)}?namespace=prod`)).status).toBe(
      404,
    );

    const own = await h.call('DELETE', `/v1/client/service/${encodeURIComponent(two?.ID as string)}`, {
      token: a.identity,
    });
    expect(own.status).toBe(200);
    expect(own.body).toEqual({ Index: before + 2 });
    expect((await stream.nextEvents()).Events[0]).toMatchObject({ Type: 'ServiceDeregistration', Key: two?.ID });
    expect(await h.core.store.list(serviceAllocPk(alloc))).toEqual([]);
    const again = await h.call('DELETE', `/v1/client/service/${encodeURIComponent(two?.ID as string)}`, {
      token: a.node.SecretID,
    });
    expect(again.status).toBe(404);
    await stream.close();
  });

  it('an allocation reported terminal takes its registrations with it, in its own write and typed as it', async () => {
    const alloc = await placed(a);
    await register(a, [registration(a.node, alloc, 'ending'), registration(a.node, alloc, 'ending-admin')]);
    const kept = await placed(a);
    await register(a, [registration(a.node, kept, 'ending')]);
    const report = await h.call('PUT', `/v1/client/node/${a.node.ID}/allocations`, {
      token: a.node.SecretID,
      body: { Allocs: [{ ID: alloc, ClientStatus: 'complete', ClientDescription: 'All tasks have completed' }] },
    });
    expect(report.status).toBe(200);
    const index = report.body.Index;
    const [batch] = await h.scheduler.state.eventsAfter(index - 1);
    expect(batch?.index).toBe(index);
    expect(
      batch?.events.filter((event) => event.Topic === 'Service').map((event) => [event.Topic, event.Type, event.Key]),
    ).toEqual([
      // In ID order.
      ['Service', 'AllocationUpdated', `_nomad-task-${alloc}-server-ending-admin-http`],
      ['Service', 'AllocationUpdated', `_nomad-task-${alloc}-server-ending-http`],
    ]);
    expect(await h.scheduler.state.tableIndex(['service_registrations'])).toBe(index);
    expect(
      (await mgmt('GET', '/v1/service/ending')).body.map((service: { AllocID: string }) => service.AllocID),
    ).toEqual([kept]);
    expect(await h.core.store.list(serviceAllocPk(alloc))).toEqual([]);
    // The agent's own deregistration afterwards finds nothing; registering again for the finished allocation is refused.
    const late = await h.call('DELETE', `/v1/client/service/_nomad-task-${alloc}-server-ending-http`, {
      token: a.node.SecretID,
    });
    expect(late.status).toBe(404);
    const again = await register(a, [registration(a.node, alloc, 'ending')]);
    expect(again.status).toBe(400);
    expect(again.text).toContain(`allocation ${alloc} is complete; its services are not registered`);
    // The removal is what the allocation store's write carries: nothing for an allocation without registrations.
    expect(await allocationServicesRemoval(h.core.store, randomUUID(), 'AllocationUpdated')).toEqual({
      items: [],
      events: [],
      tables: [],
    });
  });

  it('serves a job’s registrations at /v1/job/:id/services, 404 for a job that does not exist', async () => {
    const job = {
      ID: 'shop',
      TaskGroups: [{ Name: 'web', Tasks: [{ Name: 'server', Driver: 'raw_exec', Config: { command: 'python3' } }] }],
    };
    expect((await mgmt('PUT', '/v1/jobs', { Job: job })).status).toBe(200);
    const alloc = await placed(a, 'default', 'shop');
    await register(a, [
      registration(a.node, alloc, 'shop-web', { JobID: 'shop' }),
      registration(a.node, alloc, 'shop-admin', { JobID: 'shop' }),
    ]);
    const out = await mgmt('GET', '/v1/job/shop/services');
    expect(out.status).toBe(200);
    expect(out.headers.get('X-Nomad-Index')).toBe(
      String(await h.scheduler.state.tableIndex(['service_registrations'])),
    );
    expect(
      out.body.map((service: { JobID: string; ServiceName: string }) => [service.JobID, service.ServiceName]),
    ).toEqual([
      ['shop', 'shop-admin'],
      ['shop', 'shop-web'],
    ]);
    const missing = await mgmt('GET', '/v1/job/nope/services');
    expect(missing.status).toBe(404);
    expect(missing.text).toBe('job not found');

    // The allocation's own registrations (Nomad's GET /v1/allocation/:id/services), in full, sorted by ID.
    const ofAlloc = await mgmt('GET', `/v1/allocation/${alloc}/services`);
    expect(ofAlloc.status).toBe(200);
    expect(ofAlloc.headers.get('X-Nomad-Index')).toBe(
      String(await h.scheduler.state.tableIndex(['service_registrations'])),
    );
    expect(ofAlloc.body).toEqual([...out.body].sort((x: { ID: string }, y: { ID: string }) => (x.ID < y.ID ? -1 : 1)));
    expect(Object.keys(ofAlloc.body[0]).sort()).toEqual(serviceRegistrationFields);
    // None registered: an empty list. Unknown, or asked in another namespace: Nomad's 404.
    const bare = await placed(a, 'default', 'shop');
    expect((await mgmt('GET', `/v1/allocation/${bare}/services`)).body).toEqual([]);
    for (const path of [`/v1/allocation/${randomUUID()}/services`, `/v1/allocation/${alloc}/services?namespace=prod`]) {
      const out404 = await mgmt('GET', path);
      expect([out404.status, out404.text], path).toEqual([404, 'allocation not found']);
    }
  });

  it('a blocking read of a service wakes when a registration lands', async () => {
    const index = await h.scheduler.state.tableIndex(['service_registrations']);
    const blocked = mgmt('GET', `/v1/service/late?index=${index}&wait=10s`);
    const alloc = await placed(a);
    await new Promise((resolve) => setTimeout(resolve, 150));
    const out = await register(a, [registration(a.node, alloc, 'late')]);
    const woken = await blocked;
    expect(woken.status).toBe(200);
    expect(woken.body.map((service: { AllocID: string }) => service.AllocID)).toEqual([alloc]);
    expect(woken.headers.get('X-Nomad-Index')).toBe(String(out.body.Index));
    const list = mgmt('GET', `/v1/services?index=${out.body.Index}&wait=10s`);
    await new Promise((resolve) => setTimeout(resolve, 150));
    await h.call('DELETE', `/v1/client/service/${encodeURIComponent(`_nomad-task-${alloc}-server-late-http`)}`, {
      token: a.node.SecretID,
    });
    const listed = await list;
    expect(Number(listed.headers.get('X-Nomad-Index'))).toBeGreaterThan(out.body.Index);
    expect(listed.body[0].Services.map((service: { ServiceName: string }) => service.ServiceName)).not.toContain(
      'late',
    );
  });

  it('refuses bad registrations with a 400 naming each problem, writing nothing', async () => {
    const alloc = await placed(a);
    const theirs = await placed(b);
    const before = await h.scheduler.state.currentIndex();
    const cases: Array<[unknown, string]> = [
      [[], 'Services must hold at least one registration'],
      [[registration(a.node, alloc, 'x', { Address: '0.0.0.0' })], 'invalid service registration address'],
      [[registration(a.node, alloc, 'bad_name')], 'invalid service name "bad_name"'],
      [[registration(a.node, alloc, 'x', { AllocID: randomUUID() })], 'ID must start with "_nomad-task-'],
      [[registration(a.node, alloc, 'x', { Port: 70_000 })], 'invalid port 70000'],
      [[registration(a.node, alloc, 'x', { Datacenter: 'dc9' })], 'is not the node\'s datacenter "dc1"'],
      [
        [registration(a.node, alloc, 'x', { Namespace: 'prod' })],
        'Namespace "prod" is not its allocation\'s "default"',
      ],
      [[registration(a.node, alloc, 'x', { JobID: 'shop' })], 'JobID "shop" is not its allocation\'s "web"'],
      [[registration(a.node, alloc, 'x'), registration(a.node, alloc, 'x')], 'registered twice in one call'],
      [
        Array.from({ length: 33 }, (_, n) => registration(a.node, alloc, `s${n}`)),
        'at most 32 services may be registered in one call, not 33',
      ],
      [[{ ...registration(a.node, alloc, 'x'), Port: 'eighty' }], 'Services.0.Port'],
    ];
    for (const [services, message] of cases) {
      const out = await register(a, services as Array<Record<string, unknown>>);
      expect(out.status, message).toBe(400);
      expect(out.text).toContain(message);
    }
    const unknown = randomUUID();
    const missing = await register(a, [registration(a.node, unknown, 'x', { AllocID: unknown })]);
    expect(missing.status).toBe(404);
    expect(missing.text).toBe('alloc not found');
    const foreign = await register(a, [registration(a.node, theirs, 'x')]);
    expect(foreign.status).toBe(403);
    const two = await register(a, [
      registration(a.node, alloc, 'x', { Address: '::' }),
      registration(a.node, alloc, 'y', { Port: -1 }),
    ]);
    expect(two.text).toMatch(
      /^2 errors occurred:\n\t\* service 0 .*invalid service registration address\n\t\* service 1 /,
    );
    expect(await h.scheduler.state.currentIndex()).toBe(before);
    expect(await h.core.store.list(serviceAllocPk(alloc))).toEqual([]);
  });
});
