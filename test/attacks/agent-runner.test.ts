/**
 * Attacks on the agent's task runner (`docs/security.md`, the client agent): a job asking for `raw_exec` on an agent
 * that has not enabled it, a job naming a driver the agent does not offer, and a job whose task names or allocation
 * ID try to steer the agent's writes into another allocation's folder (or out of the data directory). None of them
 * may start a process or write outside its own allocation.
 */
import { existsSync, mkdirSync, readdirSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AllocDir, AllocDirError } from '../../packages/agent/src/runner/alloc-dir.ts';
import { allocation, eventTypes, RunnerFixture, rawExec, until } from '../support/alloc-fixtures.ts';

let fixture: RunnerFixture;
beforeEach(() => {
  fixture = new RunnerFixture();
});
afterEach(async () => {
  await fixture.cleanup();
});

/** Every file under `folder`, relative. */
function tree(folder: string): string[] {
  if (!existsSync(folder)) return [];
  return readdirSync(folder, { recursive: true, encoding: 'utf8' }).sort();
}

describe('attacks on the task runner', () => {
  it('a raw_exec job on an agent that has not enabled raw_exec never runs a process', async () => {
    const marker = path.join(fixture.dataDir, 'ran');
    const alloc = allocation({
      type: 'service',
      restart: { Attempts: 5, Delay: 10e6 },
      tasks: [rawExec('evil', 'sh', ['-c', `touch ${marker}`])],
    });
    const runner = fixture.run(alloc, { rawExecEnabled: false });
    await until('the allocation to fail', () => runner.terminal);
    expect(runner.clientStatus.status).toBe('failed');
    expect(eventTypes(runner, 'evil')).toEqual(['Received', 'Task Setup', 'Driver Failure', 'Not Restarting']);
    const events = runner.taskStates.evil?.Events ?? [];
    expect(events[2]?.DriverError).toMatch(/raw_exec is disabled on this agent/);
    expect(events[3]).toMatchObject({ RestartReason: 'Error was unrecoverable', FailsTask: true });
    expect(runner.taskStates.evil?.StartedAt).toBeNull();
    expect(runner.tasks.get('evil')?.handle).toBeNull();
    expect(existsSync(marker)).toBe(false);
  });

  it('a driver the agent does not offer fails the same way', async () => {
    const marker = path.join(fixture.dataDir, 'ran');
    const runner = fixture.run(
      allocation({ tasks: [{ ...rawExec('t', 'sh', ['-c', `touch ${marker}`]), Driver: 'exec' }] }),
    );
    await until('the allocation to fail', () => runner.terminal);
    expect(runner.taskStates.t?.Events?.find((event) => event.Type === 'Driver Failure')?.DriverError).toBe(
      'driver "exec" is not offered by this agent',
    );
    expect(existsSync(marker)).toBe(false);
  });

  it('task names that would leave the allocation folder fail the allocation before anything runs', async () => {
    const victim = fixture.run(allocation({ type: 'service', tasks: [rawExec('web', 'sleep', ['60'])] }));
    await until('the victim to run', () => victim.clientStatus.status === 'running');
    const before = tree(path.join(fixture.dataDir, 'alloc', victim.id));
    for (const name of [`../${victim.id}/web`, '..', '.', 'alloc', 'a/b', 'a\\b', 'a\0b', '']) {
      const marker = path.join(fixture.dataDir, `ran-${Buffer.from(name).toString('hex')}`);
      const runner = fixture.run(allocation({ tasks: [rawExec(name, 'sh', ['-c', `touch ${marker}`])] }));
      expect(runner.clientStatus.status).toBe('failed');
      const state = runner.taskStates[name];
      expect(state?.Events?.map((event) => event.Type)).toEqual(['Received', 'Setup Failure']);
      expect(state?.Events?.[1]?.SetupError).toBeTruthy();
      expect(existsSync(marker)).toBe(false);
    }
    expect(tree(path.join(fixture.dataDir, 'alloc', victim.id))).toEqual(before);
    expect(victim.clientStatus.status).toBe('running');
  });

  it('an allocation ID that is not a UUID is refused as a path', () => {
    for (const id of ['../client', '..', 'a/../../etc', '00000000-0000-0000-0000-000000000000/../x'])
      expect(() => new AllocDir(fixture.dataDir, id)).toThrow(AllocDirError);
  });

  it('a log or task folder replaced by a symbolic link is not followed', async () => {
    const alloc = allocation({ tasks: [rawExec('t', 'sh', ['-c', 'echo secret-output'])] });
    const outside = path.join(fixture.dataDir, 'outside');
    mkdirSync(outside);
    // A link planted where the task's log would be written (as a task of the same allocation could).
    const logs = path.join(fixture.dataDir, 'alloc', alloc.ID, 'alloc', 'logs');
    mkdirSync(logs, { recursive: true });
    symlinkSync(path.join(outside, 'stolen'), path.join(logs, 't.stdout.0'));
    const runner = fixture.run(alloc);
    await until('the task to fail', () => runner.terminal);
    expect(runner.clientStatus.status).toBe('failed');
    expect(runner.taskStates.t?.Events?.find((event) => event.Type === 'Driver Failure')?.DriverError).toMatch(/ELOOP/);
    expect(existsSync(path.join(outside, 'stolen'))).toBe(false);

    const linked = allocation({ tasks: [rawExec('t', 'true', [])] });
    mkdirSync(path.join(fixture.dataDir, 'alloc', linked.ID), { recursive: true });
    symlinkSync(outside, path.join(fixture.dataDir, 'alloc', linked.ID, 't'));
    const second = fixture.run(linked);
    await until('the task to fail', () => second.terminal);
    expect(second.taskStates.t?.Events?.find((event) => event.Type === 'Setup Failure')?.SetupError).toMatch(
      /not a directory of the agent's/,
    );
    expect(readdirSync(outside)).toEqual([]);
  });
});
