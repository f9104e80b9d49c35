/**
 * Attack class: access that outlives itself, on the scheduler's event stream (`GET /v1/event/stream`, NDJSON).
 *
 * Attacker: a narrow token (a client token whose policy, directly or through a role, grants `node:read`, so it may
 * subscribe to the `Node` topic). It opens a stream while it is allowed to, and keeps the connection open after the
 * operator takes that access away: the policy is changed to drop `node:read` or deleted, the token is updated,
 * deleted or expires, the role it holds loses the policy or is deleted. It must never receive a `Node` event
 * written after the change; the stream must end within a bounded time with Nomad's error line as its last line
 * (as Nomad's event broker closes subscriptions on every ACL change: `nomad/stream/event_broker.go`,
 * `handleACLUpdates` / `checkSubscriptionsAgainstACLChange`, and the expiry check before each send in
 * `nomad/event_endpoint.go`), and a new stream with the same token is refused with 403.
 *
 * Each case runs through the two adapters a stream is served by: the node HTTP server `npm start` uses (the same
 * process as the writer, woken by the commit), and the Lambda response-stream adapter (`http/lambda-handler.ts`'s
 * `lambdaStreamHandler`, as `functions/scheduler/event-stream.ts` builds it) on a second core over the same table, as a
 * separate Lambda would see the table: it learns of the ACL change only from the event buffer it polls. Both share
 * the test's clock, so expiry is reached by moving the clock, not by waiting.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Core, createCore } from '../../packages/core/src/composition/secrets-core.ts';
import { lambdaStreamHandler } from '../../packages/core/src/http/lambda-handler.ts';
import { silentLogger } from '../../packages/core/src/lib/log.ts';
import { SUBSCRIPTION_CLOSED, TOKEN_EXPIRED } from '../../packages/core/src/scheduler/events/stream.ts';
import { publishEvents } from '../../packages/core/src/scheduler/composition/scheduler-core.ts';
import { schedulerFront, schedulerNodeListener } from '../../packages/core/src/scheduler/composition/scheduler-app.ts';
import type { PendingEvent } from '../../packages/core/src/scheduler/state.ts';
import { fileKeySource } from '../../packages/core/src/storage/keyring.ts';
import { standInAwsLambda } from '../deploy/lambda-events.ts';
import { type SchedulerHarness, startScheduler } from '../support/scheduler-harness.ts';

const lambdaMetadata = standInAwsLambda();

/** Raw lines of a response body as they arrive (the error line Nomad ends a closed stream with is not JSON). */
class Lines {
  private buffer = '';
  private readonly lines: string[] = [];
  private done = false;
  private wake: (() => void) | undefined;
  push(text: string): void {
    this.buffer += text;
    for (let newline = this.buffer.indexOf('\n'); newline >= 0; newline = this.buffer.indexOf('\n')) {
      this.lines.push(this.buffer.slice(0, newline));
      this.buffer = this.buffer.slice(newline + 1);
    }
    this.wake?.();
  }
  end(): void {
    if (this.buffer) this.lines.push(this.buffer);
    this.buffer = '';
    this.done = true;
    this.wake?.();
  }
  /** The next line; undefined once the response has ended; rejects after `timeoutMs`. */
  async next(timeoutMs: number): Promise<string | undefined> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const line = this.lines.shift();
      if (line !== undefined) return line;
      if (this.done) return undefined;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no stream line within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = undefined;
    }
  }
}

interface Opened {
  status: number;
  /** The body when refused. */
  text?: string;
  lines?: Lines;
  stop(): void;
}

interface Transport {
  name: string;
  open(pathAndQuery: string, token: string): Promise<Opened>;
}

/** The node HTTP server (`schedulerNodeListener`, as `npm start` serves the scheduler) over a real socket. */
async function nodeServer(h: SchedulerHarness): Promise<{ transport: Transport; server: Server }> {
  const server = createServer(
    schedulerNodeListener({ core: async () => h.core, heartbeatMs: 200, eventPollMs: 50, trustedProxies: [] }),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    server,
    transport: {
      name: 'the node server',
      async open(pathAndQuery, token) {
        const abort = new AbortController();
        const response = await fetch(`${base}${pathAndQuery}`, {
          headers: { 'X-Scheduler-Token': token },
          signal: abort.signal,
        });
        if (response.status !== 200 || !response.body)
          return { status: response.status, text: await response.text(), stop: () => undefined };
        const lines = new Lines();
        const decoder = new TextDecoder();
        void (async () => {
          try {
            for await (const chunk of response.body as ReadableStream<Uint8Array>)
              lines.push(decoder.decode(chunk, { stream: true }));
          } catch {
            // Aborted by the test.
          }
          lines.end();
        })();
        return { status: 200, lines, stop: () => abort.abort() };
      },
    },
  };
}

