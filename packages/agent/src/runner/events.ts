/**
 * Task events as Nomad's task runner records them (`structs.TaskEvent`): the type names of `nomad/structs` and the
 * display message its `PopulateEventDisplayMessage` derives, so the API and the console show what Nomad would.
 */
import type { TaskEvent } from './types.ts';

export const taskEvents = {
  received: 'Received',
  setup: 'Task Setup',
  setupFailure: 'Setup Failure',
  driverFailure: 'Driver Failure',
  started: 'Started',
  terminated: 'Terminated',
  killing: 'Killing',
  killed: 'Killed',
  restarting: 'Restarting',
  notRestarting: 'Not Restarting',
  siblingFailed: 'Sibling Task Failed',
  leaderDead: 'Leader Task Dead',
  mainDead: 'Main Tasks Dead',
  restoreFailed: 'Failed Restoring Task',
} as const;

/** Go's `time.Duration.String` of a nanosecond count (`30m0s`, `1.5s`, `250ms`). */
export function goDuration(nanoseconds: number): string {
  if (nanoseconds === 0) return '0s';
  const sign = nanoseconds < 0 ? '-' : '';
  let ns = Math.abs(Math.round(nanoseconds));
  if (ns < 1e3) return `${sign}${ns}ns`;
  if (ns < 1e6) return `${sign}${trim(ns / 1e3)}µs`;
  if (ns < 1e9) return `${sign}${trim(ns / 1e6)}ms`;
  const hours = Math.floor(ns / 3.6e12);
  ns -= hours * 3.6e12;
  const minutes = Math.floor(ns / 6e10);
  ns -= minutes * 6e10;
  const seconds = `${trim(ns / 1e9)}s`;
  if (hours > 0) return `${sign}${hours}h${minutes}m${seconds}`;
  if (minutes > 0) return `${sign}${minutes}m${seconds}`;
  return `${sign}${seconds}`;
}

const trim = (value: number) => String(Number(value.toFixed(9)));

function display(event: TaskEvent): string {
  switch (event.Type) {
    case taskEvents.started:
      return 'Task started by client';
    case taskEvents.received:
      return 'Task received by client';
    case taskEvents.setupFailure:
      return event.SetupError || 'Task setup failed';
    case taskEvents.driverFailure:
      return event.DriverError || 'Failed to start task';
    case taskEvents.killing:
      if (event.KillReason) return event.KillReason;
      return event.KillTimeout > 0
        ? `Sent interrupt. Waiting ${goDuration(event.KillTimeout)} before force killing`
        : 'Sent interrupt';
    case taskEvents.killed:
      return event.KillError || 'Task successfully killed';
    case taskEvents.terminated: {
      const parts = [`Exit Code: ${event.ExitCode}`];
      if (event.Signal !== 0) parts.push(`Signal: ${event.Signal}`);
      if (event.Message) parts.push(`Exit Message: ${JSON.stringify(event.Message)}`);
      return parts.join(', ');
    }
    case taskEvents.restarting: {
      const within = `Task restarting in ${goDuration(event.StartDelay)}`;
      return event.RestartReason ? `${event.RestartReason} - ${within}` : within;
    }
    case taskEvents.notRestarting:
      return event.RestartReason || 'Task exceeded restart policy';
    case taskEvents.siblingFailed:
      return event.FailedSibling
        ? `Task's sibling ${JSON.stringify(event.FailedSibling)} failed`
        : "Task's sibling failed";
    case taskEvents.leaderDead:
      return 'Leader Task in Group dead';
    case taskEvents.mainDead:
      return 'Main tasks in the group died';
    default:
      return event.Message;
  }
}

/** A task event of `type` at `now` with the given fields; `Details` mirrors the set fields as Nomad's do. */
export function taskEvent(type: string, now: Date, fields: Partial<TaskEvent> = {}): TaskEvent {
  const event: TaskEvent = {
    Type: type,
    Time: now.getTime() * 1e6,
    Message: '',
    DisplayMessage: '',
    Details: {},
    FailsTask: false,
    RestartReason: '',
    SetupError: '',
    DriverError: '',
    ExitCode: 0,
    Signal: 0,
    KillReason: '',
    KillTimeout: 0,
    KillError: '',
    StartDelay: 0,
    FailedSibling: '',
    ...fields,
  };
  const details: Record<string, string> = {};
  if (fields.FailsTask) details.fails_task = 'true';
  if (event.RestartReason) details.restart_reason = event.RestartReason;
  if (event.SetupError) details.setup_error = event.SetupError;
  if (event.DriverError) details.driver_error = event.DriverError;
  if (type === taskEvents.terminated) {
    details.exit_code = String(event.ExitCode);
    details.signal = String(event.Signal);
  }
  if (event.KillReason) details.kill_reason = event.KillReason;
  if (event.KillTimeout) details.kill_timeout = goDuration(event.KillTimeout);
  if (event.KillError) details.kill_error = event.KillError;
  if (event.StartDelay) details.start_delay = String(event.StartDelay);
  if (event.FailedSibling) details.failed_sibling = event.FailedSibling;
  if (event.Message) details.message = event.Message;
  event.Details = { ...details, ...(fields.Details ?? {}) };
  event.DisplayMessage = display(event);
  return event;
}
