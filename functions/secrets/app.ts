import type { EngineRequest } from '@keyhaven/core/composition/secrets-core.ts';
import { answerEngineRequest } from '@keyhaven/core/entry-points/engine-requests.ts';
import { secretsRegionsFromEnvironment } from '@keyhaven/core/http/forward-writes.ts';
import { secretsFront } from '@keyhaven/core/http/secrets-front.ts';
import { secretsLambda } from '@keyhaven/core/http/secrets-lambda.ts';
import { canonicalPath } from '@keyhaven/core/lib/request-path.ts';
import { coreFromEnvironment } from '@keyhaven/core/entry-points/secrets-core-from-environment.ts';
import type { Backend } from '@keyhaven/core/secrets/framework/backend.ts';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { refusal, refusesOverHttp } from '../refuse-first-tokens.ts';
import { refuseDirectSecretsRequest } from './origin-check.ts';

/**
 * A direct invocation by the system function (never API Gateway: only the system function may invoke this one),
 * asking this family's engine to revoke leases or finish a disable now. See `askThroughLambda` in entry-points/secrets-core-from-environment.ts.
 */
export interface EngineEvent {
  keyhaven: EngineRequest;
}

/**
 * The Lambda handler for one endpoint family: the same service `npm start` serves (`secretsFront`), with only this
 * family's backends, read from API Gateway's event by `secretsLambda`. The entry (`family.ts`) loads them from the family list,
 * each family in a chunk of its own, so a function loads no other family's code.
 */
export function secretsHandler(backends: Backend[]) {
  const core = coreFromEnvironment(backends);
  const serve = secretsLambda(secretsFront({ core, regions: secretsRegionsFromEnvironment(process.env) }));
  return async (event: APIGatewayProxyEventV2 | EngineEvent) => {
    const http = (event as Partial<APIGatewayProxyEventV2>).requestContext?.http;
    // Only through CloudFront: the API's own URL answers 403 (functions/secrets/origin-check.ts). An engine request
    // is a direct invocation by the system function, not an HTTP request, and is not checked.
    const direct = http && refuseDirectSecretsRequest(event as APIGatewayProxyEventV2);
    if (direct) return direct;
    // The path as the front will route it (`%69nit` is `init`); a path the front refuses is refused there.
    const sent = (event as Partial<APIGatewayProxyEventV2>).rawPath ?? http?.path ?? '';
    const refusedFor = http && refusesOverHttp(canonicalPath(sent).decoded ?? '', http.method, /^\/v1\/sys\/init\/?$/);
    if (refusedFor) return refusal('sys/init', refusedFor, 'json');
    if (isEngineEvent(event)) {
      // A failure is thrown: the caller sees the function's error and answers 502, the leases stay queued.
      await answerEngineRequest(await core(), event.keyhaven);
      return { done: event.keyhaven };
    }
    return serve(event);
  };
}

const isEngineEvent = (event: APIGatewayProxyEventV2 | EngineEvent): event is EngineEvent =>
  typeof (event as Partial<EngineEvent>).keyhaven === 'object';
