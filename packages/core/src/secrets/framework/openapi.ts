import {
  openApiDocument as documentOf,
  type JsonSchema,
  jsonSchemaOf,
  type OpenApiDocument,
  type OpenApiParameter,
  parameterOf,
} from '../../front/openapi.ts';
import type { Backend, Operation, PathSpec } from './backend.ts';

/**
 * The OpenAPI 3.1 document of the secrets service, built from the backends' path rows as Vault's
 * `sys/internal/specs/openapi` builds it from `framework.Path`: each mount's rows under the mount's path, a
 * row's `:name` / `:name+` / `:name*` captures as `{name}` path parameters (a `*` capture also yields the path
 * without it), its operations as HTTP methods (read → GET, create/update → POST, patch → PATCH, delete → DELETE,
 * list → GET on the path with a trailing slash and a required `list=true` query parameter), its `summaries` as
 * each operation's `summary`, and its zod `fields` (with their `.describe()` text) as the request body of a write
 * and the query parameters of a read, list or delete. The document's skeleton is the one both services share
 * (`front/openapi.ts`).
 */

/** What the document needs of a mount: where it is and which backend serves it. */
export interface DocumentedMount {
  /** With its trailing slash: `secret/`, `auth/jwt/`. */
  path: string;
  type: string;
}

export interface OpenApiOperation {
  operationId: string;
  summary?: string;
  tags: string[];
  parameters?: OpenApiParameter[];
  requestBody?: { required: boolean; content: Record<string, { schema: JsonSchema }> };
  /** Empty for a path reachable without a token. */
  security?: Array<Record<string, string[]>>;
  responses: Record<string, { description: string }>;
}

export type HttpMethod = 'get' | 'post' | 'patch' | 'delete';

export interface OpenApiPathItem {
  parameters?: OpenApiParameter[];
  'x-vault-unauthenticated'?: boolean;
  'x-vault-sudo'?: boolean;
  'x-vault-createSupported'?: boolean;
  get?: OpenApiOperation;
  post?: OpenApiOperation;
  patch?: OpenApiOperation;
  delete?: OpenApiOperation;
}

/** Vault's mapping of a logical operation to an HTTP method. */
export const methodOf: Record<Operation, HttpMethod> = {
  read: 'get',
  list: 'get',
  create: 'post',
  update: 'post',
  patch: 'patch',
  delete: 'delete',
};

/** The operations in the order their methods are written; `create` and `update` share POST. */
const documentedOperations: Operation[] = ['read', 'list', 'update', 'create', 'patch', 'delete'];

/** A row's pattern as OpenAPI paths: `role/:name+` → `role/{name}`; `role/:prefix*` → `role` and `role/{prefix}`. */
export function templatesOf(pattern: string): Array<{ template: string; captures: string[] }> {
  let variants: Array<{ segments: string[]; captures: string[] }> = [{ segments: [], captures: [] }];
  for (const segment of pattern.split('/').filter((part) => part !== '')) {
    const capture = /^:(\w+)([+*]?)$/.exec(segment);
    if (!capture) {
      variants = variants.map((variant) => ({ ...variant, segments: [...variant.segments, segment] }));
      continue;
    }
    const [, name, kind] = capture as unknown as [string, string, string];
    const withCapture = variants.map((variant) => ({
      segments: [...variant.segments, `{${name}}`],
      captures: [...variant.captures, name],
    }));
    variants = kind === '*' ? [...variants, ...withCapture] : withCapture;
  }
  return variants.map((variant) => ({ template: variant.segments.join('/'), captures: variant.captures }));
}

/** The OpenAPI path of one row's template under a mount: without a trailing slash, except a list's. */
export function documentPath(mountPath: string, template: string, operation: Operation): string {
  const full = `/${mountPath}${template}`.replace(/\/+$/, '');
  return operation === 'list' ? `${full}/` : full;
}

/** Two paths are the same route when they differ only in their parameters' names (OpenAPI forbids both). */
const routeKey = (path: string) => path.replace(/\{\w+\}/g, '{}');

interface FieldSchemas {
  properties: Record<string, JsonSchema>;
  required: Set<string>;
}

/** The row's fields as JSON Schema (the input a client sends), one property per field. */
function fieldSchemas(spec: PathSpec): FieldSchemas {
  const schema = jsonSchemaOf(spec.fields);
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  return { properties, required: new Set((schema.required ?? []) as string[]) };
}

const listParameter: OpenApiParameter = {
  name: 'list',
  in: 'query',
  required: true,
  description: 'Must be `true`: lists the keys under the path (Vault also accepts the method `LIST`).',
  schema: { type: 'string', enum: ['true'] },
};

