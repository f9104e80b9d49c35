import type { RequestHeaders } from '../lib/request-headers.ts';

/** A request as an adapter (the node server's Hono app, the Lambda handler) hands it to the secrets service. */
export interface HttpRequest {
  method: string;
  /** The URL path as sent, still percent-encoded. */
  path: string;
  /** The query string with its `?`, or ''. */
  search: string;
  headers: RequestHeaders;
  /** The body as text; undefined when it is larger than the service takes (`maxBodyBytes`). */
  body: string | undefined;
  clientIp: string;
}

/** What the adapter sends back: a status, headers and a text body (none for 204). */
export interface HttpReply {
  status: number;
  headers: Record<string, string>;
  body: string | undefined;
}

export const jsonReply = (status: number, body: unknown): HttpReply => ({
  status,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

/**
 * The methods whose only input is the path and the query (issue 23 §4): reads (GET, `?list=true`, HEAD, LIST) and,
 * as in Vault, DELETE. No adapter hands their body on, so the parameter constraints checked on the query are all
 * such a request's input.
 */
export const queryOnlyMethods: ReadonlySet<string> = new Set(['GET', 'HEAD', 'LIST', 'DELETE']);
