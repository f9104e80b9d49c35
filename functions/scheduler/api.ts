import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { lambdaHandler } from '@keyhaven/core/http/lambda-handler.ts';
import { canonicalPath } from '@keyhaven/core/lib/request-path.ts';
import { refusal, refusesOverHttp } from '../refuse-first-tokens.ts';
import { schedulerApp } from './app.ts';
import { refuseDirectRequest } from './origin-check.ts';

/**
 * The scheduler service (everything but the event stream, which needs a response stream: refused here however its
 * path is spelled, `buffersAnswers`). Blocking queries answer within 25 s, before the HTTP API's 30 s integration
 * timeout; clients then ask again with the index.
 */
const http = lambdaHandler(schedulerApp({ maxQueryWaitSeconds: 25, buffersAnswers: true }));

/** `POST /v1/acl/bootstrap` is refused when the management token was made at deploy time (see functions/secrets/app.ts). */
export const handler = async (event: APIGatewayProxyEventV2) => {
  // Only through CloudFront: the API's own URL answers 403 (functions/scheduler/origin-check.ts).
  const direct = refuseDirectRequest(event);
  if (direct) return direct;
  const { method } = event.requestContext.http;
  // The path as the app will route it (`%62ootstrap` is `bootstrap`); a path the app refuses is refused there.
  const refusedFor = refusesOverHttp(
    canonicalPath(event.rawPath ?? event.requestContext.http.path).decoded ?? '',
    method,
    /^\/v1\/acl\/bootstrap\/?$/,
  );
  if (refusedFor) return refusal('acl/bootstrap', refusedFor, 'text');
  return http(event);
};
