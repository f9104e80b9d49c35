import { execFile } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { NodePools } from '../../packages/core/src/scheduler/cluster/node-pools/store.ts';
import { ClusterNodes } from '../../packages/core/src/scheduler/cluster/nodes/store.ts';
import { nodeSecretHash } from '../../packages/core/src/scheduler/composition/secret-hashes.ts';
import { SchedulerState } from '../../packages/core/src/scheduler/state.ts';
import { sweepScheduler } from '../../packages/core/src/scheduler/sweep.ts';
import type { Store } from '../../packages/core/src/storage/store.ts';
import { nodeTokens, registerNode } from '../support/cluster-nodes.ts';
import { type SchedulerHarness, startScheduler } from '../support/scheduler-harness.ts';

const repo = path.resolve(import.meta.dirname, '../..');

/** Heartbeat settings at this size: a TTL under 20 s (10 s and its stagger) and 10 s of grace. */
const pastEveryDeadline = 31;

describe('the heartbeat sweep (DynamoDB Local)', () => {
  let h: SchedulerHarness;
  let reader: string;
  let writer: string;

  beforeAll(async () => {
    h = await startScheduler();
    ({ reader, writer } = await nodeTokens(h));
  });
  afterAll(() => h.close());

  const node = async (id: string) => (await h.call('GET', `/v1/node/${id}`, { token: reader })).body;
  const readyNode = async () => {
    const registered = await registerNode(h, writer);
    const beat = await h.call('PUT', `/v1/client/node/${registered.node.ID}/status`, {
      token: registered.node.SecretID,
      body: { Status: 'ready' },
    });
    expect(beat.status).toBe(200);
    return registered;
  };
  /** Every buffered event after `index` that marks a node down, by node ID. */
  const downEvents = async (after: number) => {
    const counts = new Map<string, number>();
    for (const batch of await h.scheduler.state.eventsAfter(after))
      for (const event of batch.events) {
        const payload = event.Payload.Node as { Status: string } | undefined;
        if (event.Type === 'NodeStreamEvent' && payload?.Status === 'down')
          counts.set(event.Key, (counts.get(event.Key) ?? 0) + 1);
      }
    return counts;
  };
  const missed = (events: Array<{ Message: string }>) =>
    events.filter((event) => event.Message === 'Node heartbeat missed').length;

  it('marks a late node down with “Node heartbeat missed”; its next beat brings it back initializing, then ready', {
    timeout: 60_000,
  }, async () => {
    const { node: registered } = await readyNode();
    h.clock.advance(9);
    const quiet = await h.scheduler.state.currentIndex();
    await sweepScheduler(h.core);
    expect(await h.scheduler.state.currentIndex()).toBe(quiet);
    expect((await node(registered.ID)).Status).toBe('ready');

    h.clock.advance(pastEveryDeadline);
    const before = await h.scheduler.state.currentIndex();
    await sweepScheduler(h.core);
    const down = await node(registered.ID);
    expect(down.Status).toBe('down');
    expect(down.Events.at(-1)).toMatchObject({ Message: 'Node heartbeat missed', Subsystem: 'Cluster' });
    expect(down.LastMissedHeartbeatIndex).toBe(down.ModifyIndex);
    expect((await downEvents(before)).get(registered.ID)).toBe(1);
    // Swept again: nothing more.
    const after = await h.scheduler.state.currentIndex();
    await sweepScheduler(h.core);
    expect(await h.scheduler.state.currentIndex()).toBe(after);

    const back = await h.call('PUT', `/v1/client/node/${registered.ID}/status`, {
      token: registered.SecretID,
      body: { Status: 'ready' },
    });
    expect(back.status).toBe(200);
    const returned = await node(registered.ID);
    expect(returned.Status).toBe('initializing');
    expect(returned.Events.at(-1).Message).toBe('Node reregistered by heartbeat');
    await h.call('PUT', `/v1/client/node/${registered.ID}/status`, {
      token: registered.SecretID,
      body: { Status: 'ready' },
    });
    const ready = await node(registered.ID);
    expect(ready.Status).toBe('ready');
    expect(ready.LastMissedHeartbeatIndex).toBe(0);
  });

  it('concurrent sweeps mark each late node down once, with one event each', { timeout: 90_000 }, async () => {
    const nodes = [];
    for (let i = 0; i < 6; i++) nodes.push(await readyNode());
    h.clock.advance(pastEveryDeadline);
    const before = await h.scheduler.state.currentIndex();
    await Promise.all([sweepScheduler(h.core), sweepScheduler(h.core), sweepScheduler(h.core)]);
    const events = await downEvents(before);
    for (const { node: registered } of nodes) {
      const read = await node(registered.ID);
      expect(read.Status).toBe('down');
      expect(missed(read.Events)).toBe(1);
      expect(events.get(registered.ID)).toBe(1);
    }
  });

  it('leaves a node alive when its heartbeat lands between the sweep’s read and its write', async () => {
    const { node: registered } = await readyNode();
    h.clock.advance(pastEveryDeadline);
    const nodes = h.scheduler.nodes;
    // The sweep's store: its list of late beats is followed by the node's heartbeat, before any write of the sweep.
    const store = h.core.store;
    const list = async (...args: Parameters<Store['list']>) => {
      const items = await store.list(...args);
      if (items.some((item) => item.sk === registered.ID))
        await nodes.heartbeat(
          registered.ID,
          { secretHash: nodes.secretHash(registered.ID, registered.SecretID) },
          'ready',
          undefined,
        );
      return items;
    };
    const racing = new Proxy(store, {
      get: (target, name) => {
        if (name === 'list') return list;
        const value = Reflect.get(target, name, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const state = new SchedulerState(racing, h.clock);
    const before = await h.scheduler.state.currentIndex();
    const down = await new ClusterNodes(state, new NodePools(state), (id, secret) =>
      nodeSecretHash(h.core, id, secret),
    ).expireMissed();
    expect(down).not.toContain(registered.ID);
    expect((await node(registered.ID)).Status).toBe('ready');
    expect((await downEvents(before)).get(registered.ID)).toBeUndefined();
  });

  it('of concurrent identical drains on DynamoDB, one changes the node and publishes the one event', {
    timeout: 60_000,
  }, async () => {
    const { node: registered } = await readyNode();
    const before = await h.scheduler.state.currentIndex();
    const answers = await Promise.all(
      Array.from({ length: 4 }, () =>
        h.call('PUT', `/v1/node/${registered.ID}/drain`, { token: writer, body: { DrainSpec: { Deadline: 60e9 } } }),
      ),
    );
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 200]);
    const drains = (await h.scheduler.state.eventsAfter(before))
      .flatMap((batch) => batch.events)
      .filter((event) => event.Type === 'NodeDrain' && event.Key === registered.ID);
    expect(drains).toHaveLength(1);
    await h.call('PUT', `/v1/node/${registered.ID}/purge`, { token: writer });
  });

  it('a sweep killed mid-way leaves each node either ready or down with its one event; the next sweep finishes', {
    timeout: 120_000,
  }, async () => {
    const nodes = [];
    for (let i = 0; i < 6; i++) nodes.push(await readyNode());
    h.clock.advance(pastEveryDeadline);
    const before = await h.scheduler.state.currentIndex();
    const outcome = await new Promise<{ signal: NodeJS.Signals | null; stdout: string }>((resolve) => {
      const child = execFile(
        path.join(repo, 'node_modules/.bin/node'),
        ['--import', 'tsx', 'test/scheduler/cluster-sweep-child.ts'],
        {
          cwd: repo,
          env: {
            ...process.env,
            SWEEP_ENDPOINT: inject('dynamoEndpoint'),
            SWEEP_TABLE: h.tableName,
            SWEEP_KEY_FILE: h.keyFile,
            SWEEP_CLOCK_MS: String(h.clock.now()),
            SWEEP_KILL_AFTER: '3',
          },
        },
        (_error, stdout) => resolve({ signal: child.signalCode, stdout }),
      );
    });
    expect(outcome.signal).toBe('SIGKILL');
    expect(outcome.stdout).not.toContain('swept');
    const events = await downEvents(before);
    let downCount = 0;
    for (const { node: registered } of nodes) {
      const read = await node(registered.ID);
      if (read.Status === 'down') {
        downCount++;
        expect(missed(read.Events)).toBe(1);
        expect(events.get(registered.ID)).toBe(1);
      } else {
        expect(read.Status).toBe('ready');
        expect(missed(read.Events)).toBe(0);
        expect(events.get(registered.ID)).toBeUndefined();
      }
    }
    expect(downCount).toBeGreaterThanOrEqual(1);
    expect(downCount).toBeLessThan(nodes.length);

    await sweepScheduler(h.core);
    const finished = await downEvents(before);
    for (const { node: registered } of nodes) {
      const read = await node(registered.ID);
      expect(read.Status).toBe('down');
      expect(missed(read.Events)).toBe(1);
      expect(finished.get(registered.ID)).toBe(1);
    }
  });
});
