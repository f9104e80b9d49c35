import type { APIGatewayProxyEventV2 } from 'aws-lambda';

/**
 * The fields of an API Gateway HTTP API (payload 2.0) event that the Lambda adapters read, and no more: the path and
 * query exactly as sent (a spelling reaches the adapter as the attacker wrote it), the given headers and raw body, a
 * caller at 203.0.113.9. (test/deploy/lambda-events.ts's `httpApiEvent` is the full event a deployment receives.)
 */
export function gatewayEvent(
  method: string,
  url: string,
  headers: Record<string, string>,
  options: { body?: string; userAgent?: string; domainName?: string } = {},
): APIGatewayProxyEventV2 {
  const [rawPath = '/', rawQueryString = ''] = url.split('?');
  return {
    version: '2.0',
    rawPath,
    rawQueryString,
    headers,
    requestContext: {
      http: {
        method,
        path: rawPath,
        protocol: 'HTTP/1.1',
        sourceIp: '203.0.113.9',
        userAgent: options.userAgent ?? 'attack',
      },
      ...(options.domainName === undefined ? {} : { domainName: options.domainName }),
    },
    ...(options.body === undefined ? {} : { body: options.body }),
    isBase64Encoded: false,
  } as unknown as APIGatewayProxyEventV2;
}

/**
 * A request through a Lambda adapter: the token in `tokenHeader`, a JSON body, the answer's status and text. `host`
 * (the scheduler's) is sent as the Host header and the event's domain name.
 */
export function viaLambda(
  invoke: (event: APIGatewayProxyEventV2) => Promise<{ statusCode?: number; body?: unknown }>,
  tokenHeader: string,
  options: { userAgent?: string; host?: string } = {},
) {
  return async (
    method: string,
    url: string,
    token: string,
    body?: unknown,
  ): Promise<{ status: number; text: string }> => {
    const headers = {
      [tokenHeader]: token,
      'content-type': 'application/json',
      ...(options.host === undefined ? {} : { host: options.host }),
    };
    const result = await invoke(
      gatewayEvent(method, url, headers, {
        body: body === undefined ? undefined : JSON.stringify(body),
        userAgent: options.userAgent,
        domainName: options.host,
      }),
    );
    return { status: result.statusCode ?? 0, text: String(result.body ?? '') };
  };
}
