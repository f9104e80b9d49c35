import { canonicalMethod } from '@keyhaven/core/front/exchange.ts';

/**
 * On a stage whose first tokens are made at deploy time (`functions/deploy/first-tokens.ts`), the stack sets
 * `KEYHAVEN_FIRST_TOKENS_SECRET` (the secret's ARN) on the system and scheduler API functions, unless the stage config
 * opts in to HTTP (`firstTokens: 'http'`). Then the HTTP call that would make a first token (`PUT`/`POST
 * /v1/sys/init`, `POST`/`PUT /v1/acl/bootstrap`) is refused with 403, naming where the token is. Reading the status
 * (`GET /v1/sys/init`) stays open. `npm start` does not use these functions: locally nothing changes.
 */
export function refusesOverHttp(path: string, method: string, route: RegExp, env = process.env): string | undefined {
  const secret = env.KEYHAVEN_FIRST_TOKENS_SECRET;
  // The method as the front will act on it (`put` is `PUT` there), normalised by the same function the adapters use.
  const canonical = canonicalMethod(method);
  if (!secret || (canonical !== 'PUT' && canonical !== 'POST') || !route.test(path)) return undefined;
  return secret;
}

export function refusal(what: string, secret: string, format: 'json' | 'text') {
  const message = `${what} is disabled over HTTP on this stage: the first token was made at deploy time and is in Secrets Manager secret ${secret}`;
  return {
    statusCode: 403,
    headers: { 'content-type': format === 'json' ? 'application/json' : 'text/plain; charset=utf-8' },
    body: format === 'json' ? JSON.stringify({ errors: [message] }) : message,
    isBase64Encoded: false,
  };
}
