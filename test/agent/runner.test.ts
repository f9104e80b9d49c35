/**
 * The agent's allocation runner with real processes (`sh`, `node`, `python3`): the allocation directory, Nomad's
 * environment and `${…}` interpolation, logs, exit codes in task events, the restart policy (fail and delay), the kill
 * signal then SIGKILL after `kill_timeout`, a failed task killing its siblings, and the client status derived from
 * the task states.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, utimesSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { collectAllocDirs } from '../../packages/agent/src/runner/alloc-dir.ts';
import { allocation, eventTypes, nomadVar, RunnerFixture, rawExec, until } from '../support/alloc-fixtures.ts';
import { freePort } from '../support/npm-start.ts';

/** Whether `pid` is a live process (not gone, not a zombie). */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

let fixture: RunnerFixture;
beforeEach(() => {
  fixture = new RunnerFixture();
});
afterEach(async () => {
  await fixture.cleanup();
});

describe('a raw_exec task', () => {
  it('runs in its allocation directory with Nomad’s variables, logs to alloc/logs and reports its exit', async () => {
    const port = await freePort();
    const alloc = allocation({
      index: 2,
      ports: [{ Label: 'http', Value: port, To: 0, HostIP: '127.0.0.1' }],
      tasks: [
        rawExec(
          'main',
          'sh',
          [
            '-c',
            'env > "$NOMAD_TASK_DIR/env.txt"; echo "out $1"; echo err >&2; exit 0',
            'sh',
            // biome-ignore lint/suspicious/noTemplateCurlyInString: Nomad's interpolation, not a template
            'port=${NOMAD_PORT_http} dc=${node.datacenter} rack=${meta.rack} unknown=${NOMAD_NOPE}',
          ],
          {
            // biome-ignore lint/suspicious/noTemplateCurlyInString: Nomad's interpolation, not a template
            Env: { GREETING: 'hello from ${NOMAD_TASK_NAME}' },
          },
        ),
      ],
    });
    const runner = fixture.run(alloc, {
      hostEnv: {
        PATH: process.env.PATH,
        NOMAD_CLIENT_INTRO_TOKEN: 'intro',
        VAULT_TOKEN: 'v',
        KEYHAVEN_X: 'k',
        KEPT: 'yes',
      },
    });
    await until('the task to end', () => runner.terminal);
    expect(runner.clientStatus).toEqual({ status: 'complete', description: 'All tasks have completed' });
    const state = runner.taskStates.main;
    expect(state?.State).toBe('dead');
    expect(state?.Failed).toBe(false);
    expect(eventTypes(runner, 'main')).toEqual(['Received', 'Task Setup', 'Started', 'Terminated']);
    const terminated = state?.Events?.at(-1);
    expect(terminated).toMatchObject({ ExitCode: 0, Signal: 0, DisplayMessage: 'Exit Code: 0' });

    const root = path.join(fixture.dataDir, 'alloc', alloc.ID);
    for (const folder of ['alloc/logs', 'alloc/data', 'alloc/tmp', 'main/local', 'main/secrets', 'main/tmp'])
      expect(statSync(path.join(root, folder)).isDirectory()).toBe(true);
    expect(statSync(path.join(root, 'main/secrets')).mode & 0o777).toBe(0o700);
    expect(readFileSync(path.join(root, 'alloc/logs/main.stdout.0'), 'utf8')).toBe(
      `out port=${port} dc=dc-test rack=r1 unknown=\${NOMAD_NOPE}\n`,
    );
    expect(readFileSync(path.join(root, 'alloc/logs/main.stderr.0'), 'utf8')).toBe('err\n');

    const env = Object.fromEntries(
      readFileSync(path.join(root, 'main/local/env.txt'), 'utf8')
        .trim()
        .split('\n')
        .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
    );
    expect(env).toMatchObject({
      NOMAD_ALLOC_DIR: path.join(root, 'alloc'),
      NOMAD_TASK_DIR: path.join(root, 'main/local'),
      NOMAD_SECRETS_DIR: path.join(root, 'main/secrets'),
      NOMAD_ALLOC_ID: alloc.ID,
      NOMAD_SHORT_ALLOC_ID: alloc.ID.slice(0, 8),
      NOMAD_ALLOC_NAME: 'example.web[2]',
      NOMAD_ALLOC_INDEX: '2',
      NOMAD_JOB_ID: 'example',
      NOMAD_JOB_NAME: 'example',
      NOMAD_GROUP_NAME: 'web',
      NOMAD_TASK_NAME: 'main',
      NOMAD_NAMESPACE: 'default',
      NOMAD_REGION: 'global',
      NOMAD_DC: 'dc-test',
      NOMAD_CPU_LIMIT: '250',
      NOMAD_MEMORY_LIMIT: '128',
      NOMAD_META_owner: 'team-a',
      NOMAD_PORT_http: String(port),
      NOMAD_HOST_PORT_http: String(port),
      NOMAD_IP_http: '127.0.0.1',
      NOMAD_ADDR_http: `127.0.0.1:${port}`,
      GREETING: 'hello from main',
      KEPT: 'yes',
    });
    // The agent's own credentials and Nomad's denied variables never reach a task.
    for (const name of ['NOMAD_CLIENT_INTRO_TOKEN', 'VAULT_TOKEN', 'KEYHAVEN_X']) expect(env[name]).toBeUndefined();
    // The saved state matches what is reported.
    const saved = fixture.store.loadAll().saved.find((entry) => entry.Alloc.ID === alloc.ID);
    expect(saved?.Tasks.main?.State.State).toBe('dead');
    expect(saved?.Tasks.main?.Handle).toBeNull();
  });

  it('reports a non-zero exit and, past its attempts in mode fail, fails the allocation', async () => {
    const alloc = allocation({
      restart: { Attempts: 2, Delay: 10e6, Mode: 'fail' },
      tasks: [rawExec('flaky', 'sh', ['-c', 'echo run >> "$NOMAD_ALLOC_DIR/data/runs"; exit 3'])],
    });
    const runner = fixture.run(alloc);
    await until('the task to fail', () => runner.terminal);
    expect(runner.clientStatus).toEqual({ status: 'failed', description: 'Failed tasks' });
    const state = runner.taskStates.flaky;
    expect(state).toMatchObject({ State: 'dead', Failed: true, Restarts: 2 });
    expect(state?.LastRestart).not.toBeNull();
    // Nomad keeps a task's last 10 events: the first (Received) has gone.
    expect(eventTypes(runner, 'flaky')).toEqual([
      'Task Setup',
      'Started',
      'Terminated',
      'Restarting',
      'Started',
      'Terminated',
      'Restarting',
      'Started',
      'Terminated',
      'Not Restarting',
    ]);
    const events = state?.Events ?? [];
    expect(events.filter((event) => event.Type === 'Terminated').every((event) => event.ExitCode === 3)).toBe(true);
    const restarting = events.find((event) => event.Type === 'Restarting');
    expect(restarting?.RestartReason).toBe('Restart within policy');
    expect(restarting?.DisplayMessage).toMatch(/^Restart within policy - Task restarting in \d/);
    expect(events.at(-1)).toMatchObject({
      Type: 'Not Restarting',
      FailsTask: true,
      RestartReason: 'Exceeded allowed attempts 2 in interval 30m0s and mode is "fail"',
    });
    const runs = readFileSync(path.join(fixture.dataDir, 'alloc', alloc.ID, 'alloc/data/runs'), 'utf8');
    expect(runs).toBe('run\nrun\nrun\n');
  });

  it('in mode delay waits for the interval’s end once its attempts are spent', async () => {
    const alloc = allocation({
      type: 'service',
      restart: { Attempts: 1, Interval: 60e9, Delay: 10e6, Mode: 'delay' },
      tasks: [rawExec('flaky', 'sh', ['-c', 'exit 1'])],
    });
    const runner = fixture.run(alloc);
    const delayed = await until('the delay', () =>
      runner.taskStates.flaky?.Events?.find(
        (event) => event.RestartReason === 'Exceeded allowed attempts, applying a delay',
      ),
    );
    expect(delayed.Type).toBe('Restarting');
    expect(delayed.StartDelay).toBeGreaterThan(50e9);
    expect(runner.taskStates.flaky).toMatchObject({ State: 'pending', Failed: false, Restarts: 2 });
    expect(runner.clientStatus.status).toBe('pending');
    await runner.stop();
    expect(runner.taskStates.flaky).toMatchObject({ State: 'dead', Failed: false });
    expect(eventTypes(runner, 'flaky').slice(-2)).toEqual(['Killing', 'Killed']);
    expect(runner.clientStatus.status).toBe('complete');
  });

  it('restarts a service task even after a successful exit; a batch task that succeeds is done', async () => {
    const service = fixture.run(
      allocation({ type: 'service', restart: { Attempts: 1, Delay: 10e6 }, tasks: [rawExec('t', 'true', [])] }),
    );
    await until('the service task to fail', () => service.terminal);
    expect(service.taskStates.t).toMatchObject({ State: 'dead', Failed: true, Restarts: 1 });
    const batch = fixture.run(
      allocation({ type: 'batch', restart: { Attempts: 3 }, tasks: [rawExec('t', 'true', [])] }),
    );
    await until('the batch task to end', () => batch.terminal);
    expect(batch.taskStates.t).toMatchObject({ State: 'dead', Failed: false, Restarts: 0 });
    expect(batch.clientStatus.status).toBe('complete');
  });

  it('a command that cannot start is a Driver Failure, restarted per policy', async () => {
    const runner = fixture.run(
      allocation({ restart: { Attempts: 1, Delay: 10e6 }, tasks: [rawExec('t', 'no-such-command-keyhaven', [])] }),
    );
    await until('the task to fail', () => runner.terminal);
    const events = runner.taskStates.t?.Events ?? [];
    expect(events.map((event) => event.Type)).toEqual([
      'Received',
      'Task Setup',
      'Driver Failure',
      'Restarting',
      'Driver Failure',
      'Not Restarting',
    ]);
    expect(events[2]?.DriverError).toMatch(/failed to launch command: .*ENOENT/);
    expect(runner.clientStatus.status).toBe('failed');
  });
});

