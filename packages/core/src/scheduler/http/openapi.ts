/**
 * The scheduler's OpenAPI 3.1 document, built from the route table (`route.ts` rows) on the skeleton both services
 * share (`front/openapi.ts`): a path per route, an operation per method with the row's summary, its described path
 * and query parameters (plus the blocking-query ones of a blocking read), its body's JSON Schema (zod's, input side)
 * and who may call it. Served at `GET /v1/internal/specs/openapi`.
 */
import * as z from 'zod/mini';
import { jsonSchemaOf, type OpenApiDocument, openApiDocument as documentOf, parameterOf } from '../../front/openapi.ts';
import { blockingParameters, permissionDenied } from './nomad.ts';
import { route, type SchedulerRoute } from './route.ts';

const tokenSchemes = [{ nomadToken: [] }, { schedulerToken: [] }, { bearer: [] }];

/** `:name` path segments as OpenAPI's `{name}`. */
export const openApiPath = (path: string): string => path.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, '{$1}');

function parameter(name: string, where: 'path' | 'query', schema: z.ZodMiniType) {
  return parameterOf(
    name,
    where,
    where === 'path',
    jsonSchemaOf(schema),
    z.globalRegistry.get(schema)?.description ?? '',
  );
}

function operation(entry: SchedulerRoute, method: string) {
  const query = { ...entry.query, ...(entry.blocking ? blockingParameters : {}) };
  return {
    operationId: `${method.toLowerCase()}${entry.path.replace(/[^A-Za-z0-9]+(.)?/g, (_all, next: string | undefined) => (next ?? '').toUpperCase())}`,
    summary: entry.summary,
    ...(entry.description ? { description: entry.description } : {}),
    security: entry.access === 'anyone' ? [] : entry.access === 'token' ? [{}, ...tokenSchemes] : tokenSchemes,
    'x-keyhaven-access': entry.access,
    parameters: [
      ...Object.entries(entry.params).map(([name, schema]) => parameter(name, 'path', schema)),
      ...Object.entries(query).map(([name, schema]) => parameter(name, 'query', schema)),
    ],
    ...(entry.body
      ? { requestBody: { required: false, content: { 'application/json': { schema: jsonSchemaOf(entry.body) } } } }
      : {}),
    responses: {
      '200': { description: entry.returns },
      default: {
        description:
          'An error: 400 bad input, 403 not allowed, 404 not found, 409 a conflict, 413 too large; the message as plain text.',
        content: { 'text/plain': { schema: { type: 'string' } } },
      },
    },
  };
}

/** The document of the given routes. */
export function openApiDocument(routes: readonly SchedulerRoute[]): OpenApiDocument<Record<string, unknown>> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const entry of routes) {
    const key = openApiPath(entry.path);
    const item = paths[key] ?? {};
    paths[key] = item;
    for (const method of entry.methods) item[method.toLowerCase()] = operation(entry, method);
  }
  return documentOf(
    {
      title: 'Keyhaven scheduler API',
      version: '1',
      description:
        "Nomad's ACL API (tokens, policies, roles, auth methods, binding rules, login) and its event stream.",
      securitySchemes: {
        nomadToken: {
          type: 'apiKey',
          in: 'header',
          name: 'X-Nomad-Token',
          description: 'The secret ID of an ACL token.',
        },
        schedulerToken: {
          type: 'apiKey',
          in: 'header',
          name: 'X-Scheduler-Token',
          description: 'The secret ID of an ACL token.',
        },
        bearer: { type: 'http', scheme: 'bearer', description: 'The secret ID of an ACL token.' },
      },
    },
    paths,
  );
}

/** `GET /v1/internal/specs/openapi`: the document of `routes()` (the whole table, this route included); a token is required. */
export function openApiRoute(routes: () => readonly SchedulerRoute[]): SchedulerRoute {
  let document: OpenApiDocument<Record<string, unknown>> | undefined;
  return route({
    method: 'GET',
    path: '/v1/internal/specs/openapi',
    summary: "The scheduler API's OpenAPI 3.1 document, built from its route table.",
    access: 'token',
    returns: 'The OpenAPI document.',
    handler: async ({ caller }) => {
      if (!(await caller()).token) throw permissionDenied();
      document ??= openApiDocument(routes());
      return { json: document };
    },
  });
}
