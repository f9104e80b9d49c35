/**
 * The real agent against the real service: `npm start` (on the run's DynamoDB Local), an introduction token minted
 * over HTTP, `npm run agent`'s entry point as a child process. The node shows up `ready` in `GET /v1/nodes` with this
 * machine's fingerprint, its `NodeRegistration` event reaches the `Node` stream, a stop deregisters nothing, and the
 * agent started again from the same data directory (without any introduction token) is the same node.
 */
import { readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AgentService, startServiceForAgent } from '../support/agent-service.ts';
import { freePort, killLeftovers, launch, START_TIMEOUT_MS, type Started } from '../support/npm-start.ts';

let work: string;
let service: Started;
/** The scheduler's management token (its ACL bootstrapped over HTTP, as an operator does). */
let management: string;
let api: AgentService['api'];

beforeAll(async () => {
  ({ work, service, management, api } = await startServiceForAgent('agent-e2e'));
}, START_TIMEOUT_MS);

afterAll(async () => {
  killLeftovers();
  if (work) await rm(work, { recursive: true, force: true });
});

async function until<T>(what: string, probe: () => Promise<T | undefined>, agent?: { stdout: () => string }) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const found = await probe();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n--- agent:\n${agent?.stdout() ?? ''}`);
    await sleep(100);
  }
}

/** The `Node` topic's events as they arrive. */
async function nodeStream() {
  const controller = new AbortController();
  const response = await fetch(`${service.scheduler}/v1/event/stream?topic=Node`, {
    headers: { 'X-Nomad-Token': management, 'Content-Type': 'application/json' },
    signal: controller.signal,
  });
  expect(response.status).toBe(200);
  // biome-ignore lint/suspicious/noExplicitAny: the stream's events as JSON
  const events: any[] = [];
  const reading = (async () => {
    const decoder = new TextDecoder();
    let buffered = '';
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      buffered += decoder.decode(chunk, { stream: true });
      let newline = buffered.indexOf('\n');
      while (newline >= 0) {
        const line = buffered.slice(0, newline).trim();
        buffered = buffered.slice(newline + 1);
        if (line && line !== '{}') events.push(...(JSON.parse(line).Events ?? []));
        newline = buffered.indexOf('\n');
      }
    }
  })().catch(() => undefined);
  return {
    events,
    close: async () => {
      controller.abort();
      await reading;
    },
  };
}

function startAgent(dataDir: string, extra: string[] = [], env: Record<string, string> = {}) {
  return launch(env, 'packages/agent/src/main.ts', ['-data-dir', dataDir, '-servers', service.scheduler, ...extra]);
}

describe('the client agent against npm start', () => {
  it('registers this machine, reports it ready, and comes back as the same node after a restart', {
    timeout: 120_000,
  }, async () => {
    const dataDir = path.join(work, 'agent');
    const minted = await api('PUT', '/v1/acl/identity/client-introduction-token', { TTL: '10m' });
    expect(minted.status).toBe(200);
    const stream = await nodeStream();
    try {
      const agent = startAgent(dataDir, ['-client-intro-token', minted.body.JWT as string, '-meta', 'rack=r7']);
      const nodeId = await until(
        'the agent to write its node ID',
        async () => {
          try {
            return readFileSync(path.join(dataDir, 'client', 'client-id'), 'utf8').trim() || undefined;
          } catch {
            return undefined;
          }
        },
        agent,
      );
      const ready = await until(
        'the node to be ready in GET /v1/nodes',
        async () => {
          const listed = await api('GET', '/v1/nodes');
          const stubs = listed.body as Array<{ ID: string; Status: string }>;
          return stubs.find((stub) => stub.ID === nodeId && stub.Status === 'ready');
        },
        agent,
      );
      expect(ready).toMatchObject({ Name: os.hostname(), Datacenter: 'dc1', NodePool: 'default' });

      const node = await api('GET', `/v1/node/${nodeId}`);
      expect(node.status).toBe(200);
      expect(node.body.SecretID).toBe('');
      expect(node.body.Attributes).toMatchObject({
        'unique.hostname': os.hostname(),
        'cpu.numcores': String(os.cpus().length),
        'memory.totalbytes': String(os.totalmem()),
        'kernel.version': os.release(),
      });
      expect(node.body.Attributes).not.toHaveProperty('driver.raw_exec');
      expect(node.body.Meta).toEqual({ rack: 'r7' });
      expect(node.body.Drivers.raw_exec).toMatchObject({
        Detected: false,
        Healthy: false,
        HealthDescription: 'disabled',
      });
      const messages = (node.body.Events as Array<{ Message: string; Subsystem: string }>).map(
        (event) => `${event.Subsystem}: ${event.Message}`,
      );
      expect(messages).toEqual(expect.arrayContaining(['Cluster: Node registered', 'Driver: disabled']));

      const registration = await until('the NodeRegistration event on the stream', async () =>
        stream.events.find((event) => event.Type === 'NodeRegistration' && event.Key === nodeId),
      );
      expect(registration).toMatchObject({ Topic: 'Node', Payload: { Node: { ID: nodeId, SecretID: '' } } });

      // No blocking poll: the map was read once after registration, and not again while `AllocIndex` stayed put.
      expect(agent.stdout().match(/allocation map read at index 0 \(0 allocations\)/g)).toHaveLength(1);

      // A plain stop deregisters nothing.
      agent.child.kill('SIGTERM');
      expect(await agent.exited).toEqual({ code: 0, signal: null });
      expect(agent.stdout()).toContain('the node stays registered');
      const afterStop = await api('GET', `/v1/node/${nodeId}`);
      expect(afterStop.status).toBe(200);
      expect(stream.events.filter((event) => event.Type === 'NodeDeregistration')).toEqual([]);

      // Started again with no introduction token at all, and an unreachable server listed first: the same node, by
      // its own secret, through the next server.
      const again = launch({}, 'packages/agent/src/main.ts', [
        '-data-dir',
        dataDir,
        '-servers',
        `http://127.0.0.1:${await freePort()},${service.scheduler}`,
      ]);
      await until(
        'the restarted agent to register and report ready',
        async () => (/node status ready/.test(again.stdout()) ? true : undefined),
        again,
      );
      const listed = await api('GET', '/v1/nodes');
      expect((listed.body as Array<{ ID: string }>).map((stub) => stub.ID)).toEqual([nodeId]);
      expect(readFileSync(path.join(dataDir, 'client', 'client-id'), 'utf8').trim()).toBe(nodeId);
      const reregistrations = stream.events.filter(
        (event) => event.Type === 'NodeRegistration' && event.Key === nodeId,
      );
      expect(reregistrations.length).toBeGreaterThanOrEqual(1);
      again.child.kill('SIGINT');
      expect(await again.exited).toEqual({ code: 0, signal: null });
    } finally {
      await stream.close();
    }
  });

  it('registers nothing with a forged introduction token, and says why', { timeout: 60_000 }, async () => {
    const dataDir = path.join(work, 'forged');
    const minted = await api('PUT', '/v1/acl/identity/client-introduction-token', {});
    const [header, payload] = (minted.body.JWT as string).split('.');
    const forged = `${header}.${payload}.${Buffer.alloc(32, 1).toString('base64url')}`;
    const before = (await api('GET', '/v1/nodes')).body as unknown[];
    const agent = startAgent(dataDir, [], { NOMAD_CLIENT_INTRO_TOKEN: forged });
    await until(
      'the refusal in the agent log',
      async () => (/HTTP 403/.test(agent.stdout()) ? true : undefined),
      agent,
    );
    const nodeId = readFileSync(path.join(dataDir, 'client', 'client-id'), 'utf8').trim();
    expect((await api('GET', `/v1/node/${nodeId}`)).status).toBe(404);
    expect(((await api('GET', '/v1/nodes')).body as unknown[]).length).toBe(before.length);
    agent.child.kill('SIGTERM');
    expect(await agent.exited).toEqual({ code: 0, signal: null });
  });

  it('refuses to start a new node without an introduction token', { timeout: 60_000 }, async () => {
    const agent = startAgent(path.join(work, 'no-token'));
    expect(await agent.exited).toEqual({ code: 1, signal: null });
    expect(agent.stderr()).toContain('this is a new node and no introduction token was given');
  });
});
