import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { cameThroughCloudFront } from '../scheduler/origin-check.ts';

/**
 * The secrets service's origin check, as the scheduler's (`functions/scheduler/origin-check.ts`): with
 * `KEYHAVEN_ORIGIN_SECRET` set (every deployed stage), a request without the header the secrets distribution adds
 * (`X-Keyhaven-Origin`), i.e. one sent to the HTTP API's own execute-api URL, is refused with 403 in Vault's error form
 * before the service sees it, and nothing is logged. A request that passes has the header removed.
 */
export function refuseDirectSecretsRequest(
  event: APIGatewayProxyEventV2,
  secret = process.env.KEYHAVEN_ORIGIN_SECRET,
): APIGatewayProxyStructuredResultV2 | undefined {
  if (cameThroughCloudFront(event, secret)) return undefined;
  return {
    statusCode: 403,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      errors: ['permission denied: this API answers only through its CloudFront distribution ({base_url})'],
    }),
  };
}
