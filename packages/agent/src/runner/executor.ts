/**
 * How a `raw_exec` task's process is started and watched, after Nomad's executor (`drivers/shared/executor`): the
 * agent does not start the task itself but a small supervisor (`node -e`, below) in a session and process group of
 * its own, which starts the task with the task's environment, working directory and log files, ignores the signals
 * meant for the task, and writes the task's exit code and signal to a file when it ends. So a task outlives the
 * agent (a restarted agent re-attaches by the supervisor's pid and start time, and still learns the exit code), and a
 * stop signals the whole group. Exit codes are Nomad's: a process killed by a signal exits 128 + the signal. The
 * supervisor also writes its own and the task's pid beside the exit file as soon as the task runs, so an agent that
 * died between starting a task and saving its handle still finds it (no second start).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';

/**
 * The supervisor, run as `node -e <source> -- <exit file> <log base> <max files> <max file bytes> <command> <args…>`
 * with the task's environment in JSON. It writes the task's output to `<log base>.stdout.<n>` and `.stderr.<n>` as
 * Nomad's log collector does: appended to the newest file, a new file once one would pass its size, the oldest
 * removed past `max files`; a log file that is a symbolic link is refused (`O_NOFOLLOW`), the task never started.
 */
const supervisor = `
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const [exitFile, logBase, maxFilesText, maxBytesText, command, ...args] = process.argv.slice(1);
const maxFiles = Math.max(1, Number(maxFilesText) || 1);
const maxBytes = Math.max(1, Number(maxBytesText) || 1);
const env = JSON.parse(process.env.KEYHAVEN_EXECUTOR_ENV || '{}');
for (const name of ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT', 'SIGUSR1', 'SIGUSR2', 'SIGPIPE']) process.on(name, () => {});
const report = (line) => { try { fs.writeSync(3, line + '\\n'); fs.closeSync(3); } catch {} };
let done = false;
const finish = (result) => {
  if (done) return;
  done = true;
  fs.writeFileSync(exitFile + '.tmp', JSON.stringify(result));
  fs.renameSync(exitFile + '.tmp', exitFile);
  process.exit(0);
};
const flags = fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_APPEND | fs.constants.O_NOFOLLOW;
function rotating(kind) {
  const prefix = logBase + '.' + kind + '.';
  const folder = path.dirname(prefix);
  const base = path.basename(prefix);
  const indexes = () => fs.readdirSync(folder)
    .filter((name) => name.startsWith(base) && /^[0-9]+$/.test(name.slice(base.length)))
    .map((name) => Number(name.slice(base.length)))
    .sort((a, b) => a - b);
  let index = Math.max(0, ...indexes());
  let fd = fs.openSync(prefix + index, flags, 0o644);
  let size = fs.fstatSync(fd).size;
  return (chunk) => {
    if (size > 0 && size + chunk.length > maxBytes) {
      fs.closeSync(fd);
      index++;
      fd = fs.openSync(prefix + index, flags, 0o644);
      size = 0;
      const all = indexes();
      while (all.length > maxFiles) fs.rmSync(prefix + all.shift(), { force: true });
    }
    fs.writeSync(fd, chunk);
    size += chunk.length;
  };
}
let child;
let outputs;
try {
  outputs = [rotating('stdout'), rotating('stderr')];
  child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
} catch (error) {
  report('error ' + error.message);
  finish({ error: error.message });
}
child.stdout.on('data', outputs[0]);
child.stderr.on('data', outputs[1]);
child.on('spawn', () => {
  fs.writeFileSync(exitFile + '.pid.tmp', JSON.stringify({ executorPid: process.pid, pid: child.pid }));
  fs.renameSync(exitFile + '.pid.tmp', exitFile + '.pid');
  report('started ' + child.pid);
});
child.on('error', (error) => { report('error ' + error.message); finish({ error: error.message }); });
const ended = (code, signal) => {
  const number = signal ? os.constants.signals[signal] || 0 : 0;
  finish({ exitCode: signal ? 128 + number : code, signal: number });
};
// The output is written before the exit is recorded; a process left holding the pipes gets a second.
child.on('close', ended);
child.on('exit', (code, signal) => setTimeout(() => ended(code, signal), 1000).unref());
`;

/** What identifies a started task across agent restarts (persisted). */
export interface ProcessHandle {
  /** The supervisor's pid, also the process group's. */
  executorPid: number;
  /** Its start time in clock ticks since boot (`/proc/<pid>/stat`), so a reused pid is not taken for it. */
  executorStart: string | null;
  /** The task's own pid. */
  pid: number;
  exitFile: string;
}

export interface ExitResult {
  exitCode: number;
  signal: number;
}

export class LaunchError extends Error {}

export interface LaunchSpec {
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
  /** `alloc/logs/<task>`: the output goes to `<base>.stdout.<n>` and `<base>.stderr.<n>`. */
  logBase: string;
  maxLogFiles: number;
  maxLogFileBytes: number;
  exitFile: string;
}

