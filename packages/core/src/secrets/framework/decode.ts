import * as z from 'zod';
import { badRequest } from '../../lib/errors.ts';
import type { RawRequest } from './raw.ts';
import { decodeBody, withoutNulls } from './request-body.ts';
import type { Route } from './route.ts';

/** Where a request's fields come from, before its path row reads them. */
export interface RequestInput {
  /** The body as sent (`null` kept), for free-form data; empty for an operation whose input is its query. */
  body: Record<string, unknown>;
  /**
   * The one source of the request's fields, as sent (a body's `null` kept): what the audit request entry records,
   * what the parameter constraints check, and (less `null`, plus the captures) all the row's fields are read from.
   * A write's or a patch's body; a read's query string; nothing for a list or a delete.
   */
  parameters: Record<string, unknown>;
}

/** A request's fields as its path row reads them. */
export interface Decoded {
  /** The row's fields, validated: the parameters without `null`, and the pattern's captures. */
  data: Record<string, unknown>;
  /** Vault's warning about fields the row does not declare. */
  warnings: string[];
}

/**
 * A request's fields come from one place, as in Vault's `http/logical.go`: a POST, PUT or PATCH from its body alone
 * (read as Vault reads it), a GET from its query alone, a LIST or DELETE from its path alone (no adapter gives a read
 * or a delete a body). So the
 * fields a handler acts on are exactly those the audit entry and the policy's parameter constraints saw (issue 37
 * §2: a PATCH used to take fields from its query string too, which the constraints did not check).
 */
export function requestInput(raw: RawRequest, route: Route): RequestInput {
  switch (route.operation) {
    case 'write':
    case 'patch': {
      const body = decodeBody(raw.body, raw.headers.get('content-type'));
      return { body, parameters: body };
    }
    case 'read':
      return { body: {}, parameters: queryFields(raw.query) };
    default:
      // A list or a delete: its only input is its path. Vault hands their query to the handler too, but checks no
      // parameter constraint on them (`vault/acl.go`), so here they take none: no handler of ours reads one.
      return { body: {}, parameters: {} };
  }
}

/** The query parameters without `list`, which selects the operation and is not a field. */
function queryFields(query: Record<string, string>): Record<string, string> {
  const { list: _list, ...fields } = query;
  return fields;
}

/**
 * The one decode stage for every backend's paths: the request's parameters with `null` as "not set", the pattern's
 * captures over them, then the row's zod schema. Invalid input is a 400 naming each field; unrecognized fields are a
 * warning, or a 400 for a row that refuses them.
 */
export function decodeFields(input: RequestInput, route: Route): Decoded {
  const { spec, params } = route;
  const fields = { ...withoutNulls(input.parameters), ...params };
  const parsed = spec.fields.safeParse(fields);
  if (!parsed.success) throw badRequest(describeIssues(parsed.error));
  const unrecognized = unrecognizedFields(spec.fields, fields);
  if (spec.refuseUnrecognizedFields && unrecognized.length > 0) {
    throw badRequest(
      `unrecognized parameters: [${unrecognized.join(' ')}]; this endpoint refuses what it would otherwise ignore`,
    );
  }
  const warnings =
    unrecognized.length > 0 ? [`Endpoint ignored these unrecognized parameters: [${unrecognized.join(' ')}]`] : [];
  return { data: parsed.data as Record<string, unknown>, warnings };
}

/**
 * How the row decodes one of its fields, for the parameter constraints (`policies/parameter-constraints.ts`): the
 * value its handler would get, or undefined for a field the row does not declare or a value it would refuse.
 */
export function fieldDecoder(route: Route): (name: string, value: unknown) => unknown {
  const schema = route.spec.fields;
  const shape = schema instanceof z.ZodObject ? (schema.shape as Record<string, z.ZodType>) : undefined;
  return (name, value) => {
    const field = shape && Object.hasOwn(shape, name) ? shape[name] : undefined;
    if (!field || value === null || value === undefined) return undefined;
    const parsed = field.safeParse(value);
    return parsed.success ? parsed.data : undefined;
  };
}

function describeIssues(error: z.ZodError): string {
  return flattenIssues(error.issues, [])
    .map(({ path, message }) => `invalid value for "${path.length > 0 ? path.join('.') : 'request'}": ${message}`)
    .join('; ');
}

type Issue = z.core.$ZodIssue;

/**
 * Zod reports a failed union (`"1h"` or `3600`, a list or a comma-separated string) as a bare "Invalid input".
 * Say instead what the closest alternative wanted: the one that failed deeper inside the value, else the one
 * whose type matched, else every type that would have been accepted.
 */
function flattenIssues(
  issues: readonly Issue[],
  prefix: PropertyKey[],
): Array<{ path: PropertyKey[]; message: string }> {
  return issues.flatMap((issue) => {
    const path = [...prefix, ...issue.path];
    if (issue.code !== 'invalid_union' || issue.errors.length === 0) return [{ path, message: issue.message }];
    const branches = issue.errors.filter((branch) => branch.length > 0);
    const deeper = branches.find((branch) => branch.every((inner) => inner.path.length > 0));
    if (deeper) return flattenIssues(deeper, path);
    const typeMatched = branches.find((branch) =>
      branch.every((inner) => inner.code !== 'invalid_type' && inner.code !== 'invalid_value'),
    );
    if (typeMatched) return flattenIssues(typeMatched, path);
    const wanted = branches.flatMap((branch) =>
      branch.map((inner) => {
        if (inner.code === 'invalid_type') return inner.expected;
        if (inner.code === 'invalid_value')
          return `one of ${inner.values.map((value) => JSON.stringify(value)).join('|')}`;
        return inner.message;
      }),
    );
    return [{ path, message: `Invalid input: expected ${[...new Set(wanted)].join(' or ')}` }];
  });
}

/** The input's fields the path does not declare (none for a path that takes free-form data, like kv). */
function unrecognizedFields(schema: z.ZodType, input: Record<string, unknown>): string[] {
  if (!(schema instanceof z.ZodObject)) return [];
  const catchall = schema.def.catchall;
  if (catchall && !(catchall instanceof z.ZodNever)) return [];
  const known = new Set(Object.keys(schema.shape));
  return Object.keys(input).filter((key) => !known.has(key));
}
