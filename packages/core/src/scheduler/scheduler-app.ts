import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { Core } from '../core.ts';
import { jsonLogger } from '../lib/log.ts';
import { authMethodRoutes } from './acl/auth-methods.ts';
import { bindingRuleRoutes } from './acl/binding-rules.ts';
import { loginRoutes } from './acl/login.ts';
import { oidcRoutes } from './acl/oidc.ts';
import { policyRoutes } from './acl/policies.ts';
import { roleRoutes } from './acl/roles.ts';
import { tokenRoutes } from './acl/tokens.ts';
import { type SchedulerAuditOptions, schedulerAudit } from './audit.ts';
import { eventRoutes } from './events/stream.ts';
import { NomadError } from './http/nomad.ts';
import { forwardWrites, type RegionOptions } from './http/regions.ts';
import { type Scheduler, type SchedulerEnv, type SchedulerOptions, schedulerFor } from './scheduler.ts';
import { WriteContention } from './state.ts';

/** The largest request body the service reads (as the secrets service); a larger one is refused with 413 unread. */
export const maxBodyBytes = 1024 * 1024;

export interface SchedulerAppOptions extends SchedulerOptions, RegionOptions {
  /** The core, created once per process on first use (a Lambda's cold start). */
  core: () => Promise<Core>;
  /** The caller's address, from the node socket or the API Gateway event. */
  clientIp?: (env: unknown) => string;
  /** Nomad Enterprise's audit log of writes and logins (stage config `schedulerAudit`; locally `KEYHAVEN_SCHEDULER_AUDIT`). */
  audit?: SchedulerAuditOptions;
}

/**
 * The scheduler service (Nomad conventions: capitalised JSON, plain-text errors, `CreateIndex`/`ModifyIndex`,
 * blocking queries): ACL tokens, policies, roles, auth methods, binding rules, login and the event stream.
 */
export function createSchedulerApp(options: SchedulerAppOptions): Hono<SchedulerEnv> {
  const app = new Hono<SchedulerEnv>();
  let scheduler: Promise<Scheduler> | undefined;
  const getScheduler = () => {
    scheduler ??= options.core().then((core) => schedulerFor(core, options));
    scheduler.catch(() => {
      scheduler = undefined;
    });
    return scheduler;
  };

  app.get('/v1/agent/health', (c) => c.json({ server: { ok: true, message: 'ok' } }));
  // Before anything reads the body: a declared length over the limit is refused without reading a byte, and a
  // chunked body is cut off as soon as it passes the limit, instead of being buffered whole.
  app.use(
    '*',
    bodyLimit({ maxSize: maxBodyBytes, onError: (c) => c.text(`Request body too large: larger than ${maxBodyBytes} bytes`, 413) }),
  );
  app.use('/v1/*', forwardWrites(options));
  app.use('/v1/*', async (c, next) => {
    c.set('scheduler', await getScheduler());
    await next();
  });
  if (options.audit) app.use('/v1/*', schedulerAudit(options.audit, options.clientIp ?? (() => '')));
  tokenRoutes(app);
  policyRoutes(app);
  roleRoutes(app);
  authMethodRoutes(app);
  bindingRuleRoutes(app);
  loginRoutes(app);
  oidcRoutes(app);
  eventRoutes(app);

  app.notFound((c) => c.text(`Invalid URL path: ${c.req.path}`, 404));
  app.onError((error, c) => {
    if (error instanceof NomadError) return c.text(error.message, error.status);
    if (error instanceof WriteContention) return c.text(error.message, 409);
    const tooLarge = beyondStorageLimits(error);
    if (tooLarge) return c.text(tooLarge, 413);
    failureLog.error('scheduler request failed', { path: c.req.path, error: error instanceof Error ? error.message : String(error) });
    return c.text('internal error', 500);
  });
  return app;
}

/** DynamoDB's 400 KB item limit, met by a body under the request limit that fills one item (a huge list of names). */
function beyondStorageLimits(error: unknown): string | undefined {
  if (!(error instanceof Error) || (error.name !== 'ValidationException' && error.name !== 'TransactionCanceledException')) return undefined;
  const reasons = (error as { CancellationReasons?: Array<{ Message?: string }> }).CancellationReasons ?? [];
  const messages = [error.message, ...reasons.map((reason) => reason.Message ?? '')];
  if (messages.some((message) => /item size (to update )?has exceeded/i.test(message))) return 'the data is too large to store (at most 400 KB per item)';
  return undefined;
}

const failureLog = jsonLogger((line) => process.stderr.write(`${line}\n`));
