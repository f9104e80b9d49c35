/**
 * The scheduler's one route wrapper. A resource declares its routes as rows (method, path, who may call, the
 * documented parameters and body, the tables a blocking read watches, a handler); `answerRoute` matches a request's
 * canonical path against them, in table order (a literal path before a parameter in the same place; a HEAD is a GET
 * without its body), and does for the row it finds, in this order: authentication (the caller, once per request), the management check
 * (`access: 'management'`), the path and query parameters (each parsed with its declared schema; the first problem
 * names its parameter), body decoding (the first problem names its field), the handler, the blocking query
 * (`index`/`wait`) or the index headers of a write, and the mapping of errors to statuses (`errors.ts`).
 * The same rows are the OpenAPI document (`openapi.ts`).
 */
import * as z from 'zod/mini';
import { en } from 'zod/locales';
import { type HttpReply, type HttpRequest, jsonReply, textReply } from '../../front/exchange.ts';
import { badRequest } from '../../lib/errors.ts';
import { encodedSlashRefused } from '../../lib/request-path.ts';
import type { Scheduler, SchedulerCaller } from '../composition/scheduler-core.ts';
import type { TableName } from '../state.ts';
import { errorReply } from './errors.ts';
import { blockingQuery } from './blocking.ts';
import {
  type BlockingParameters,
  blockingParameters,
  decodeBody,
  indexHeaders,
  permissionDenied,
  tokenSecret,
} from './nomad.ts';

// The scheduler's schemas use zod's mini API (tree-shaken: its functions bundle only what they use, issue 28), which
// leaves messages to a locale: zod's English one, the wording every 400 of the service quotes.
z.config(en());

export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

/**
 * Who may call a route: `anyone` (no token is looked at: bootstrap, login, the auth-method list), `token` (the
 * caller is resolved: anonymous without a token, 403 for an unknown one; the handler decides from the caller's ACL),
 * `management` (a management token only; others get 403 `Permission denied`).
 */
export type Access = 'anyone' | 'token' | 'management';

/** What a handler answers. */
export type SchedulerReply =
  /** A JSON body; `index` sets the index headers (a write's index). */
  | { json: unknown; index?: number }
  /** An empty 200 (Nomad's answer to a policy write or a delete); `index` sets the index headers. */
  | { empty: true; index?: number }
  /** A blocking read of the row's `blocking` tables: waits for `?index`, then answers `read()` with the index headers. */
  | { read: () => Promise<unknown> }
  /** A stream the handler opened (the event stream), answered 200 with `headers`. */
  | { stream: ReadableStream<Uint8Array>; headers: Record<string, string> };

/** Declared path or query parameters: a schema per name. */
export type ParameterSchemas = Record<string, z.ZodMiniType>;

/** The values of declared parameters, as their schemas output them. */
export type ParsedParameters<Schemas extends ParameterSchemas> = { [Name in keyof Schemas]: z.output<Schemas[Name]> };

export interface RouteContext<Body, Params = Record<string, never>, Query = Record<string, never>> {
  scheduler: Scheduler;
  /** The caller, resolved once per request (already resolved, and checked, for `token` and `management` routes). */
  caller: () => Promise<SchedulerCaller>;
  /** The path parameters declared in `params`, validated. */
  params: Params;
  /** The query parameters declared in `query`, validated (an array schema takes every value of a repeated one). */
  query: Query;
  /** The decoded body (`{}` for an empty one), or undefined when the row declares none. */
  body: Body;
  /** The credential as presented (`X-Nomad-Token`, …), for the routes that take one that is not an ACL token: a node's. */
  presented: string | undefined;
}

export interface RouteRow<
  Schema extends z.ZodMiniType | undefined,
  Params extends ParameterSchemas = Record<string, never>,
  Query extends ParameterSchemas = Record<string, never>,
> {
  /** One method, or several that do the same (Nomad takes POST and PUT for updates). */
  method: Method | Method[];
  /** The path, a `:name` segment a parameter: `/v1/acl/role/:id`. */
  path: string;
  /**
   * The path parameters whose value may hold a `/`, sent percent-encoded as `%2F` (Nomad's job IDs: a dispatched
   * job is `<parent>/dispatch-…`, and Nomad's `api` package escapes it with `url.PathEscape`). Any other parameter
   * with an encoded slash matches no row (`lib/request-path.ts` `segmentedPath`).
   */
  slashParams?: Array<keyof Params & string>;
  /** One line: what the operation does (the OpenAPI summary). */
  summary: string;
  /** More, when one line is not enough. */
  description?: string;
  access: Access;
  /**
   * The path parameters, each `.describe()`d; the wrapper parses each with its schema before the handler runs. A
   * schema's own error message is the 400's text; otherwise the text names the parameter and zod's complaint.
   */
  params?: Params;
  /** The query parameters, likewise (a `blocking` row's `index`, `wait`, `stale` and `consistent` are added: `nomad.ts`). */
  query?: Query;
  /** The JSON body, every field `.describe()`d. */
  body?: Schema;
  /** The tables a blocking read watches (its index is theirs); the waiting is rationed (`blocking.ts`). */
  blocking?: TableName[];
  /**
   * Whose places a blocked query of this row takes (`blocking.ts`): by default the caller's token (its accessor ID),
   * none for anonymous. A row whose callers are not ACL tokens (a node's poll) names them here (`node#<id>`).
   */
  waitsAs?: (
    ctx: RouteContext<
      Schema extends z.ZodMiniType ? z.output<Schema> : undefined,
      ParsedParameters<Params>,
      ParsedParameters<Query>
    >,
  ) => Promise<string | undefined>;
  /** What a successful answer holds (the OpenAPI response description). */
  returns: string;
  handler: (
    ctx: RouteContext<
      Schema extends z.ZodMiniType ? z.output<Schema> : undefined,
      ParsedParameters<Params>,
      ParsedParameters<Query>
    >,
  ) => Promise<SchedulerReply>;
}

