import { validate } from '@readme/openapi-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { allSecretsFamilies, backendsOf } from '../../packages/core/src/secrets/families.ts';
import type { Backend, Operation, PathSpec } from '../../packages/core/src/secrets/framework/backend.ts';
import type { OpenApiDocument as Document } from '../../packages/core/src/front/openapi.ts';
import type {
  HttpMethod,
  OpenApiOperation,
  OpenApiPathItem,
} from '../../packages/core/src/secrets/framework/openapi.ts';

type OpenApiDocument = Document<OpenApiPathItem>;
import { compilePaths, matchPaths } from '../../packages/core/src/secrets/framework/router.ts';
import { type SecretsService, startSecretsInMemory } from '../support/secrets-harness.ts';
import { mountOf, mountsToEnable, secretsRoutes } from '../support/secrets-routes.ts';

/**
 * `GET /v1/sys/internal/specs/openapi`: the OpenAPI 3.1 document built from the path tables, checked by a maintained
 * validator (@readme/openapi-parser), for a summary on every operation and a description on every field, and against
 * the server: every documented route is answered, and every row of the path tables is documented.
 */

let h: SecretsService;
let document: OpenApiDocument;
const backends = backendsOf(allSecretsFamilies);

beforeAll(async () => {
  h = await startSecretsInMemory();
  // The harness's `secret/` is a kv version 1 mount; as version 2 it answers the kv rows' PATCH too.
  expect(
    (await h.call('POST', '/v1/sys/mounts/secret/tune', { token: h.rootToken, body: { options: { version: '2' } } }))
      .status,
  ).toBe(204);
  // Every backend type mounted where the fuzz mounts it (`mountsToEnable`, derived from the family list); `secret/`
  // is the harness's kv.
  const enabledAlready = await h.call('GET', '/v1/sys/mounts', { token: h.rootToken });
  expect(enabledAlready.status).toBe(200);
  for (const { table, path, type } of mountsToEnable(backends)) {
    if (table === 'secret' && `${path}/` in enabledAlready.body.data) continue;
    const enabled = await h.call('POST', `/v1/sys/${table === 'auth' ? 'auth' : 'mounts'}/${path}`, {
      token: h.rootToken,
      body: { type },
    });
    expect(enabled.status, `${table} ${path}`).toBe(204);
  }
  const served = await h.call('GET', '/v1/sys/internal/specs/openapi', { token: h.rootToken });
  expect(served.status).toBe(200);
  document = served.body;
});
afterAll(async () => {
  await h?.close();
});

const methods: HttpMethod[] = ['get', 'post', 'patch', 'delete'];

/** Every operation of the document: its path, method and whether it is a list (GET with `list=true`). */
function operationsOf(
  doc: OpenApiDocument,
): Array<{ path: string; method: HttpMethod; operation: OpenApiOperation; list: boolean }> {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    methods.flatMap((method) => {
      const operation = item[method];
      if (!operation) return [];
      const list =
        operation.parameters?.some(
          (parameter) => parameter.name === 'list' && parameter.in === 'query' && parameter.required,
        ) ?? false;
      return [{ path, method, operation, list }];
    }),
  );
}

/** A documented path with a placeholder for each parameter. */
const concrete = (path: string) => path.replace(/\{\w+\}/g, 'p1');

/** The mount that serves a path (the longest mount path it starts with), as the router picks it. */
function mountFor(path: string): { mount: string; type: string } | undefined {
  const candidates = Object.entries(mountOf)
    .map(([type, mount]) => ({ type, mount: `${mount}/` }))
    .filter(({ mount }) => `${path}/`.startsWith(mount));
  return candidates.sort((a, b) => b.mount.length - a.mount.length)[0];
}

