import type { IncomingMessage, ServerResponse } from 'node:http';
import { maxBodyBytes } from '../../front/body-limit.ts';
import { contentTypeRefusal, crossOriginRefusal } from '../../front/cross-origin.ts';
import { type HttpFront, type HttpReply, type HttpRequest, textReply } from '../../front/exchange.ts';
import { nodeListener } from '../../http/node-listener.ts';
import { type WebApp, webApp } from '../../http/web-app.ts';
import { trustedProxiesFromEnvironment } from '../../lib/client-ip.ts';
import { segmentedPath } from '../../lib/request-path.ts';
import { sharedUntilRejected } from '../../lib/shared-until-rejected.ts';
import { authMethodRoutes } from '../acl/auth-methods/routes.ts';
import { bindingRuleRoutes } from '../acl/binding-rules/routes.ts';
import { loginRoutes } from '../acl/login-routes.ts';
import { policyRoutes } from '../acl/policies/routes.ts';
import { roleRoutes } from '../acl/roles/routes.ts';
import { tokenRoutes } from '../acl/tokens/routes.ts';
import { allocationRoutes } from '../cluster/allocations/routes.ts';
import { deploymentRoutes } from '../cluster/deployments/routes.ts';
import { evaluationRoutes } from '../cluster/evaluations/routes.ts';
import { jobActionRoutes } from '../cluster/job-actions/routes.ts';
import { jobParseRoutes } from '../cluster/job-parse/routes.ts';
import { jobRoutes } from '../cluster/jobs/routes.ts';
import { namespaceRoutes } from '../cluster/namespaces/routes.ts';
import { nodePoolRoutes } from '../cluster/node-pools/routes.ts';
import { schedulerConfigRoutes } from '../cluster/scheduler-config/routes.ts';
import { type SchedulerAuditOptions, schedulerAudit } from '../audit.ts';
import { clientRoutes, clientServiceRoutes } from '../client/routes.ts';
import { nodeRoutes } from '../cluster/nodes/routes.ts';
import { serviceRoutes } from '../cluster/services/routes.ts';
import { systemRoutes } from '../cluster/system/routes.ts';
import { eventRoutes } from '../events/stream.ts';
import { consoleCors } from '../http/console-cors.ts';
import { errorReply } from '../http/errors.ts';
import { openApiRoute } from '../http/openapi.ts';
import { forwardWrites, type RegionOptions } from '../http/regions.ts';
import { answerRoute, exchangeOf, matchRoute, route, type SchedulerRoute, unmatched } from '../http/route.ts';
import type { SchedulerBase } from './secret-hashes.ts';
import { type SchedulerOptions, schedulerFor } from './scheduler-core.ts';

/** The largest request body the service reads (`front/body-limit.ts`, the secrets service's); a larger one is refused with 413 unread. */
export { maxBodyBytes } from '../../front/body-limit.ts';

export interface SchedulerAppOptions extends SchedulerOptions, RegionOptions {
  /** The core, created once per process on first use (a Lambda's cold start). */
  core: () => Promise<SchedulerBase>;
  /** Nomad Enterprise's audit log of writes and logins (stage config `schedulerAudit`; locally `KEYHAVEN_SCHEDULER_AUDIT`). */
  audit?: SchedulerAuditOptions;
  /** Origins whose pages may read this service's answers: the web console's (`KEYHAVEN_CONSOLE_ORIGINS`). */
  consoleOrigins?: () => readonly string[];
  /**
   * This front answers through an adapter that buffers every answer (the API function behind API Gateway): the event
   * stream, which never ends by itself, would be written into a buffer until the function's time limit, so it is
   * refused (400) here, matched on the canonical path however it was spelled (`/v1/event/%73tream`).
   */
  buffersAnswers?: boolean;
}

/** The refusal of the event stream by a front that buffers its answers. */
export const streamNotServedHere =
  'the event stream is not served by this endpoint: connect to /v1/event/stream as spelled';

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
  ...nodePoolRoutes,
  ...namespaceRoutes,
  ...clientRoutes,
  ...clientServiceRoutes,
  ...nodeRoutes,
  ...jobRoutes,
  ...jobActionRoutes,
  ...jobParseRoutes,
  ...evaluationRoutes,
  ...deploymentRoutes,
  ...serviceRoutes,
  ...allocationRoutes,
  ...systemRoutes,
  ...schedulerConfigRoutes,
  ...eventRoutes,
  openApiRoute(() => schedulerRoutes),
];

