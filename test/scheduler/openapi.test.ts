import { randomUUID } from 'node:crypto';
import { validate } from '@readme/openapi-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { schedulerRoutes } from '../../packages/core/src/scheduler/composition/scheduler-app.ts';
import { type SchedulerService, startSchedulerInMemory } from '../support/scheduler-harness.ts';

interface Parameter {
  name: string;
  in: string;
  description?: string;
}
interface Operation {
  summary?: string;
  parameters?: Parameter[];
  requestBody?: { content: { 'application/json': { schema: JsonSchema } } };
}
interface JsonSchema {
  description?: string;
  properties?: Record<string, JsonSchema>;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
}
interface Document {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
}

const methods = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];

/** `METHOD /path/{param}` of every operation in the document. */
const documented = (document: Document) =>
  Object.entries(document.paths).flatMap(([path, item]) =>
    Object.keys(item)
      .filter((key) => methods.includes(key))
      .map((method) => `${method.toUpperCase()} ${path}`),
  );

/**
 * `METHOD /path/{param}` of every route the front answers, read from the table it matches requests against, as the
 * fuzz test reads it (test/fuzz/routes.fuzz.test.ts, `schedulerRoutes`).
 */
function answered(): string[] {
  const routes = schedulerRoutes.flatMap((route) => route.methods.map((method) => ({ method, path: route.path })));
  return [
    ...new Set(routes.map((route) => `${route.method} ${route.path.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, '{$1}')}`)),
  ];
}

/** Field paths of a JSON Schema's object properties (through arrays and unions) that have no description. */
function undescribed(schema: JsonSchema, at: string): string[] {
  const out: string[] = [];
  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    const path = `${at}.${name}`;
    if (!property.description) out.push(path);
    out.push(...undescribed(property, path));
  }
  if (schema.items) out.push(...undescribed(schema.items, `${at}[]`));
  for (const option of schema.anyOf ?? []) out.push(...undescribed(option, at));
  return out;
}

describe('GET /v1/internal/specs/openapi: the OpenAPI document of the scheduler, built from its route table', () => {
  let h: SchedulerService;
  let root: string;
  let document: Document;

  beforeAll(async () => {
    h = await startSchedulerInMemory();
    root = await h.bootstrap();
    const out = await h.call('GET', '/v1/internal/specs/openapi', { token: root });
    expect(out.status).toBe(200);
    document = out.body;
  });
  afterAll(() => h?.close());

  it('requires a token, but not a management token', async () => {
    expect(await h.call('GET', '/v1/internal/specs/openapi')).toMatchObject({ status: 403, text: 'Permission denied' });
    expect(await h.call('GET', '/v1/internal/specs/openapi', { token: randomUUID() })).toMatchObject({
      status: 403,
      text: 'ACL token not found',
    });
    const policy = await h.call('PUT', '/v1/acl/policy/reader', {
      token: root,
      body: { Rules: 'namespace "default" { policy = "read" }' },
    });
    expect(policy.status).toBe(200);
    const client = await h.call('POST', '/v1/acl/token', {
      token: root,
      body: { Name: 'reader', Policies: ['reader'] },
    });
    expect(client.status).toBe(200);
    const out = await h.call('GET', '/v1/internal/specs/openapi', { token: client.body.SecretID });
    expect(out.status).toBe(200);
    expect(out.body).toEqual(document);
  });

  it('is a valid OpenAPI 3.1 document (@readme/openapi-parser)', async () => {
    expect(document.openapi).toBe('3.1.0');
    const result = await validate(structuredClone(document) as never);
    expect(result).toMatchObject({ valid: true });
  });

  it('holds every route the service answers, and only those', () => {
    const inDocument = documented(document).sort();
    expect(inDocument).toEqual(answered().sort());
    expect(inDocument).toEqual(
      expect.arrayContaining([
        'GET /v1/acl/token/{accessor}',
        'PUT /v1/acl/auth-method/{name}',
        'POST /v1/acl/login',
        'GET /v1/event/stream',
        'GET /v1/internal/specs/openapi',
      ]),
    );
  });

  it('answers every operation it documents (none falls through to "Invalid URL path")', async () => {
    for (const operation of documented(document)) {
      const [method, template] = operation.split(' ') as [string, string];
      const path = template.replace(/\{[^}]+\}/g, () => randomUUID());
      const response = await h.fetch(
        new Request(`http://scheduler${path}`, {
          method,
          headers: { 'X-Scheduler-Token': root, 'content-type': 'application/json' },
          ...(method === 'GET' || method === 'DELETE' ? {} : { body: '{}' }),
        }),
      );
      // The event stream does not end: its first line is read, then it is cancelled.
      let text = '';
      if (path === '/v1/event/stream' && response.body) {
        const reader = response.body.getReader();
        text = new TextDecoder().decode((await reader.read()).value);
        await reader.cancel();
      } else text = await response.text();
      expect({ operation, status: response.status, text }).not.toMatchObject({
        status: 404,
        text: expect.stringMatching(/^Invalid URL path/),
      });
      expect(response.status, `${operation}: ${text}`).toBeLessThan(500);
    }
  });

  it('gives every operation a summary, every parameter and every body field a description', () => {
    const missing: string[] = [];
    for (const [path, item] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        const name = `${method.toUpperCase()} ${path}`;
        if (!operation.summary) missing.push(`${name}: summary`);
        for (const parameter of operation.parameters ?? []) {
          if (!parameter.description) missing.push(`${name}: ${parameter.in} parameter ${parameter.name}`);
        }
        const body = operation.requestBody?.content['application/json'].schema;
        if (body) missing.push(...undescribed(body, 'body').map((field) => `${name}: ${field}`));
      }
    }
    expect(missing).toEqual([]);
  });

  it('documents the path parameters of every templated path, and the blocking-query parameters of blocking reads', () => {
    for (const [path, item] of Object.entries(document.paths)) {
      const names = [...path.matchAll(/\{([^}]+)\}/g)].map((match) => match[1]);
      for (const operation of Object.values(item)) {
        const inPath = (operation.parameters ?? [])
          .filter((parameter) => parameter.in === 'path')
          .map((parameter) => parameter.name);
        expect({ path, parameters: inPath }).toEqual({ path, parameters: names });
      }
    }
    const roles = (document.paths['/v1/acl/roles']?.get?.parameters ?? []).map((parameter) => parameter.name);
    expect(roles).toEqual(expect.arrayContaining(['prefix', 'index', 'wait']));
  });
});
