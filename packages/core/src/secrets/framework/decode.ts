import * as z from 'zod';
import { badRequest } from '../../lib/errors.ts';
import type { RawRequest } from './raw.ts';
import { decodeBody, withoutNulls } from './request-body.ts';
import type { Route } from './route.ts';

/** A request's input as its path row reads it. */
export interface Decoded {
  /** The body as sent (`null` kept), for free-form data and for parameter constraints on writes. */
  body: Record<string, unknown>;
  /** The query string without `list`, for parameter constraints on reads. */
  query: Record<string, string>;
  /** The row's fields, validated: body, query (not for writes) and the pattern's captures. */
  data: Record<string, unknown>;
  /** Vault's warning about fields the row does not declare. */
  warnings: string[];
}

/**
 * The one decode stage for every backend's paths: the body as Vault reads it, then `null` as "not set", then the
 * row's zod schema. Invalid input is a 400 naming each field; unrecognized fields are a warning, or a 400 for a
 * row that refuses them.
 */
export function decodeFields(raw: RawRequest, route: Route): Decoded {
  const { spec, params, operation } = route;
  // `list=true` selects the operation; it is not a field. Body fields keep their names even when a query
  // parameter is called `list`.
  const { list: _list, ...query } = raw.query;
  const body = decodeBody(raw.body, raw.headers.get('content-type'));
  const input = { ...(operation === 'write' ? {} : query), ...withoutNulls(body), ...params };
  const parsed = spec.fields.safeParse(input);
  if (!parsed.success) throw badRequest(describeIssues(parsed.error));
  const unrecognized = unrecognizedFields(spec.fields, input);
  if (spec.refuseUnrecognizedFields && unrecognized.length > 0) {
    throw badRequest(
      `unrecognized parameters: [${unrecognized.join(' ')}]; this endpoint refuses what it would otherwise ignore`,
    );
  }
  const warnings =
    unrecognized.length > 0 ? [`Endpoint ignored these unrecognized parameters: [${unrecognized.join(' ')}]`] : [];
  return { body, query, data: parsed.data as Record<string, unknown>, warnings };
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