/**
 * The scheduler service (Nomad conventions: capitalised JSON, plain-text errors, `CreateIndex`/`ModifyIndex`,
 * blocking queries): ACL tokens, policies, roles, auth methods, binding rules, login and the event stream, as a
 * front (`front/exchange.ts`) that every adapter serves: the node listener (`schedulerNodeListener`, `npm start`),
 * API Gateway and the streaming Lambda (`http/lambda-handler.ts`, functions/scheduler/) and, in process, the web app
 * (`createSchedulerApp`). In order: the console's CORS preflight; no write from another origin
 * (`front/cross-origin.ts`); one canonical path (`lib/request-path.ts` `segmentedPath`: `//`, a backslash, `.`/`..`
 * and a trailing `/` are 400 naming the problem, so the path a row matches is the path as sent, and write forwarding
 * never sees `//host`; a `%2F` stays inside its segment, a name holding a `/`, which only a row's `slashParams` take —
 * a job ID, as Nomad's — and is 400 anywhere else); the health check (before the core is built); the body limit
 * (413, the connection closed: the unread rest would be taken for the next request on a kept-alive connection);
 * write forwarding in a replica region; the audit log around the route table (`http/route.ts`).
 */
export function schedulerFront(options: SchedulerAppOptions): HttpFront {
  const getScheduler = sharedUntilRejected(() => options.core().then((core) => schedulerFor(core, options)));
  const cors = options.consoleOrigins ? consoleCors(options.consoleOrigins) : undefined;
  const forward = forwardWrites(options);
  const audit = options.audit ? schedulerAudit(options.audit) : undefined;
  const routes = schedulerRoutes.filter((entry) => entry !== healthRoute);

  const answer = async (request: HttpRequest): Promise<HttpReply> => {
    const preflight = cors?.preflight(request);
    if (preflight) return preflight;
    // A browser on another origin changes nothing (`front/cross-origin.ts`): the console's origins may.
    const crossOrigin = crossOriginRefusal(request, options.consoleOrigins?.() ?? []);
    if (crossOrigin) return textReply(crossOrigin.status, crossOrigin.message);
    const mediaType = contentTypeRefusal(request);
    if (mediaType) return textReply(mediaType.status, mediaType.message);
    const canonical = segmentedPath(request.path);
    if (canonical.problem !== undefined) return textReply(400, canonical.problem);
    if (canonical.encoded !== request.path) return textReply(400, 'a trailing "/" in the URL path is not allowed');
    const { decoded: path, segments } = canonical;
    if (matchRoute([healthRoute], request.method, segments))
      return answerRoute([healthRoute], exchangeOf(request, path, undefined, segments));
    if (request.body === undefined)
      return textReply(413, `Request body too large: larger than ${maxBodyBytes} bytes`, { Connection: 'close' });
    if (segments[0] !== 'v1') return unmatched({ path, segments });
    if (options.buffersAnswers && matchRoute(eventRoutes, request.method, segments))
      return textReply(400, streamNotServedHere);
    const forwarded = await forward(request, canonical.encoded);
    if (forwarded) return forwarded;
    const scheduler = await getScheduler();
    // A process that has not seen the ACL bootstrap reads its epoch first (another process may have made it since).
    await scheduler.state.store.settleEpoch('bootstrap');
    const exchange = exchangeOf(request, path, scheduler, segments);
    return audit ? audit(exchange, () => answerRoute(routes, exchange)) : answerRoute(routes, exchange);
  };
  return async (request) => {
    let reply: HttpReply;
    try {
      reply = await answer(request);
    } catch (error) {
      // What escapes the routes' own error mapping: forwarding, the audit log, building the core.
      reply = errorReply(error, request.path);
    }
    return cors ? cors.answer(request, reply) : reply;
  };
}

/** The scheduler in process, as web requests (tests and benchmarks): the shared web adapter over `schedulerFront`. */
export function createSchedulerApp(options: SchedulerAppOptions & { clientIp?: (env?: unknown) => string }): WebApp {
  return webApp(schedulerFront(options), options.clientIp);
}

/**
 * The scheduler as a `node:http` request listener (`npm start`): the shared node adapter over `schedulerFront`, its
 * refusals plain text. `shutdown` aborts the reads in flight when the process stops: a blocking query answers at once.
 */
export function schedulerNodeListener(
  options: SchedulerAppOptions & { shutdown?: AbortSignal; trustedProxies?: readonly string[] },
): (request: IncomingMessage, response: ServerResponse) => void {
  return nodeListener(schedulerFront(options), {
    refuse: textReply,
    trustedProxies: options.trustedProxies ?? trustedProxiesFromEnvironment(process.env),
    shutdown: options.shutdown,
  });
}
