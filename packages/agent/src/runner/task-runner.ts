/**
 * One task of an allocation, run as Nomad's task runner runs it (`client/allocrunner/taskrunner/task_runner.go`):
 * `Received`, `Task Setup` (the task's folders), then the driver: `raw_exec` starts the task's command with its args
 * and environment under a supervisor (`executor.ts`), `Started`, and on its end `Terminated` with the exit code and
 * signal; the restart policy (`restarts.ts`) then says `Restarting` (the task waits `pending`), `Not Restarting` (dead,
 * failed) or done (dead). A kill sends the task's kill signal (SIGINT by default) to its process group, `Killing`,
 * then SIGKILL after `kill_timeout`, `Terminated`, `Killed`. A driver the agent has not enabled is a `Driver Failure`
 * and the task fails without any process started. State: pending → running → dead, `Failed` when it failed.
 *
 * Restored from the agent's saved state (`state-store.ts`), a task whose supervisor still runs is re-attached (no
 * second start); one that ended while the agent was down gets its `Terminated` event then (with the exit code the
 * supervisor recorded, and a message saying so) and the restart policy applies as after any exit.
 */
import type { ChildProcess } from 'node:child_process';
import { statSync } from 'node:fs';
import type { AllocDir, TaskDirs } from './alloc-dir.ts';
import { taskEvent, taskEvents } from './events.ts';
import {
  clearRecords,
  type ExitResult,
  isAlive,
  LaunchError,
  launch,
  type ProcessHandle,
  recordedHandle,
  signalGroup,
  waitExit,
} from './executor.ts';
import { RestartTracker } from './restarts.ts';
import type { SavedTask } from './state-store.ts';
import { interpolate, taskEnv } from './task-env.ts';
import type { Allocation, GroupSpec, JobSpec, NodeInfo, TaskEvent, TaskSpec, TaskState } from './types.ts';

/** Nomad's cap on the events a task state keeps. */
const maxEvents = 10;
/** Nomad's default log rotation (`logs { max_files = 10, max_file_size = 10 }`). */
const defaultLogFiles = 10;
const defaultLogFileMB = 10;
/** Nomad's default kill timeout (5 s), in nanoseconds. */
const defaultKillTimeout = 5e9;

const defaultRestartPolicy = { Attempts: 2, Interval: 30 * 60e9, Delay: 15e9, Mode: 'fail' };

export interface TaskRunnerOptions {
  alloc: Allocation;
  job: JobSpec;
  group: GroupSpec;
  task: TaskSpec;
  node: NodeInfo;
  allocDir: AllocDir;
  /** Where the task's supervisor records its exit. */
  exitFile: string;
  rawExecEnabled: boolean;
  hostEnv: NodeJS.ProcessEnv;
  /** Milliseconds since the epoch. */
  now: () => number;
  random?: () => number;
  /** How often a re-attached task's supervisor is looked for. */
  pollMs: number;
  saved?: SavedTask;
  /** After every change of state or events (the allocation runner saves and reports). */
  onChange: () => void;
}

const signalNames = new Set(['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT', 'SIGKILL', 'SIGUSR1', 'SIGUSR2']);

/** Whether the exit file was written before `time` (milliseconds since the epoch). */
function recordedBefore(exitFile: string, time: number): boolean {
  try {
    return statSync(exitFile).mtimeMs <= time;
  } catch {
    return false;
  }
}

export class TaskRunner {
  readonly name: string;
  state: TaskState;
  handle: ProcessHandle | null;
  readonly tracker: RestartTracker;
  private killing = false;
  /** Whether `start` ran (a task of a later lifecycle phase waits). */
  started = false;
  private readonly wake = new AbortController();
  private readonly detaching = new AbortController();
  private forceKill: NodeJS.Timeout | undefined;
  done: Promise<void> = Promise.resolve();

  constructor(private readonly options: TaskRunnerOptions) {
    this.name = options.task.Name;
    this.state = options.saved?.State ?? {
      State: 'pending',
      Failed: false,
      Restarts: 0,
      LastRestart: null,
      StartedAt: null,
      FinishedAt: null,
      Events: [],
    };
    this.handle = options.saved?.Handle ?? null;
    const policy = { ...defaultRestartPolicy, ...(options.group.RestartPolicy ?? {}) };
    this.tracker = new RestartTracker(
      policy,
      options.job.Type,
      options.now,
      options.random,
      options.saved?.Restart,
      options.task.Lifecycle,
    );
  }

  get saved(): SavedTask {
    return { State: this.state, Handle: this.handle, Restart: this.tracker.state };
  }

  get dead(): boolean {
    return this.state.State === 'dead';
  }

