import type { Backend } from '@keyhaven/core/http/backend.ts';
import { createSecretsApp } from '@keyhaven/core/http/secrets-app.ts';
import { coreFromEnvironment } from '@keyhaven/core/runtime.ts';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { handle } from 'hono/aws-lambda';

/**
 * The Lambda handler for one endpoint family: the same app `npm start` serves, with only this family's
 * backends. Each entry imports its backends by path (not through the core's index) so its bundle holds
 * no other family's code.
 */
export function secretsHandler(backends: Backend[]) {
  const app = createSecretsApp({
    core: coreFromEnvironment(backends),
    clientIp: (env) => (env as { event?: APIGatewayProxyEventV2 }).event?.requestContext?.http?.sourceIp ?? '',
  });
  return handle(app);
}
