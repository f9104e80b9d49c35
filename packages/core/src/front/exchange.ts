import type { RequestHeaders } from '../lib/request-headers.ts';

/**
 * A request as every adapter (the node server, API Gateway's events, the streaming Lambda, the in-process web app)
 * hands it to a service's front: no web Request, no framework between.
 */
export interface HttpRequest {
  /** Upper case: every adapter normalises the method it was sent with `canonicalMethod`, once. */
  method: string;
  /** The URL path as sent, still percent-encoded. */
  path: string;
  /** The query string with its `?`, or ''. */
  search: string;
  headers: RequestHeaders;
  /** The body as text; undefined when it is larger than the services take (`maxBodyBytes`). */
  body: string | undefined;
  clientIp: string;
  /** Aborted when the client goes away or the process shuts down: a blocking query answers, a stream ends. */
  signal?: AbortSignal;
}

/**
 * The one spelling of a request's method (HTTP methods are case-sensitive, but Vault and Nomad match them upper-cased
 * and API Gateway passes what it was sent): whatever decides on a method before the front (the Lambda functions'
 * first-token refusal) uses this too, so it sees the method the front will act on.
 */
export const canonicalMethod = (sent: string): string => sent.toUpperCase();

/** What a front answers: a status, headers and a text body (none for 204), or a stream (the event stream). */
export interface HttpReply {
  status: number;
  headers: Record<string, string>;
  body: string | ReadableStream<Uint8Array> | undefined;
}

/** A service as the adapters see it: a request in, a reply out; it never throws. */
export type HttpFront = (request: HttpRequest) => Promise<HttpReply>;

export const jsonReply = (status: number, body: unknown, headers: Record<string, string> = {}): HttpReply => ({
  status,
  headers: { ...headers, 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

export const textReply = (status: number, text: string, headers: Record<string, string> = {}): HttpReply => ({
  status,
  headers: { ...headers, 'content-type': 'text/plain; charset=UTF-8' },
  body: text,
});

/**
 * How a service words a refusal on the wire (the secrets service: `{"errors": [message]}`; the scheduler: the
 * message as plain text, Nomad's): what the shared parts (forwarding, the adapters) answer with.
 */
export type Refusal = (status: number, message: string) => HttpReply;

/**
 * The methods whose only input is the path and the query (issue 23 §4): reads (GET, `?list=true`, HEAD, LIST) and,
 * as in Vault, DELETE. No adapter hands their body on, so the parameter constraints checked on the query are all
 * such a request's input.
 */
export const queryOnlyMethods: ReadonlySet<string> = new Set(['GET', 'HEAD', 'LIST', 'DELETE']);
