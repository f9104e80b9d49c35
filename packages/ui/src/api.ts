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

export function serviceUrl(service: Service, path: string): string {
  const base = service === 'secrets' ? config().secretsUrl : config().schedulerUrl;
  return `${base}/v1/${path.replace(/^\/+/, '')}`;
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
  path: string,
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

export const secrets = <T = unknown>(method: string, path: string, body?: unknown, options?: CallOptions) =>
  call<T>('secrets', method, path, body, options);
export const scheduler = <T = unknown>(method: string, path: string, body?: unknown, options?: CallOptions) =>
  call<T>('scheduler', method, path, body, options);

/** A secrets-service LIST: the keys, or [] when the path has none (404). */
export async function listKeys(path: string): Promise<string[]> {
  try {
    const answer = await secrets<{ data?: { keys?: string[] } }>('GET', `${path.replace(/\/+$/, '')}?list=true`);
    return answer?.data?.keys ?? [];
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return [];
    throw error;
  }
}
