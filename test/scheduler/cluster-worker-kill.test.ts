import { execFile } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { EvaluationWorker } from '../../packages/core/src/scheduler/worker/evaluation-worker.ts';
import { groupJob, ready } from '../support/cluster-allocations.ts';
import { nodeTokens, registerNode } from '../support/cluster-nodes.ts';
import { type SchedulerHarness, startScheduler } from '../support/scheduler-harness.ts';

/**
 * Issue 41, "a placement Lambda killed mid-apply leaves no half-written plan and no node over-committed": the
 * evaluation worker runs in a process of its own (`cluster-worker-child.ts`) and is SIGKILLed right after it hands
 * one of the plan's transactions to DynamoDB Local. What the store then holds is whole transactions only (each
 * allocation written with its event), no node past its capacity, the evaluation still pending; once the dead
 * worker's lease lapses, the next worker finishes the job to exactly its count, with no duplicate.
 */
const repo = path.resolve(import.meta.dirname, '../..');
const count = 100;
/** What a node of `clientNode` can give: its CPU and memory less the reserved. */
const capacity = { cpu: 4000 - 100, memory: 4096 - 256 };

describe('an evaluation worker killed mid-apply (DynamoDB Local, a child process)', () => {
  let h: SchedulerHarness;
  let root: string;
  const nodeIds: string[] = [];

  beforeAll(async () => {
    h = await startScheduler();
    const tokens = await nodeTokens(h);
    root = tokens.root;
    for (let n = 0; n < 3; n++) {
      const { node } = await registerNode(h, tokens.writer);
      await ready(h, node);
      nodeIds.push(node.ID);
    }
  });
  afterAll(() => h.close());

  const runChild = (killAfter: number) =>
    new Promise<{ signal: NodeJS.Signals | null; stdout: string; stderr: string }>((resolve) => {
      const child = execFile(
        path.join(repo, 'node_modules/.bin/node'),
        ['--import', 'tsx', 'test/scheduler/cluster-worker-child.ts'],
        {
          cwd: repo,
          env: {
            ...process.env,
            WORKER_ENDPOINT: inject('dynamoEndpoint'),
            WORKER_TABLE: h.tableName,
            WORKER_KEY_FILE: h.keyFile,
            WORKER_CLOCK_MS: String(h.clock.now()),
            WORKER_KILL_AFTER: String(killAfter),
          },
        },
        (_error, stdout, stderr) => resolve({ signal: child.signalCode, stdout, stderr }),
      );
    });

  const live = async () =>
    (await h.scheduler.allocations.ofJob('default', 'many')).filter(
      (alloc) => alloc.DesiredStatus === 'run' && !['complete', 'failed', 'lost'].includes(alloc.ClientStatus),
    );

  /** No node holds more than it has, counting every allocation that runs on it. */
  async function noNodeOverCommitted() {
    for (const id of nodeIds) {
      const running = (await h.scheduler.allocations.onNode(id)).filter(
        (alloc) => alloc.DesiredStatus === 'run' && !['complete', 'failed', 'lost'].includes(alloc.ClientStatus),
      );
      const tasks = running.flatMap((alloc) => Object.values(alloc.AllocatedResources.Tasks));
      expect(tasks.reduce((sum, task) => sum + task.Cpu.CpuShares, 0)).toBeLessThanOrEqual(capacity.cpu);
      expect(tasks.reduce((sum, task) => sum + task.Memory.MemoryMB, 0)).toBeLessThanOrEqual(capacity.memory);
    }
  }

  it('leaves whole transactions only and no node over-committed; the next worker places exactly the rest', {
    timeout: 120_000,
  }, async () => {
    const job = groupJob('many', { count, cpu: 100, memoryMB: 64 });
    const submitted = await h.call('PUT', '/v1/jobs', { token: root, body: { Job: job } });
    expect(submitted.status).toBe(200);
    const evalId = submitted.body.EvalID as string;
    const before = await h.scheduler.state.currentIndex();

    // The plan's transactions: the child is killed after handing over the second one.
    const outcome = await runChild(2);
    expect(outcome.signal, outcome.stderr).toBe('SIGKILL');
    expect(outcome.stdout).not.toContain('ran');

    // The transaction the child handed over before it died may still be in DynamoDB Local's hands (it then lands
    // whole, after the child is gone): read once the scheduler's index has stopped moving.
    let seen = await h.scheduler.state.currentIndex();
    for (let still = 0; still < 3; ) {
      await new Promise((done) => setTimeout(done, 250));
      const now = await h.scheduler.state.currentIndex();
      still = now === seen ? still + 1 : 0;
      seen = now;
    }
    const written = await live();
    // The first transaction was answered before the second was sent: part of the plan is written, not all of it.
    expect(written.length).toBeGreaterThan(0);
    expect(written.length).toBeLessThan(count);
    // Each allocation in the store was written with its event, and each event's allocation is in the store.
    const events = (await h.scheduler.state.eventsAfter(before)).flatMap((batch) => batch.events);
    const announced = new Set(events.filter((event) => event.Topic === 'Allocation').map((event) => event.Key));
    expect(new Set(written.map((alloc) => alloc.ID))).toEqual(announced);
    // No allocation name twice, and no node past its capacity.
    expect(new Set(written.map((alloc) => alloc.Name)).size).toBe(written.length);
    await noNodeOverCommitted();
    expect((await h.scheduler.evaluations.get(evalId))?.Status).toBe('pending');

    // While the dead worker's lease holds, nobody runs the job's evaluation; once it lapses, the next one finishes.
    expect((await new EvaluationWorker(h.scheduler).runDue()).get(evalId)).toBe('busy');
    h.clock.advance(61_000);
    expect((await new EvaluationWorker(h.scheduler).runDue()).get(evalId)).toBe('complete');
    const placed = await live();
    expect(placed).toHaveLength(count);
    expect(new Set(placed.map((alloc) => alloc.Name)).size).toBe(count);
    for (const alloc of written) expect(placed.map((p) => p.ID)).toContain(alloc.ID);
    await noNodeOverCommitted();
    expect((await h.call('GET', `/v1/evaluation/${evalId}`, { token: root })).body.Status).toBe('complete');
  });
});