/**
 * The Lambda response-stream adapter (`lambdaStreamHandler`, as `functions/scheduler/event-stream.ts`) on its own core over
 * the same table: another process, which sees the writer's ACL changes only through the event buffer.
 */
async function lambdaStream(h: SchedulerHarness): Promise<{ transport: Transport; core: Core }> {
  const core = await createCore({
    dynamodb: h.client,
    tableName: h.tableName,
    keySource: fileKeySource(h.keyFile),
    backends: [],
    clock: h.clock,
    log: silentLogger,
  });
  const handler = lambdaStreamHandler(
    schedulerFront({ core: async () => core, heartbeatMs: 200, eventPollMs: 50, streamLimitMs: 20_000 }),
    [],
  ) as unknown as (event: unknown, stream: Writable, context: unknown) => Promise<void>;
  return {
    core,
    transport: {
      name: 'the Lambda response-stream adapter',
      async open(pathAndQuery, token) {
        const [rawPath = '', rawQueryString = ''] = pathAndQuery.split('?');
        const query = new URLSearchParams(rawQueryString);
        const lines = new Lines();
        const decoder = new TextDecoder();
        const sink = new Writable({
          write(chunk, _encoding, callback) {
            lines.push(decoder.decode(chunk, { stream: true }));
            callback();
          },
        });
        sink.on('finish', () => lines.end());
        const before = lambdaMetadata.length;
        const event = {
          version: '2.0',
          routeKey: '$default',
          rawPath,
          rawQueryString,
          headers: { 'x-scheduler-token': token, host: 'lambda.example' },
          queryStringParameters: Object.fromEntries(query),
          requestContext: {
            http: { method: 'GET', path: rawPath, sourceIp: '10.0.0.1' },
            domainName: 'lambda.example',
          },
          isBase64Encoded: false,
        };
        const invocation = handler(event, sink, {});
        // The status is known once the adapter has written the response's metadata (or the invocation has ended).
        const deadline = Date.now() + 5000;
        while (lambdaMetadata.length === before && Date.now() < deadline)
          await new Promise((resolve) => setTimeout(resolve, 5));
        const status = (lambdaMetadata[before] as { statusCode?: number } | undefined)?.statusCode ?? 0;
        if (status !== 200) {
          await invocation;
          const text: string[] = [];
          for (let line = await lines.next(5000); line !== undefined; line = await lines.next(5000)) text.push(line);
          return { status, text: text.join('\n'), stop: () => undefined };
        }
        return { status, lines, stop: () => sink.destroy() };
      },
    },
  };
}

const nodeEvent = (id: string): PendingEvent => ({
  Topic: 'Node',
  Type: 'NodeRegistration',
  Key: id,
  Namespace: '',
  FilterKeys: null,
  Payload: { Node: { ID: id } },
});

/** What the operator does to take the narrow token's `Node` access away, and the line the stream must end with. */
interface Revocation {
  name: string;
  /** Through a role (the token holds a role that links the policy) or directly. */
  viaRole?: boolean;
  /** The token is created with an ExpirationTTL. */
  expiring?: boolean;
  ends: string;
  /** The 403's message for a new stream with the token. */
  refused: string;
  revoke(c: { policy: string; accessor: string; roleId?: string; roleName?: string }): Promise<void>;
}

