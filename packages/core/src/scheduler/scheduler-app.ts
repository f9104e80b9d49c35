import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { Core } from '../core.ts';
import { maxBodyBytes } from '../front/body-limit.ts';
import { canonicalPath, sentPath } from '../lib/request-path.ts';
import { authMethodRoutes } from './acl/auth-methods/routes.ts';
import { bindingRuleRoutes } from './acl/binding-rules/routes.ts';
import { loginRoutes } from './acl/login-routes.ts';
import { policyRoutes } from './acl/policies/routes.ts';
import { roleRoutes } from './acl/roles/routes.ts';
import { tokenRoutes } from './acl/tokens/routes.ts';
import { type SchedulerAuditOptions, schedulerAudit } from './audit.ts';
import { eventRoutes } from './events/stream.ts';
import { consoleCors } from './http/console-cors.ts';
import { errorResponse } from './http/errors.ts';
import { openApiRoute } from './http/openapi.ts';
import { forwardWrites, type RegionOptions } from './http/regions.ts';
import { mountRoutes, route, type SchedulerRoute } from './http/route.ts';
import { type Scheduler, type SchedulerEnv, type SchedulerOptions, schedulerFor } from './scheduler.ts';

/** The largest request body the service reads (`front/body-limit.ts`, the secrets service's); a larger one is refused with 413 unread. */
export { maxBodyBytes } from '../front/body-limit.ts';

export interface SchedulerAppOptions extends SchedulerOptions, RegionOptions {
  /** The core, created once per process on first use (a Lambda's cold start). */
  core: () => Promise<Core>;
  /** The caller's address, from the node socket or the API Gateway event. */
  clientIp?: (env: unknown) => string;
  /** Nomad Enterprise's audit log of writes and logins (stage config `schedulerAudit`; locally `KEYHAVEN_SCHEDULER_AUDIT`). */
  audit?: SchedulerAuditOptions;
  /** Origins whose pages may read this service's answers: the web console's (`KEYHAVEN_CONSOLE_ORIGINS`). */
  consoleOrigins?: () => readonly string[];
}

/** `GET /v1/agent/health`: answered before the core is built, so it says the process is up even when the table is not. */
const healthRoute = route({
  method: 'GET',
  path: '/v1/agent/health',
  summary: 'Whether the service is up.',
  access: 'anyone',
  returns: '`{"server": {"ok": true, "message": "ok"}}`.',
  handler: async () => ({ json: { server: { ok: true, message: 'ok' } } }),
});

/** Every route of the service, in the order they are matched: the one source of the app and its OpenAPI document. */
export const schedulerRoutes: readonly SchedulerRoute[] = [
  healthRoute,
  ...tokenRoutes,
  ...policyRoutes,
  ...roleRoutes,
  ...authMethodRoutes,
  ...bindingRuleRoutes,
  ...loginRoutes,
  ...eventRoutes,
  openApiRoute(() => schedulerRoutes),
];

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

  if (options.consoleOrigins) app.use('*', consoleCors(options.consoleOrigins));
  // One canonical path, before anything routes, forwards or audits (`lib/request-path.ts`): `//`, `%2F`, a
  // backslash, `.`/`..` and a trailing `/` are refused with 400 naming the problem, so the path a row matched is the
  // path as sent, and write forwarding never sees `//host`.
  app.use('*', async (c, next) => {
    const sent = sentPath(c.env, c.req.url);
    const canonical = canonicalPath(sent);
    if (canonical.problem !== undefined) return c.text(canonical.problem, 400);
    if (canonical.encoded !== sent) return c.text('a trailing "/" in the URL path is not allowed', 400);
    await next();
  });
  mountRoutes(app, [healthRoute]);
  // Before anything reads the body: a declared length over the limit is refused without reading a byte, and a
  // chunked body is cut off as soon as it passes the limit, instead of being buffered whole.
  app.use(
    '*',
    // The unread rest of the body would be taken for the next request on a kept-alive connection (Node resets it
    // instead): the 413 closes the connection, and a pooling client opens a new one for its next request.
    bodyLimit({
      maxSize: maxBodyBytes,
      onError: (c) => c.text(`Request body too large: larger than ${maxBodyBytes} bytes`, 413, { Connection: 'close' }),
    }),
  );
  app.use('/v1/*', forwardWrites(options));
  app.use('/v1/*', async (c, next) => {
    c.set('scheduler', await getScheduler());
    await next();
  });
  if (options.audit) app.use('/v1/*', schedulerAudit(options.audit, options.clientIp ?? (() => '')));
  mountRoutes(app, schedulerRoutes.filter((entry) => entry !== healthRoute));

  app.notFound((c) => c.text(`Invalid URL path: ${c.req.path}`, 404));
  // What escapes the routes' own error mapping (the middleware: regions, audit, building the core).
  app.onError((error, c) => errorResponse(error, c));
  return app;
}
