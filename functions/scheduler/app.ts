import { clientIpFrom, trustedProxiesFromEnvironment } from '@keyhaven/core/lib/client-ip.ts';
import { coreFromEnvironment } from '@keyhaven/core/runtime.ts';
import { schedulerAuditFromEnvironment } from '@keyhaven/core/scheduler/audit.ts';
import { consoleOriginsFromEnvironment } from '@keyhaven/core/scheduler/http/console-cors.ts';
import { createSchedulerApp } from '@keyhaven/core/scheduler/scheduler-app.ts';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';

/**
 * The scheduler app as a Lambda builds it. The scheduler uses no secrets backends. Regions come from the
 * environment: `KEYHAVEN_REGION`, `KEYHAVEN_AUTHORITATIVE_REGION`, `KEYHAVEN_AUTHORITATIVE_URL`.
 */
export function schedulerApp(extra: { streamLimitMs?: number; maxQueryWaitSeconds?: number } = {}) {
  const env = process.env;
  const audit = schedulerAuditFromEnvironment(env);
  const trustedProxies = trustedProxiesFromEnvironment(env);
  const consoleOrigins = consoleOriginsFromEnvironment(env);
  return createSchedulerApp({
    consoleOrigins: () => consoleOrigins,
    core: coreFromEnvironment([]),
    clientIp: (lambdaEnv) => clientIpOf((lambdaEnv as { event?: APIGatewayProxyEventV2 }).event, trustedProxies),
    ...(env.KEYHAVEN_REGION ? { region: env.KEYHAVEN_REGION } : {}),
    ...(env.KEYHAVEN_AUTHORITATIVE_REGION ? { authoritativeRegion: env.KEYHAVEN_AUTHORITATIVE_REGION } : {}),
    ...(env.KEYHAVEN_AUTHORITATIVE_URL ? { authoritativeUrl: env.KEYHAVEN_AUTHORITATIVE_URL } : {}),
    ...(audit ? { audit } : {}),
    ...extra,
  });
}

/**
 * Behind the scheduler's CloudFront distribution the connection comes from a CloudFront edge (`sourceIp`), and
 * CloudFront appends the viewer's address to `X-Forwarded-For`. But the API URL can also be called directly, with
 * any `X-Forwarded-For`: the header is believed only when `sourceIp` is a proxy the operator trusts
 * (`KEYHAVEN_TRUSTED_PROXIES`, e.g. CloudFront's origin-facing ranges), by the one rule both services use
 * (`lib/client-ip.ts`); otherwise the caller is `sourceIp`.
 */
export function clientIpOf(event: APIGatewayProxyEventV2 | undefined, trustedProxies: readonly string[] = trustedProxiesFromEnvironment(process.env)): string {
  return clientIpFrom(event?.requestContext?.http?.sourceIp ?? '', event?.headers?.['x-forwarded-for'], trustedProxies);
}