describe('attack: an open event stream outlives its token’s access (narrow token; Nomad event_broker ACL re-check; HCSEC-2022-26 / CVE-2022-3867: a stream outliving its token’s TTL)', () => {
  let h: SchedulerHarness;
  let root: string;
  let server: Server;
  const transports: Transport[] = [];
  let serial = 0;
  const mgmt = async (method: string, path: string, body?: unknown) => {
    const out = await h.call(method, path, { token: root, ...(body === undefined ? {} : { body }) });
    if (out.status !== 200) throw new Error(`${method} ${path}: ${out.status} ${out.text}`);
    return out.body;
  };

  beforeAll(async () => {
    h = await startScheduler();
    root = await h.bootstrap();
    await mgmt('POST', '/v1/acl/policy/unrelated', { Rules: 'namespace "default" { policy = "read" }' });
    const node = await nodeServer(h);
    server = node.server;
    const lambda = await lambdaStream(h);
    transports.push(node.transport, lambda.transport);
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await h.close();
  });

  const revocations: Revocation[] = [
    {
      name: 'the policy is updated to drop node:read',
      ends: SUBSCRIPTION_CLOSED,
      refused: 'Permission denied',
      revoke: async ({ policy }) =>
        void (await mgmt('POST', `/v1/acl/policy/${policy}`, { Rules: 'namespace "default" { policy = "read" }' })),
    },
    {
      name: 'the policy is deleted',
      ends: SUBSCRIPTION_CLOSED,
      refused: 'Permission denied',
      revoke: async ({ policy }) => void (await mgmt('DELETE', `/v1/acl/policy/${policy}`)),
    },
    {
      name: 'the token is updated to hold another policy',
      ends: SUBSCRIPTION_CLOSED,
      refused: 'Permission denied',
      revoke: async ({ accessor }) =>
        void (await mgmt('POST', `/v1/acl/token/${accessor}`, {
          AccessorID: accessor,
          Type: 'client',
          Policies: ['unrelated'],
        })),
    },
    {
      name: 'the token is deleted (revoked)',
      ends: SUBSCRIPTION_CLOSED,
      refused: 'ACL token not found',
      revoke: async ({ accessor }) => void (await mgmt('DELETE', `/v1/acl/token/${accessor}`)),
    },
    {
      name: 'the token expires (the scheduler clock passes its ExpirationTime; nothing deletes it)',
      expiring: true,
      ends: TOKEN_EXPIRED,
      refused: 'ACL token expired',
      revoke: async () => h.clock.advance(11 * 60),
    },
    {
      name: 'the role it holds loses the policy',
      viaRole: true,
      ends: SUBSCRIPTION_CLOSED,
      refused: 'Permission denied',
      revoke: async ({ roleId, roleName }) =>
        void (await mgmt('POST', `/v1/acl/role/${roleId}`, {
          ID: roleId,
          Name: roleName,
          Policies: [{ Name: 'unrelated' }],
        })),
    },
    {
      name: 'the role it holds is deleted',
      viaRole: true,
      ends: SUBSCRIPTION_CLOSED,
      refused: 'Permission denied',
      revoke: async ({ roleId }) => void (await mgmt('DELETE', `/v1/acl/role/${roleId}`)),
    },
  ];

  for (const transportIndex of [0, 1]) {
    const transportName = transportIndex === 0 ? 'the node server' : 'the Lambda response-stream adapter';
    describe(`through ${transportName}`, () => {
      for (const revocation of revocations) {
        it(`${revocation.name}: no Node event after the change, the stream ends with Nomad's error line, and a new stream is refused 403`, async () => {
          const transport = transports[transportIndex] as Transport;
          const n = ++serial;
          const policy = `nodes-${n}`;
          await mgmt('POST', `/v1/acl/policy/${policy}`, { Rules: 'node { policy = "read" }' });
          let roleId: string | undefined;
          let roleName: string | undefined;
          if (revocation.viaRole) {
            roleName = `node-readers-${n}`;
            roleId = (await mgmt('POST', '/v1/acl/role', { Name: roleName, Policies: [{ Name: policy }] })).ID;
          }
          const token = await mgmt('POST', '/v1/acl/token', {
            Type: 'client',
            ...(revocation.viaRole ? { Roles: [{ ID: roleId }] } : { Policies: [policy] }),
            ...(revocation.expiring ? { ExpirationTTL: '10m' } : {}),
          });
          const start = await h.scheduler.state.currentIndex();
          const url = `/v1/event/stream?topic=Node&index=${start}`;
          const opened = await transport.open(url, token.SecretID);
          expect(opened.status).toBe(200);
          const lines = opened.lines as Lines;
          try {
            expect(await lines.next(5000)).toBe('{}');
            // While access lasts, the stream delivers.
            const beforeIndex = await publishEvents(h.core, [nodeEvent(`before-${n}`)]);
            let line: string | undefined;
            do line = await lines.next(5000);
            while (line === '{}');
            expect(JSON.parse(line as string)).toMatchObject({
              Index: beforeIndex,
              Events: [{ Topic: 'Node', Key: `before-${n}` }],
            });

            // The operator takes the access away; the writer goes on writing Node events.
            await revocation.revoke({
              policy,
              accessor: token.AccessorID,
              ...(roleId ? { roleId } : {}),
              ...(roleName ? { roleName } : {}),
            });
            const revokedAt = Date.now();
            await publishEvents(h.core, [nodeEvent(`after-${n}`)]);
            await publishEvents(h.core, [nodeEvent(`after-again-${n}`)]);

            const rest: string[] = [];
            for (let next = await lines.next(5000); next !== undefined; next = await lines.next(5000)) rest.push(next);
            const endedAfterMs = Date.now() - revokedAt;
            // Nothing written after the change reached the attacker; heartbeats only, then Nomad's error line, then the end.
            expect(rest.join('\n')).not.toContain(`after-${n}`);
            expect(rest.at(-1)).toBe(revocation.ends);
            expect(rest.slice(0, -1).every((entry) => entry === '{}')).toBe(true);
            expect(endedAfterMs).toBeLessThan(3000);
          } finally {
            opened.stop();
          }

          // The same token cannot open a new stream.
          const again = await transport.open(url, token.SecretID);
          expect(again.status).toBe(403);
          expect(again.text).toContain(revocation.refused);
        });
      }
    });
  }

  it('replica lag: a policy change whose event is read before the policy item ends the stream instead of trusting the older item', async () => {
    // In a replica region the table may show a transaction's event before the item it changed (global tables
    // replicate item by item). The stream must not re-check against the older item and keep delivering.
    await mgmt('POST', '/v1/acl/policy/lagging', { Rules: 'node { policy = "read" }' });
    const token = await mgmt('POST', '/v1/acl/token', { Type: 'client', Policies: ['lagging'] });
    for (const transport of transports) {
      const start = await h.scheduler.state.currentIndex();
      const url = `/v1/event/stream?topic=Node&index=${start}`;
      const opened = await transport.open(url, token.SecretID);
      const lines = opened.lines as Lines;
      try {
        expect(await lines.next(5000)).toBe('{}');
        // The event of a change to the token's policy arrives; the policy item (ModifyIndex) is still the old one.
        await publishEvents(h.core, [
          {
            Topic: 'ACLPolicy',
            Type: 'ACLPolicyUpserted',
            Key: 'lagging',
            Namespace: '',
            FilterKeys: null,
            Payload: { ACLPolicy: { Name: 'lagging' } },
          },
        ]);
        await publishEvents(h.core, [nodeEvent(`lagged-${transport.name}`)]);
        const rest: string[] = [];
        for (let next = await lines.next(5000); next !== undefined; next = await lines.next(5000)) rest.push(next);
        expect(rest.join('\n')).not.toContain('lagged-');
        expect(rest.at(-1)).toBe(SUBSCRIPTION_CLOSED);
      } finally {
        opened.stop();
      }
      // The client resubscribes; the token's access did not change, so the new stream is accepted.
      const again = await transport.open(url, token.SecretID);
      expect(again.status).toBe(200);
      again.stop();
    }
  });

  it('a stream whose access is unchanged is not closed by other ACL changes (no false positives)', async () => {
    await mgmt('POST', '/v1/acl/policy/steady', { Rules: 'node { policy = "read" }' });
    const token = await mgmt('POST', '/v1/acl/token', { Type: 'client', Policies: ['steady'] });
    for (const transport of transports) {
      const start = await h.scheduler.state.currentIndex();
      const opened = await transport.open(`/v1/event/stream?topic=Node&index=${start}`, token.SecretID);
      const lines = opened.lines as Lines;
      try {
        // Other tokens, policies and roles change; this token's access does not.
        await mgmt('POST', '/v1/acl/policy/other', { Rules: 'namespace "default" { policy = "read" }' });
        const other = await mgmt('POST', '/v1/acl/token', { Type: 'client', Policies: ['other'] });
        await mgmt('DELETE', `/v1/acl/token/${other.AccessorID}`);
        await mgmt('DELETE', '/v1/acl/policy/other');
        const published = await publishEvents(h.core, [nodeEvent(`steady-${transport.name}`)]);
        let line: string | undefined;
        do line = await lines.next(5000);
        while (line === '{}');
        expect(JSON.parse(line as string)).toMatchObject({
          Index: published,
          Events: [{ Key: `steady-${transport.name}` }],
        });
      } finally {
        opened.stop();
      }
    }
  });
});
