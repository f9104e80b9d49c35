/**
 * Nomad's HTTP conventions: the token headers, the index headers, consistency modes and blocking queries
 * (`?index=N&wait=5m`). The route wrapper (`route.ts`) applies them; resource code does not.
 */
import type { Context } from 'hono';
import type * as z from 'zod';
import { DurationError, parseGoDuration } from '../../lib/duration.ts';
import { badRequest, DomainError } from '../../lib/errors.ts';
import type { SchedulerEnv } from '../scheduler.ts';
import type { SchedulerState, TableName } from '../state.ts';

export { badRequest, notFound } from '../../lib/errors.ts';
/** Nomad's refusal of an operation the caller's ACL does not allow: 403 `Permission denied`. */
export const permissionDenied = () => new DomainError('denied', 'Permission denied');

/**
 * The request body as JSON (an empty body is `{}`), parsed with `schema`; the first problem names its field.
 * A read (GET, HEAD) is its query: its body is never read (issue 23 §4).
 */
export async function decodeBody<T extends z.ZodType>(c: Context, schema: T): Promise<z.infer<T>> {
  const text = c.req.method === 'GET' || c.req.method === 'HEAD' ? '' : await c.req.text();
  let json: unknown = {};
  if (text.trim() !== '') {
    try {
      json = JSON.parse(text);
    } catch (error) {
      throw badRequest(`Request decode failed: ${(error as Error).message}`);
    }
  }
  const parsed = schema.safeParse(json);
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
  if (query.wait !== undefined && query.wait !== '') waitSeconds = Math.min(parseWait(query.wait), maxWaitSeconds);
  return { minIndex, waitSeconds, stale, consistent };
}

/** `?wait=`: a Go duration (`5m`, `1500ms`); bare digits are taken as seconds, as this service always has. */
function parseWait(text: string): number {
  if (/^\d+$/.test(text)) return Number(text);
  try {
    return parseGoDuration(text);
  } catch (error) {
    if (error instanceof DurationError) throw badRequest(`Invalid wait time: "${text}" is not a duration`);
    throw error;
  }
}

/**
 * A blocking read: when `?index=N` is given, waits until one of `tables` passes N or the wait (plus up to
 * 1/16 jitter, measured on the service's clock) runs out, then answers with the current data and index.
 */
export async function blockingQuery(
  c: Context<SchedulerEnv>,
  state: SchedulerState,
  tables: TableName[],
  read: () => Promise<unknown>,
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