describe('stopping', () => {
  it('sends SIGINT and lets the task exit on its own within kill_timeout', async () => {
    const script =
      "process.on('SIGINT', () => { console.log('bye'); process.exit(0); }); console.log('up'); setInterval(() => {}, 1000);";
    // A long kill timeout: a loaded machine must not turn the task's own exit into a SIGKILL.
    const alloc = allocation({
      type: 'service',
      tasks: [rawExec('t', process.execPath, ['-e', script], { KillTimeout: 30e9 })],
    });
    const runner = fixture.run(alloc);
    const logs = path.join(fixture.dataDir, 'alloc', alloc.ID, 'alloc/logs/t.stdout.0');
    await until(
      'the task to run',
      () => runner.clientStatus.status === 'running' && existsSync(logs) && readFileSync(logs, 'utf8').includes('up'),
    );
    expect(runner.clientStatus.status).toBe('running');
    await runner.stop();
    expect(readFileSync(logs, 'utf8')).toBe('up\nbye\n');
    const events = runner.taskStates.t?.Events ?? [];
    expect(events.map((event) => event.Type).slice(-3)).toEqual(['Killing', 'Terminated', 'Killed']);
    expect(events.at(-3)?.DisplayMessage).toBe('Sent interrupt. Waiting 30s before force killing');
    expect(events.at(-2)).toMatchObject({ ExitCode: 0, Signal: 0 });
    expect(runner.taskStates.t).toMatchObject({ State: 'dead', Failed: false });
    expect(runner.clientStatus).toEqual({ status: 'complete', description: 'All tasks have completed' });
  });

  it('kills with SIGKILL a task that ignores its signal past kill_timeout', async () => {
    const alloc = allocation({
      type: 'service',
      tasks: [rawExec('stubborn', 'sh', ['-c', 'trap "" INT; echo up; exec sleep 60'], { KillTimeout: 200e6 })],
    });
    const runner = fixture.run(alloc);
    const logs = path.join(fixture.dataDir, 'alloc', alloc.ID, 'alloc/logs/stubborn.stdout.0');
    await until(
      'the task to run',
      () => runner.clientStatus.status === 'running' && existsSync(logs) && readFileSync(logs, 'utf8').includes('up'),
    );
    const pid = runner.tasks.get('stubborn')?.handle?.pid as number;
    await runner.stop();
    const events = runner.taskStates.stubborn?.Events ?? [];
    expect(events.at(-2)).toMatchObject({ Type: 'Terminated', ExitCode: 137, Signal: 9 });
    expect(events.at(-2)?.DisplayMessage).toBe('Exit Code: 137, Signal: 9');
    // Gone, or a zombie left for its new parent to reap: not running either way.
    await until('the process to be gone', () => !running(pid));
  });

  it('honours the task’s kill_signal', async () => {
    const alloc = allocation({
      type: 'service',
      tasks: [
        rawExec('t', 'sh', ['-c', 'trap "exit 42" TERM; echo up; while :; do sleep 0.05; done'], {
          KillSignal: 'SIGTERM',
          KillTimeout: 30e9,
        }),
      ],
    });
    const runner = fixture.run(alloc);
    const logs = path.join(fixture.dataDir, 'alloc', alloc.ID, 'alloc/logs/t.stdout.0');
    await until(
      'the task to run',
      () => runner.clientStatus.status === 'running' && existsSync(logs) && readFileSync(logs, 'utf8').includes('up'),
    );
    await runner.stop();
    expect(runner.taskStates.t?.Events?.at(-2)).toMatchObject({ Type: 'Terminated', ExitCode: 42 });
  });

  it('an eviction from the server (preemption: DesiredStatus evict) kills the running task, as a stop does', async () => {
    const alloc = allocation({ type: 'service', tasks: [rawExec('t', 'sleep', ['60'])] });
    const runner = fixture.run(alloc);
    await until('the task to run', () => runner.clientStatus.status === 'running');
    const pid = runner.tasks.get('t')?.handle?.pid as number;
    expect(running(pid)).toBe(true);
    runner.update({ ...alloc, DesiredStatus: 'evict' });
    await until('the task to be killed', () => runner.terminal);
    expect(running(pid)).toBe(false);
    expect(runner.taskStates.t).toMatchObject({ State: 'dead', Failed: false });
    expect(runner.taskStates.t?.Events?.map((event) => event.Type).slice(-2)).toEqual(['Terminated', 'Killed']);
    expect(runner.clientStatus).toEqual({ status: 'complete', description: 'All tasks have completed' });
  });

  it('a stop that comes while the task is still starting kills it once it runs', async () => {
    const alloc = allocation({ type: 'service', tasks: [rawExec('t', 'sleep', ['60'])] });
    const runner = fixture.run(alloc);
    await runner.stop();
    const state = runner.taskStates.t;
    expect(state).toMatchObject({ State: 'dead', Failed: false });
    expect(state?.Events?.map((event) => event.Type)).toEqual(
      state?.StartedAt
        ? ['Received', 'Task Setup', 'Killing', 'Started', 'Terminated', 'Killed']
        : ['Received', 'Task Setup', 'Killing', 'Killed'],
    );
    expect(runner.tasks.get('t')?.handle).toBeNull();
  });

  it('a failed task kills its siblings (Sibling Task Failed) and fails the allocation', async () => {
    const runner = fixture.run(
      allocation({
        type: 'service',
        tasks: [rawExec('bad', 'sh', ['-c', 'sleep 0.2; exit 5']), rawExec('good', 'sleep', ['60'])],
      }),
    );
    await until('the allocation to fail', () => runner.terminal && runner.taskStates.good?.State === 'dead');
    expect(runner.clientStatus.status).toBe('failed');
    expect(runner.taskStates.bad).toMatchObject({ State: 'dead', Failed: true });
    expect(runner.taskStates.good).toMatchObject({ State: 'dead', Failed: false });
    const good = runner.taskStates.good?.Events ?? [];
    expect(good.map((event) => event.Type).slice(-4)).toEqual([
      'Sibling Task Failed',
      'Killing',
      'Terminated',
      'Killed',
    ]);
    expect(good.at(-4)?.DisplayMessage).toBe('Task\'s sibling "bad" failed');
  });

  it('serves python3 -m http.server on its dynamic port until stopped', async () => {
    const port = await freePort();
    const alloc = allocation({
      type: 'service',
      ports: [{ Label: 'http', Value: port, To: 0, HostIP: '127.0.0.1' }],
      tasks: [
        rawExec('server', 'python3', [
          '-m',
          'http.server',
          nomadVar('NOMAD_PORT_http'),
          '--bind',
          nomadVar('NOMAD_IP_http'),
        ]),
      ],
    });
    const runner = fixture.run(alloc);
    const answer = await until('the server to answer', async () => {
      try {
        return await fetch(`http://127.0.0.1:${port}/`);
      } catch {
        return undefined;
      }
    });
    expect(answer.status).toBe(200);
    // The server's working directory is the task's folder.
    expect(await answer.text()).toContain('local/');
    expect(runner.clientStatus.status).toBe('running');
    await runner.stop();
    expect(runner.clientStatus.status).toBe('complete');
    await expect(fetch(`http://127.0.0.1:${port}/`)).rejects.toThrow();
  });
});

