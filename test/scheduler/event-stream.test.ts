import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publishEvents } from '../../packages/core/src/scheduler/composition/scheduler-core.ts';
import { EVENT_PK, type PendingEvent } from '../../packages/core/src/scheduler/state.ts';
import { type SchedulerService, startSchedulerInMemory } from '../support/scheduler-harness.ts';

/** A Node event shaped like the reference's sample. */
function nodeEvent(id: string, type = 'NodeRegistration'): PendingEvent {
  return {
    Topic: 'Node',
    Type: type,
    Key: id,
    Namespace: '',
    FilterKeys: null,
    Payload: {
      Node: {
        ID: id,
        Datacenter: 'dc1',
        Name: `name-${id}`,
        HTTPAddr: '127.0.0.1:4646',
        TLSEnabled: false,
        Attributes: { 'kernel.name': 'linux' },
        NodeResources: { Cpu: {}, Memory: {}, Disk: {}, Networks: null, NodeNetworks: null, Devices: null },
        Drain: false,
        SchedulingEligibility: 'eligible',
        Status: 'initializing',
        StatusUpdatedAt: 1_767_225_600,
        Events: [
          {
            Message: 'Node registered',
            Subsystem: 'Cluster',
            Details: null,
            Timestamp: '2026-01-01T00:00:00Z',
            CreateIndex: 0,
          },
        ],
        Drivers: {
          docker: {
            Attributes: {},
            Detected: true,
            Healthy: true,
            HealthDescription: 'Healthy',
            UpdateTime: '2026-01-01T00:00:00Z',
          },
        },
      },
    },
  };
}

const jobEvent = (id: string, namespace: string): PendingEvent => ({
  Topic: 'Job',
  Type: 'JobRegistered',
  Key: id,
  Namespace: namespace,
  FilterKeys: null,
  Payload: { Job: { ID: id, Namespace: namespace } },
});

