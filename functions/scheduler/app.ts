import type { HttpFront } from '@keyhaven/core/front/exchange.ts';
import { eventClientIp } from '@keyhaven/core/http/lambda-handler.ts';
import { trustedProxiesFromEnvironment } from '@keyhaven/core/lib/client-ip.ts';
import { coreBaseFromEnvironment } from '@keyhaven/core/entry-points/shared-core-from-environment.ts';
import { schedulerAuditFromEnvironment } from '@keyhaven/core/scheduler/audit.ts';
import { consoleOriginsFromEnvironment } from '@keyhaven/core/scheduler/http/console-cors.ts';
import { schedulerFront } from '@keyhaven/core/scheduler/composition/scheduler-app.ts';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';

/**
 * The scheduler's front as a Lambda builds it (served by the shared adapters, `http/lambda-handler.ts`, which take
 * the caller's address as `clientIpOf` does). The scheduler uses no secrets backends. Regions come from the
 * environment: `KEYHAVEN_REGION`, `KEYHAVEN_AUTHORITATIVE_REGION`, `KEYHAVEN_AUTHORITATIVE_URL`.
 */
export function schedulerApp(
  extra: { streamLimitMs?: number; maxQueryWaitSeconds?: number; buffersAnswers?: boolean } = {},
): HttpFront {
  const env = process.env;
  const audit = schedulerAuditFromEnvironment(env);
  const consoleOrigins = consoleOriginsFromEnvironment(env);
  return schedulerFront({
    consoleOrigins: () => consoleOrigins,
    core: coreBaseFromEnvironment(),
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
 * (`KEYHAVEN_TRUSTED_PROXIES`, e.g. CloudFront's origin-facing ranges); otherwise the caller is `sourceIp`. The Lambda
 * adapter takes every request's address so (`eventClientIp`).
 */
export function clientIpOf(
  event: APIGatewayProxyEventV2 | undefined,
  trustedProxies: readonly string[] = trustedProxiesFromEnvironment(process.env),
): string {
  return event ? eventClientIp(event, trustedProxies) : '';
}