describe('deployment health (task states)', () => {
  const deployed = (spec: Parameters<typeof allocation>[0], update: Record<string, unknown>) => {
    const alloc = allocation({ type: 'service', ...spec, groupExtra: { Update: update } });
    return { ...alloc, DeploymentID: 'f0f9a6b2-37b4-4a77-8d4e-5b1f2d6b9c11', DeploymentStatus: null };
  };

  it('is healthy once every task has run for min_healthy_time', async () => {
    const runner = fixture.run(
      deployed({ tasks: [rawExec('t', 'sleep', ['60'])] }, { MinHealthyTime: 100e6, HealthyDeadline: 30e9 }),
    );
    const health = await until('the health', () => runner.deploymentStatus);
    expect(health.Healthy).toBe(true);
    expect(runner.taskStates.t?.State).toBe('running');
    expect(Date.parse(health.Timestamp)).toBeGreaterThanOrEqual(Date.parse(runner.taskStates.t?.StartedAt as string));
  });

  it('is unhealthy when a task fails, or restarts until healthy_deadline passes', async () => {
    const failing = fixture.run(
      deployed({ tasks: [rawExec('t', 'sh', ['-c', 'exit 1'])] }, { MinHealthyTime: 100e6, HealthyDeadline: 30e9 }),
    );
    expect((await until('the health', () => failing.deploymentStatus)).Healthy).toBe(false);
    // A crash loop never stays up for min_healthy_time: the deadline judges it (the task itself has not failed).
    const looping = fixture.run(
      deployed(
        { restart: { Attempts: 1000, Delay: 10e6 }, tasks: [rawExec('t', 'sh', ['-c', 'exit 1'])] },
        { MinHealthyTime: 10e9, HealthyDeadline: 1e9 },
      ),
    );
    expect((await until('the health', () => looping.deploymentStatus)).Healthy).toBe(false);
    expect(looping.taskStates.t?.Failed).toBe(false);
  });

  it('is not judged outside a deployment, nor with health_check manual', async () => {
    const plain = fixture.run(allocation({ type: 'service', tasks: [rawExec('t', 'true', [])] }));
    const manual = fixture.run(
      deployed({ tasks: [rawExec('t', 'true', [])] }, { MinHealthyTime: 0, HealthCheck: 'manual' }),
    );
    await until('both to finish', () => plain.terminal && manual.terminal);
    expect(plain.deploymentStatus).toBeUndefined();
    expect(manual.deploymentStatus).toBeUndefined();
  });
});

