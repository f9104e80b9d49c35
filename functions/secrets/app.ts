import { backendsOf, coreFromEnvironment, createSecretsApp, type SecretsFamily } from '@keyhaven/core';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { handle } from 'hono/aws-lambda';

/** The Lambda handler for one or more endpoint families: the same app `npm start` serves, with fewer backends. */
export function secretsHandler(families: SecretsFamily[]) {
  const app = createSecretsApp({
    core: coreFromEnvironment(backendsOf(families)),
    clientIp: (env) => (env as { event?: APIGatewayProxyEventV2 }).event?.requestContext?.http?.sourceIp ?? '',
  });
  return handle(app);
}