  /** Runs the task (or goes on with a restored one) until it is dead or the agent detaches. */
  start(): void {
    if (this.started) return;
    this.started = true;
    this.done = this.run().catch((error: unknown) => {
      this.emit(taskEvents.driverFailure, { DriverError: `task runner: ${(error as Error).message}`, FailsTask: true });
      this.finish(true);
    });
  }

  /** Stops the task: its kill signal, then SIGKILL after its kill timeout (Nomad's `Kill`). */
  async kill(reason?: { type: string; fields?: Partial<TaskEvent> }): Promise<void> {
    if (this.dead || this.killing) return this.done;
    this.killing = true;
    if (!this.started) {
      // Never started (its lifecycle phase had not come): it is done without running.
      this.started = true;
      if (reason) this.emit(reason.type, reason.fields ?? {});
      this.emit(taskEvents.killed);
      this.finish(false);
      return;
    }
    if (reason) this.emit(reason.type, reason.fields ?? {});
    const timeout = this.options.task.KillTimeout ?? defaultKillTimeout;
    this.emit(taskEvents.killing, { KillTimeout: timeout });
    this.wake.abort();
    this.signalKill();
    await this.done;
  }

  /** The kill signal to the running process, SIGKILL after the kill timeout (once a process runs, if none yet). */
  private signalKill(): void {
    const handle = this.handle;
    if (!handle || this.forceKill) return;
    const signal = this.options.task.KillSignal ?? '';
    signalGroup(handle, (signalNames.has(signal) ? signal : 'SIGINT') as NodeJS.Signals);
    const timeout = this.options.task.KillTimeout ?? defaultKillTimeout;
    this.forceKill = setTimeout(() => signalGroup(handle, 'SIGKILL'), timeout / 1e6);
  }

  /** Stops watching without touching the process (the agent stops; the task runs on). */
  async detach(): Promise<void> {
    this.detaching.abort();
    this.wake.abort();
    await this.done;
  }

  private emit(type: string, fields: Partial<TaskEvent> = {}): void {
    const event = taskEvent(type, new Date(this.options.now()), fields);
    const events = [...(this.state.Events ?? []), event];
    this.state = { ...this.state, Events: events.slice(-maxEvents) };
    if (type === taskEvents.restarting)
      this.state = {
        ...this.state,
        Restarts: this.state.Restarts + 1,
        LastRestart: new Date(this.options.now()).toISOString(),
      };
    this.options.onChange();
  }

  private setState(State: TaskState['State'], extra: Partial<TaskState> = {}): void {
    this.state = { ...this.state, State, ...extra };
    this.options.onChange();
  }

  private finish(failed: boolean): void {
    if (this.forceKill) clearTimeout(this.forceKill);
    this.handle = null;
    this.setState('dead', { Failed: failed, FinishedAt: new Date(this.options.now()).toISOString() });
  }

  private async run(): Promise<void> {
    if (this.dead) return;
    let current: { handle: ProcessHandle; child?: ChildProcess } | undefined;
    let endedWhileDown = false;
    let restoredAt: number | undefined;
    // Started by an agent that died before it saved the handle: the supervisor recorded it.
    const recorded = this.handle ? undefined : recordedHandle(this.options.exitFile);
    if (recorded) {
      this.handle = recorded;
      if (this.state.State !== 'running') {
        this.setState('running', { StartedAt: new Date(this.options.now()).toISOString(), FinishedAt: null });
        this.emit(taskEvents.started);
      }
    }
    if (this.handle) {
      current = { handle: this.handle };
      // Ended while the agent was not running (it is reported so once its exit is read): gone now, or its exit
      // recorded before this moment (the supervisor may be finishing still).
      endedWhileDown = !isAlive(this.handle);
      restoredAt = Date.now();
    } else if ((this.state.Events ?? []).length === 0) {
      this.emit(taskEvents.received);
    }
    let dirs: TaskDirs;
    try {
      dirs = this.options.allocDir.task(this.name);
      if (!current && this.state.StartedAt === null)
        this.emit(taskEvents.setup, { Message: 'Building Task Directory' });
    } catch (error) {
      this.emit(taskEvents.setupFailure, { SetupError: (error as Error).message, FailsTask: true });
      return this.finish(true);
    }
    for (;;) {
      if (this.detaching.signal.aborted) return;
      if (this.killing && !current) {
        this.emit(taskEvents.killed);
        return this.finish(false);
      }
      if (!current) {
        const started = await this.startProcess(dirs);
        if ('error' in started) {
          this.emit(taskEvents.driverFailure, { DriverError: started.error, FailsTask: !started.recoverable });
          const decision = this.tracker.decide({ startError: started.error, recoverable: started.recoverable });
          if (!(await this.apply(decision))) return;
          continue;
        }
        current = started;
        this.handle = started.handle;
        this.setState('running', { StartedAt: new Date(this.options.now()).toISOString(), FinishedAt: null });
        this.emit(taskEvents.started);
        // Killed while it was starting: the signal goes now.
        if (this.killing) this.signalKill();
      }
      const exit = await waitExit(current.handle, current.child, this.options.pollMs, this.detaching.signal);
      if (exit === 'detached') return;
      if (restoredAt !== undefined && recordedBefore(this.options.exitFile, restoredAt)) endedWhileDown = true;
      restoredAt = undefined;
      clearRecords(this.options.exitFile);
      current = undefined;
      this.handle = null;
      const known = exit && 'exitCode' in exit ? exit : undefined;
      const ended: ExitResult = known ?? (this.killing ? { exitCode: 137, signal: 9 } : { exitCode: -1, signal: 0 });
      let message = '';
      if (!known && !this.killing) message = 'the task’s process ended and its exit code was not recorded';
      if (endedWhileDown) {
        message = `the task ended while the agent was not running${known ? '' : '; its exit code was not recorded'}`;
        endedWhileDown = false;
      }
      this.emit(taskEvents.terminated, { ExitCode: ended.exitCode, Signal: ended.signal, Message: message });
      if (this.killing) {
        this.emit(taskEvents.killed);
        return this.finish(false);
      }
      if (!(await this.apply(this.tracker.decide({ exitCode: ended.exitCode })))) return;
    }
  }

