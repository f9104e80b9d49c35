import { Hono } from 'hono';
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
    failureLog.error('scheduler request failed', { path: c.req.path, error: error instanceof Error ? error.message : String(error) });
    return c.text('internal error', 500);
  });
  return app;
}

const failureLog = jsonLogger((line) => process.stderr.write(`${line}\n`));
