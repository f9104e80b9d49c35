import { config } from './config.ts';
import { getSession, type Service } from './session.ts';

/** What a service answered when it refused: its status and its own messages, shown to the person as they are. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly messages: string[],
  ) {
    super(messages.length ? messages.join('; ') : `HTTP ${status}`);
  }
}

export interface CallOptions {
  /** The token to send; default the signed-in one; null sends none. */
  token?: string | null;
  /** Extra headers (e.g. `X-Vault-Wrap-TTL`). */
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

const tokenHeader: Record<Service, string> = { secrets: 'X-Vault-Token', scheduler: 'X-Nomad-Token' };

declare const apiPathBrand: unique symbol;
/** A path under `/v1/` built by `api` alone: every value in it encoded, none of them `.`, `..` or empty. */
export type ApiPath = string & { readonly [apiPathBrand]: true };

/** A value that spans several segments (a kv secret's path, a mount's path): `segments(value)` in `api`. */
export class Segments {
  constructor(readonly value: string) {}
}

/** A slash-separated value put into an API path as its segments, each encoded on its own (`api`). */
export const segments = (value: string): Segments => new Segments(value);

/**
 * The one way the console builds an API path (issue 37 §3): a tagged template whose literal text is the console's
 * own and whose every value (a route parameter, a name from a form, a key from an answer) becomes exactly one
 * percent-encoded segment, so a value cannot add segments (`a/b`), end the path (`#`, `?`) or climb out of it (`..`
 * is refused, as `.` and an empty segment are: the browser would resolve them). A value that spans segments on
 * purpose is given as `segments(value)`: split on `/`, each part encoded and held to the same rules (a trailing `/`,
 * a folder's, is kept). A value the rules refuse throws, and the page shows the error instead of calling.
 */
export function api(literals: TemplateStringsArray, ...values: Array<string | Segments>): ApiPath {
  let path = literals[0] ?? '';
  values.forEach((value, index) => {
    path += value instanceof Segments ? encodedSegments(value.value) : encodedSegment(value);
    path += literals[index + 1] ?? '';
  });
  return path as ApiPath;
}

function encodedSegment(value: string): string {
  if (value === '' || value === '.' || value === '..') throw new Error(`"${value}" cannot be a name in an API path`);
  return encodeURIComponent(value);
}

function encodedSegments(value: string): string {
  const parts = value.split('/');
  const folder = parts.length > 1 && parts[parts.length - 1] === '';
  return (folder ? parts.slice(0, -1) : parts).map(encodedSegment).join('/') + (folder ? '/' : '');
}

/** A path with a query string, each name and value encoded (a list repeats its name: `topic=a&topic=b`). */
export function withQuery(path: ApiPath, query: Record<string, string | number | readonly string[]>): ApiPath {
  const search = new URLSearchParams(
    Object.entries(query).flatMap(
      ([name, value]): Array<[string, string]> =>
        Array.isArray(value) ? value.map((item) => [name, item]) : [[name, String(value)]],
    ),
  ).toString();
  return (search ? `${path}${path.includes('?') ? '&' : '?'}${search}` : path) as ApiPath;
}

export function serviceUrl(service: Service, path: ApiPath): string {
  const base = service === 'secrets' ? config().secretsUrl : config().schedulerUrl;
  return `${base}/v1/${path}`;
}

export function requestHeaders(service: Service, options: CallOptions = {}, hasBody = false): Record<string, string> {
  const headers: Record<string, string> = { ...options.headers };
  const token = options.token === undefined ? getSession(service)?.token : options.token;
  if (token) headers[tokenHeader[service]] = token;
  if (hasBody) headers['Content-Type'] = 'application/json';
  return headers;
}

/**
 * One call to a service's public API. Answers the parsed JSON body (undefined for an empty one); throws `ApiError`
 * with the service's own messages for any status of 400 or more. Lists go as `GET …?list=true`.
 */
export async function call<T = unknown>(
  service: Service,
  method: string,
  path: ApiPath,
  body?: unknown,
  options: CallOptions = {},
): Promise<T> {
  const hasBody = body !== undefined;
  const response = await fetch(serviceUrl(service, path), {
    method,
    headers: requestHeaders(service, options, hasBody),
    ...(hasBody ? { body: JSON.stringify(body) } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  if (response.status >= 400) {
    const errors = (parsed as { errors?: unknown } | undefined)?.errors;
    const messages = Array.isArray(errors) ? errors.map(String) : text.trim() ? [text.trim()] : [];
    throw new ApiError(response.status, messages);
  }
  return (parsed ?? (text ? text : undefined)) as T;
}

export const secrets = <T = unknown>(method: string, path: ApiPath, body?: unknown, options?: CallOptions) =>
  call<T>('secrets', method, path, body, options);
export const scheduler = <T = unknown>(method: string, path: ApiPath, body?: unknown, options?: CallOptions) =>
  call<T>('scheduler', method, path, body, options);

/** A secrets-service LIST: the keys, or [] when the path has none (404). */
export async function listKeys(path: ApiPath): Promise<string[]> {
  try {
    const answer = await secrets<{ data?: { keys?: string[] } }>('GET', withQuery(path, { list: 'true' }));
    return answer?.data?.keys ?? [];
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return [];
    throw error;
  }
}
