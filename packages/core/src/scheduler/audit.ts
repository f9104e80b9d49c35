import { type HttpReply, textReply } from '../front/exchange.ts';
import { type AuditSink, openSink } from '../lib/audit-sinks.ts';
import { uuid } from '../lib/random.ts';
import type { SchedulerExchange } from './http/route.ts';

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
export function schedulerAuditFromEnvironment(
  env: Record<string, string | undefined>,
): SchedulerAuditOptions | undefined {
  if (!env.KEYHAVEN_SCHEDULER_AUDIT) return undefined;
  const delivery = env.KEYHAVEN_SCHEDULER_AUDIT_DELIVERY ?? 'enforced';
  if (delivery !== 'enforced' && delivery !== 'best-effort')
    throw new Error(`KEYHAVEN_SCHEDULER_AUDIT_DELIVERY must be enforced or best-effort, not "${delivery}"`);
  return { path: env.KEYHAVEN_SCHEDULER_AUDIT, delivery };
}

/** Writes and logins are audited; reads (and the event stream) are not. */
const audited = (method: string, path: string) =>
  !['GET', 'HEAD', 'OPTIONS'].includes(method) || /^\/v1\/acl\/(login|oidc\/)/.test(path);

/** The audit around `next`, the request's answer: the first entry before it runs, the second with its status. */
export function schedulerAudit(
  options: SchedulerAuditOptions,
  stdout: (line: string) => void = (line) => process.stdout.write(line),
): (exchange: SchedulerExchange, next: () => Promise<HttpReply>) => Promise<HttpReply> {
  const sink: AuditSink = openSink('file', { file_path: options.path }, stdout);
  return async (exchange, next) => {
    const { request } = exchange;
    if (!audited(request.method, exchange.path)) return next();
    const id = uuid();
    const caller = await exchange.caller().catch(() => undefined);
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
            operation: request.method,
            endpoint: exchange.path,
            namespace: { id: exchange.query.get('namespace') ?? 'default' },
            request_meta: {
              remote_address: request.clientIp,
              user_agent: request.headers.get('user-agent') ?? '',
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
        return textReply(
          503,
          `audit: the request could not be recorded, so it was not processed (${(error as Error).message})`,
        );
    }
    const reply = await next();
    await sink.write(entry('OperationComplete', reply.status)).catch(() => {});
    return reply;
  };
}