/** The path-table row and operation a documented operation reaches, found with the router the server uses. */
function rowOf(
  path: string,
  method: HttpMethod,
  list: boolean,
): { backend: Backend; spec: PathSpec; operations: Operation[] } | undefined {
  // As the front makes it canonical (`lib/request-path.ts`): a documented list path's trailing `/` is removed before routing.
  const relativeFull = concrete(path).replace(/^\//, '').replace(/\/$/, '');
  const served = mountFor(relativeFull);
  const backend = backends.find((candidate) => candidate.type === served?.type);
  if (!served || !backend) return undefined;
  const relative = relativeFull.length < served.mount.length ? '' : relativeFull.slice(served.mount.length);
  const wanted: Operation[] = list
    ? ['list']
    : method === 'get'
      ? ['read']
      : method === 'post'
        ? ['update', 'create']
        : [method as Operation];
  const match = matchPaths(compilePaths(backend), relative).find(({ spec }) =>
    wanted.some((operation) => spec.operations[operation]),
  );
  // POST is both create and update (Vault's `x-vault-createSupported`).
  return match
    ? { backend, spec: match.spec, operations: wanted.filter((operation) => match.spec.operations[operation]) }
    : undefined;
}

const routeName = (backend: Backend, spec: PathSpec) =>
  spec.pattern ? `${mountOf[backend.type]}/${spec.pattern}` : (mountOf[backend.type] as string);

describe('GET /v1/sys/internal/specs/openapi', () => {
  it('needs a token, as Vault does', async () => {
    expect((await h.call('GET', '/v1/sys/internal/specs/openapi')).status).toBe(403);
  });

  it('is a valid OpenAPI 3.1 document with every enabled mount under its path', async () => {
    const result = await validate(structuredClone(document) as never);
    expect(result.valid ? [] : result.errors.map((error) => error.message)).toEqual([]);
    expect(document.openapi).toBe('3.1.0');
    for (const mount of Object.values(mountOf)) {
      expect(
        Object.keys(document.paths).some((path) => path.startsWith(`/${mount}/`)),
        mount,
      ).toBe(true);
    }
    expect(document.paths['/sys/internal/specs/openapi']?.get?.summary).toBeTruthy();
    expect(document.paths['/secret/{path}/']?.get?.parameters?.[0]).toMatchObject({
      name: 'list',
      in: 'query',
      required: true,
    });
  });

  it('names a summary for every operation and a description for every field (each missing one listed)', () => {
    const missing: string[] = [];
    for (const backend of backends) {
      for (const spec of backend.paths) {
        const row = `${backend.type} "${spec.pattern}"`;
        for (const operation of Object.keys(spec.operations) as Operation[]) {
          if (!spec.summaries?.[operation]) missing.push(`${row} ${operation}: no summary`);
        }
        const schema = z.toJSONSchema(spec.fields, { io: 'input', unrepresentable: 'any' }) as {
          properties?: Record<string, { description?: string }>;
        };
        for (const [field, property] of Object.entries(schema.properties ?? {})) {
          if (!property.description) missing.push(`${row} field "${field}": no description`);
        }
      }
    }
    expect(missing).toEqual([]);
    // The document carries them over: each operation's summary, each parameter's and body field's description.
    for (const { path, method, operation } of operationsOf(document)) {
      if (!operation.summary) missing.push(`document ${method.toUpperCase()} ${path}: no summary`);
      const parameters = [...(document.paths[path]?.parameters ?? []), ...(operation.parameters ?? [])];
      for (const parameter of parameters)
        if (!parameter.description)
          missing.push(`document ${method.toUpperCase()} ${path} parameter "${parameter.name}": no description`);
      for (const content of Object.values(operation.requestBody?.content ?? {})) {
        const properties = (content.schema.properties ?? {}) as Record<string, { description?: string }>;
        for (const [field, property] of Object.entries(properties)) {
          if (!property.description)
            missing.push(`document ${method.toUpperCase()} ${path} body field "${field}": no description`);
        }
      }
    }
    expect(missing).toEqual([]);
  });

  it('documents only routes the server answers', async () => {
    const unanswered: string[] = [];
    for (const { path, method, list } of operationsOf(document)) {
      // A route that may revoke the token it is called with gets a token of its own.
      const token = /revoke/.test(path)
        ? (await h.call('POST', '/v1/auth/token/create', { token: h.rootToken, body: { policies: ['root'] } })).body
            .auth.client_token
        : h.rootToken;
      const url = `/v1${concrete(path)}${list ? '?list=true' : ''}`;
      const body = method === 'post' || method === 'patch' ? {} : undefined;
      const headers: Record<string, string> =
        method === 'patch' ? { 'Content-Type': 'application/merge-patch+json' } : {};
      const answer = await h.call(method.toUpperCase(), url, { token, body, headers });
      const errors = JSON.stringify(answer.body?.errors ?? []);
      if (answer.status === 405 || (answer.status === 404 && /unsupported path|no handler for route/.test(errors))) {
        unanswered.push(`${method.toUpperCase()} ${url}: ${answer.status} ${errors}`);
      }
    }
    expect(unanswered).toEqual([]);
  }, 120_000);

  it('documents every row of the path tables, and every route the fuzz sends', () => {
    const documented = new Set<string>();
    const unrouted: string[] = [];
    for (const { path, method, list } of operationsOf(document)) {
      const row = rowOf(path, method, list);
      if (!row) unrouted.push(`${method.toUpperCase()} ${path}`);
      else for (const operation of row.operations) documented.add(`${routeName(row.backend, row.spec)} ${operation}`);
    }
    expect(unrouted).toEqual([]);

    const declared = backends.flatMap((backend) =>
      backend.paths.flatMap((spec) =>
        (Object.keys(spec.operations) as Operation[]).map((operation) => `${routeName(backend, spec)} ${operation}`),
      ),
    );
    expect(declared.filter((route) => !documented.has(route))).toEqual([]);

    const fuzzed = secretsRoutes(backends).flatMap((route) =>
      route.methods.map((method) => {
        const operations =
          {
            GET: ['read'],
            LIST: ['list'],
            'GET?list': ['list'],
            POST: ['create', 'update'],
            PUT: ['create', 'update'],
            DELETE: ['delete'],
          }[method] ?? [];
        return {
          route: `${route.name} ${method}`,
          found: operations.some((operation) => documented.has(`${route.name} ${operation}`)),
        };
      }),
    );
    expect(fuzzed.filter(({ found }) => !found).map(({ route }) => route)).toEqual([]);
  });
});
