import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allocationOfItem } from '../../packages/core/src/scheduler/cluster/allocations/item-form.ts';
import { Allocations } from '../../packages/core/src/scheduler/cluster/allocations/store.ts';
import { allocationOf, applyPlan, readyNodes, webJob } from '../support/cluster-allocations.ts';
import { nodeTokens, type registerNode } from '../support/cluster-nodes.ts';
import { type SchedulerHarness, startScheduler } from '../support/scheduler-harness.ts';

type Registered = Awaited<ReturnType<typeof registerNode>>['node'];

describe('cluster allocations: the store, the public routes and the client protocol (DynamoDB Local)', () => {
  let h: SchedulerHarness;
  let root: string;
  let nodeA: Registered;
  let nodeB: Registered;
  let evalId: string;
  const mgmt = (method: string, path: string, body?: unknown) =>
    h.call(method, path, { token: root, ...(body === undefined ? {} : { body }) });

  const eventsSince = async (index: number) =>
    (await h.scheduler.state.eventsAfter(index - 1)).flatMap((batch) => batch.events);

  beforeAll(async () => {
    h = await startScheduler();
    const tokens = await nodeTokens(h);
    root = tokens.root;
    [nodeA, nodeB] = await readyNodes(h, tokens.writer, {}, {});
    expect((await mgmt('PUT', '/v1/namespace', { Name: 'prod' })).status).toBe(200);
    const out = await mgmt('PUT', '/v1/jobs', { Job: webJob('web') });
    expect(out.status).toBe(200);
    evalId = out.body.EvalID;
  });
  afterAll(() => h.close());

  it('places allocations in one write: the allocation, its links and the node’s AllocIndex, with PlanResult events', async () => {
    const first = await allocationOf(h, { id: 'web', evalId }, nodeA, 0);
    const second = await allocationOf(h, { id: 'web', evalId }, nodeA, 1);
    const applied = await applyPlan(h, { place: [first, second] });
    expect(applied.rejectedNodes.size).toBe(0);
    expect(applied.placed.map((alloc) => alloc.ID)).toEqual([first.ID, second.ID]);
    const index = applied.index;

    // The store: the node's partition holds the allocations without their job (the compact item of
    // `allocations/item-form.ts`, which reads back with Job null), the links find them by job and ID.
    const item = await h.scheduler.state.store.get(Allocations.key(nodeA.ID, first.ID).pk, first.ID);
    expect(item).not.toHaveProperty('Job');
    expect(item && allocationOfItem(item)).toMatchObject({
      ID: first.ID,
      Job: null,
      CreateIndex: index,
      AllocModifyIndex: index,
    });
    expect((await h.scheduler.allocations.ofJob('default', 'web')).map((alloc) => alloc.ID).sort()).toEqual(
      [first.ID, second.ID].sort(),
    );
    expect((await h.scheduler.nodes.beat(nodeA.ID))?.allocIndex).toBe(index);
    expect((await h.scheduler.nodes.beat(nodeB.ID))?.allocIndex).toBeUndefined();

    const events = await eventsSince(index);
    expect(events.filter((event) => event.Index === index)).toEqual([
      expect.objectContaining({
        Topic: 'Allocation',
        Type: 'PlanResult',
        Key: first.ID,
        Namespace: 'default',
        FilterKeys: ['web', ''],
        Payload: { Allocation: expect.objectContaining({ ID: first.ID, ClientStatus: 'pending' }) },
      }),
      expect.objectContaining({ Topic: 'Allocation', Type: 'PlanResult', Key: second.ID }),
    ]);
    // Nomad's Allocation events carry no job: nil, and left out by the omitempty encoding.
    expect(events.find((event) => event.Key === first.ID)?.Payload).not.toHaveProperty('Allocation.Job');
    expect(JSON.stringify(events)).not.toContain('"JobType"');

    // The heartbeat announces the node's allocation index; the map holds both, node B's none.
    const beat = await h.call('PUT', `/v1/client/node/${nodeA.ID}/status`, {
      token: nodeA.SecretID,
      body: { Status: 'ready' },
    });
    expect(beat.body.AllocIndex).toBe(index);
    const map = await h.call('GET', `/v1/client/node/${nodeA.ID}/allocations`, { token: nodeA.SecretID });
    expect(map.status).toBe(200);
    expect(map.body.Allocs).toEqual({ [first.ID]: index, [second.ID]: index });
    expect(map.body.Index).toBeGreaterThanOrEqual(index);
    const other = await h.call('GET', `/v1/client/node/${nodeB.ID}/allocations`, { token: nodeB.SecretID });
    expect(other.body.Allocs).toEqual({});
  });

  it('lists allocations as Nomad’s AllocListStub, by namespace, prefix, filter, task_states and resources', async () => {
    const list = await mgmt('GET', '/v1/allocations');
    expect(list.status).toBe(200);
    expect(list.headers.get('X-Nomad-Index')).toMatch(/^\d+$/);
    expect(list.body).toHaveLength(2);
    const [stub] = list.body;
    expect(Object.keys(stub).sort()).toEqual(
      [
        'ID',
        'EvalID',
        'Name',
        'Namespace',
        'NodeID',
        'NodeName',
        'JobID',
        'JobType',
        'JobVersion',
        'TaskGroup',
        'DesiredStatus',
        'DesiredDescription',
        'ClientStatus',
        'ClientDescription',
        'DesiredTransition',
        'TaskStates',
        'DeploymentStatus',
        'FollowupEvalID',
        'NextAllocation',
        'RescheduleTracker',
        'PreemptedAllocations',
        'PreemptedByAllocation',
        'CreateIndex',
        'ModifyIndex',
        'CreateTime',
        'ModifyTime',
      ].sort(),
    );
    expect(stub).toMatchObject({ JobID: 'web', JobType: 'service', JobVersion: 0, NodeID: nodeA.ID, EvalID: evalId });

    const withResources = await mgmt('GET', '/v1/allocations?resources=true&task_states=false');
    expect(withResources.body[0].AllocatedResources.Tasks.server.Cpu.CpuShares).toBe(500);
    expect(withResources.body[0].TaskStates).toBeNull();

    const prefix = stub.ID.slice(0, 6);
    const byPrefix = await mgmt('GET', `/v1/allocations?prefix=${prefix}`);
    expect(byPrefix.body.map((alloc: { ID: string }) => alloc.ID)).toEqual([stub.ID]);
    const filtered = await mgmt('GET', `/v1/allocations?filter=${encodeURIComponent('Name == "web.web[1]"')}`);
    expect(filtered.body.map((alloc: { Name: string }) => alloc.Name)).toEqual(['web.web[1]']);
    expect((await mgmt('GET', '/v1/allocations?namespace=prod')).body).toEqual([]);
    expect((await mgmt('GET', '/v1/allocations?namespace=*')).body).toHaveLength(2);
    const paged = await mgmt('GET', '/v1/allocations?per_page=1');
    expect(paged.body).toHaveLength(1);
    expect(paged.headers.get('X-Nomad-NextToken')).toBe(list.body[1].ID);

    expect((await mgmt('GET', '/v1/job/web/allocations')).body.map((alloc: { ID: string }) => alloc.ID)).toEqual(
      list.body.map((alloc: { ID: string }) => alloc.ID),
    );
    expect((await mgmt('GET', `/v1/evaluation/${evalId}/allocations`)).body).toHaveLength(2);
    const onNode = await mgmt('GET', `/v1/node/${nodeA.ID}/allocations`);
    expect(onNode.body).toHaveLength(2);
    expect(onNode.body[0].Job).toMatchObject({ ID: 'web', Version: 0 });
    expect((await mgmt('GET', `/v1/node/${nodeB.ID}/allocations`)).body).toEqual([]);
  });

  it('reads an allocation with its job rehydrated at its version, after the job moved on', async () => {
    const [alloc] = (await mgmt('GET', '/v1/allocations')).body;
    const changed = webJob('web', { Meta: { release: '2' } });
    expect((await mgmt('PUT', '/v1/job/web', { Job: changed })).status).toBe(200);
    expect((await mgmt('GET', '/v1/job/web')).body.Version).toBe(1);
    const out = await mgmt('GET', `/v1/allocation/${alloc.ID}`);
    expect(out.status).toBe(200);
    expect(out.body).toMatchObject({ ID: alloc.ID, JobVersion: 0, Job: { ID: 'web', Version: 0, Meta: null } });
    expect(out.body.JobType).toBeUndefined();
    expect((await mgmt('GET', '/v1/allocation/00000000-0000-0000-0000-000000000000')).status).toBe(404);
    expect((await mgmt('GET', '/v1/allocation/00000000-0000-0000-0000-000000000000')).text).toBe('alloc not found');
  });

  it('gives a node its own allocation in full, and refuses another node’s (403) or a missing one (404)', async () => {
    const [alloc] = (await mgmt('GET', '/v1/allocations')).body;
    const own = await h.call('GET', `/v1/client/allocation/${alloc.ID}`, { token: nodeA.SecretID });
    expect(own.status).toBe(200);
    expect(own.body).toMatchObject({ ID: alloc.ID, NodeID: nodeA.ID, Job: { ID: 'web', Version: 0 } });
    expect(own.headers.get('X-Nomad-Index')).toMatch(/^\d+$/);
    const foreign = await h.call('GET', `/v1/client/allocation/${alloc.ID}`, { token: nodeB.SecretID });
    expect(foreign.status).toBe(403);
    expect(foreign.text).toBe('Permission denied');
    const missing = await h.call('GET', '/v1/client/allocation/00000000-0000-4000-8000-000000000000', {
      token: nodeA.SecretID,
    });
    expect(missing.status).toBe(404);
    expect(missing.text).toBe('alloc not found');
    expect((await h.call('GET', `/v1/client/allocation/${alloc.ID}`)).status).toBe(403);
  });

  it('takes a node’s report: client fields only, one index, AllocationUpdated, AllocIndex unmoved', async () => {
    const allocs = (await mgmt('GET', '/v1/allocations')).body;
    const beatBefore = (await h.scheduler.nodes.beat(nodeA.ID))?.allocIndex;
    const out = await h.call('PUT', `/v1/client/node/${nodeA.ID}/allocations`, {
      token: nodeA.SecretID,
      body: {
        Allocs: allocs.map((alloc: { ID: string }) => ({
          ID: alloc.ID,
          ClientStatus: 'running',
          ClientDescription: 'Tasks are running',
          DesiredStatus: 'stop',
          NodeID: nodeB.ID,
          TaskStates: {
            server: {
              State: 'running',
              StartedAt: '2026-01-01T00:00:01Z',
              Events: Array.from({ length: 12 }, (_, n) => ({ Type: 'Started', Time: n, Message: `event ${n}` })),
            },
          },
        })),
      },
    });
    expect(out.status).toBe(200);
    const index = out.body.Index;
    expect(out.headers.get('X-Nomad-Index')).toBe(String(index));
    const stored = await h.scheduler.allocations.get(allocs[0].ID);
    expect(stored).toMatchObject({
      ClientStatus: 'running',
      ClientDescription: 'Tasks are running',
      DesiredStatus: 'run',
      NodeID: nodeA.ID,
      ModifyIndex: index,
    });
    expect(stored?.AllocModifyIndex).toBeLessThan(index);
    expect(stored?.TaskStates?.server?.Events?.map((event) => event.Message)).toEqual(
      Array.from({ length: 10 }, (_, n) => `event ${n + 2}`),
    );
    expect(stored?.TaskStates?.server).toMatchObject({ State: 'running', Failed: false, Restarts: 0 });
    expect((await h.scheduler.nodes.beat(nodeA.ID))?.allocIndex).toBe(beatBefore);
    const events = (await eventsSince(index)).filter((event) => event.Index === index);
    // Nomad's UpdateAllocsFromClient sets the job's status in the same write: running allocations make the pending
    // job (its allocations were placed by hand here, so no evaluation outcome set it) running.
    expect(events.map((event) => [event.Topic, event.Type, event.Key, event.Namespace, event.FilterKeys])).toEqual([
      ...allocs.map((alloc: { ID: string }) => ['Allocation', 'AllocationUpdated', alloc.ID, 'default', ['web', '']]),
      ['Job', 'AllocationUpdated', 'web', 'default', null],
    ]);
    expect(events.at(-1)?.Payload.Job).toMatchObject({ ID: 'web', Status: 'running', ModifyIndex: index });
    expect((await mgmt('GET', '/v1/job/web')).body.Status).toBe('running');

    // The same report again changes nothing: no write.
    const again = await h.call('PUT', `/v1/client/node/${nodeA.ID}/allocations`, {
      token: nodeA.SecretID,
      body: { Allocs: [{ ID: allocs[0].ID, ClientStatus: 'running', ClientDescription: 'Tasks are running' }] },
    });
    expect(again.status).toBe(200);
    expect(await h.scheduler.state.currentIndex()).toBe(index);
  });

  it('a failed allocation creates an alloc-failure evaluation; a terminal status never goes back', async () => {
    const [alloc] = (await mgmt('GET', '/v1/allocations')).body;
    // A service the allocation registered goes in the same write (Nomad's deregisterServicesForTerminalAllocs).
    const serviceId = `_nomad-task-${alloc.ID}-server-web-http`;
    const registered = await h.call('PUT', '/v1/client/services', {
      token: nodeA.SecretID,
      body: {
        Services: [
          {
            ID: serviceId,
            ServiceName: 'web',
            Namespace: 'default',
            NodeID: nodeA.ID,
            Datacenter: '',
            JobID: 'web',
            AllocID: alloc.ID,
            Tags: [],
            Address: '10.0.0.7',
            Port: 25_000,
          },
        ],
      },
    });
    expect(registered.status).toBe(200);
    expect((await mgmt('GET', '/v1/service/web')).body).toHaveLength(1);
    const out = await h.call('PUT', `/v1/client/node/${nodeA.ID}/allocations`, {
      token: nodeA.SecretID,
      body: { Allocs: [{ ID: alloc.ID, ClientStatus: 'failed', ClientDescription: 'Failed tasks' }] },
    });
    expect(out.status).toBe(200);
    const index = out.body.Index;
    const events = (await eventsSince(index)).filter((event) => event.Index === index);
    expect(events.map((event) => [event.Topic, event.Type, event.Key])).toEqual([
      ['Allocation', 'AllocationUpdated', alloc.ID],
      ['Service', 'AllocationUpdated', serviceId],
      ['Evaluation', 'AllocationUpdated', expect.any(String)],
    ]);
    expect((await mgmt('GET', '/v1/service/web')).body).toEqual([]);
    const evaluation = events[2]?.Payload.Evaluation as Record<string, unknown>;
    expect(evaluation).toMatchObject({
      TriggeredBy: 'alloc-failure',
      JobID: 'web',
      Status: 'pending',
      Type: 'service',
      CreateIndex: index,
    });
    expect((await mgmt('GET', `/v1/evaluation/${evaluation.ID}`)).body.TriggeredBy).toBe('alloc-failure');

    const back = await h.call('PUT', `/v1/client/node/${nodeA.ID}/allocations`, {
      token: nodeA.SecretID,
      body: { Allocs: [{ ID: alloc.ID, ClientStatus: 'running' }] },
    });
    expect(back.status).toBe(200);
    expect((await h.scheduler.allocations.get(alloc.ID))?.ClientStatus).toBe('failed');
    // A failed allocation is no longer in the node's map.
    const map = await h.call('GET', `/v1/client/node/${nodeA.ID}/allocations`, { token: nodeA.SecretID });
    expect(Object.keys(map.body.Allocs)).not.toContain(alloc.ID);
  });

  it('refuses bad reports with a 400 naming what is wrong, and writes nothing', async () => {
    const [, alloc] = (await mgmt('GET', '/v1/allocations')).body;
    const before = await h.scheduler.state.currentIndex();
    const send = (body: unknown) =>
      h.call('PUT', `/v1/client/node/${nodeA.ID}/allocations`, { token: nodeA.SecretID, body });
    const status = await send({ Allocs: [{ ID: alloc.ID, ClientStatus: 'exploded' }] });
    expect(status.status).toBe(400);
    expect(status.text).toContain('ClientStatus');
    const empty = await send({ Allocs: [] });
    expect(empty.status).toBe(400);
    expect(empty.text).toBe('must update at least one allocation');
    const state = await send({
      Allocs: [{ ID: alloc.ID, ClientStatus: 'running', TaskStates: { s: { State: 'x' } } }],
    });
    expect(state.status).toBe(400);
    expect(state.text).toContain('State');
    const many = await send({
      Allocs: Array.from({ length: 26 }, () => ({ ID: alloc.ID, ClientStatus: 'running' })),
    });
    expect(many.status).toBe(400);
    expect(many.text).toContain('at most 25');
    const huge = await send({
      Allocs: [{ ID: alloc.ID, ClientStatus: 'running', ClientDescription: 'x'.repeat(5000) }],
    });
    expect(huge.status).toBe(400);
    expect(await h.scheduler.state.currentIndex()).toBe(before);
  });

  it('stops an allocation: DesiredTransition.Migrate, an alloc-stop evaluation, AllocationUpdateDesiredStatus', async () => {
    const [, alloc] = (await mgmt('GET', '/v1/allocations')).body;
    const out = await mgmt('PUT', `/v1/allocation/${alloc.ID}/stop`);
    expect(out.status).toBe(200);
    expect(out.body).toEqual({ EvalID: expect.stringMatching(/^[0-9a-f-]{36}$/), Index: expect.any(Number) });
    const index = out.body.Index;
    expect(out.headers.get('X-Nomad-Index')).toBe(String(index));
    const stored = await h.scheduler.allocations.get(alloc.ID);
    expect(stored?.DesiredTransition).toMatchObject({ Migrate: true, NoShutdownDelay: false });
    expect(stored?.ModifyIndex).toBe(index);
    const evaluation = await mgmt('GET', `/v1/evaluation/${out.body.EvalID}`);
    expect(evaluation.body).toMatchObject({
      TriggeredBy: 'alloc-stop',
      JobID: 'web',
      Status: 'pending',
      Type: 'service',
    });
    const events = (await eventsSince(index)).filter((event) => event.Index === index);
    expect(events.map((event) => [event.Topic, event.Type, event.Key])).toEqual([
      ['Allocation', 'AllocationUpdateDesiredStatus', alloc.ID],
      ['Evaluation', 'AllocationUpdateDesiredStatus', out.body.EvalID],
    ]);
    expect((await mgmt('POST', '/v1/allocation/00000000-0000-4000-8000-000000000000/stop')).status).toBe(404);
  });

  it('plan apply leaves out a node whose allocations changed since the plan was computed', async () => {
    const versions = new Map([
      [nodeA.ID, (await h.scheduler.nodes.beat(nodeA.ID))?.allocIndex ?? 0],
      [nodeB.ID, 0],
    ]);
    // Another evaluation places on node A first.
    const first = await applyPlan(h, { place: [await allocationOf(h, { id: 'web', evalId }, nodeA, 5)] });
    expect(first.rejectedNodes.size).toBe(0);
    const stale = await allocationOf(h, { id: 'web', evalId }, nodeA, 6);
    const fresh = await allocationOf(h, { id: 'web', evalId }, nodeB, 7);
    const second = await applyPlan(h, { place: [stale, fresh], nodeVersions: versions });
    expect([...second.rejectedNodes]).toEqual([nodeA.ID]);
    expect(second.placed.map((alloc) => alloc.ID)).toEqual([fresh.ID]);
    expect(await h.scheduler.allocations.get(stale.ID)).toBeUndefined();
    expect((await h.scheduler.allocations.get(fresh.ID))?.NodeID).toBe(nodeB.ID);
    expect((await h.scheduler.nodes.beat(nodeB.ID))?.allocIndex).toBe(second.index);
    expect((await h.scheduler.nodes.beat(nodeA.ID))?.allocIndex).toBe(first.index);
  });

  it('writes a plan larger than one transaction as several, each node with its beat', async () => {
    const many = await Promise.all(
      Array.from({ length: 70 }, (_, n) => allocationOf(h, { id: 'web', evalId }, nodeB, 100 + n)),
    );
    const before = await h.scheduler.state.currentIndex();
    const applied = await applyPlan(h, { place: many });
    expect(applied.rejectedNodes.size).toBe(0);
    expect(applied.placed).toHaveLength(70);
    expect(applied.index).toBeGreaterThan(before + 1);
    expect((await h.scheduler.allocations.onNode(nodeB.ID)).length).toBe(71);
    expect((await h.scheduler.nodes.beat(nodeB.ID))?.allocIndex).toBe(applied.index);
  });
});
