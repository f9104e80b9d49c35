import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { textReply } from '../../packages/core/src/front/exchange.ts';
import { nodeListener } from '../../packages/core/src/http/node-listener.ts';
import { indexWatch } from '../../packages/core/src/scheduler/http/blocking.ts';
import { schedulerFront } from '../../packages/core/src/scheduler/composition/scheduler-app.ts';
import { type SchedulerHarness, startScheduler } from '../support/scheduler-harness.ts';

/** Resolves once `count` blocking queries of this process wait (their deadline is set on the service clock by then). */
async function waiting(h: SchedulerHarness, count: number): Promise<void> {
  while (indexWatch(h.scheduler.state, 50).waiting !== count) await new Promise((resolve) => setTimeout(resolve, 10));
}

describe('blocking queries', () => {
  let h: SchedulerHarness;
  let root: string;
  const mgmt = (method: string, path: string, body?: unknown) =>
    h.call(method, path, { token: root, ...(body === undefined ? {} : { body }) });

  beforeAll(async () => {
    h = await startScheduler();
    root = await h.bootstrap();
    await mgmt('POST', '/v1/acl/policy/p1', { Rules: 'node { policy = "read" }' });
  });
  afterAll(() => h.close());

  it('returns at once without index or when the table is past it, and is woken by a write to its table', async () => {
    const first = await mgmt('GET', '/v1/acl/roles');
    const index = Number(first.headers.get('X-Scheduler-Index'));
    expect(index).toBeGreaterThanOrEqual(1);
    expect((await mgmt('GET', '/v1/acl/roles?index=0')).status).toBe(200);

    let settled = false;
    const blocked = mgmt('GET', `/v1/acl/roles?index=${index}&wait=5m`).then((out) => {
      settled = true;
      return out;
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(settled).toBe(false);
    // A write to another table does not wake it.
    await mgmt('POST', '/v1/acl/policy/p2', { Rules: 'node { policy = "read" }' });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(settled).toBe(false);
    const role = await mgmt('POST', '/v1/acl/role', { Name: 'woken', Policies: [{ Name: 'p1' }] });
    const out = await blocked;
    expect(out.body.map((r: { Name: string }) => r.Name)).toEqual(['woken']);
    expect(Number(out.headers.get('X-Scheduler-Index'))).toBe(role.body.ModifyIndex);
    expect(Number(out.headers.get('X-Nomad-Index'))).toBe(role.body.ModifyIndex);
  });

  it('returns at the wait (on the service clock), clamped to 5 minutes', async () => {
    const current = Number((await mgmt('GET', '/v1/acl/policies')).headers.get('X-Scheduler-Index'));
    let settled = false;
    const blocked = mgmt('GET', `/v1/acl/policies?index=${current}&wait=1h`).then((out) => {
      settled = true;
      return out;
    });
    await waiting(h, 1);
    h.clock.advance(60);
    await new Promise((resolve) => setTimeout(resolve, 250));
    expect(settled).toBe(false);
    h.clock.advance(300 * (1 + 1 / 16));
    const out = await blocked;
    expect(out.status).toBe(200);
    expect(Number(out.headers.get('X-Scheduler-Index'))).toBe(current);
    // The blocking parameters are parsed by the route wrapper before the handler: Nomad's messages.
    expect(await mgmt('GET', '/v1/acl/policies?index=1&wait=forever')).toMatchObject({
      status: 400,
      text: 'Invalid wait time: "forever" is not a duration',
    });
    expect(await mgmt('GET', '/v1/acl/policies?index=abc')).toMatchObject({
      status: 400,
      text: 'Failed to parse index parameter: invalid syntax',
    });
    expect(await mgmt('GET', '/v1/acl/policies?index=-1')).toMatchObject({
      status: 400,
      text: 'Failed to parse index parameter: invalid syntax',
    });
    expect(await mgmt('GET', '/v1/acl/policies?stale&consistent')).toMatchObject({
      status: 400,
      text: 'Cannot specify ?stale with ?consistent, conflicting semantics.',
    });
    for (const query of ['stale=false&consistent', 'stale', 'consistent=true', 'index=&wait=', 'index=1&wait=0']) {
      const answer = await mgmt('GET', `/v1/acl/policies?${query}`);
      expect({ query, status: answer.status }).toEqual({ query, status: 200 });
      expect(answer.body.map((policy: { Name: string }) => policy.Name)).toEqual(['p1', 'p2']);
    }
  });
});

describe('blocking queries behind an API gateway (maxQueryWaitSeconds: 25, as the AWS function sets)', () => {
  let h: SchedulerHarness;
  let root: string;

  beforeAll(async () => {
    h = await startScheduler({ maxQueryWaitSeconds: 25 });
    root = await h.bootstrap();
  });

  for (const wait of ['&wait=5m', '']) {
    it(`answers by 25 s on the service clock when asked ${wait ? 'to wait 5 minutes' : "with Nomad's default wait"}`, async () => {
      const current = Number(
        (await h.call('GET', '/v1/acl/policies', { token: root })).headers.get('X-Scheduler-Index'),
      );
      let settled = false;
      const blocked = h.call('GET', `/v1/acl/policies?index=${current}${wait}`, { token: root }).then((out) => {
        settled = true;
        return out;
      });
      await waiting(h, 1);
      h.clock.advance(20);
      await new Promise((resolve) => setTimeout(resolve, 250));
      expect(settled).toBe(false);
      h.clock.advance(25 * (1 + 1 / 16) - 20);
      const out = await blocked;
      expect(out.status).toBe(200);
      expect(out.body).toEqual([]);
      expect(Number(out.headers.get('X-Scheduler-Index'))).toBe(current);
    });
  }
});

describe('regions', () => {
  let authoritative: SchedulerHarness;
  let replica: SchedulerHarness;
  let server: Server;
  let root: string;
  let forwarded = 0;

  beforeAll(async () => {
    authoritative = await startScheduler({ region: 'eu', authoritativeRegion: 'eu' });
    // The authoritative region's service on a loopback port (the shared node adapter), counting what is forwarded to it.
    const front = schedulerFront({ core: async () => authoritative.core, region: 'eu', authoritativeRegion: 'eu' });
    server = createServer(
      nodeListener(
        (request) => {
          if (request.headers.get('x-scheduler-forwarded-from')) forwarded++;
          return front(request);
        },
        { refuse: textReply, trustedProxies: [] },
      ),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    // The replica reads the same (replicated) table and forwards every write to the authoritative region.
    replica = await startScheduler({
      share: authoritative,
      region: 'us',
      authoritativeRegion: 'eu',
      authoritativeUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    });
    root = await replica.bootstrap();
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await replica.close();
    await authoritative.close();
  });

  it('forwards writes with the caller token and answers reads locally', async () => {
    expect(forwarded).toBe(1);
    const write = await replica.call('POST', '/v1/acl/policy/fwd', {
      token: root,
      body: { Rules: 'node { policy = "read" }' },
    });
    expect(write.status).toBe(200);
    expect(Number(write.headers.get('X-Scheduler-Index'))).toBeGreaterThan(0);
    expect(forwarded).toBe(2);
    const denied = await replica.call('POST', '/v1/acl/policy/fwd2', { body: { Rules: '' } });
    expect(denied).toMatchObject({ status: 403, text: 'Permission denied' });
    expect(forwarded).toBe(3);
    const read = await replica.call('GET', '/v1/acl/policy/fwd', { token: root });
    expect(read.body.Name).toBe('fwd');
    expect(forwarded).toBe(3);
  });
});
