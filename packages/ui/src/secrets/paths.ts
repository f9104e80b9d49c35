import { ApiError, type ApiPath, api, secrets, segments, withQuery } from '../api.ts';

/** API paths and small shared helpers of the secrets pages. */

/** A slash-separated API path, each segment encoded (keys may hold spaces or `?`; `.` and `..` are refused: `api`). */
export const apiPath = (path: string): ApiPath => api`${segments(path)}`;

/** A LIST (`GET …?list=true`): the keys, or [] when nothing is there (404). */
export async function listAt(path: string): Promise<string[]> {
  try {
    const answer = await secrets<{ data?: { keys?: string[] } }>('GET', withQuery(apiPath(path), { list: 'true' }));
    return answer?.data?.keys ?? [];
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return [];
    throw error;
  }
}

/** Calls `load` and answers undefined for a 404 (a thing not there yet). */
export async function unlessMissing<T>(load: () => Promise<T>): Promise<T | undefined> {
  try {
    return await load();
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return undefined;
    throw error;
  }
}

/** The line and column an error message names: HCL's `At N:M:`, or `line N, column M`, or `on line N`. */
export function errorPosition(message: string): { line: number; column: number } | undefined {
  const at =
    /\bAt (\d+):(\d+)/.exec(message) ??
    /\bline (\d+),? column (\d+)/i.exec(message) ??
    /\bon line (\d+)/i.exec(message);
  if (!at) return undefined;
  const line = Number(at[1]);
  if (!(line > 0)) return undefined;
  return { line, column: Number(at[2] ?? 1) || 1 };
}

/** Splits `a=b` lines into an object (for audit device options). */
export function parseOptions(text: string): Record<string, string> {
  const options: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const trimmed = line.trim();
    if (!trimmed) continue;
    const equals = trimmed.indexOf('=');
    if (equals < 1) throw new Error(`option "${trimmed}" is not of the form name=value`);
    options[trimmed.slice(0, equals).trim()] = trimmed.slice(equals + 1).trim();
  }
  return options;
}

export const timeText = (value: unknown): string =>
  typeof value === 'string' && value && !value.startsWith('0001-') ? new Date(value).toLocaleString() : '—';
