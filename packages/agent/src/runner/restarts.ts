/**
 * The restart policy of a task group, as Nomad's restart tracker applies it (`client/allocrunner/taskrunner/
 * restarts`): after each exit or failed start, count the restart within the policy's interval (a new interval starts
 * the count again); a successful exit of a batch task needs no restart; beyond `Attempts` the mode decides: `fail`
 * stops with the task failed, `delay` waits for the interval's end. A restart within the policy waits `Delay` plus up
 * to a quarter of it (Nomad's jitter). Service and system tasks restart even after a successful exit, but not
 * prestart, poststart or poststop tasks that are not sidecars.
 */
import { goDuration, taskEvents } from './events.ts';
import type { RestartPolicy } from './types.ts';

export const restartReasons = {
  noRestartsAllowed: 'Policy allows no restarts',
  unrecoverable: 'Error was unrecoverable',
  withinPolicy: 'Restart within policy',
  delay: 'Exceeded allowed attempts, applying a delay',
  successful: 'Restart unnecessary as task terminated successfully',
} as const;

export type RestartDecision =
  | { state: typeof taskEvents.restarting; delayMs: number; reason: string }
  | { state: typeof taskEvents.notRestarting; reason: string }
  | { state: typeof taskEvents.terminated; reason: string };

/** Nomad's jitter: up to a quarter of the delay again. */
const jitter = 0.25;

export interface RestartTrackerState {
  count: number;
  /** Milliseconds since the epoch: the current interval's start. */
  intervalStart: number;
}

export class RestartTracker {
  private readonly onSuccess: boolean;
  state: RestartTrackerState;

  constructor(
    private readonly policy: RestartPolicy,
    jobType: string,
    private readonly now: () => number,
    private readonly random: () => number = Math.random,
    state?: RestartTrackerState,
    lifecycle?: { Hook?: string; Sidecar?: boolean } | null,
  ) {
    // A batch task, or a lifecycle task that is not a sidecar, is done when it succeeds.
    const ephemeral = Boolean(lifecycle?.Hook) && !lifecycle?.Sidecar;
    this.onSuccess = jobType !== 'batch' && jobType !== 'sysbatch' && !ephemeral;
    this.state = state ?? { count: 0, intervalStart: now() };
  }

  /**
   * What to do after the task ended: `exitCode` of a process that ran (0: success), or a start error (`recoverable`
   * false: never restart).
   */
  decide(outcome: { exitCode: number } | { startError: string; recoverable: boolean }): RestartDecision {
    const successful = 'exitCode' in outcome && outcome.exitCode === 0;
    if (this.policy.Attempts === 0) {
      if (!this.onSuccess && successful)
        return { state: taskEvents.terminated, reason: restartReasons.noRestartsAllowed };
      return { state: taskEvents.notRestarting, reason: restartReasons.noRestartsAllowed };
    }
    const now = this.now();
    if (now > this.state.intervalStart + this.policy.Interval / 1e6) this.state = { count: 0, intervalStart: now };
    this.state = { ...this.state, count: this.state.count + 1 };
    if ('startError' in outcome && !outcome.recoverable)
      return { state: taskEvents.notRestarting, reason: restartReasons.unrecoverable };
    if (successful && !this.onSuccess) return { state: taskEvents.terminated, reason: restartReasons.successful };
    if (this.state.count > this.policy.Attempts) {
      if (this.policy.Mode === 'fail')
        return {
          state: taskEvents.notRestarting,
          reason: `Exceeded allowed attempts ${this.policy.Attempts} in interval ${goDuration(this.policy.Interval)} and mode is "fail"`,
        };
      return {
        state: taskEvents.restarting,
        delayMs: Math.max(0, this.state.intervalStart + this.policy.Interval / 1e6 - now),
        reason: restartReasons.delay,
      };
    }
    const delayMs = Math.max(this.policy.Delay / 1e6, 1e-6);
    return {
      state: taskEvents.restarting,
      delayMs: delayMs + Math.floor(this.random() * delayMs) * jitter,
      reason: restartReasons.withinPolicy,
    };
  }
}
