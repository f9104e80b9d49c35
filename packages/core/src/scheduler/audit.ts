import type { MiddlewareHandler } from 'hono';
import { type AuditSink, openSink } from '../lib/audit-sinks.ts';
import { uuid } from '../lib/random.ts';
import { callerOf } from './http/caller.ts';
import type { SchedulerEnv } from './scheduler.ts';

/**
 * The scheduler's audit log, in Nomad Enterprise's format: an `OperationReceived` entry before a write or login
 * runs and an `OperationComplete` entry after. `enforced` delivery (Nomad's default) refuses a request whose
 * first entry could not be written; `best-effort` lets it through.
 */
export interface SchedulerAuditOptions {
  /** `stdout` or an absolute file path. */
  path: string;
  delivery?: 'enforced' | 'best-effort';
}

/** `KEYHAVEN_SCHEDULER_AUDIT` (`stdout` or a file path) and `KEYHAVEN_SCHEDULER_AUDIT_DELIVERY`; absent: no audit. */
export function schedulerAuditFromEnvironment(env: Record<string, string | undefined>): SchedulerAuditOptions | undefined {
  if (!env.KEYHAVEN_SCHEDULER_AUDIT) return undefined;
  const delivery = env.KEYHAVEN_SCHEDULER_AUDIT_DELIVERY ?? 'enforced';
  if (delivery !== 'enforced' && delivery !== 'best-effort')
    throw new Error(`KEYHAVEN_SCHEDULER_AUDIT_DELIVERY must be enforced or best-effort, not "${delivery}"`);
  return { path: env.KEYHAVEN_SCHEDULER_AUDIT, delivery };
}

/** Writes and logins are audited; reads (and the event stream) are not. */
const audited = (method: string, path: string) => !['GET', 'HEAD', 'OPTIONS'].includes(method) || /^\/v1\/acl\/(login|oidc\/)/.test(path);

export function schedulerAudit(
  options: SchedulerAuditOptions,
  remoteAddress: (env: unknown) => string,
  stdout: (line: string) => void = (line) => process.stdout.write(line),
): MiddlewareHandler<SchedulerEnv> {
  const sink: AuditSink = openSink('file', { file_path: options.path }, stdout);
  return async (c, next) => {
    if (!audited(c.req.method, c.req.path)) return next();
    const id = uuid();
    const caller = await callerOf(c).catch(() => undefined);
    const token = caller?.token;
    const entry = (stage: string, status?: number) => {
      const now = new Date().toISOString();
      return `${JSON.stringify({
        created_at: now,
        event_type: 'audit',
        payload: {
          id,
          stage,
          type: 'audit',
          timestamp: now,
          version: 1,
          auth: token
            ? {
                accessor_id: token.AccessorID,
                name: token.Name,
                policies: token.Policies,
                global: token.Global,
                create_time: token.CreateTime,
              }
            : null,
          request: {
            id,
            operation: c.req.method,
            endpoint: c.req.path,
            namespace: { id: c.req.query('namespace') ?? 'default' },
            request_meta: {
              remote_address: remoteAddress(c.env),
              user_agent: c.req.header('user-agent') ?? '',
            },
          },
          ...(status === undefined ? {} : { response: { status_code: status } }),
        },
      })}\n`;
    };
    try {
      await sink.write(entry('OperationReceived'));
    } catch (error) {
      if (options.delivery !== 'best-effort')
        return c.text(`audit: the request could not be recorded, so it was not processed (${(error as Error).message})`, 503);
    }
    await next();
    await sink.write(entry('OperationComplete', c.res.status)).catch(() => {});
  };
}
