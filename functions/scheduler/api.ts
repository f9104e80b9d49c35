import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { handle, type LambdaEvent } from 'hono/aws-lambda';
import { refusal, refusesOverHttp } from '../refuse-first-tokens.ts';
import { schedulerApp } from './app.ts';

/**
 * The scheduler service (everything but the event stream, which needs a response stream). Blocking queries
 * answer within 25 s, before the HTTP API's 30 s integration timeout; clients then ask again with the index.
 */
const http = handle(schedulerApp({ maxQueryWaitSeconds: 25 }));

/** `POST /v1/acl/bootstrap` is refused when the management token was made at deploy time (see functions/secrets/app.ts). */
export const handler = async (event: APIGatewayProxyEventV2, context?: Context) => {
  const { method, path } = event.requestContext.http;
  const refusedFor = refusesOverHttp(path, method, /^\/v1\/acl\/bootstrap\/?$/);
  if (refusedFor) return refusal('acl/bootstrap', refusedFor, 'text');
  return http(event as unknown as LambdaEvent, context);
};