describe('task logs', () => {
  it('rotate as Nomad’s: a new file past max_file_size, the oldest removed past max_files', async () => {
    const script =
      "for (let i = 0; i < 35; i++) process.stdout.write('x'.repeat(100 * 1024)); process.stdout.write('END'); console.error('err');";
    const alloc = allocation({
      tasks: [rawExec('t', process.execPath, ['-e', script], { LogConfig: { MaxFiles: 2, MaxFileSizeMB: 1 } })],
    });
    const runner = fixture.run(alloc);
    await until('the task to end', () => runner.terminal);
    expect(runner.clientStatus.status).toBe('complete');
    const logs = path.join(fixture.dataDir, 'alloc', alloc.ID, 'alloc/logs');
    const stdout = readdirSync(logs)
      .filter((name) => name.startsWith('t.stdout.'))
      .sort((a, b) => Number(a.split('.').pop()) - Number(b.split('.').pop()));
    expect(stdout).toEqual(['t.stdout.2', 't.stdout.3']);
    for (const name of stdout) expect(statSync(path.join(logs, name)).size).toBeLessThanOrEqual(1024 * 1024);
    expect(readFileSync(path.join(logs, 't.stdout.3'), 'utf8').endsWith('END')).toBe(true);
    expect(readFileSync(path.join(logs, 't.stderr.0'), 'utf8')).toBe('err\n');
  });
});

