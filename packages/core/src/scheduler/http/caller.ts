/** Who is calling: the request's token resolved to a `SchedulerCaller` once per request (the route wrapper and the audit log share it). */
import type { Context } from 'hono';
import type { SchedulerCaller, SchedulerEnv } from '../scheduler.ts';
import { tokenSecret } from './nomad.ts';

const callers = new WeakMap<Request, Promise<SchedulerCaller>>();

/** The caller of a request: anonymous without a token; an unknown or expired token is refused (403). */
export function callerOf(c: Context<SchedulerEnv>): Promise<SchedulerCaller> {
  let caller = callers.get(c.req.raw);
  if (!caller) {
    caller = c.var.scheduler.resolve(tokenSecret(c));
    callers.set(c.req.raw, caller);
  }
  return caller;
}
