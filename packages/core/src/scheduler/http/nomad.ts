/**
 * Nomad's HTTP conventions: the token headers, the index headers, consistency modes and the parameters of blocking
 * queries (`?index=N&wait=5m`; the waiting itself is `blocking.ts`). The route wrapper (`route.ts`) applies them;
 * resource code does not.
 */
import * as z from 'zod/mini';
import { DurationError, parseGoDuration } from '../../lib/duration.ts';
import { badRequest, DomainError } from '../../lib/errors.ts';
import type { RequestHeaders } from '../../lib/request-headers.ts';
import type { Scheduler } from '../composition/scheduler-core.ts';

export { badRequest, notFound } from '../../lib/errors.ts';
/** Nomad's refusal of an operation the caller's ACL does not allow: 403 `Permission denied`. */
export const permissionDenied = () => new DomainError('denied', 'Permission denied');

/**
 * The request body as JSON (an empty body is `{}`), parsed with `schema`; the first problem names its field.
 * A read (GET, HEAD) is its query: its body is never read (issue 23 §4).
 */
export function decodeBody<T extends z.ZodMiniType>(
  request: { method: string; body: string | undefined },
  schema: T,
): z.infer<T> {
  const text = request.method === 'GET' || request.method === 'HEAD' ? '' : (request.body ?? '');
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
export function tokenSecret(headers: RequestHeaders): string | undefined {
  const direct = headers.get('x-scheduler-token') ?? headers.get('x-nomad-token');
  if (direct) return direct.trim();
  const authorization = headers.get('authorization');
  // `s`: a line separator in the header must not turn the match quadratic (issue 39 §1).
  const match = authorization ? /^Bearer\s+(.+)$/is.exec(authorization) : null;
  return match?.[1]?.trim();
}

/**
 * The `QueryMeta` that Nomad's job register, evaluate and deregister answers embed (`structs.JobRegisterResponse`,
 * `JobDeregisterResponse`: Go's encoder flattens it into the body): the write's `Index` and the zero values of the rest.
 */
export const writeQueryMeta = (index: number) => ({ Index: index, LastContact: 0, KnownLeader: false, NextToken: '' });

/** Nomad's index headers of an answer at `index` (and this service's `X-Scheduler-…` spellings). */
export function indexHeaders(index: number): Record<string, string> {
  const value = String(Math.max(index, 1));
  return {
    'X-Scheduler-Index': value,
    'X-Nomad-Index': value,
    'X-Scheduler-KnownLeader': 'true',
    'X-Nomad-KnownLeader': 'true',
    'X-Scheduler-LastContact': '0',
    'X-Nomad-LastContact': '0',
  };
}

/** Nomad's default and longest wait of a blocking query; a deployment may lower the longest (`maxQueryWaitSeconds`). */
const defaultWaitSeconds = 300;

/** `?wait=`: a Go duration (`5m`, `1500ms`) in seconds; bare digits are taken as seconds, as this service always has. */
const waitParameter = z.pipe(
  z.string(),
  z.transform((text, ctx): number | undefined => {
    if (text === '') return undefined;
    if (/^\d+$/.test(text)) return Number(text);
    try {
      return parseGoDuration(text);
    } catch (error) {
      if (!(error instanceof DurationError)) throw error;
      ctx.issues.push({ code: 'custom', input: text, message: `Invalid wait time: "${text}" is not a duration` });
      return z.NEVER;
    }
  }),
);

/** `?stale` and `?consistent` are flags: present (with any value but `false`) is set. */
const flagParameter = z.pipe(
  z.string(),
  z.transform((text) => text !== 'false'),
);

/**
 * The query parameters every blocking read takes (Nomad's): the route wrapper parses them for a `blocking` row, with
 * its declared ones, before the handler; the OpenAPI document lists them for such rows.
 */
export const blockingParameters = {
  index: z
    .optional(
      z.pipe(
        z
          .string()
          .check(z.refine((text) => /^\d*$/.test(text), { error: 'Failed to parse index parameter: invalid syntax' })),
        z.transform(Number),
      ),
    )
    .check(
      z.describe(
        'Block until the index of the data passes this one (or the wait runs out); the index is in `X-Nomad-Index`.',
      ),
    ),
  wait: z
    .optional(waitParameter)
    .check(z.describe('How long to block at most: a duration such as `5m` (default and longest 5 minutes).')),
  stale: z.optional(flagParameter).check(z.describe('Accept an answer from any server (always the case here).')),
  consistent: z
    .optional(flagParameter)
    .check(z.describe('Require a consistent read (always the case here); not with `stale`.')),
};

/** A blocking read's parameters, as the route wrapper parsed them. */
export interface BlockingParameters {
  index?: number | undefined;
  wait?: number | undefined;
  stale?: boolean | undefined;
  consistent?: boolean | undefined;
}

export interface QueryOptions {
  minIndex: number;
  waitSeconds: number;
  stale: boolean;
  consistent: boolean;
}

/** The parsed parameters with their defaults, the wait capped at the deployment's longest; `stale` with `consistent` is a 400. */
export function queryOptions(scheduler: Scheduler, parameters: BlockingParameters): QueryOptions {
  const maxWaitSeconds = scheduler.options.maxQueryWaitSeconds ?? defaultWaitSeconds;
  const stale = parameters.stale ?? false;
  const consistent = parameters.consistent ?? false;
  if (stale && consistent) throw badRequest('Cannot specify ?stale with ?consistent, conflicting semantics.');
  const waitSeconds = Math.min(parameters.wait ?? defaultWaitSeconds, maxWaitSeconds);
  return { minIndex: parameters.index ?? 0, waitSeconds, stale, consistent };
}
