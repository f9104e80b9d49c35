import type { DomainError } from '../../lib/errors.ts';
import type { RequestHeaders } from '../../lib/request-headers.ts';

/** A request as the web adapter hands it to the pipeline. */
export interface RawRequest {
  method: string;
  /** URL path, e.g. `/v1/ldap/static-role/app`, already percent-decoded. */
  path: string;
  query: Record<string, string>;
  headers: RequestHeaders;
  body: string;
  clientIp: string;
  /** A problem the HTTP adapter found before the pipeline (oversized body, malformed URL): answered as is. */
  refusal?: DomainError;
}

/** The pipeline's answer: a status and a JSON body (none for 204). */
export interface RawResponse {
  status: number;
  body?: unknown;
}
