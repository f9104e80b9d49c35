import { coreFromEnvironment } from '@keyhaven/core/runtime.ts';
import { createSchedulerApp } from '@keyhaven/core/scheduler/scheduler-app.ts';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';

/**
 * The scheduler app as a Lambda builds it. The scheduler uses no secrets backends. Regions come from the
 * environment: `KEYHAVEN_REGION`, `KEYHAVEN_AUTHORITATIVE_REGION`, `KEYHAVEN_AUTHORITATIVE_URL`.
 */
export function schedulerApp(extra: { streamLimitMs?: number } = {}) {
  const env = process.env;
  return createSchedulerApp({
    core: coreFromEnvironment([]),
    clientIp: (lambdaEnv) => (lambdaEnv as { event?: APIGatewayProxyEventV2 }).event?.requestContext?.http?.sourceIp ?? '',
    ...(env.KEYHAVEN_REGION ? { region: env.KEYHAVEN_REGION } : {}),
    ...(env.KEYHAVEN_AUTHORITATIVE_REGION ? { authoritativeRegion: env.KEYHAVEN_AUTHORITATIVE_REGION } : {}),
    ...(env.KEYHAVEN_AUTHORITATIVE_URL ? { authoritativeUrl: env.KEYHAVEN_AUTHORITATIVE_URL } : {}),
    ...extra,
  });
}
