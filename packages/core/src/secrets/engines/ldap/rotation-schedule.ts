import { Cron } from 'croner';
import { badRequest } from '../../../lib/errors.ts';
import type { LdapConfigValue } from './config-model.ts';

/** When the root and static-role passwords fall due, and the rules of the rotation fields. */

export const minRootRotationPeriod = 10;
export const minRotationWindow = 3600;
export const minStaticRotationPeriod = 5;

/** The next time after `afterSeconds` that a five-field cron schedule fires (UTC), in epoch seconds. */
export function cronNext(schedule: string, afterSeconds: number): number | undefined {
  const next = new Cron(schedule, { paused: true, timezone: 'UTC' }).nextRun(new Date(afterSeconds * 1000));
  return next ? Math.floor(next.getTime() / 1000) : undefined;
}

/** Throws a 400 naming the field when `schedule` is not a standard five-field cron expression. */
export function checkSchedule(schedule: string): void {
  const fields = schedule.trim().split(/\s+/);
  if (fields.length !== 5) {
    throw badRequest(
      `invalid "rotation_schedule": expected five fields (minute hour day-of-month month day-of-week), got ${fields.length}`,
    );
  }
  try {
    cronNext(schedule, 0);
  } catch (error) {
    throw badRequest(`invalid "rotation_schedule": ${(error as Error).message}`);
  }
}

/** The root credential's next automatic rotation, counting a period from `base` (its last rotation). */
export function rootNextDue(fields: LdapConfigValue, now: number, base: number): number | undefined {
  if (fields.disable_automated_rotation) return undefined;
  if (fields.rotation_period > 0) return base + fields.rotation_period;
  if (fields.rotation_schedule) return cronNext(fields.rotation_schedule, now);
  return undefined;
}

/**
 * When to try again after a failed automatic rotation: 10 s doubling up to 5 minutes; a scheduled
 * rotation with a window gives up at the window's end and waits for the next scheduled time.
 */
export function retryAt(
  now: number,
  attempts: number,
  window?: { fields: LdapConfigValue; scheduledAt: number },
): { at: number; scheduledAt?: number } {
  const at = now + Math.min(10 * 2 ** Math.max(0, attempts - 1), 300);
  if (window?.fields.rotation_schedule && window.fields.rotation_window > 0) {
    const closes = window.scheduledAt + window.fields.rotation_window;
    if (at > closes) {
      const next = cronNext(window.fields.rotation_schedule, Math.max(closes, now));
      if (next !== undefined) return { at: next, scheduledAt: next };
    }
  }
  return { at };
}
