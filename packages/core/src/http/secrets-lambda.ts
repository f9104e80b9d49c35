import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { lowerCaseHeaders } from '../lib/request-headers.ts';
import { maxBodyBytes } from '../front/body-limit.ts';
import { clientIpFrom, trustedProxiesFromEnvironment } from '../lib/client-ip.ts';
import type { SecretsFront } from './secrets-front.ts';

/**
 * The secrets service on API Gateway's HTTP API (payload version 2.0): the event is read straight into the
 * adapter-neutral request and the reply written straight into the result, with no web Request or Response between
 * (they cost more CPU than the rest of a batch-token login; see test/bench/jwt-login.bench.ts). The node server's
 * Hono app (`secrets-app.ts`) hands `secretsFront` the same request.
 */
export function secretsLambda(front: SecretsFront, trustedProxies: readonly string[] = trustedProxiesFromEnvironment(process.env)) {
  return async (event: APIGatewayProxyEventV2): Promise<APIGatewayProxyStructuredResultV2> => {
    const body = event.body === undefined ? '' : event.isBase64Encoded ? Buffer.from(event.body, 'base64').toString('utf8') : event.body;
    const reply = await front({
      method: event.requestContext.http.method,
      path: event.rawPath,
      search: event.rawQueryString ? `?${event.rawQueryString}` : '',
      headers: lowerCaseHeaders(event.headers),
      body: Buffer.byteLength(body) > maxBodyBytes ? undefined : body,
      // API Gateway's address of the caller; `X-Forwarded-For` only from a proxy the operator trusts (`client-ip.ts`).
      clientIp: clientIpFrom(
        event.requestContext.http.sourceIp ?? '',
        event.headers?.['x-forwarded-for'] ?? event.headers?.['X-Forwarded-For'],
        trustedProxies,
      ),
    });
    return {
      statusCode: reply.status,
      headers: reply.headers,
      body: reply.body ?? '',
      isBase64Encoded: false,
    };
  };
}
