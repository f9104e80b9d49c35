/**
 * Nomad's HTTP conventions: plain-text error bodies with Nomad's statuses, capitalised JSON, the index
 * headers, consistency modes and blocking queries (`?index=N&wait=5m`).
 */
import type { Context } from 'hono';
import type * as z from 'zod';
import { DurationError, parseDuration } from '../../lib/duration.ts';
import type { SchedulerEnv } from '../scheduler.ts';
import type { SchedulerState, TableName } from '../state.ts';

export class NomadError extends Error {
  constructor(
    readonly status: 400 | 401 | 403 | 404 | 405 | 409 | 500 | 502,
    message: string,
  ) {
    super(message);
  }
}

export const badRequest = (message: string) => new NomadError(400, message);
export const permissionDenied = () => new NomadError(403, 'Permission denied');
export const notFound = (message: string) => new NomadError(404, message);

/** The request body as JSON; an empty body is `{}`. */
export async function readJson(c: Context): Promise<unknown> {
  const text = await c.req.text();
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text);
  } catch (error) {
    throw badRequest(`Request decode failed: ${(error as Error).message}`);
  }
}

/** Parses with a zod schema; the first problem names its field. */
export async function readBody<T extends z.ZodType>(c: Context, schema: T): Promise<z.infer<T>> {
  const parsed = schema.safeParse(await readJson(c));
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.path.join('.') ?? '';
    throw badRequest(`Request decode failed: ${field ? `${field}: ` : ''}${issue?.message ?? 'invalid body'}`);
  }
  return parsed.data;
}

/** The caller's token secret: `X-Scheduler-Token`, `X-Nomad-Token` or `Authorization: Bearer`. */
export function tokenSecret(c: Context): string | undefined {
  const direct = c.req.header('x-scheduler-token') ?? c.req.header('x-nomad-token');
  if (direct) return direct.trim();
  const authorization = c.req.header('authorization');
  const match = authorization ? /^Bearer\s+(.+)$/i.exec(authorization) : null;
  return match?.[1]?.trim();
}

export function setIndexHeaders(c: Context, index: number): void {
  const value = String(Math.max(index, 1));
  c.header('X-Scheduler-Index', value);
  c.header('X-Nomad-Index', value);
  c.header('X-Scheduler-KnownLeader', 'true');
  c.header('X-Nomad-KnownLeader', 'true');
  c.header('X-Scheduler-LastContact', '0');
  c.header('X-Nomad-LastContact', '0');
}

/** Nomad's default and longest wait of a blocking query; a deployment may lower the longest (`maxQueryWaitSeconds`). */
const defaultWaitSeconds = 300;
/** How often a blocked query re-reads the table index when no write of this process woke it. */
const pollMs = 100;

export interface QueryOptions {
  minIndex: number;
  waitSeconds: number;
  stale: boolean;
  consistent: boolean;
}

export function queryOptions(c: Context<SchedulerEnv>): QueryOptions {
  const query = c.req.query();
  const maxWaitSeconds = c.var.scheduler?.options.maxQueryWaitSeconds ?? defaultWaitSeconds;
  const stale = 'stale' in query && query.stale !== 'false';
  const consistent = 'consistent' in query && query.consistent !== 'false';
  if (stale && consistent) throw badRequest('Cannot specify ?stale with ?consistent, conflicting semantics.');
  let minIndex = 0;
  if (query.index !== undefined && query.index !== '') {
    if (!/^\d+$/.test(query.index)) throw badRequest('Failed to parse index parameter: invalid syntax');
    minIndex = Number(query.index);
  }
  let waitSeconds = Math.min(defaultWaitSeconds, maxWaitSeconds);
  if (query.wait !== undefined && query.wait !== '') {
    try {
      waitSeconds = Math.min(parseWait(query.wait), maxWaitSeconds);
    } catch (error) {
      throw badRequest(`Invalid wait time: ${(error as Error).message}`);
    }
  }
  return { minIndex, waitSeconds, stale, consistent };
}

/** Go durations including fractions (`1500ms`); a bare number is milliseconds? No: Nomad requires a unit, seconds are accepted here. */
function parseWait(text: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms)$/.exec(text);
  if (match) return Number(match[1]) / 1000;
  try {
    return parseDuration(text);
  } catch (error) {
    if (error instanceof DurationError) throw new Error(`"${text}" is not a duration`);
    throw error;
  }
}

/**
 * A blocking read: when `?index=N` is given, waits until one of `tables` passes N or the wait (plus up to
 * 1/16 jitter, measured on the service's clock) runs out, then answers with the current data and index.
 */
export async function blockingQuery<T>(
  c: Context<SchedulerEnv>,
  state: SchedulerState,
  tables: TableName[],
  read: () => Promise<T>,
): Promise<Response> {
  const options = queryOptions(c);
  let index = await state.tableIndex(tables);
  if (options.minIndex > 0 && index <= options.minIndex) {
    const waitMs = options.waitSeconds * 1000;
    const deadline = state.clock.now() + waitMs + Math.random() * (waitMs / 16);
    const signal = c.req.raw.signal;
    while (index <= options.minIndex && state.clock.now() < deadline && !signal?.aborted) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, pollMs);
        const unsubscribe = state.onChange(done);
        function done() {
          clearTimeout(timer);
          unsubscribe();
          resolve();
        }
      });
      index = await state.tableIndex(tables);
    }
  }
  const body = await read();
  setIndexHeaders(c, index);
  return c.json(body as object);
}
