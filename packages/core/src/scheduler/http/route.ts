/**
 * The scheduler's one route wrapper. A resource declares its routes as rows (method, path, who may call, the
 * documented parameters and body, the tables a blocking read watches, a handler); `mountRoutes` puts them on the
 * app and does for every row, in this order: authentication (the caller, once per request), the management check
 * (`access: 'management'`), the path and query parameters (each parsed with its declared schema; the first problem
 * names its parameter), body decoding (the first problem names its field), the handler, the blocking query
 * (`index`/`wait`) or the index headers of a write, and the mapping of errors to statuses (`errors.ts`).
 * The same rows are the OpenAPI document (`openapi.ts`).
 */
import type { Context, Hono } from 'hono';
import * as z from 'zod';
import { badRequest } from '../../lib/errors.ts';
import type { Scheduler, SchedulerCaller, SchedulerEnv } from '../scheduler.ts';
import type { TableName } from '../state.ts';
import { callerOf } from './caller.ts';
import { errorResponse } from './errors.ts';
import { type BlockingParameters, blockingParameters, blockingQuery, decodeBody, permissionDenied, setIndexHeaders } from './nomad.ts';

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
  /** A response the handler built (the event stream). */
  | { response: Response };

/** Declared path or query parameters: a schema per name. */
export type ParameterSchemas = Record<string, z.ZodType>;

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
}

export interface RouteRow<
  Schema extends z.ZodType | undefined,
  Params extends ParameterSchemas = Record<string, never>,
  Query extends ParameterSchemas = Record<string, never>,
> {
  /** One method, or several that do the same (Nomad takes POST and PUT for updates). */
  method: Method | Method[];
  /** Hono's pattern: `/v1/acl/role/:id`. */
  path: string;
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
  /** The tables a blocking read watches (its index is theirs). */
  blocking?: TableName[];
  /** What a successful answer holds (the OpenAPI response description). */
  returns: string;
  handler: (ctx: RouteContext<Schema extends z.ZodType ? z.output<Schema> : undefined, ParsedParameters<Params>, ParsedParameters<Query>>) => Promise<SchedulerReply>;
}

/** A row as the table holds it: its description, and `run`, which does the row's work for one request. */
export interface SchedulerRoute {
  methods: Method[];
  path: string;
  summary: string;
  description?: string;
  access: Access;
  params: ParameterSchemas;
  query: ParameterSchemas;
  body?: z.ZodType;
  blocking?: TableName[];
  returns: string;
  run: (c: Context<SchedulerEnv>) => Promise<Response>;
}

/** A route row, checked and typed where it is written, then kept as a `SchedulerRoute`. */
export function route<
  Schema extends z.ZodType | undefined = undefined,
  Params extends ParameterSchemas = Record<string, never>,
  Query extends ParameterSchemas = Record<string, never>,
>(row: RouteRow<Schema, Params, Query>): SchedulerRoute {
  const methods = Array.isArray(row.method) ? row.method : [row.method];
  const params: ParameterSchemas = row.params ?? {};
  const query: ParameterSchemas = row.query ?? {};
  return {
    methods,
    path: row.path,
    summary: row.summary,
    ...(row.description ? { description: row.description } : {}),
    access: row.access,
    params,
    query,
    ...(row.body ? { body: row.body } : {}),
    ...(row.blocking ? { blocking: row.blocking } : {}),
    returns: row.returns,
    run: async (c) => {
      const scheduler = c.var.scheduler;
      const caller = () => callerOf(c);
      if (row.access !== 'anyone') {
        const resolved = await caller();
        if (row.access === 'management' && !resolved.management) throw permissionDenied();
      }
      const pathValues = parseParameters('path', params, (name) => c.req.param(name) ?? '') as ParsedParameters<Params>;
      const queryValue = (name: string, schema: z.ZodType) => (takesList(schema) ? c.req.queries(name) : c.req.query(name));
      const queryValues = parseParameters('query', query, queryValue) as ParsedParameters<Query>;
      const blocking: BlockingParameters = row.blocking ? parseParameters('query', blockingParameters, queryValue) : {};
      const body = (row.body ? await decodeBody(c, row.body) : undefined) as Schema extends z.ZodType ? z.output<Schema> : undefined;
      const reply = await row.handler({ scheduler, caller, params: pathValues, query: queryValues, body });
      if ('response' in reply) return reply.response;
      if ('read' in reply) {
        if (!row.blocking) throw new Error(`route ${row.path} answers a blocking read but declares no tables`);
        return blockingQuery(c, scheduler.state, row.blocking, reply.read, blocking);
      }
      if (reply.index !== undefined) setIndexHeaders(c, reply.index);
      return 'json' in reply ? c.json(reply.json as object) : c.body(null, 200);
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
  raw: (name: string, schema: z.ZodType) => string | string[] | undefined,
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
function takesList(schema: z.ZodType): boolean {
  const inner = schema instanceof z.ZodOptional || schema instanceof z.ZodDefault ? schema.unwrap() : schema;
  return inner instanceof z.ZodArray;
}

/** Puts the routes on the app, in table order (a literal path before a parameter in the same place). */
export function mountRoutes(app: Hono<SchedulerEnv>, routes: readonly SchedulerRoute[]): void {
  for (const entry of routes) {
    for (const method of entry.methods) {
      app.on(method, entry.path, async (c) => {
        try {
          return await entry.run(c);
        } catch (error) {
          return errorResponse(error, c);
        }
      });
    }
  }
}
