/**
 * One allocation on this node, run as Nomad's allocation runner runs it (`client/allocrunner`): its folder
 * (`alloc-dir.ts`), one task runner per task of its group, all started together; when a task fails the others are
 * killed (`Sibling Task Failed`), when a leader task ends the others are killed (`Leader Task Dead`); a stop or evict
 * from the server kills every task. Its client status follows its tasks' (`client-status.ts`). Every change is saved
 * (`state-store.ts`) before it is reported (`onUpdate`), so an agent restarted at any point re-attaches rather than
 * starting a task twice.
 */
import { AllocDir, AllocDirError } from './alloc-dir.ts';
import { clientStatus } from './client-status.ts';
import { AllocHealth, type HealthResult } from './health.ts';
import { taskEvent, taskEvents } from './events.ts';
import type { AllocStateStore, SavedAlloc } from './state-store.ts';
import { TaskRunner } from './task-runner.ts';
import type { Allocation, ClientStatus, GroupSpec, NodeInfo, TaskState } from './types.ts';

export interface AllocRunnerOptions {
  alloc: Allocation;
  node: NodeInfo;
  dataDir: string;
  store: AllocStateStore;
  rawExecEnabled: boolean;
  hostEnv?: NodeJS.ProcessEnv;
  now?: () => number;
  random?: () => number;
  /** How often a re-attached task's process is looked for (default 1 s). */
  pollMs?: number;
  saved?: SavedAlloc;
  onUpdate?: (runner: AllocRunner) => void;
}

export class AllocRunner {
  alloc: Allocation;
  readonly tasks = new Map<string, TaskRunner>();
  /** Task states that belong to no runnable task (the allocation could not be set up). */
  private failedStates: Record<string, TaskState> = {};
  private description: string | undefined;
  private stopping = false;
  /** A task failed: the others were killed and no later lifecycle phase starts. */
  private failedSibling = false;
  /** The deployment health watch, when the allocation is part of a deployment (`health.ts`). */
  private health: AllocHealth | undefined;
  /** Whether the allocation was stopped (by the server, or by the agent because the server no longer lists it). */
  get stopped(): boolean {
    return this.stopping;
  }
  private readonly now: () => number;

  constructor(private readonly options: AllocRunnerOptions) {
    this.alloc = options.saved?.Alloc ?? options.alloc;
    this.now = options.now ?? Date.now;
  }

  get id(): string {
    return this.alloc.ID;
  }

  /** Sets up the allocation and starts (or, restored, resumes) its tasks. */
  start(): void {
    const { alloc } = this;
    const job = alloc.Job;
    const group = job?.TaskGroups?.find((candidate) => candidate.Name === alloc.TaskGroup);
    if (!job || !group) {
      this.failSetup(`task group ${JSON.stringify(alloc.TaskGroup)} is not in the job`);
      return;
    }
    let allocDir: AllocDir;
    try {
      allocDir = new AllocDir(this.options.dataDir, alloc.ID);
      allocDir.build();
      for (const task of group.Tasks) allocDir.task(task.Name, false);
    } catch (error) {
      if (!(error instanceof AllocDirError)) throw error;
      this.failSetup(error.message, group);
      return;
    }
    for (const task of group.Tasks) {
      const saved = this.options.saved?.Tasks[task.Name];
      const runner = new TaskRunner({
        alloc,
        job,
        group,
        task,
        node: this.options.node,
        allocDir,
        exitFile: this.options.store.exitFile(alloc.ID, task.Name),
        rawExecEnabled: this.options.rawExecEnabled,
        hostEnv: this.options.hostEnv ?? process.env,
        now: this.now,
        ...(this.options.random ? { random: this.options.random } : {}),
        pollMs: this.options.pollMs ?? 1000,
        ...(saved ? { saved } : {}),
        onChange: () => this.changed(task.Name),
      });
      this.tasks.set(task.Name, runner);
    }
    this.save();
    this.health = AllocHealth.watch(alloc, this.now, () => this.options.onUpdate?.(this));
    // Restored: the tasks that had started go on; then each lifecycle phase whose turn has come.
    for (const runner of this.tasks.values()) if ((runner.state.Events ?? []).length > 0) runner.start();
    this.advance();
    this.observeHealth();
    if (alloc.DesiredStatus !== 'run') void this.stop();
  }

  /** The deployment health judged, to report as `DeploymentStatus` (once). */
  get deploymentStatus(): HealthResult | undefined {
    return this.health?.result;
  }

  private observeHealth(): void {
    this.health?.observe(this.taskStates, this.clientStatus.status, this.alloc.DesiredStatus);
  }

  /** Every task fails with a `Setup Failure` naming the problem; no process is started. */
  private failSetup(problem: string, group?: GroupSpec): void {
    const now = new Date(this.now());
    const names = group?.Tasks.map((task) => task.Name) ?? [];
    this.description = `setup failed: ${problem}`;
    for (const name of names.length > 0 ? names : [this.alloc.TaskGroup || 'alloc'])
      this.failedStates[name] = {
        State: 'dead',
        Failed: true,
        Restarts: 0,
        LastRestart: null,
        StartedAt: null,
        FinishedAt: now.toISOString(),
        Events: [
          taskEvent(taskEvents.received, now),
          taskEvent(taskEvents.setupFailure, now, { SetupError: problem, FailsTask: true }),
        ],
      };
    this.options.onUpdate?.(this);
  }