  /** Applies a restart decision; true when the task starts again. */
  private async apply(decision: ReturnType<RestartTracker['decide']>): Promise<boolean> {
    if (decision.state === taskEvents.terminated) {
      this.finish(false);
      return false;
    }
    if (decision.state === taskEvents.notRestarting) {
      this.emit(taskEvents.notRestarting, { RestartReason: decision.reason, FailsTask: true });
      this.finish(true);
      return false;
    }
    this.state = { ...this.state, State: 'pending' };
    this.emit(taskEvents.restarting, {
      RestartReason: decision.reason,
      StartDelay: Math.round(decision.delayMs * 1e6),
    });
    await new Promise<void>((resolve) => {
      if (this.wake.signal.aborted) return resolve();
      const timer = setTimeout(resolve, decision.delayMs);
      this.wake.signal.addEventListener(
        'abort',
        () => {
          clearTimeout(timer);
          resolve();
        },
        { once: true },
      );
    });
    return true;
  }

  private async startProcess(
    dirs: TaskDirs,
  ): Promise<{ handle: ProcessHandle; child: ChildProcess } | { error: string; recoverable: boolean }> {
    const { task } = this.options;
    if (task.Driver !== 'raw_exec')
      return { error: `driver ${JSON.stringify(task.Driver)} is not offered by this agent`, recoverable: false };
    if (!this.options.rawExecEnabled)
      return {
        error:
          'raw_exec is disabled on this agent (its configuration does not set plugin.raw_exec.config.enabled = true)',
        recoverable: false,
      };
    const config = task.Config ?? {};
    const env = taskEnv({
      alloc: this.options.alloc,
      job: this.options.job,
      group: this.options.group,
      task,
      node: this.options.node,
      dirs,
      sharedDir: this.options.allocDir.shared,
      hostEnv: this.options.hostEnv,
    });
    if (typeof config.command !== 'string' || config.command === '')
      return { error: 'raw_exec: config.command is missing', recoverable: false };
    const rawArgs = config.args ?? [];
    if (!Array.isArray(rawArgs) || rawArgs.some((arg) => typeof arg !== 'string'))
      return { error: 'raw_exec: config.args must be a list of strings', recoverable: false };
    const command = interpolate(config.command, env, this.options.node);
    const args = (rawArgs as string[]).map((arg) => interpolate(arg, env, this.options.node));
    clearRecords(this.options.exitFile);
    const logs = task.LogConfig ?? {};
    try {
      return await launch({
        command,
        args,
        env,
        cwd: dirs.dir,
        logBase: dirs.logBase,
        maxLogFiles: logs.MaxFiles ?? defaultLogFiles,
        maxLogFileBytes: (logs.MaxFileSizeMB ?? defaultLogFileMB) * 1024 * 1024,
        exitFile: this.options.exitFile,
      });
    } catch (error) {
      if (error instanceof LaunchError)
        return { error: `failed to launch command: ${error.message}`, recoverable: true };
      return { error: `failed to start the task: ${(error as Error).message}`, recoverable: true };
    }
  }
}