describe('GET /v1/event/stream', () => {
  let h: SchedulerService;
  let root: string;
  let nodeReader: string;
  let jobReader: string;
  let allNamespaces: string;
  const mgmt = (method: string, path: string, body?: unknown) =>
    h.call(method, path, { token: root, ...(body === undefined ? {} : { body }) });

  beforeAll(async () => {
    h = await startSchedulerInMemory();
    root = await h.bootstrap();
    await mgmt('POST', '/v1/acl/policy/nodes', { Rules: 'node { policy = "read" }' });
    await mgmt('POST', '/v1/acl/policy/jobs', { Rules: 'namespace "default" { policy = "read" }' });
    await mgmt('POST', '/v1/acl/policy/all-jobs', { Rules: 'namespace "*" { capabilities = ["read-job"] }' });
    nodeReader = (await mgmt('POST', '/v1/acl/token', { Type: 'client', Policies: ['nodes'] })).body.SecretID;
    jobReader = (await mgmt('POST', '/v1/acl/token', { Type: 'client', Policies: ['jobs'] })).body.SecretID;
    allNamespaces = (await mgmt('POST', '/v1/acl/token', { Type: 'client', Policies: ['all-jobs'] })).body.SecretID;
  });
  afterAll(() => h.close());

  it('enforces the per-topic ACL and refuses malformed topics', async () => {
    expect((await h.stream('/v1/event/stream', nodeReader)).status).toBe(403);
    expect((await h.stream('/v1/event/stream?topic=*', nodeReader)).status).toBe(403);
    expect((await h.stream('/v1/event/stream?topic=ACLToken', nodeReader)).status).toBe(403);
    expect((await h.stream('/v1/event/stream?topic=Job', nodeReader)).status).toBe(403);
    expect((await h.stream('/v1/event/stream?topic=Node', jobReader)).status).toBe(403);
    expect((await h.stream('/v1/event/stream?topic=Job&namespace=*', jobReader)).status).toBe(403);
    expect((await h.stream('/v1/event/stream?topic=Node')).status).toBe(403);
    for (const bad of ['Node:', 'Node:a:b', ':x', 'No-de']) {
      const out = await h.stream(`/v1/event/stream?topic=${encodeURIComponent(bad)}`, root);
      expect(out.status).toBe(400);
      expect(out.text).toMatch(/Invalid topic/);
    }
    expect((await h.stream('/v1/event/stream?index=x', root)).status).toBe(400);
    for (const [query, token] of [
      ['topic=Node', nodeReader],
      ['topic=Job', jobReader],
      ['topic=Job&namespace=*', allNamespaces],
      ['', root],
    ] as const) {
      const out = await h.stream(`/v1/event/stream?${query}`, token);
      expect(out.status).toBe(200);
      expect(await out.reader?.next()).toEqual({});
      await out.reader?.close();
    }
  });

  it('streams the ACL events of writes, published in the same transaction, without secrets, in order', async () => {
    const start = await h.scheduler.state.currentIndex();
    const reader = await h.open(`/v1/event/stream?index=${start}`, root);
    expect(await reader.next()).toEqual({});
    const role = (await mgmt('POST', '/v1/acl/role', { Name: 'streamed', Policies: [{ Name: 'nodes' }] })).body;
    const token = (await mgmt('POST', '/v1/acl/token', { Type: 'client', Roles: [{ ID: role.ID }] })).body;
    await mgmt('DELETE', `/v1/acl/role/${role.ID}`);
    const first = await reader.nextEvents();
    expect(first).toMatchObject({
      Index: role.ModifyIndex,
      Events: [
        { Topic: 'ACLRole', Type: 'ACLRoleUpserted', Key: role.ID, FilterKeys: ['streamed'], Index: role.ModifyIndex },
      ],
    });
    expect(first.Events[0].Payload.ACLRole).toEqual(role);
    const second = await reader.nextEvents();
    expect(second.Events[0]).toMatchObject({ Topic: 'ACLToken', Type: 'ACLTokenUpserted', Key: token.AccessorID });
    expect(JSON.stringify(second)).not.toContain(token.SecretID);
    expect(second.Events[0].Payload.ACLToken.SecretHash).toBeUndefined();
    const third = await reader.nextEvents();
    expect(third.Events[0]).toMatchObject({ Type: 'ACLRoleDeleted', Key: role.ID });
    expect(third.Index).toBeGreaterThan(second.Index);
    await reader.close();
  });

  it('filters by topic, filter key and namespace; accepts ACLRoles for ACLRole', async () => {
    const start = await h.scheduler.state.currentIndex();
    const node1 = await h.open(`/v1/event/stream?index=${start}&topic=Node:node-1`, nodeReader);
    const roles = await h.open(`/v1/event/stream?index=${start}&topic=ACLRoles:wanted`, root);
    const defaultJobs = await h.open(`/v1/event/stream?index=${start}&topic=Job`, jobReader);
    const allJobs = await h.open(`/v1/event/stream?index=${start}&topic=Job&namespace=*`, allNamespaces);
    await publishEvents(h.core, [nodeEvent('node-2')]);
    await mgmt('POST', '/v1/acl/role', { Name: 'unwanted', Policies: [{ Name: 'nodes' }] });
    await publishEvents(h.core, [jobEvent('web', 'prod')]);
    const n1 = await publishEvents(h.core, [nodeEvent('node-1'), nodeEvent('node-1', 'NodeEligibility')]);
    const wanted = (await mgmt('POST', '/v1/acl/role', { Name: 'wanted', Policies: [{ Name: 'nodes' }] })).body;
    const job = await publishEvents(h.core, [jobEvent('api', 'default')]);

    const got = await node1.nextEvents();
    expect(got.Index).toBe(n1);
    expect(got.Events.map((e: { Type: string }) => e.Type)).toEqual(['NodeRegistration', 'NodeEligibility']);
    expect(got.Events[0].Payload.Node).toMatchObject({
      ID: 'node-1',
      Status: 'initializing',
      SchedulingEligibility: 'eligible',
      Drain: false,
    });
    expect((await roles.nextEvents()).Events[0]).toMatchObject({ Topic: 'ACLRole', Key: wanted.ID });
    expect((await defaultJobs.nextEvents()).Index).toBe(job);
    const all1 = await allJobs.nextEvents();
    const all2 = await allJobs.nextEvents();
    expect([all1.Events[0].Key, all2.Events[0].Key]).toEqual(['web', 'api']);
    // Nothing else arrives: only heartbeats follow.
    for (const reader of [node1, roles, defaultJobs]) {
      await publishEvents(h.core, [nodeEvent('node-9')]);
      await expect(reader.nextEvents(600)).rejects.toThrow(/no stream line/);
      await reader.close();
    }
    await allJobs.close();
  });

  it('sends heartbeats, and a reconnect from the last index sees no duplicates and misses nothing', async () => {
    const start = await publishEvents(h.core, [nodeEvent('r-0')]);
    const first = await h.open(`/v1/event/stream?index=${start}&topic=Node`, nodeReader);
    expect(await first.next()).toEqual({});
    const seen: number[] = [];
    for (let i = 1; i <= 3; i++) await publishEvents(h.core, [nodeEvent(`r-${i}`)]);
    for (let i = 0; i < 3; i++) seen.push((await first.nextEvents()).Index);
    expect(await first.next(2000)).toEqual({});
    await first.close();
    for (let i = 4; i <= 6; i++) await publishEvents(h.core, [nodeEvent(`r-${i}`)]);
    const again = await h.open(`/v1/event/stream?index=${seen.at(-1)}&topic=Node`, nodeReader);
    for (let i = 0; i < 3; i++) seen.push((await again.nextEvents()).Index);
    const keys: string[] = [];
    await again.close();
    const replay = await h.open(`/v1/event/stream?index=${start}&topic=Node`, nodeReader);
    for (let i = 0; i < 6; i++) keys.push((await replay.nextEvents()).Events[0].Key);
    await replay.close();
    expect(keys).toEqual(['r-1', 'r-2', 'r-3', 'r-4', 'r-5', 'r-6']);
    expect(new Set(seen).size).toBe(6);
    expect([...seen].sort((a, b) => a - b)).toEqual(seen);
  });

  it('starts at the next available index when the requested one has left the buffer', async () => {
    const old = await publishEvents(h.core, [nodeEvent('old')]);
    h.clock.advance(2 * 3600);
    const fresh = await publishEvents(h.core, [nodeEvent('fresh')]);
    const reader = await h.open(`/v1/event/stream?index=${old - 1}&topic=Node`, nodeReader);
    const first = await reader.nextEvents();
    expect(first.Index).toBe(fresh);
    await reader.close();
    expect(await h.scheduler.state.sweepEvents()).toBeGreaterThan(0);
  });

  it('sweeps expired events oldest first, a page at a time, and keeps the live ones', async () => {
    for (let i = 0; i < 7; i++) await publishEvents(h.core, [nodeEvent(`stale-${i}`)]);
    h.clock.advance(2 * 3600);
    const live = [
      await publishEvents(h.core, [nodeEvent('live-1')]),
      await publishEvents(h.core, [nodeEvent('live-2')]),
    ];
    expect(await h.scheduler.state.sweepEvents(3)).toBeGreaterThanOrEqual(7);
    const left = await h.core.store.list(EVENT_PK);
    expect(left.map((item) => item.index)).toEqual(live);
    expect(await h.scheduler.state.sweepEvents(3)).toBe(0);
  });

  it('ends the stream when its token is deleted', async () => {
    const token = (await mgmt('POST', '/v1/acl/token', { Type: 'client', Policies: ['nodes'] })).body;
    const reader = await h.open('/v1/event/stream?topic=Node', token.SecretID);
    expect(await reader.next()).toEqual({});
    await mgmt('DELETE', `/v1/acl/token/${token.AccessorID}`);
    expect(await reader.ended(5000)).toBe(true);
  });
});
