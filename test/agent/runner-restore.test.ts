/**
 * The runner survives the agent's own restart: a task still running is re-attached from the saved state (the same
 * process, no second start) and its later exit code is still learned; a task that ended while the agent was down is
 * reported dead honestly (a `Terminated` event saying so, with the exit code its supervisor recorded) and restarted per
 * its policy. The agent's stop is `detach` (tasks run on); its start again is a new runner from the saved state.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AllocRunner } from '../../packages/agent/src/runner/alloc-runner.ts';
import { isAlive } from '../../packages/agent/src/runner/executor.ts';
import type { SavedAlloc } from '../../packages/agent/src/runner/state-store.ts';
import { allocation, eventTypes, RunnerFixture, rawExec, until } from '../support/alloc-fixtures.ts';

let fixture: RunnerFixture;
beforeEach(() => {
  fixture = new RunnerFixture();
});
afterEach(async () => {
  await fixture.cleanup();
});

/** The agent starting again: one runner per saved allocation. */
function restore(): AllocRunner[] {
  return fixture.store.loadAll().saved.map((saved) => fixture.run(saved.Alloc, { saved }));
}

const runs = (allocId: string) =>
  readFileSync(path.join(fixture.dataDir, 'alloc', allocId, 'alloc/data/runs'), 'utf8')
    .trim()
    .split('\n');

// Writes its pid to alloc/data/runs at each start, then waits for alloc/data/exit-code and exits with it.
const waiter = [
  '-c',
  'echo $$ >> "$NOMAD_ALLOC_DIR/data/runs"; while [ ! -f "$NOMAD_ALLOC_DIR/data/exit-code" ]; do sleep 0.05; done; exit $(cat "$NOMAD_ALLOC_DIR/data/exit-code")',
];

describe('an agent restart', () => {
  it('re-attaches a task that still runs without starting it again, and learns its exit code later', async () => {
    const alloc = allocation({ type: 'batch', tasks: [rawExec('t', 'sh', waiter)] });
    const first = fixture.run(alloc);
    await until(
      'the task to run',
      () =>
        first.taskStates.t?.State === 'running' &&
        existsSync(path.join(fixture.dataDir, 'alloc', alloc.ID, 'alloc/data/runs')),
    );
    const handle = first.tasks.get('t')?.handle;
    expect(handle).toBeTruthy();
    await first.detach();
    expect(isAlive(handle as NonNullable<typeof handle>)).toBe(true);

    const [second] = restore();
    expect(second?.id).toBe(alloc.ID);
    const runner = second as AllocRunner;
    expect(runner.taskStates.t?.State).toBe('running');
    expect(runner.tasks.get('t')?.handle?.pid).toBe(handle?.pid);
    expect(runner.clientStatus.status).toBe('running');
    writeFileSync(path.join(fixture.dataDir, 'alloc', alloc.ID, 'alloc/data/exit-code'), '7');
    await until('the task to end', () => runner.terminal);
    expect(runs(alloc.ID)).toHaveLength(1);
    const events = runner.taskStates.t?.Events ?? [];
    expect(events.map((event) => event.Type)).toEqual([
      'Received',
      'Task Setup',
      'Started',
      'Terminated',
      'Not Restarting',
    ]);
    // It ended after the agent came back: an ordinary exit.
    expect(events[3]).toMatchObject({ ExitCode: 7, Signal: 0, Message: '' });
    expect(runner.taskStates.t).toMatchObject({ State: 'dead', Failed: true });
  });

  it('reports a task that died while the agent was down and restarts it per policy', async () => {
    const alloc = allocation({
      type: 'service',
      restart: { Attempts: 1, Delay: 10e6 },
      tasks: [rawExec('t', 'sh', waiter)],
    });
    const first = fixture.run(alloc);
    await until(
      'the task to run',
      () =>
        first.taskStates.t?.State === 'running' &&
        existsSync(path.join(fixture.dataDir, 'alloc', alloc.ID, 'alloc/data/runs')),
    );
    const handle = first.tasks.get('t')?.handle as NonNullable<ReturnType<typeof first.tasks.get>>['handle'];
    await first.detach();
    // While the agent is down the task is killed from outside.
    process.kill(handle?.pid as number, 'SIGTERM');
    await until('the task to be gone', () => !isAlive(handle as NonNullable<typeof handle>));

    const runner = restore()[0] as AllocRunner;
    await until('the task to run again', () => runner.taskStates.t?.State === 'running' && runs(alloc.ID).length === 2);
    const events = runner.taskStates.t?.Events ?? [];
    expect(events.map((event) => event.Type)).toEqual([
      'Received',
      'Task Setup',
      'Started',
      'Terminated',
      'Restarting',
      'Started',
    ]);
    expect(events[3]).toMatchObject({
      ExitCode: 143,
      Signal: 15,
      Message: 'the task ended while the agent was not running',
    });
    expect(runner.taskStates.t?.Restarts).toBe(1);
    expect(runner.tasks.get('t')?.handle?.pid).not.toBe(handle?.pid);
    expect(eventTypes(runner, 't').filter((type) => type === 'Started')).toHaveLength(2);
  });

  it('finds a task started by an agent that died before saving its handle (no second start)', async () => {
    const alloc = allocation({ type: 'batch', tasks: [rawExec('t', 'sh', waiter)] });
    const first = fixture.run(alloc);
    await until(
      'the task to run',
      () =>
        first.taskStates.t?.State === 'running' &&
        existsSync(path.join(fixture.dataDir, 'alloc', alloc.ID, 'alloc/data/runs')),
    );
    const pid = first.tasks.get('t')?.handle?.pid;
    await first.detach();
    // The state as saved just before the start: pending, no handle.
    const saved = fixture.store.loadAll().saved[0] as SavedAlloc;
    const task = saved.Tasks.t as SavedAlloc['Tasks'][string];
    fixture.store.save({
      ...saved,
      Tasks: {
        t: {
          ...task,
          Handle: null,
          State: { ...task.State, State: 'pending', StartedAt: null, Events: task.State.Events?.slice(0, 2) ?? [] },
        },
      },
    });

    const runner = restore()[0] as AllocRunner;
    expect(runner.taskStates.t?.State).toBe('running');
    expect(runner.tasks.get('t')?.handle?.pid).toBe(pid);
    writeFileSync(path.join(fixture.dataDir, 'alloc', alloc.ID, 'alloc/data/exit-code'), '0');
    await until('the task to end', () => runner.terminal);
    expect(runs(alloc.ID)).toHaveLength(1);
    expect(eventTypes(runner, 't')).toEqual(['Received', 'Task Setup', 'Started', 'Terminated']);
    expect(runner.taskStates.t).toMatchObject({ State: 'dead', Failed: false });
  });

  it('a stopped allocation restored is not started again', async () => {
    const alloc = allocation({ type: 'batch', tasks: [rawExec('t', 'sh', ['-c', 'exit 0'])] });
    const first = fixture.run(alloc);
    await until('the task to end', () => first.terminal);
    await first.detach();
    const runner = restore()[0] as AllocRunner;
    await runner.wait();
    expect(runner.taskStates.t).toMatchObject({ State: 'dead', Failed: false });
    expect(eventTypes(runner, 't')).toEqual(['Received', 'Task Setup', 'Started', 'Terminated']);
  });
});