/** A row as the table holds it: its description, and `run`, which does the row's work for one request. */
export interface SchedulerRoute {
  methods: Method[];
  path: string;
  slashParams?: string[];
  summary: string;
  description?: string;
  access: Access;
  params: ParameterSchemas;
  query: ParameterSchemas;
  body?: z.ZodMiniType;
  blocking?: TableName[];
  returns: string;
  run: (exchange: SchedulerExchange) => Promise<HttpReply>;
}

/** One request as the route table sees it: the request, its canonical path, and the scheduler it is answered by. */
export interface SchedulerExchange {
  request: HttpRequest;
  /** The canonical path, percent-decoded (`lib/request-path.ts`). */
  path: string;
  /** Its segments, each percent-decoded on its own (a segment sent with `%2F` holds a `/`). */
  segments: string[];
  /** The path parameters of the row that matched (set by `answerRoute`). */
  params: Record<string, string>;
  query: URLSearchParams;
  scheduler: Scheduler;
  /** The caller, resolved once per request (the route wrapper and the audit log share it). */
  caller: () => Promise<SchedulerCaller>;
}

/**
 * The exchange of a request whose path is canonical (`decoded`). Without a scheduler only for rows that never reach
 * it (`access: 'anyone'` rows that read nothing: the health check before the core is built).
 */
export function exchangeOf(
  request: HttpRequest,
  decoded: string,
  scheduler: Scheduler | undefined,
  segments: string[] = decoded.split('/').slice(1),
): SchedulerExchange {
  let caller: Promise<SchedulerCaller> | undefined;
  return {
    request,
    path: decoded,
    segments,
    params: {},
    query: new URLSearchParams(request.search),
    scheduler: scheduler as Scheduler,
    caller: () => {
      if (!scheduler) throw new Error('this request has no scheduler to resolve its caller');
      // An unknown or expired token is refused (403): anonymous without a token.
      caller ??= scheduler.resolve(tokenSecret(request.headers));
      return caller;
    },
  };
}

/** A route row, checked and typed where it is written, then kept as a `SchedulerRoute`. */
export function route<
  Schema extends z.ZodMiniType | undefined = undefined,
  Params extends ParameterSchemas = Record<string, never>,
  Query extends ParameterSchemas = Record<string, never>,
>(row: RouteRow<Schema, Params, Query>): SchedulerRoute {
  const methods = Array.isArray(row.method) ? row.method : [row.method];
  const params: ParameterSchemas = row.params ?? {};
  const query: ParameterSchemas = row.query ?? {};
  return {
    methods,
    path: row.path,
    ...(row.slashParams ? { slashParams: row.slashParams } : {}),
    summary: row.summary,
    ...(row.description ? { description: row.description } : {}),
    access: row.access,
    params,
    query,
    ...(row.body ? { body: row.body } : {}),
    ...(row.blocking ? { blocking: row.blocking } : {}),
    returns: row.returns,
    run: async (exchange) => {
      const { scheduler, caller, request } = exchange;
      if (row.access !== 'anyone') {
        const resolved = await caller();
        if (row.access === 'management' && !resolved.management) throw permissionDenied();
      }
      const pathValues = parseParameters(
        'path',
        params,
        (name) => exchange.params[name] ?? '',
      ) as ParsedParameters<Params>;
      const queryValue = (name: string, schema: z.ZodMiniType) => {
        if (takesList(schema)) return exchange.query.has(name) ? exchange.query.getAll(name) : undefined;
        return exchange.query.get(name) ?? undefined;
      };
      const queryValues = parseParameters('query', query, queryValue) as ParsedParameters<Query>;
      const blocking: BlockingParameters = row.blocking ? parseParameters('query', blockingParameters, queryValue) : {};
      const body = (row.body ? decodeBody(request, row.body) : undefined) as Schema extends z.ZodMiniType
        ? z.output<Schema>
        : undefined;
      const presented = tokenSecret(request.headers);
      const context = { scheduler, caller, params: pathValues, query: queryValues, body, presented };
      const reply = await row.handler(context);
      if ('stream' in reply) return { status: 200, headers: reply.headers, body: reply.stream };
      if ('read' in reply) {
        if (!row.blocking) throw new Error(`route ${row.path} answers a blocking read but declares no tables`);
        const waiter = row.waitsAs
          ? await row.waitsAs(context)
          : row.access === 'anyone'
            ? undefined
            : (await caller()).token?.AccessorID;
        return blockingQuery(scheduler, request.signal, row.blocking, reply.read, blocking, waiter);
      }
      const headers = reply.index === undefined ? {} : indexHeaders(reply.index);
      return 'json' in reply ? jsonReply(200, reply.json, headers) : { status: 200, headers, body: undefined };
    },
  };
}