function operationId(method: HttpMethod, operation: Operation, path: string, taken: Set<string>): string {
  const verb = operation === 'list' ? 'list' : method === 'get' ? 'read' : method === 'post' ? 'write' : operation;
  const slug =
    path
      .replace(/[{}]/g, '')
      .replace(/[^A-Za-z0-9]+/g, '-')
      .replace(/^-|-$/g, '') || 'root';
  let id = `${verb}-${slug}`;
  for (let counter = 2; taken.has(id); counter++) id = `${verb}-${slug}-${counter}`;
  taken.add(id);
  return id;
}

function describeOperation(
  spec: PathSpec,
  operation: Operation,
  method: HttpMethod,
  path: string,
  captures: string[],
  tag: string,
  taken: Set<string>,
): OpenApiOperation {
  const { properties, required } = fieldSchemas(spec);
  const fields = Object.entries(properties).filter(([name]) => !captures.includes(name));
  const summary = method === 'post' ? (spec.summaries?.update ?? spec.summaries?.create) : spec.summaries?.[operation];
  const described: OpenApiOperation = {
    operationId: operationId(method, operation, path, taken),
    ...(summary ? { summary } : {}),
    tags: [tag],
    ...(spec.unauthenticated ? { security: [] } : {}),
    responses:
      operation === 'read' || operation === 'list'
        ? { '200': { description: 'OK' } }
        : { '200': { description: 'OK' }, '204': { description: 'empty body' } },
  };
  if (method === 'post' || method === 'patch') {
    if (fields.length > 0) {
      const body: JsonSchema = { type: 'object', properties: Object.fromEntries(fields) };
      const mandatory = fields.map(([name]) => name).filter((name) => required.has(name));
      if (mandatory.length > 0) body.required = mandatory;
      // Vault's kv v2 patch is a JSON merge patch.
      const contentType = method === 'patch' ? 'application/merge-patch+json' : 'application/json';
      described.requestBody = { required: mandatory.length > 0, content: { [contentType]: { schema: body } } };
    }
    return described;
  }
  const query: OpenApiParameter[] = fields.map(([name, schema]) =>
    parameterOf(name, 'query', required.has(name), schema),
  );
  const parameters =
    operation === 'list' ? [listParameter, ...query.filter((parameter) => parameter.name !== 'list')] : query;
  if (parameters.length > 0) described.parameters = parameters;
  return described;
}

function pathParameters(spec: PathSpec, captures: string[]): OpenApiParameter[] {
  const { properties } = fieldSchemas(spec);
  return captures.map((name) => {
    const description = properties[name]?.description;
    return {
      name,
      in: 'path',
      required: true,
      ...(typeof description === 'string' ? { description } : {}),
      schema: { type: 'string' },
    };
  });
}

/**
 * The document for the given mounts. A mount whose backend this process does not serve is left out. When two rows
 * give the same route (paths that differ only in their parameters' names) and the same method, the first row's
 * operation is documented: it is the one the router picks.
 */
export function openApiDocument(
  mounts: DocumentedMount[],
  backends: ReadonlyMap<string, Backend>,
  version: string,
): OpenApiDocument<OpenApiPathItem> {
  const paths: Record<string, OpenApiPathItem> = {};
  const pathOfRoute = new Map<string, string>();
  const taken = new Set<string>();
  const ordered = [...mounts].sort((a, b) => a.path.localeCompare(b.path));
  for (const mount of ordered) {
    const backend = backends.get(mount.type);
    if (!backend) continue;
    for (const spec of backend.paths) {
      for (const { template, captures } of templatesOf(spec.pattern)) {
        for (const operation of documentedOperations) {
          if (!spec.operations[operation]) continue;
          const method = methodOf[operation];
          const wanted = documentPath(mount.path, template, operation);
          const key = routeKey(wanted);
          const existing = pathOfRoute.get(key);
          const path = existing ?? wanted;
          if (!existing) {
            pathOfRoute.set(key, path);
            const parameters = pathParameters(spec, captures);
            paths[path] = parameters.length > 0 ? { parameters } : {};
          }
          const item = paths[path] as OpenApiPathItem;
          if (item[method]) continue;
          // The path's own parameter names (the first row's) are the ones the captures go by here.
          const names = [...path.matchAll(/\{(\w+)\}/g)].map((match) => match[1] as string);
          item[method] = describeOperation(spec, operation, method, path, [...captures, ...names], backend.type, taken);
          if (spec.unauthenticated) item['x-vault-unauthenticated'] = true;
          if (spec.sudo) item['x-vault-sudo'] = true;
          if (operation === 'create') item['x-vault-createSupported'] = true;
        }
      }
    }
  }
  return documentOf(
    {
      title: 'Keyhaven secrets API',
      description: "HTTP API of Keyhaven's secrets service (Vault's API). Every route is prefixed with `/v1/`.",
      version,
      servers: [{ url: '/v1' }],
      securitySchemes: {
        token: {
          type: 'apiKey',
          in: 'header',
          name: 'X-Vault-Token',
          description: 'A token (`X-Secrets-Token` and `Authorization: Bearer` work too).',
        },
      },
      security: [{ token: [] }],
    },
    paths,
  );
}
