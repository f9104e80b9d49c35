import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * `npm start` as a user runs it, for tests: the real process on the ports and data directory the environment
 * gives it, read back from its banner, and killed with its whole process group (DynamoDB Local's JVM included).
 */

export const repo = path.resolve(import.meta.dirname, '../..');
export const START_TIMEOUT_MS = 90_000;

export interface Started {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  secrets: string;
  scheduler: string;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

export function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * `npm start` as package.json runs it: `node --import tsx packages/local/src/main.ts` (one Node process, no tsx
 * parent relaying signals), with `node_modules/.bin` first on PATH. Each start gets its own process group, so a
 * failed test can kill everything it started (JVM included). `script` runs another entry point the same way (a
 * test's own child that wraps what main.ts runs, or the client agent), with `scriptArgs` as its arguments.
 */
export function launch(
  env: Record<string, string>,
  script = 'packages/local/src/main.ts',
  scriptArgs: string[] = [],
): Omit<Started, 'secrets' | 'scheduler'> {
  const bin = path.join(repo, 'node_modules/.bin');
  const [command, args] = [path.join(bin, 'node'), ['--import', 'tsx', script, ...scriptArgs]];
  const child = spawn(command, args, {
    cwd: repo,
    env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  launchedGroups.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  return { child, stdout: () => stdout, stderr: () => stderr, exited };
}

const launchedGroups = new Set<ChildProcess>();

/** Kills every process group a test started that is still alive: the launcher, Node and DynamoDB Local. */
export function killLeftovers() {
  for (const child of launchedGroups) {
    try {
      if (child.pid) process.kill(-child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  launchedGroups.clear();
}

export async function start(env: Record<string, string>): Promise<Started> {
  const launched = launch(env);
  let exit: { code: number | null } | undefined;
  void launched.exited.then((result) => {
    exit = result;
  });
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    const banner = /secrets service:\s+(\S+)\/v1\n\s+scheduler service:\s+(\S+)\/v1/.exec(launched.stdout());
    if (banner) return { ...launched, secrets: banner[1] as string, scheduler: banner[2] as string };
    if (exit)
      throw new Error(`npm start exited (${exit.code}) before serving:\n${launched.stdout()}\n${launched.stderr()}`);
    if (Date.now() > deadline) {
      killLeftovers();
      throw new Error(
        `npm start did not serve within ${START_TIMEOUT_MS} ms:\n${launched.stdout()}\n${launched.stderr()}`,
      );
    }
    await sleep(100);
  }
}

export async function stopWith(started: Started, signal: NodeJS.Signals = 'SIGTERM') {
  started.child.kill(signal);
  const timeout = sleep(30_000).then(() => ({ code: -1, signal: null }));
  return Promise.race([started.exited, timeout]);
}
