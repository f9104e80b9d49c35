/**
 * Allocations for the agent's runner tests: an allocation of a one-group job (Nomad's shapes, as the server hands them
 * to the agent), a node, a temporary data directory, a wait for a condition, and the cleanup that kills whatever task
 * a test left running (by its process group).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { AllocRunner, type AllocRunnerOptions } from '../../packages/agent/src/runner/alloc-runner.ts';
import { signalGroup } from '../../packages/agent/src/runner/executor.ts';
import { AllocStateStore } from '../../packages/agent/src/runner/state-store.ts';
import type {
  AllocatedPort,
  Allocation,
  GroupSpec,
  NodeInfo,
  TaskSpec,
} from '../../packages/agent/src/runner/types.ts';

export const testNode: NodeInfo = {
  ID: '9a1c5a8e-3c1d-4c59-9a55-0c1b2f0e7d11',
  Name: 'runner-node',
  Datacenter: 'dc-test',
  NodeClass: 'runner',
  NodePool: 'default',
  Address: '127.0.0.1',
  Attributes: { 'kernel.name': 'linux' },
  Meta: { rack: 'r1' },
};

/** `${name}`: a variable as a job interpolates it. */
export const nomadVar = (name: string) => `$${'{'}${name}}`;

/** A raw_exec task running `command args`. */
export function rawExec(name: string, command: string, args: string[], extra: Partial<TaskSpec> = {}): TaskSpec {
  return { Name: name, Driver: 'raw_exec', Config: { command, args }, KillTimeout: 2e9, ...extra };
}

export interface AllocSpec {
  tasks: TaskSpec[];
  type?: string;
  restart?: Partial<NonNullable<GroupSpec['RestartPolicy']>>;
  ports?: AllocatedPort[];
  groupExtra?: Partial<GroupSpec>;
  index?: number;
}

export function allocation(spec: AllocSpec): Allocation {
  const id = randomUUID();
  const group: GroupSpec = {
    Name: 'web',
    Tasks: spec.tasks,
    RestartPolicy: { Attempts: 0, Interval: 30 * 60e9, Delay: 10e6, Mode: 'fail', ...spec.restart },
    ...spec.groupExtra,
  };
  return {
    ID: id,
    Namespace: 'default',
    Name: `example.web[${spec.index ?? 0}]`,
    NodeID: testNode.ID,
    JobID: 'example',
    Job: {
      ID: 'example',
      Name: 'example',
      Namespace: 'default',
      Region: 'global',
      Type: spec.type ?? 'batch',
      Meta: { owner: 'team-a' },
      TaskGroups: [group],
    },
    TaskGroup: 'web',
    AllocatedResources: {
      Tasks: Object.fromEntries(
        spec.tasks.map((task) => [task.Name, { Cpu: { CpuShares: 250 }, Memory: { MemoryMB: 128, MemoryMaxMB: 0 } }]),
      ),
      Shared: { Ports: spec.ports ?? [] },
    },
    DesiredStatus: 'run',
    ClientStatus: 'pending',
    AllocModifyIndex: 1,
  };
}

export class RunnerFixture {
  readonly dataDir = mkdtempSync(path.join(tmpdir(), 'keyhaven-runner-'));
  readonly store = new AllocStateStore(this.dataDir);
  private readonly runners: AllocRunner[] = [];

  run(alloc: Allocation, options: Partial<AllocRunnerOptions> = {}): AllocRunner {
    const runner = new AllocRunner({
      alloc,
      node: testNode,
      dataDir: this.dataDir,
      store: this.store,
      rawExecEnabled: true,
      pollMs: 50,
      ...options,
    });
    this.runners.push(runner);
    runner.start();
    return runner;
  }

  /** Kills every task still running (by process group) and removes the data directory. */
  async cleanup(): Promise<void> {
    for (const runner of this.runners) {
      for (const task of runner.tasks.values()) if (task.handle) signalGroup(task.handle, 'SIGKILL');
      await runner.detach();
    }
    for (const saved of this.store.loadAll().saved)
      for (const task of Object.values(saved.Tasks)) if (task.Handle) signalGroup(task.Handle, 'SIGKILL');
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}

/** Polls `probe` until it answers something other than undefined (30 s at most: a loaded machine starts processes slowly). */
export async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const found = await probe();
    if (found !== undefined && found !== false) return found;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

export const eventTypes = (runner: AllocRunner, task: string) =>
  (runner.taskStates[task]?.Events ?? []).map((event) => event.Type);
