/**
 * Namespaces over HTTP, as Nomad's (`command/agent/namespace_endpoint.go`, `nomad/namespace_endpoint.go`):
 * `GET /v1/namespaces`, `PUT|POST /v1/namespace`, `GET|PUT|POST|DELETE /v1/namespace/:name`. Reads show a namespace
 * to a caller with any capability in it (Nomad's AllowNamespace: its exact rule, else the closest glob); writes and
 * deletes need a management token.
 */
import * as z from 'zod/mini';
import { badRequest, notFound } from '../../../lib/errors.ts';
import { permissionDenied } from '../../http/nomad.ts';
import { route, type SchedulerReply, type SchedulerRoute } from '../../http/route.ts';
import type { Scheduler } from '../../composition/scheduler-core.ts';
import { type NamespaceBody, namespaceBody, validateNamespace } from './model.ts';

const namespaceName = z.string().check(z.describe('The namespace name.'));
const prefix = z.optional(z.string()).check(z.describe('Only namespaces whose name starts with this.'));

const write = async ({ scheduler, body }: { scheduler: Scheduler; body: NamespaceBody }): Promise<SchedulerReply> => ({
  empty: true,
  index: await scheduler.namespaces.upsert(validateNamespace(body)),
});

export const namespaceRoutes: SchedulerRoute[] = [
  route({
    method: 'GET',
    path: '/v1/namespaces',
    summary: 'List the namespaces the caller may use.',
    access: 'token',
    query: { prefix },
    blocking: ['namespaces'],
    returns: 'The namespaces, sorted by name.',
    handler: async ({ scheduler, caller, query }) => {
      const who = await caller();
      return {
        read: async () =>
          (await scheduler.namespaces.list()).filter(
            (namespace) => namespace.Name.startsWith(query.prefix ?? '') && who.acl.allowNamespace(namespace.Name),
          ),
      };
    },
  }),
  route({
    method: ['PUT', 'POST'],
    path: '/v1/namespace',
    summary: 'Create or update a namespace (a management token only).',
    access: 'management',
    body: namespaceBody,
    returns: 'An empty body; the index headers carry the write index.',
    handler: write,
  }),
  route({
    method: 'GET',
    path: '/v1/namespace/:name',
    summary: 'Read a namespace.',
    access: 'token',
    params: { name: namespaceName },
    blocking: ['namespaces'],
    returns: 'The namespace.',
    handler: async ({ scheduler, caller, params: { name } }) => {
      if (!(await caller()).acl.allowNamespace(name)) throw permissionDenied();
      return {
        read: async () => {
          const namespace = await scheduler.namespaces.get(name);
          if (!namespace) throw notFound('Namespace not found');
          return namespace;
        },
      };
    },
  }),
  route({
    method: ['PUT', 'POST'],
    path: '/v1/namespace/:name',
    summary: 'Create or update the namespace named in the path (a management token only).',
    access: 'management',
    params: { name: namespaceName },
    body: namespaceBody,
    returns: 'An empty body; the index headers carry the write index.',
    handler: async ({ scheduler, params, body }) => {
      if ((body.Name ?? '') !== params.name) throw badRequest('Namespace name does not match request path');
      return write({ scheduler, body });
    },
  }),
  route({
    method: 'DELETE',
    path: '/v1/namespace/:name',
    summary: 'Delete a namespace with no live jobs (not `default`; a management token only).',
    access: 'management',
    params: { name: namespaceName },
    returns: 'An empty body; the index headers carry the write index.',
    handler: async ({ scheduler, params: { name } }) => ({
      empty: true,
      index: await scheduler.namespaces.delete(name),
    }),
  }),
];
