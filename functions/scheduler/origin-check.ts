import { timingSafeEqual } from 'node:crypto';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';

/**
 * The header the scheduler's CloudFront distribution adds to every request for the HTTP API (an origin custom
 * header, which replaces one of that name a viewer sends). Its value is the stage's origin secret
 * (`SchedulerOriginSecret` in Secrets Manager, resolved at deploy into the origin and `KEYHAVEN_ORIGIN_SECRET`).
 */
export const originSecretHeader = 'x-keyhaven-origin';

/**
 * With `KEYHAVEN_ORIGIN_SECRET` set (every deployed stage), a request that did not come through CloudFront, i.e.
 * sent to the API's own execute-api URL, is refused with 403 before the app sees it: whatever the distribution
 * enforces (WAF, TLS policy, security headers, logs) cannot be skipped. Nothing is logged: such requests are expected
 * noise, not an error. A request that passes has the header removed, so nothing downstream sees the secret.
 */
export function refuseDirectRequest(
  event: APIGatewayProxyEventV2,
  secret = process.env.KEYHAVEN_ORIGIN_SECRET,
): APIGatewayProxyStructuredResultV2 | undefined {
  if (cameThroughCloudFront(event, secret)) return undefined;
  return {
    statusCode: 403,
    headers: { 'content-type': 'text/plain; charset=utf-8' },
    body: 'Permission denied: this API answers only through its CloudFront distribution ({scheduler_url})',
  };
}

/**
 * Whether the request carries the origin secret (always true without one: `npm start` and tests set none). The header
 * is removed from the event either way, so nothing downstream sees the secret. Shared by both services' checks
 * (`functions/secrets/origin-check.ts`).
 */
export function cameThroughCloudFront(event: APIGatewayProxyEventV2, secret: string | undefined): boolean {
  if (!secret) return true;
  const headers = event.headers ?? {};
  const sent = headers[originSecretHeader];
  delete headers[originSecretHeader];
  return sent !== undefined && sameSecret(sent, secret);
}

function sameSecret(sent: string, secret: string): boolean {
  const a = Buffer.from(sent);
  const b = Buffer.from(secret);
  return a.length === b.length && timingSafeEqual(a, b);
}
