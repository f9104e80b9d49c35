/**
 * Attack class: streaming another namespace's scheduling through the event stream (Nomad's `nomad/event_endpoint.go`
 * and the broker's subscription filter: each topic's events need `read-job` in their own namespace).
 *
 * Attacker: a token with `read` on namespace `team-a` only, while `team-b` runs a job named `secret` that the real
 * worker places (so its Job, Evaluation, Allocation and Deployment events are real, not published by hand).
 * They try: `topic=Allocation` and `topic=Deployment` on `team-b` and on `*`, a key filter naming team-b's
 * allocation, and a stream of their own namespace while team-b's work is written.
 * They must never reach: any event of team-b, or team-b's job name in a line of their stream.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EvaluationWorker } from '../../packages/core/src/scheduler/worker/evaluation-worker.ts';
import { ready } from '../support/cluster-allocations.ts';
import { attackCalls } from '../support/cluster-attacks.ts';
import { nodeTokens, registerNode } from '../support/cluster-nodes.ts';
import { type SchedulerService, startSchedulerInMemory } from '../support/scheduler-harness.ts';

const job = (id: string, count = 1) => ({
  ID: id,
  TaskGroups: [
    {
      Name: 'web',
      Count: count,
      Update: { MaxParallel: 1 },
      Tasks: [{ Name: 't', Driver: 'raw_exec', Config: { command: 'true' }, Resources: { CPU: 100, MemoryMB: 64 } }],
    },
  ],
});

interface StreamEvent {
  Topic: string;
  Namespace: string;
  Key: string;
}

describe('attack: the Allocation and Deployment topics of another namespace', () => {
  let h: SchedulerService;
  let root: string;
  let readerA: string;
  const { as, tokenWith } = attackCalls(() => ({ h, root }));

  beforeAll(async () => {
    h = await startSchedulerInMemory();
    const tokens = await nodeTokens(h);
    root = tokens.root;
    const { node } = await registerNode(h, tokens.writer);
    await ready(h, node);
    for (const name of ['team-a', 'team-b'])
      expect((await as(root)('PUT', '/v1/namespace', { Name: name })).status).toBe(200);
    readerA = await tokenWith('namespace "team-a" { policy = "read" }');
  });
  afterAll(() => h.close());

  it('refuses a stream of team-b’s or every namespace’s allocations and deployments', async () => {
    for (const query of [
      'topic=Allocation&namespace=team-b',
      'topic=Deployment&namespace=team-b',
      'topic=Allocation&namespace=*',
      'topic=Deployment&namespace=*',
      'topic=*&namespace=team-b',
    ]) {
      const out = await h.stream(`/v1/event/stream?${query}`, readerA);
      expect(out.status, query).toBe(403);
      await out.reader?.close();
    }
    const anonymous = await h.stream('/v1/event/stream?topic=Allocation&namespace=team-a');
    expect(anonymous.status).toBe(403);
  });

  it('a team-a stream carries team-a’s placements and deployment, and nothing of team-b’s written around them', async () => {
    const from = await h.scheduler.state.currentIndex();
    const stream = await h.open(
      `/v1/event/stream?topic=Job&topic=Evaluation&topic=Allocation&topic=Deployment&namespace=team-a&index=${from}`,
      readerA,
    );
    const worker = new EvaluationWorker(h.scheduler);
    expect((await as(root)('PUT', '/v1/jobs?namespace=team-b', { Job: job('secret', 2) })).status).toBe(200);
    await worker.runDue();
    expect((await as(root)('PUT', '/v1/jobs?namespace=team-a', { Job: job('app') })).status).toBe(200);
    await worker.runDue();
    expect((await as(root)('PUT', '/v1/jobs?namespace=team-b', { Job: job('secret', 3) })).status).toBe(200);
    await worker.runDue();
    // The last write, team-a's: the stream's last batch must be it.
    const last = await as(root)('PUT', '/v1/jobs?namespace=team-a', { Job: job('app', 2) });
    expect(last.status).toBe(200);
    await worker.runDue();
    const lastIndex = await h.scheduler.state.currentIndex();
    const secretAllocs = await h.scheduler.allocations.ofJob('team-b', 'secret');
    expect(secretAllocs.length).toBeGreaterThanOrEqual(3);

    const seen: StreamEvent[] = [];
    const lines: string[] = [];
    for (;;) {
      const batch = await stream.nextEvents();
      lines.push(JSON.stringify(batch));
      seen.push(...(batch.Events as StreamEvent[]));
      const appAllocs = seen.filter((event) => event.Topic === 'Allocation');
      if (appAllocs.length >= 2 && seen.some((event) => event.Topic === 'Deployment') && batch.Index >= lastIndex - 5)
        if ((await h.scheduler.allocations.ofJob('team-a', 'app')).every((a) => seen.some((e) => e.Key === a.ID)))
          break;
    }
    await stream.close();
    expect(new Set(seen.map((event) => event.Topic))).toEqual(
      new Set(['Job', 'Evaluation', 'Allocation', 'Deployment']),
    );
    expect(seen.every((event) => event.Namespace === 'team-a')).toBe(true);
    for (const alloc of secretAllocs) expect(lines.join('\n')).not.toContain(alloc.ID);
    expect(lines.join('\n')).not.toContain('"secret"');
    expect(lines.join('\n')).not.toContain('team-b');
  });

  it('a key filter naming team-b’s allocation, on team-a’s namespace, delivers nothing of it', async () => {
    const [secret] = await h.scheduler.allocations.ofJob('team-b', 'secret');
    const from = await h.scheduler.state.currentIndex();
    const stream = await h.open(
      `/v1/event/stream?topic=Allocation:${secret?.ID}&topic=Job&namespace=team-a&index=${from}`,
      readerA,
    );
    // A change to team-b's allocation (stopped through the API), then a team-a job write to end the wait.
    expect((await as(root)('PUT', `/v1/allocation/${secret?.ID}/stop?namespace=team-b`)).status).toBe(200);
    const marker = await as(root)('PUT', '/v1/jobs?namespace=team-a', { Job: job('marker') });
    expect(marker.status).toBe(200);
    const batch = await stream.nextEvents();
    await stream.close();
    expect(batch.Events.map((event: StreamEvent) => [event.Topic, event.Namespace, event.Key])).toEqual([
      ['Job', 'team-a', 'marker'],
    ]);
    expect(JSON.stringify(batch)).not.toContain(secret?.ID);
  });
});
