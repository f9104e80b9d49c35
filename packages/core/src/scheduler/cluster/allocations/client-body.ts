/**
 * The body of a node's allocation report (`PUT /v1/client/node/:id/allocations`, Nomad's `Node.UpdateAlloc`): per
 * allocation only the fields a client owns, bounded so an allocation stays one item and a report one transaction.
 */
import * as z from 'zod/mini';
import { clientStatuses, type TaskEvent, type TaskState } from './model.ts';

/** Allocations one report may change: one transaction holds them, their evaluations and the index items. */
export const maxClientUpdates = 25;
const maxTasks = 64;
const maxText = 4096;

const text = (description: string) => z.string().check(z.maxLength(maxText), z.describe(description));
const time = (description: string) =>
  z.optional(z.nullable(z.string().check(z.maxLength(64)))).check(z.describe(description));

const taskEventBody = z.looseObject({
  Type: text('The event’s type (`Started`, `Terminated`, …).'),
  Time: z.optional(z.number()).check(z.describe('When, in nanoseconds since the epoch.')),
  Message: z.optional(text('A message.')),
  DisplayMessage: z.optional(text('The message shown to users.')),
  Details: z
    .optional(z.nullable(z.record(z.string().check(z.maxLength(256)), z.string().check(z.maxLength(maxText)))))
    .check(z.describe('Details, by name.')),
  ExitCode: z.optional(z.number()).check(z.describe('The exit code, for a terminated task.')),
  Signal: z.optional(z.number()).check(z.describe('The signal, for a killed task.')),
});

const taskStateBody = z.object({
  State: z.enum(['pending', 'running', 'dead']).check(z.describe('`pending`, `running` or `dead`.')),
  Failed: z.optional(z.boolean()).check(z.describe('Whether the task failed.')),
  Restarts: z.optional(z.number().check(z.int(), z.nonnegative())).check(z.describe('How often it restarted.')),
  LastRestart: time('When it last restarted (RFC 3339).'),
  StartedAt: time('When it started (RFC 3339).'),
  FinishedAt: time('When it finished (RFC 3339).'),
  Events: z
    .optional(z.nullable(z.array(taskEventBody)))
    .check(z.describe('Its events, oldest first (the last ten are kept).')),
});

export const clientAllocUpdateBody = z.pipe(
  z.object({
    ID: z.string().check(z.minLength(1), z.maxLength(64), z.describe('The allocation ID.')),
    ClientStatus: z
      .enum(clientStatuses)
      .check(z.describe('`pending`, `running`, `complete`, `failed`, `lost`, `unknown`.')),
    ClientDescription: z.optional(text('What the client says of it.')),
    TaskStates: z
      .optional(z.nullable(z.record(z.string().check(z.maxLength(256)), taskStateBody)))
      .check(z.describe('Each task’s state, by task name.')),
    DeploymentStatus: z
      .optional(
        z.nullable(
          z.object({
            Healthy: z.nullable(z.boolean()).check(z.describe('Whether the allocation is healthy.')),
            Timestamp: time('When its health was decided (RFC 3339).'),
          }),
        ),
      )
      .check(z.describe('The allocation’s health in its deployment.')),
  }),
  z.transform((update, ctx) => {
    const tasks = Object.entries(update.TaskStates ?? {});
    if (tasks.length > maxTasks) {
      ctx.issues.push({ code: 'custom', input: update, message: `TaskStates holds more than ${maxTasks} tasks` });
      return z.NEVER;
    }
    const taskStates: Record<string, TaskState> | null | undefined =
      update.TaskStates === undefined || update.TaskStates === null
        ? update.TaskStates
        : Object.fromEntries(
            tasks.map(([task, state]) => [
              task,
              {
                State: state.State,
                Failed: state.Failed ?? false,
                Restarts: state.Restarts ?? 0,
                LastRestart: state.LastRestart ?? null,
                StartedAt: state.StartedAt ?? null,
                FinishedAt: state.FinishedAt ?? null,
                Events: state.Events
                  ? state.Events.slice(-10).map(
                      (event): TaskEvent => ({
                        ...event,
                        Time: event.Time ?? 0,
                        Message: event.Message ?? '',
                        DisplayMessage: event.DisplayMessage ?? event.Message ?? '',
                        Details: event.Details ?? null,
                      }),
                    )
                  : null,
              },
            ]),
          );
    return {
      ID: update.ID,
      ClientStatus: update.ClientStatus,
      ClientDescription: update.ClientDescription,
      TaskStates: taskStates,
      DeploymentStatus: update.DeploymentStatus
        ? { Healthy: update.DeploymentStatus.Healthy, Timestamp: update.DeploymentStatus.Timestamp ?? undefined }
        : update.DeploymentStatus,
    };
  }),
);