describe('lifecycle', () => {
  const data = (alloc: { ID: string }, name: string) =>
    path.join(fixture.dataDir, 'alloc', alloc.ID, 'alloc/data', name);

  it('runs prestart tasks first, then the main task, poststart beside it, sidecars until it ends, then poststop', async () => {
    const alloc = allocation({
      type: 'batch',
      tasks: [
        rawExec('main', 'sh', [
          '-c',
          'test -f "$NOMAD_ALLOC_DIR/data/init" && echo ok > "$NOMAD_ALLOC_DIR/data/main"; sleep 0.3',
        ]),
        rawExec('init', 'sh', ['-c', 'sleep 0.1; touch "$NOMAD_ALLOC_DIR/data/init"'], {
          Lifecycle: { Hook: 'prestart' },
        }),
        rawExec('proxy', 'sleep', ['60'], { Lifecycle: { Hook: 'prestart', Sidecar: true } }),
        rawExec('announce', 'sh', ['-c', 'touch "$NOMAD_ALLOC_DIR/data/announce"'], {
          Lifecycle: { Hook: 'poststart' },
        }),
        rawExec('cleanup', 'sh', ['-c', 'cat "$NOMAD_ALLOC_DIR/data/main" > "$NOMAD_ALLOC_DIR/data/cleanup"'], {
          Lifecycle: { Hook: 'poststop' },
        }),
      ],
    });
    const runner = fixture.run(alloc);
    await until('the allocation to complete', () => runner.terminal);
    expect(runner.clientStatus.status).toBe('complete');
    expect(readFileSync(data(alloc, 'main'), 'utf8')).toBe('ok\n');
    expect(existsSync(data(alloc, 'announce'))).toBe(true);
    expect(readFileSync(data(alloc, 'cleanup'), 'utf8')).toBe('ok\n');
    const states = runner.taskStates;
    for (const name of ['main', 'init', 'announce', 'cleanup'])
      expect(states[name]).toMatchObject({ State: 'dead', Failed: false });
    expect(Date.parse(states.main?.StartedAt as string)).toBeGreaterThanOrEqual(
      Date.parse(states.init?.FinishedAt as string),
    );
    expect(Date.parse(states.cleanup?.StartedAt as string)).toBeGreaterThanOrEqual(
      Date.parse(states.main?.FinishedAt as string),
    );
    expect(eventTypes(runner, 'proxy').slice(-4)).toEqual(['Main Tasks Dead', 'Killing', 'Terminated', 'Killed']);
  });

  it('runs the poststop tasks when the server stops the allocation, and after a main task fails', async () => {
    const cleanup = rawExec('cleanup', 'sh', ['-c', 'touch "$NOMAD_ALLOC_DIR/data/cleaned"'], {
      Lifecycle: { Hook: 'poststop' },
    });
    const stopped = allocation({ type: 'service', tasks: [rawExec('main', 'sleep', ['60']), cleanup] });
    const runner = fixture.run(stopped);
    await until('the main task to run', () => runner.taskStates.main?.State === 'running');
    expect(runner.taskStates.cleanup?.State).toBe('pending');
    await runner.stop();
    expect(existsSync(data(stopped, 'cleaned'))).toBe(true);
    expect(runner.taskStates.cleanup).toMatchObject({ State: 'dead', Failed: false });
    expect(eventTypes(runner, 'cleanup')).toEqual(['Received', 'Task Setup', 'Started', 'Terminated']);
    expect(runner.clientStatus.status).toBe('complete');

    const failing = allocation({ type: 'service', tasks: [rawExec('main', 'sh', ['-c', 'exit 3']), cleanup] });
    const failed = fixture.run(failing);
    await until('the poststop task to run', () => failed.taskStates.cleanup?.State === 'dead');
    expect(existsSync(data(failing, 'cleaned'))).toBe(true);
    expect(failed.clientStatus.status).toBe('failed');
  });

  it('a prestart task that fails keeps the main task from ever starting', async () => {
    const marker = path.join(fixture.dataDir, 'main-ran');
    const alloc = allocation({
      type: 'service',
      tasks: [
        rawExec('main', 'sh', ['-c', `touch ${marker}; sleep 60`]),
        rawExec('init', 'sh', ['-c', 'exit 2'], { Lifecycle: { Hook: 'prestart' } }),
      ],
    });
    const runner = fixture.run(alloc);
    await until('the allocation to fail', () => runner.terminal && runner.taskStates.main?.State === 'dead');
    expect(runner.clientStatus.status).toBe('failed');
    expect(runner.taskStates.main?.StartedAt).toBeNull();
    expect(eventTypes(runner, 'main')).toEqual(['Sibling Task Failed', 'Killed']);
    expect(existsSync(marker)).toBe(false);
  });
});

describe('allocation folders', () => {
  it('keep the newest done allocations’ folders, never a live one’s, as Nomad’s garbage collection', () => {
    const root = path.join(fixture.dataDir, 'alloc');
    const ids = Array.from({ length: 5 }, (_, index) => `00000000-0000-4000-8000-00000000000${index}`);
    for (const [index, id] of ids.entries()) {
      mkdirSync(path.join(root, id, 'alloc/logs'), { recursive: true });
      const time = new Date(Date.UTC(2026, 0, 1 + index));
      utimesSync(path.join(root, id), time, time);
    }
    mkdirSync(path.join(root, 'not-an-allocation'));
    // The oldest is live: kept whatever its age.
    const removed = collectAllocDirs(fixture.dataDir, new Set([ids[0] as string]), 2);
    expect(removed.sort()).toEqual([ids[1], ids[2]]);
    expect(readdirSync(root).sort()).toEqual([ids[0], ids[3], ids[4], 'not-an-allocation']);
  });
});