  /** A newer version of the allocation from the server: a stop or evict kills its tasks; anything else is kept. */
  update(alloc: Allocation): void {
    const deployment = this.alloc.DeploymentID;
    this.alloc = { ...alloc, Job: alloc.Job ?? this.alloc.Job };
    this.save();
    if (alloc.DeploymentID !== deployment || !this.health) {
      // A new deployment (an in-place update) is judged afresh.
      this.health?.cancel();
      this.health = AllocHealth.watch(this.alloc, this.now, () => this.options.onUpdate?.(this));
    }
    this.observeHealth();
    if (alloc.DesiredStatus !== 'run') void this.stop();
  }

  /** Kills every task (the allocation was stopped). */
  async stop(): Promise<void> {
    this.stopping = true;
    this.health?.cancel();
    // The poststop tasks run once the others are down (Nomad runs them on a stop too), unless they already ran.
    const poststop = new Set(this.phase('poststop'));
    await Promise.all([...this.tasks.values()].filter((task) => !poststop.has(task)).map((task) => task.kill()));
    for (const task of poststop) task.start();
    await Promise.all([...poststop].map((task) => task.done));
  }

  /** The task runners of a lifecycle phase (`main` for tasks without a lifecycle block). */
  private phase(hook: string): TaskRunner[] {
    const group = this.alloc.Job?.TaskGroups.find((candidate) => candidate.Name === this.alloc.TaskGroup);
    return (group?.Tasks ?? [])
      .filter((task) => (task.Lifecycle?.Hook || 'main') === hook)
      .map((task) => this.tasks.get(task.Name))
      .filter((runner): runner is TaskRunner => runner !== undefined);
  }

  /** Stops watching the tasks, leaving them running (the agent itself stops). */
  async detach(): Promise<void> {
    this.health?.cancel();
    await Promise.all([...this.tasks.values()].map((task) => task.detach()));
  }

  /** Resolves once every task is dead (or detached). */
  async wait(): Promise<void> {
    await Promise.all([...this.tasks.values()].map((task) => task.done));
  }

  get taskStates(): Record<string, TaskState> {
    const states: Record<string, TaskState> = { ...this.failedStates };
    for (const [name, runner] of this.tasks) states[name] = runner.state;
    return states;
  }

  get clientStatus(): { status: ClientStatus; description: string } {
    const derived = clientStatus(this.taskStates);
    if (this.description && derived.status === 'failed') return { status: 'failed', description: this.description };
    return derived;
  }

  get terminal(): boolean {
    const { status } = this.clientStatus;
    return status === 'complete' || status === 'failed';
  }

  private save(): void {
    const tasks: SavedAlloc['Tasks'] = {};
    for (const [name, runner] of this.tasks) tasks[name] = runner.saved;
    this.options.store.save({ Alloc: this.alloc, Tasks: tasks });
  }

  private changed(name: string): void {
    this.save();
    if (!this.stopping) this.observeHealth();
    const runner = this.tasks.get(name);
    if (runner?.dead && !this.stopping) {
      // Poststop tasks are not killed with the others: they run once the main tasks are down.
      const poststop = new Set(this.phase('poststop'));
      const others = [...this.tasks.values()].filter(
        (other) => other !== runner && !other.dead && !poststop.has(other),
      );
      if (runner.state.Failed) {
        this.failedSibling = true;
        for (const other of others)
          void other.kill({ type: taskEvents.siblingFailed, fields: { FailedSibling: name } });
      } else if (this.isLeader(name)) for (const other of others) void other.kill({ type: taskEvents.leaderDead });
    }
    if (!this.stopping) this.advance();
    this.options.onUpdate?.(this);
  }

  /**
   * Starts the lifecycle phases whose turn has come, as Nomad's task coordinator: prestart tasks first; the main tasks
   * once every prestart task that is not a sidecar has completed successfully; poststart tasks once the main tasks
   * have started; when every main task is dead, the sidecars are killed (`Main Tasks Dead`) and the poststop tasks run.
   */
  private advance(): void {
    const group = this.alloc.Job?.TaskGroups.find((candidate) => candidate.Name === this.alloc.TaskGroup);
    if (!group) return;
    const sidecar = (runner: TaskRunner) =>
      group.Tasks.find((task) => task.Name === runner.name)?.Lifecycle?.Sidecar === true;
    const prestart = this.phase('prestart');
    const main = this.phase('main');
    const poststart = this.phase('poststart');
    if (!this.failedSibling) {
      for (const runner of prestart) runner.start();
      const blocking = prestart.filter((runner) => !sidecar(runner));
      if (!blocking.every((runner) => runner.dead && !runner.state.Failed)) return;
      for (const runner of main) runner.start();
      if (main.every((runner) => runner.state.StartedAt !== null || runner.dead))
        for (const runner of poststart) runner.start();
    }
    if (!main.every((runner) => runner.dead)) return;
    for (const runner of [...prestart, ...poststart])
      if (!runner.dead && runner.started) void runner.kill({ type: taskEvents.mainDead });
    for (const runner of poststart) if (!runner.started) void runner.kill();
    for (const runner of this.phase('poststop')) runner.start();
  }

  private isLeader(name: string): boolean {
    const group = this.alloc.Job?.TaskGroups.find((candidate) => candidate.Name === this.alloc.TaskGroup);
    return group?.Tasks.find((task) => task.Name === name)?.Leader === true;
  }
}