/** A process's start time in ticks since boot (Linux), undefined when it does not exist or /proc is absent. */
export function processStart(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

function exists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whether the supervisor named by the handle still runs (the same process, not a reused pid). */
export function isAlive(handle: ProcessHandle): boolean {
  if (!exists(handle.executorPid)) return false;
  if (handle.executorStart === null) return true;
  return processStart(handle.executorPid) === handle.executorStart;
}

/** The exit the supervisor recorded, if it did. */
export function readExit(exitFile: string): ExitResult | { error: string } | undefined {
  if (!existsSync(exitFile)) return undefined;
  try {
    const parsed = JSON.parse(readFileSync(exitFile, 'utf8')) as {
      exitCode?: unknown;
      signal?: unknown;
      error?: unknown;
    };
    if (typeof parsed.error === 'string') return { error: parsed.error };
    return {
      exitCode: typeof parsed.exitCode === 'number' ? parsed.exitCode : -1,
      signal: typeof parsed.signal === 'number' ? parsed.signal : 0,
    };
  } catch {
    return undefined;
  }
}

/** The handle the supervisor recorded at its start (`<exit file>.pid`), if it did. */
export function recordedHandle(exitFile: string): ProcessHandle | undefined {
  try {
    const parsed = JSON.parse(readFileSync(`${exitFile}.pid`, 'utf8')) as { executorPid?: unknown; pid?: unknown };
    if (typeof parsed.executorPid !== 'number' || typeof parsed.pid !== 'number') return undefined;
    return {
      executorPid: parsed.executorPid,
      executorStart: processStart(parsed.executorPid),
      pid: parsed.pid,
      exitFile,
    };
  } catch {
    return undefined;
  }
}

/** Removes what a supervisor recorded (before a new start, and once its exit was taken). */
export function clearRecords(exitFile: string): void {
  rmSync(exitFile, { force: true });
  rmSync(`${exitFile}.pid`, { force: true });
}

/** Sends `signal` to the task's process group; false when the group is gone. */
export function signalGroup(handle: ProcessHandle, signal: NodeJS.Signals): boolean {
  if (!isAlive(handle)) return false;
  try {
    process.kill(-handle.executorPid, signal);
    return true;
  } catch {
    return false;
  }
}

/** Starts the task under its supervisor; resolves once the task runs, rejects with `LaunchError` when it cannot. */
export function launch(spec: LaunchSpec): Promise<{ handle: ProcessHandle; child: ChildProcess }> {
  return new Promise((resolve, reject) => {
    let child: ChildProcess;
    try {
      const limits = [String(spec.maxLogFiles), String(spec.maxLogFileBytes)];
      const argv = ['-e', supervisor, '--', spec.exitFile, spec.logBase, ...limits, spec.command, ...spec.args];
      child = spawn(process.execPath, argv, {
        cwd: spec.cwd,
        detached: true,
        env: { KEYHAVEN_EXECUTOR_ENV: JSON.stringify(spec.env) },
        stdio: ['ignore', 'ignore', 'ignore', 'pipe'],
      });
    } catch (error) {
      reject(new LaunchError((error as Error).message));
      return;
    }
    child.unref();
    const channel = child.stdio[3];
    let text = '';
    let settled = false;
    const settle = (line: string | undefined) => {
      if (settled) return;
      settled = true;
      channel?.destroy();
      const pid = /^started (\d+)$/.exec(line ?? '');
      if (pid && child.pid !== undefined) {
        resolve({
          child,
          handle: {
            executorPid: child.pid,
            executorStart: processStart(child.pid),
            pid: Number(pid[1]),
            exitFile: spec.exitFile,
          },
        });
        return;
      }
      const message = line?.startsWith('error ')
        ? line.slice(6)
        : line || 'the task’s supervisor ended before it started';
      reject(new LaunchError(message));
    };
    child.on('error', (error) => settle(`error ${error.message}`));
    channel?.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
      const end = text.indexOf('\n');
      if (end >= 0) settle(text.slice(0, end));
    });
    channel?.on('end', () => settle(text.trim() || undefined));
    channel?.on('error', () => settle(undefined));
  });
}

/**
 * The task's end: from the supervisor's exit when it is this agent's child, else (re-attached) by polling it every
 * `pollMs`; resolves with the recorded exit, `undefined` when none was recorded (the supervisor was killed), or
 * `'detached'` when `signal` aborted the watch first.
 */
export function waitExit(
  handle: ProcessHandle,
  child: ChildProcess | undefined,
  pollMs: number,
  signal: AbortSignal,
): Promise<ExitResult | { error: string } | undefined | 'detached'> {
  return new Promise((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    const done = () => {
      if (timer) clearInterval(timer);
      signal.removeEventListener('abort', aborted);
      child?.removeListener('exit', done);
      resolve(readExit(handle.exitFile));
    };
    const aborted = () => {
      if (timer) clearInterval(timer);
      child?.removeListener('exit', done);
      resolve('detached');
    };
    if (signal.aborted) return resolve('detached');
    signal.addEventListener('abort', aborted, { once: true });
    if (child && child.exitCode === null && child.signalCode === null) {
      child.once('exit', done);
      return;
    }
    if (!isAlive(handle)) return done();
    timer = setInterval(() => {
      if (!isAlive(handle)) done();
    }, pollMs);
  });
}
