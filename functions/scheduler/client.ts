import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { lambdaHandler } from '@keyhaven/core/http/lambda-handler.ts';
import { canonicalPath } from '@keyhaven/core/lib/request-path.ts';
import { schedulerApp } from './app.ts';

/**
 * The client protocol (`docs/client-protocol.md`: register, heartbeat, node events, the allocation map, services) on a function
 * of its own behind its Function URL (`SchedulerClientUrl`), where the agents send their heartbeats: 128 MB, no API
 * Gateway, no CloudFront, so a beat costs one invocation and one write unit (docs/performance.md, "A cluster's
 * bill"). Every path outside `/v1/client/` is refused here (404): the ACL routes, introduction tokens included, are
 * at `{scheduler_url}`.
 * A node authenticates itself by its SecretID or identity, as through the API; the caller's address is the
 * connection's (`sourceIp`: nothing in front of the URL adds `X-Forwarded-For` this function would believe).
 */
const http = lambdaHandler(schedulerApp({ maxQueryWaitSeconds: 25, buffersAnswers: true }));

/** The client protocol's paths, as the app routes them (after canonicalisation: `%2F`, `..` and `//` decided once). */
const clientPath = /^\/v1\/client\/./;

export const handler = async (event: APIGatewayProxyEventV2): Promise<APIGatewayProxyStructuredResultV2> => {
  const path = canonicalPath(event.rawPath ?? event.requestContext.http.path).decoded ?? '';
  if (!clientPath.test(path))
    return {
      statusCode: 404,
      headers: { 'content-type': 'text/plain; charset=utf-8' },
      body: 'Not found: this URL serves only the client protocol (/v1/client/…); the rest of the API is at {scheduler_url}',
    };
  return http(event);
};
