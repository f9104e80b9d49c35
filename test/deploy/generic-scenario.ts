import type { JsonSchema } from '../../packages/core/src/front/openapi.ts';
import { backendsOf, defaultMountsOf, type SecretsFamily } from '../../packages/core/src/secrets/families.ts';
import { type OpenApiPathItem, openApiDocument } from '../../packages/core/src/secrets/framework/openapi.ts';
import type { EngineScenario } from './engine-scenarios.ts';

/**
 * The deploy scenario of a family that declares none (test/deploy/engine-scenarios.ts), derived from its engine's
 * OpenAPI rows: the document its mounts would be described by (`secrets/framework/openapi.ts`), every path's
 * parameters named `scenario`. Its calls go with a token of a policy granting everything under the family's mounts,
 * usable 1000 times, so the function reads that policy and spends a use (an `UpdateItem` on the token). For each path,
 * in the document's order: a write with a body of the required fields (each the simplest value its JSON Schema
 * accepts), a read and a list; then each path's delete, last path first. Every lease an answer carries is revoked
 * through the system function: the first at once (the system function asks this family's function), the rest queued
 * for the family's job. An answer may refuse (4xx: a role that needs an upstream it cannot reach, a name it does not
 * accept); a 500 is a bug and fails the run.
 *
 * It drives what an engine's function does for every engine (its mount's storage, its token, its policies, its
 * leases); an engine whose writes need more than their required fields (a reachable server, a key it checks) gets a
 * run that leaves its grants unused, which the permission test names, and then declares its own scenario.
 */
export function genericScenario(family: SecretsFamily): EngineScenario {
  const backends = backendsOf([family]);
  const mounts = defaultMountsOf(backends).map(({ path, type }) => ({ path: `${path}/`, type }));
  const document = openApiDocument(mounts, new Map(backends.map((backend) => [backend.type, backend])), 'scenario');
  const paths = Object.entries(document.paths as Record<string, OpenApiPathItem>).map(([template, item]) => ({
    url: `/v1${template.replace(/\{\w+\}/g, 'scenario')}`,
    item,
  }));
  const leases = backends.some((backend) => Object.keys(backend.leases ?? {}).length > 0);
  const noLease = `the ${family} family declares no leases: a limited-use token revoked at its last use in this function would take its leases (TokenStore.revoke)`;
  return {
    runNotes: {
      'read:policies': undefined,
      ...(leases ? {} : { 'write:leases#*': noLease, 'write:revoked-leases#*': noLease }),
    },
    async drive({ call, send, fn, handler, system }) {
      const policy = `scenario-${family}`;
      const rules = mounts
        .map(({ path }) => `path "${path}*" { capabilities = ["create", "read", "update", "delete", "list"] }`)
        .join('\n');
      await call('Secrets-system', system, 'PUT', `/v1/sys/policies/acl/${policy}`, { policy: rules });
      const token = (
        await call('Secrets-system', system, 'POST', '/v1/auth/token/create', { policies: [policy], num_uses: 1000 })
      ).body.auth.client_token as string;
      const issued: string[] = [];
      const sent = async (method: string, url: string, body?: unknown) => {
        const answer = await send(fn, handler, method, url, body, token);
        if (typeof answer.body?.lease_id === 'string' && answer.body.lease_id !== '') issued.push(answer.body.lease_id);
      };
      for (const { url, item } of paths) {
        if (item.post) await sent('POST', url, bodyOf(item.post.requestBody?.content['application/json']?.schema));
        if (item.get) await sent('GET', url.endsWith('/') ? `${url}?list=true` : url);
      }
      for (const { url, item } of [...paths].reverse()) if (item.delete) await sent('DELETE', url);
      for (const [index, lease] of issued.entries())
        await call('Secrets-system', system, 'PUT', '/v1/sys/leases/revoke', {
          lease_id: lease,
          ...(index > 0 ? { sync: false } : {}),
        });
    },
  };
}

/** A body holding each required field at the simplest value its schema accepts; none when nothing is required. */
function bodyOf(schema: JsonSchema | undefined): Record<string, unknown> {
  const properties = (schema?.properties ?? {}) as Record<string, JsonSchema>;
  const required = (schema?.required ?? []) as string[];
  return Object.fromEntries(required.map((name) => [name, simplestValue(properties[name] ?? {})]));
}

/** The simplest value a JSON Schema accepts: its default, its first enum value or constant, else one of its type. */
export function simplestValue(schema: JsonSchema): unknown {
  if (schema.default !== undefined) return schema.default;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  if (schema.const !== undefined) return schema.const;
  const options = (schema.anyOf ?? schema.oneOf) as JsonSchema[] | undefined;
  if (options?.[0]) return simplestValue(options[0]);
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'integer':
    case 'number':
      return typeof schema.minimum === 'number' ? schema.minimum : 1;
    case 'boolean':
      return true;
    case 'array':
      return [];
    case 'object':
      return bodyOf(schema);
    case 'null':
      return null;
    default:
      return 'scenario';
  }
}
