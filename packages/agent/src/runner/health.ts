/**
 * An allocation's health for its deployment, as Nomad's client judges it from task states (`client/allochealth`,
 * `health_check = "task_states"`; this agent runs no checks, so `"checks"` is judged the same way, and `"manual"` not
 * at all): unhealthy as soon as a task fails or ends, or the allocation fails, or `healthy_deadline` passes first;
 * healthy once every task has run, without a restart, for `min_healthy_time` (a task starting again restarts the
 * wait). Only an allocation of a deployment whose health is not yet set is watched; the result is reported once, as
 * the allocation's `DeploymentStatus`.
 */
import type { Allocation, ClientStatus, TaskState } from './types.ts';

/** Nomad's update-block defaults (nanoseconds). */
const defaultMinHealthy = 10e9;
const defaultDeadline = 5 * 60e9;

export interface HealthResult {
  Healthy: boolean;
  Timestamp: string;
}

export class AllocHealth {
  result: HealthResult | undefined;
  private allStarted: string | null = null;
  private healthyTimer: NodeJS.Timeout | undefined;
  private deadlineTimer: NodeJS.Timeout | undefined;
  private readonly minHealthyMs: number;

  private constructor(
    private readonly now: () => number,
    minHealthy: number,
    deadline: number,
    private readonly onResult: () => void,
  ) {
    this.minHealthyMs = minHealthy / 1e6;
    this.deadlineTimer = setTimeout(() => this.decide(false), deadline / 1e6);
  }

  /** The watch for `alloc`, or undefined when its health is not this agent's to judge. */
  static watch(alloc: Allocation, now: () => number, onResult: () => void): AllocHealth | undefined {
    if (!alloc.DeploymentID) return undefined;
    if (alloc.DeploymentStatus && typeof alloc.DeploymentStatus.Healthy === 'boolean') return undefined;
    const group = alloc.Job?.TaskGroups?.find((candidate) => candidate.Name === alloc.TaskGroup);
    const update = group?.Update;
    if (!update || update.HealthCheck === 'manual') return undefined;
    return new AllocHealth(
      now,
      update.MinHealthyTime ?? defaultMinHealthy,
      update.HealthyDeadline ?? defaultDeadline,
      onResult,
    );
  }

  /** The tasks' states changed. */
  observe(states: Record<string, TaskState>, clientStatus: ClientStatus, desiredStatus: string): void {
    if (this.result) return;
    if (desiredStatus !== 'run') {
      this.cancel();
      return;
    }
    let latest: string | null = null;
    for (const state of Object.values(states)) {
      if (state.Failed || state.FinishedAt !== null) {
        this.decide(false);
        return;
      }
      if (state.State === 'pending') {
        latest = null;
        break;
      }
      if (state.StartedAt && (latest === null || state.StartedAt > latest)) latest = state.StartedAt;
    }
    if (clientStatus === 'failed') {
      this.decide(false);
      return;
    }
    if (latest === this.allStarted) return;
    if (this.healthyTimer) clearTimeout(this.healthyTimer);
    this.healthyTimer = undefined;
    this.allStarted = latest;
    if (latest !== null) this.healthyTimer = setTimeout(() => this.decide(true), this.minHealthyMs);
  }

  cancel(): void {
    if (this.healthyTimer) clearTimeout(this.healthyTimer);
    if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
    this.healthyTimer = undefined;
    this.deadlineTimer = undefined;
  }

  private decide(healthy: boolean): void {
    if (this.result) return;
    this.cancel();
    this.result = { Healthy: healthy, Timestamp: new Date(this.now()).toISOString() };
    this.onResult();
  }
}
