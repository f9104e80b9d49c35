import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createCore } from '../../packages/core/src/composition/secrets-core.ts';
import { textReply } from '../../packages/core/src/front/exchange.ts';
import { nodeListener } from '../../packages/core/src/http/node-listener.ts';
import { silentLogger } from '../../packages/core/src/lib/log.ts';
import { createSchedulerApp, schedulerFront } from '../../packages/core/src/scheduler/composition/scheduler-app.ts';
import { fileKeySource } from '../../packages/core/src/storage/keyring.ts';
import { ensureTable } from '../../packages/local/src/table.ts';
import { type SchedulerHarness, startScheduler } from '../support/scheduler-harness.ts';
import { startTableReplicator, type TableReplicator } from '../support/table-replicator.ts';

/**
 * Two regions on two tables in the run's DynamoDB Local: us-east-1 (authoritative) and eu-west-1, whose table is
 * fed only by the replicator (the stand-in for a global table's replication, 150 ms behind). The eu-west-1
 * scheduler forwards writes over HTTP to us-east-1 and answers reads from its own table.
 */
describe('scheduler in a replica region, over a replicated table', () => {
  let authoritative: SchedulerHarness;
  let server: Server;
  let replicator: TableReplicator;
  let replica: ReturnType<typeof createSchedulerApp>;
  let root: string;
  let forwarded = 0;

  const call = async (
    app: { request: (url: string, init: RequestInit) => Response | Promise<Response> },
    method: string,
    url: string,
    body?: unknown,
  ) => {
    const response = await app.request(url, {
      method,
      headers: { 'X-Scheduler-Token': root, 'Content-Type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return {
      status: response.status,
      text,
      body: text && (response.headers.get('content-type') ?? '').includes('json') ? JSON.parse(text) : text,
      index: Number(response.headers.get('X-Scheduler-Index')),
    };
  };
  const inReplica = (method: string, url: string, body?: unknown) => call(replica, method, url, body);
  const inAuthoritative = (method: string, url: string, body?: unknown) =>
    call({ request: (u, init) => authoritative.fetch(new Request(`http://a${u}`, init)) }, method, url, body);

  beforeAll(async () => {
    authoritative = await startScheduler({ region: 'us-east-1', authoritativeRegion: 'us-east-1' });
    root = await authoritative.bootstrap();
    const replicaTable = `test-replica-${randomUUID()}`;
    await ensureTable(authoritative.client, replicaTable);
    replicator = startTableReplicator({
      endpoint: inject('dynamoEndpoint'),
      source: authoritative.tableName,
      replica: replicaTable,
      delayMs: 150,
    });
    // The replica region's core starts once the data key has replicated (as a deploy of the replica region
    // starts after the authoritative one); both unwrap it with the same key (the multi-Region key, in AWS).
    await replicator.caughtUp();
    const core = await createCore({
      dynamodb: authoritative.client,
      tableName: replicaTable,
      keySource: fileKeySource(authoritative.keyFile),
      backends: [],
      clock: authoritative.clock,
      log: silentLogger,
    });
    // The authoritative region's service on a loopback port (the shared node adapter), counting what is forwarded to it.
    const front = schedulerFront({
      core: async () => authoritative.core,
      region: 'us-east-1',
      authoritativeRegion: 'us-east-1',
    });
    server = createServer(
      nodeListener(
        (request) => {
          if (request.headers.get('x-scheduler-forwarded-from') === 'eu-west-1') forwarded++;
          return front(request);
        },
        { refuse: textReply, trustedProxies: [] },
      ),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    replica = createSchedulerApp({
      core: async () => core,
      clientIp: () => '127.0.0.1',
      region: 'eu-west-1',
      authoritativeRegion: 'us-east-1',
      authoritativeUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    });
  }, 30_000);
  afterAll(async () => {
    replicator.resume();
    await replicator?.stop();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await authoritative.close();
  });

  it('answers a read from the replica with the old data (404 for a new policy) until the change replicates, then the new', async () => {
    replicator.pause();
    const created = await inReplica('POST', '/v1/acl/policy/lagging', { Rules: 'node { policy = "read" }' });
    expect(created.status).toBe(200);
    expect(forwarded).toBe(1);
    expect((await inAuthoritative('GET', '/v1/acl/policy/lagging')).body.Rules).toBe('node { policy = "read" }');
    const lagging = await inReplica('GET', '/v1/acl/policy/lagging');
    expect(lagging.status).toBe(404);
    replicator.resume();
    await replicator.caughtUp();
    const converged = await inReplica('GET', '/v1/acl/policy/lagging');
    expect(converged.body.Rules).toBe('node { policy = "read" }');
    expect(forwarded).toBe(1);

    replicator.pause();
    expect((await inReplica('POST', '/v1/acl/policy/lagging', { Rules: 'node { policy = "write" }' })).status).toBe(
      200,
    );
    expect((await inReplica('GET', '/v1/acl/policy/lagging')).body.Rules).toBe('node { policy = "read" }');
    replicator.resume();
    await replicator.caughtUp();
    expect((await inReplica('GET', '/v1/acl/policy/lagging')).body.Rules).toBe('node { policy = "write" }');

    replicator.pause();
    expect((await inReplica('DELETE', '/v1/acl/policy/lagging')).status).toBe(200);
    expect((await inReplica('GET', '/v1/acl/policy/lagging')).status).toBe(200);
    replicator.resume();
    await replicator.caughtUp();
    expect((await inReplica('GET', '/v1/acl/policy/lagging')).status).toBe(404);
    expect(forwarded).toBe(3);
  });

  it('wakes a blocking query in the replica when the replicated index passes it, with the authoritative index', async () => {
    const before = await inReplica('GET', '/v1/acl/policies');
    expect(before.index).toBeGreaterThan(0);
    let settled = false;
    const blocked = inReplica('GET', `/v1/acl/policies?index=${before.index}&wait=5m`).then((out) => {
      settled = true;
      return out;
    });
    replicator.pause();
    const written = await inAuthoritative('POST', '/v1/acl/policy/woken', { Rules: 'node { policy = "read" }' });
    expect(written.status).toBe(200);
    // The write is in us-east-1 only: the replica's index has not moved, so the query is still blocked.
    expect((await inReplica('GET', '/v1/acl/policies')).index).toBe(before.index);
    expect(settled).toBe(false);
    replicator.resume();
    const out = await blocked;
    expect(out.status).toBe(200);
    expect(out.index).toBe(written.index);
    // A write's items replicate one by one (as a global table's do): the query may wake on the index before the
    // policy itself has arrived; once the replica has caught up, the policy is there.
    await replicator.caughtUp();
    const after = await inReplica('GET', '/v1/acl/policies');
    expect(after.body.map((policy: { Name: string }) => policy.Name)).toContain('woken');
    expect(after.index).toBe(written.index);
  });

  it('answers a write 503 naming the authoritative region when no URL is configured for it', async () => {
    const unconfigured = createSchedulerApp({
      core: async () => authoritative.core,
      clientIp: () => '127.0.0.1',
      region: 'eu-west-1',
      authoritativeRegion: 'us-east-1',
    });
    const refused = await call(unconfigured, 'POST', '/v1/acl/policy/nowhere', { Rules: '' });
    expect(refused.status).toBe(503);
    expect(refused.text).toContain('us-east-1');
  });
});