/**
 * Each declared parameter parsed with its schema, in declaration order; the first problem is a 400. A schema that
 * words its own error (the identifier shapes, `acl/identifiers.ts`) is answered with that text as it is; zod's
 * generic complaints are prefixed with the parameter's name.
 */
function parseParameters(
  where: 'path' | 'query',
  schemas: ParameterSchemas,
  raw: (name: string, schema: z.ZodMiniType) => string | string[] | undefined,
): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const [name, schema] of Object.entries(schemas)) {
    const parsed = schema.safeParse(raw(name, schema), {
      error: (issue) => `invalid ${where} parameter ${name}: ${generic(issue)}`,
    });
    if (!parsed.success) throw badRequest(parsed.error.issues[0]?.message ?? `invalid ${where} parameter ${name}`);
    values[name] = parsed.data;
  }
  return values;
}

/** Zod's own wording of an issue (its locale's message). */
function generic(issue: z.core.$ZodRawIssue): string {
  const message = z.config().localeError?.(issue);
  return (typeof message === 'string' ? message : message?.message) ?? 'invalid value';
}

/** Whether a query schema takes every value of a repeated parameter (an array, optional or not). */
function takesList(schema: z.ZodMiniType): boolean {
  const def = schema._zod.def;
  const inner = def.type === 'optional' || def.type === 'default' ? (def as z.core.$ZodOptionalDef).innerType : schema;
  return inner._zod.def.type === 'array';
}

/** A row's path as its segments, a parameter as `{ name }`. */
type Pattern = Array<string | { name: string }>;
const patterns = new WeakMap<SchedulerRoute, Pattern>();

function patternOf(entry: SchedulerRoute): Pattern {
  let pattern = patterns.get(entry);
  if (!pattern) {
    pattern = entry.path
      .split('/')
      .slice(1)
      .map((segment) => (segment.startsWith(':') ? { name: segment.slice(1) } : segment));
    patterns.set(entry, pattern);
  }
  return pattern;
}

/**
 * The first row, in table order, whose method and path match, with its path parameters. `path` is the decoded path,
 * or its segments each decoded alone: a segment holding a `/` (sent as `%2F`) is only a parameter the row lets hold one.
 */
export function matchRoute(
  routes: readonly SchedulerRoute[],
  method: string,
  path: string | string[],
): { entry: SchedulerRoute; params: Record<string, string> } | undefined {
  const wanted = (method === 'HEAD' ? 'GET' : method) as Method;
  const segments = typeof path === 'string' ? path.split('/').slice(1) : path;
  for (const entry of routes) {
    if (!entry.methods.includes(wanted)) continue;
    const pattern = patternOf(entry);
    if (pattern.length !== segments.length) continue;
    const params: Record<string, string> = {};
    const matches = pattern.every((part, index) => {
      const segment = segments[index] as string;
      if (typeof part === 'string') return part === segment;
      if (segment.includes('/') && !entry.slashParams?.includes(part.name)) return false;
      params[part.name] = segment;
      return segment !== '';
    });
    if (matches) return { entry, params };
  }
  return undefined;
}

/** What no row matching a path answers: 404, or 400 for an encoded slash where no row takes one. */
export function unmatched(exchange: Pick<SchedulerExchange, 'path' | 'segments'>): HttpReply {
  if (exchange.segments.some((segment) => segment.includes('/'))) return textReply(400, encodedSlashRefused);
  return textReply(404, `Invalid URL path: ${exchange.path}`);
}

/**
 * The answer of the route table to one request: the row that matches runs, its errors mapped to statuses
 * (`errors.ts`); no row is 404 (Nomad's `Invalid URL path`). A HEAD is answered as its GET, without the body.
 */
export async function answerRoute(routes: readonly SchedulerRoute[], exchange: SchedulerExchange): Promise<HttpReply> {
  const found = matchRoute(routes, exchange.request.method, exchange.segments);
  if (!found) return unmatched(exchange);
  let reply: HttpReply;
  try {
    reply = await found.entry.run({ ...exchange, params: found.params });
  } catch (error) {
    reply = errorReply(error, exchange.path);
  }
  if (exchange.request.method === 'HEAD' && reply.body !== undefined) {
    if (typeof reply.body !== 'string') await reply.body.cancel().catch(() => undefined);
    return { ...reply, body: undefined };
  }
  return reply;
}
