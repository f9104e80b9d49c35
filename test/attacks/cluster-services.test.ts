import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serviceKind } from '../../packages/core/src/scheduler/cluster/services/store.ts';
import { serviceAllocPk, servicePk, serviceSk } from '../../packages/core/src/scheduler/keys.ts';
import { allocationOf, applyPlan, ready, webJob } from '../support/cluster-allocations.ts';
import { nodeTokens, registerNode } from '../support/cluster-nodes.ts';
import { type SchedulerService, startSchedulerInMemory } from '../support/scheduler-harness.ts';

/**
 * Attacks on Nomad's service discovery (`docs/security.md` §12): a token of one namespace reading or streaming
 * another's services, a token without `read-job` reading, a reader deleting, a node registering as another node (by
 * its own credential with another node's ID in the body, or with several nodes' IDs in one call), a node deleting
 * another node's registration, an ACL token or a node credential used on the other's routes, and a table writer's
 * forged registration or link.
 */
describe('attacks on service registrations', () => {
  let h: SchedulerService;
  let root: string;
  let writer: string;
  let a: Awaited<ReturnType<typeof registerNode>>;
  let b: Awaited<ReturnType<typeof registerNode>>;
  const tokens: Record<string, string> = {};

  const registration = (nodeId: string, allocId: string, name: string, namespace = 'default') => ({
    ID: `_nomad-task-${allocId}-server-${name}-http`,
    ServiceName: name,
    Namespace: namespace,
    NodeID: nodeId,
    JobID: 'web',
    AllocID: allocId,
    Tags: ['http'],
    Address: '10.0.0.7',
    Port: 25_000,
  });

  async function tokenWith(name: string, rules: string): Promise<string> {
    expect((await h.call('POST', `/v1/acl/policy/${name}`, { token: root, body: { Rules: rules } })).status).toBe(200);
    const token = await h.call('POST', '/v1/acl/token', { token: root, body: { Type: 'client', Policies: [name] } });
    return token.body.SecretID as string;
  }

  const evals: Record<string, string> = {};
  /** An allocation of job `web` in `namespace` placed on `node` through the plan apply; its ID. */
  async function placed(node: { ID: string; Name: string }, namespace = 'default'): Promise<string> {
    if (!evals[namespace]) {
      const out = await h.call('PUT', '/v1/jobs', {
        token: root,
        body: { Job: webJob('web', { Namespace: namespace }) },
      });
      expect(out.status).toBe(200);
      evals[namespace] = out.body.EvalID;
    }
    const alloc = await allocationOf(h, { namespace, id: 'web', evalId: evals[namespace] as string }, node);
    await applyPlan(h, { place: [alloc] });
    return alloc.ID;
  }

  let secretAlloc: string;
  let secretId: string;
  let publicId: string;

  beforeAll(async () => {
    h = await startSchedulerInMemory();
    ({ root, writer } = await nodeTokens(h));
    for (const name of ['payroll', 'dev'])
      expect((await h.call('PUT', '/v1/namespace', { token: root, body: { Name: name } })).status).toBe(200);
    tokens.dev = await tokenWith('dev-read', 'namespace "dev" { policy = "read" }');
    tokens.listOnly = await tokenWith('dev-list', 'namespace "dev" { capabilities = ["list-jobs"] }');
    tokens.devSubmit = await tokenWith('dev-submit', 'namespace "dev" { capabilities = ["submit-job"] }');
    tokens.devDelete = await tokenWith(
      'dev-delete',
      'namespace "dev" { capabilities = ["delete-service-registration"] }',
    );
    a = await registerNode(h, writer);
    b = await registerNode(h, writer);
    await ready(h, a.node);
    await ready(h, b.node);
    secretAlloc = await placed(b.node, 'payroll');
    const secret = registration(b.node.ID, secretAlloc, 'ledger', 'payroll');
    const open = registration(b.node.ID, await placed(b.node, 'dev'), 'docs', 'dev');
    secretId = secret.ID;
    publicId = open.ID;
    const out = await h.call('PUT', '/v1/client/services', {
      token: b.node.SecretID,
      body: { Services: [secret, open] },
    });
    expect(out.status).toBe(200);
  });
  afterAll(() => h.close());

  const payroll = async () => (await h.call('GET', '/v1/service/ledger?namespace=payroll', { token: root })).body;

  it('a token of namespace dev reads nothing of payroll: not by name, not in lists, not on the stream', async () => {
    for (const url of [
      '/v1/services?namespace=payroll',
      '/v1/service/ledger?namespace=payroll',
      '/v1/job/web/services?namespace=payroll',
      `/v1/allocation/${secretAlloc}/services?namespace=payroll`,
    ]) {
      const out = await h.call('GET', url, { token: tokens.dev });
      expect(out.status, url).toBe(403);
      expect(out.text).toBe('Permission denied');
    }
    const all = await h.call('GET', '/v1/services?namespace=*', { token: tokens.dev });
    expect(all.status).toBe(200);
    expect(all.body).toEqual([{ Namespace: 'dev', Services: [{ ServiceName: 'docs', Tags: ['http'] }] }]);
    const wildcard = await h.call('GET', '/v1/service/ledger?namespace=*', { token: tokens.dev });
    expect(wildcard.body).toEqual([]);
    // payroll's allocation asked for under dev (or `*`), where the token may read: not found, nothing of it shown.
    for (const namespace of ['dev', '*']) {
      const byAlloc = await h.call('GET', `/v1/allocation/${secretAlloc}/services?namespace=${namespace}`, {
        token: tokens.dev,
      });
      expect([byAlloc.status, byAlloc.text]).toEqual([404, 'allocation not found']);
    }
    const own = await h.call('GET', `/v1/allocation/${secretAlloc}/services?namespace=payroll`, { token: root });
    expect(own.body.map((service: { ID: string }) => service.ID)).toEqual([secretId]);
    expect((await h.stream('/v1/event/stream?topic=Service&namespace=payroll', tokens.dev)).status).toBe(403);

    // On a dev stream, payroll's registrations never arrive, dev's do.
    const from = await h.scheduler.state.currentIndex();
    const stream = await h.open(`/v1/event/stream?topic=Service&namespace=dev&index=${from}`, tokens.dev);
    await stream.next();
    const [payrollAlloc, devAlloc] = [await placed(b.node, 'payroll'), await placed(b.node, 'dev')];
    const from2 = await h.scheduler.state.currentIndex();
    for (const [alloc, name, namespace] of [
      [payrollAlloc, 'ledger', 'payroll'],
      [devAlloc, 'wiki', 'dev'],
    ] as const) {
      const out = await h.call('PUT', '/v1/client/services', {
        token: b.node.SecretID,
        body: { Services: [registration(b.node.ID, alloc, name, namespace)] },
      });
      expect(out.status).toBe(200);
    }
    expect(await h.scheduler.state.currentIndex()).toBe(from2 + 2);
    const batch = await stream.nextEvents();
    expect(batch.Events.map((event: { Namespace: string; Key: string }) => [event.Namespace, event.Key])).toEqual([
      ['dev', `_nomad-task-${devAlloc}-server-wiki-http`],
    ]);
    await stream.close();
  });

  it('a token without read-job (list-jobs only, or anonymous) reads no services', async () => {
    for (const token of [tokens.listOnly, undefined]) {
      for (const url of [
        '/v1/services?namespace=dev',
        '/v1/service/docs?namespace=dev',
        `/v1/allocation/${secretAlloc}/services?namespace=dev`,
      ]) {
        const out = await h.call('GET', url, token ? { token } : {});
        expect(out.status, url).toBe(403);
      }
      expect((await h.call('GET', '/v1/services?namespace=*', token ? { token } : {})).body).toEqual([]);
    }
    expect((await h.stream('/v1/event/stream?topic=Service&namespace=dev', tokens.listOnly)).status).toBe(403);
  });

  it('deleting needs submit-job or delete-service-registration in the registration’s own namespace', async () => {
    const before = await h.scheduler.state.currentIndex();
    for (const token of [tokens.dev, tokens.listOnly]) {
      const out = await h.call('DELETE', `/v1/service/docs/${publicId}?namespace=dev`, { token });
      expect(out.status).toBe(403);
    }
    // dev's writers name payroll's registration: refused in payroll, not found from dev.
    for (const token of [tokens.devSubmit, tokens.devDelete]) {
      expect((await h.call('DELETE', `/v1/service/ledger/${secretId}?namespace=payroll`, { token })).status).toBe(403);
      expect((await h.call('DELETE', `/v1/service/ledger/${secretId}?namespace=dev`, { token })).status).toBe(404);
    }
    expect(await h.scheduler.state.currentIndex()).toBe(before);
    expect((await payroll()).map((service: { ID: string }) => service.ID)).toContain(secretId);
    const allowed = await h.call('DELETE', `/v1/service/docs/${publicId}?namespace=dev`, { token: tokens.devDelete });
    expect(allowed.status).toBe(200);
  });

  it('a node registers nothing as another node: a forged NodeID, mixed NodeIDs, or another node’s credential', async () => {
    const alloc = await placed(a.node);
    const before = await h.scheduler.state.currentIndex();
    for (const credential of [a.node.SecretID, a.identity]) {
      for (const services of [
        // A's credential, B's ID in the body (the forged NodeID).
        [registration(b.node.ID, alloc, 'ledger', 'payroll')],
        // One registration of its own beside one of B's.
        [registration(a.node.ID, alloc, 'mine'), registration(b.node.ID, alloc, 'theirs')],
        // A node that does not exist.
        [registration(randomUUID(), alloc, 'ghost')],
      ]) {
        const out = await h.call('PUT', '/v1/client/services', { token: credential, body: { Services: services } });
        expect([403, 404]).toContain(out.status);
        if (services[0]?.NodeID !== services.at(-1)?.NodeID || services[0]?.NodeID === b.node.ID)
          expect(out.text).toBe('Permission denied');
      }
    }
    // Neither an ACL token (even management) nor nothing at all is a node's credential.
    for (const token of [root, tokens.devSubmit, undefined]) {
      const out = await h.call('PUT', '/v1/client/services', {
        ...(token ? { token } : {}),
        body: { Services: [registration(a.node.ID, alloc, 'mine')] },
      });
      expect(out.status).toBe(403);
    }
    expect(await h.scheduler.state.currentIndex()).toBe(before);
    expect(await h.core.store.list(serviceAllocPk(alloc))).toEqual([]);
  });

  it('a node registers nothing for another node’s allocation, a finished one, or another job’s or namespace’s', async () => {
    const own = await placed(a.node);
    const finished = await placed(a.node);
    const report = await h.call('PUT', `/v1/client/node/${a.node.ID}/allocations`, {
      token: a.node.SecretID,
      body: { Allocs: [{ ID: finished, ClientStatus: 'failed' }] },
    });
    expect(report.status).toBe(200);
    const before = await h.scheduler.state.currentIndex();
    for (const credential of [a.node.SecretID, a.identity]) {
      const cases: Array<[Record<string, unknown>, number, string]> = [
        // B's allocation in payroll, under A's own NodeID: another node's allocation.
        [registration(a.node.ID, secretAlloc, 'ledger', 'payroll'), 403, 'Permission denied'],
        [registration(a.node.ID, finished, 'mine'), 400, `allocation ${finished} is failed`],
        // Its own allocation, claimed for another namespace or job (to appear in payroll's discovery).
        [registration(a.node.ID, own, 'ledger', 'payroll'), 400, 'is not its allocation\'s "default"'],
        [{ ...registration(a.node.ID, own, 'ledger'), JobID: 'payroll-api' }, 400, 'is not its allocation\'s "web"'],
      ];
      for (const [service, status, text] of cases) {
        const out = await h.call('PUT', '/v1/client/services', { token: credential, body: { Services: [service] } });
        expect(out.status, text).toBe(status);
        expect(out.text).toContain(text);
      }
      // One good registration beside one for B's allocation: the whole call is refused.
      const mixed = await h.call('PUT', '/v1/client/services', {
        token: credential,
        body: {
          Services: [registration(a.node.ID, own, 'mine'), registration(a.node.ID, secretAlloc, 'ledger', 'payroll')],
        },
      });
      expect(mixed.status).toBe(403);
    }
    expect(await h.scheduler.state.currentIndex()).toBe(before);
    expect(await h.core.store.list(serviceAllocPk(own))).toEqual([]);
    expect(new Set((await payroll()).map((service: { NodeID: string }) => service.NodeID))).toEqual(
      new Set([b.node.ID]),
    );
  });

  it('a node deletes only its own registrations; a node credential is no ACL token', async () => {
    const before = await h.scheduler.state.currentIndex();
    for (const credential of [a.node.SecretID, a.identity, root, 'not-a-secret']) {
      const out = await h.call('DELETE', `/v1/client/service/${secretId}`, { token: credential });
      expect(out.status).toBe(403);
      expect(out.text).toBe('Permission denied');
    }
    for (const credential of [a.node.SecretID, a.identity, b.node.SecretID]) {
      expect((await h.call('GET', '/v1/services', { token: credential })).status).toBe(403);
      expect(
        (await h.call('DELETE', `/v1/service/ledger/${secretId}?namespace=payroll`, { token: credential })).status,
      ).toBe(403);
    }
    expect(await h.scheduler.state.currentIndex()).toBe(before);
    expect((await payroll()).map((service: { ID: string }) => service.ID)).toContain(secretId);
  });

  it('a table writer’s unsigned registration is not served, and a forged link finds and deletes nothing', async () => {
    const store = h.core.store;
    const alloc = randomUUID();
    const forged = { ...registration(b.node.ID, alloc, 'ledger', 'payroll'), Address: '203.0.113.66' };
    await store.put({ pk: servicePk('payroll'), sk: serviceSk('ledger', forged.ID), ...forged });
    await store.put({ pk: serviceAllocPk(alloc), sk: forged.ID, Namespace: 'payroll', ServiceName: 'ledger' });
    expect((await payroll()).map((service: { Address: string }) => service.Address)).not.toContain('203.0.113.66');
    // A link that points at B's real registration from another allocation is not followed.
    await store.put({ pk: serviceAllocPk(alloc), sk: secretId, Namespace: 'payroll', ServiceName: 'ledger' });
    const out = await h.call('DELETE', `/v1/client/service/${secretId.replace(secretAlloc, alloc)}`, {
      token: b.node.SecretID,
    });
    expect(out.status).toBe(404);
    expect((await payroll()).map((service: { ID: string }) => service.ID)).toContain(secretId);
    // A signed item moved to another name's key does not verify there.
    const real = await store.get(servicePk('payroll'), serviceSk('ledger', secretId));
    await store.put({
      ...(real as Record<string, unknown>),
      pk: servicePk('payroll'),
      sk: serviceSk('ledger2', secretId),
    } as never);
    expect((await h.call('GET', '/v1/service/ledger2?namespace=payroll', { token: root })).body).toEqual([]);
    expect(store.verified(serviceKind, real as never)).toBeDefined();
  });
});
