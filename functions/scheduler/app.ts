import { coreFromEnvironment } from '@keyhaven/core/runtime.ts';
import { schedulerAuditFromEnvironment } from '@keyhaven/core/scheduler/audit.ts';
import { createSchedulerApp } from '@keyhaven/core/scheduler/scheduler-app.ts';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';

/**
 * The scheduler app as a Lambda builds it. The scheduler uses no secrets backends. Regions come from the
 * environment: `KEYHAVEN_REGION`, `KEYHAVEN_AUTHORITATIVE_REGION`, `KEYHAVEN_AUTHORITATIVE_URL`.
 */
export function schedulerApp(extra: { streamLimitMs?: number; maxQueryWaitSeconds?: number } = {}) {
  const env = process.env;
  const audit = schedulerAuditFromEnvironment(env);
  return createSchedulerApp({
    core: coreFromEnvironment([]),
    clientIp: (lambdaEnv) => clientIpOf((lambdaEnv as { event?: APIGatewayProxyEventV2 }).event),
    ...(env.KEYHAVEN_REGION ? { region: env.KEYHAVEN_REGION } : {}),
    ...(env.KEYHAVEN_AUTHORITATIVE_REGION ? { authoritativeRegion: env.KEYHAVEN_AUTHORITATIVE_REGION } : {}),
    ...(env.KEYHAVEN_AUTHORITATIVE_URL ? { authoritativeUrl: env.KEYHAVEN_AUTHORITATIVE_URL } : {}),
    ...(audit ? { audit } : {}),
    ...extra,
  });
}

/**
 * Behind the scheduler's CloudFront distribution the connection comes from a CloudFront edge (`sourceIp`).
 * CloudFront appends the viewer's address to `X-Forwarded-For` and API Gateway appends the edge's, so the
 * caller is the last entry before the edge; earlier entries are whatever the client sent and can be forged.
 */
export function clientIpOf(event: APIGatewayProxyEventV2 | undefined): string {
  const sourceIp = event?.requestContext?.http?.sourceIp ?? '';
  const hops = (event?.headers?.['x-forwarded-for'] ?? '').split(',').map((hop) => hop.trim()).filter(Boolean);
  if (hops.at(-1) === sourceIp) hops.pop();
  return hops.at(-1) ?? sourceIp;
}
