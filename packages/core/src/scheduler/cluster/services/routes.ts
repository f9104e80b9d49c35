/**
 * Nomad's service discovery over HTTP (`command/agent/service_registration_endpoint.go`,
 * `nomad/service_registration_endpoint.go`): `GET /v1/services` (per namespace, each service name with its tags;
 * `namespace=*` every namespace the caller may read), `GET /v1/service/:name` (its registrations; `choose`, `filter`,
 * pages) and `DELETE /v1/service/:name/:id`. ACL as Nomad's: `read-job` in the namespace to read (with `*`, the
 * namespaces that grant it, and none is an empty list), `submit-job` or `delete-service-registration` to delete.
 * Nodes register and deregister through the client protocol (`client/routes.ts`).
 */
import * as z from 'zod/mini';
import { ListPage, listParameters, paginate, parsedFilter } from '../../http/list-query.ts';
import { permissionDenied } from '../../http/nomad.ts';
import { route, type SchedulerRoute } from '../../http/route.ts';
import type { Scheduler, SchedulerCaller } from '../../composition/scheduler-core.ts';
import { namespaceQuery } from '../../http/namespaced-list.ts';
import { allowsAny } from '../jobs/routes.ts';
import { choose, type ServiceRegistration, serviceStubs } from './model.ts';

/** The namespaces a read covers: the one asked for, or with `*` every namespace whose `read-job` the caller holds. */
async function readableNamespaces(scheduler: Scheduler, who: SchedulerCaller, namespace: string): Promise<string[]> {
  if (namespace !== '*') return [namespace];
  return (await scheduler.namespaces.list())
    .map((entry) => entry.Name)
    .filter((name) => who.acl.allowNamespaceOperation(name, 'read-job'));
}

/** What `read` finds in each of the namespaces, together. */
async function acrossNamespaces(
  namespaces: string[],
  read: (namespace: string) => Promise<ServiceRegistration[]>,
): Promise<ServiceRegistration[]> {
  return (await Promise.all(namespaces.map(read))).flat();
}

export const serviceRoutes: SchedulerRoute[] = [
  route({
    method: 'GET',
    path: '/v1/services',
    summary: 'List the registered services of a namespace (`*`: every namespace the caller may read), with their tags.',
    description:
      'As Nomad’s `ServiceRegistration.List`; `filter` (an addition: Nomad ignores it here) is a go-bexpr expression over each `{Namespace, ServiceName, Tags}`.',
    access: 'token',
    query: { namespace: namespaceQuery, filter: listParameters.filter },
    blocking: ['service_registrations'],
    returns: '`[{"Namespace", "Services": [{"ServiceName", "Tags"}]}]`, sorted by namespace and name.',
    handler: async ({ scheduler, caller, query }) => {
      const who = await caller();
      const namespace = query.namespace || 'default';
      if (namespace !== '*' && !who.acl.allowNamespaceOperation(namespace, 'read-job')) throw permissionDenied();
      const expression = await parsedFilter(query.filter);
      return {
        read: async () => {
          const namespaces = await readableNamespaces(scheduler, who, namespace);
          const stubs = serviceStubs(await acrossNamespaces(namespaces, (ns) => scheduler.services.list(ns)));
          if (!expression) return stubs;
          const flat = stubs.flatMap((entry) =>
            entry.Services.map((service) => ({ Namespace: entry.Namespace, ...service })),
          );
          const kept = paginate(flat, {
            expression,
            idOf: (service) => `${service.Namespace}\u0000${service.ServiceName}`,
          }).items;
          return serviceStubs(kept);
        },
      };
    },
  }),
  route({
    method: 'GET',
    path: '/v1/service/:name',
    summary: 'Read the registrations of a service.',
    description:
      'As Nomad’s `ServiceRegistration.GetService`: sorted by ID, paginated as Nomad’s NamespaceIDTokenizer (`<namespace>.<ID>`), `filter` over each registration (`"db" in Tags` selects by tag), then `choose=<n>|<key>` picks `n` of the page by rendezvous hashing.',
    access: 'token',
    params: { name: z.string().check(z.describe('The service name.')) },
    query: {
      namespace: namespaceQuery,
      choose: z
        .optional(z.string())
        .check(z.describe('`<n>|<key>`: the `n` registrations that rank first for `key` (rendezvous hashing).')),
      ...listParameters,
    },
    blocking: ['service_registrations'],
    returns:
      'The registrations (`[{"ID", "ServiceName", "Namespace", "NodeID", "Datacenter", "JobID", "AllocID", "Tags", "Address", "Port", "CreateIndex", "ModifyIndex"}]`).',
    handler: async ({ scheduler, caller, params, query }) => {
      const who = await caller();
      const namespace = query.namespace || 'default';
      if (namespace !== '*' && !who.acl.allowNamespaceOperation(namespace, 'read-job')) throw permissionDenied();
      const expression = await parsedFilter(query.filter);
      return {
        read: async () => {
          const namespaces = await readableNamespaces(scheduler, who, namespace);
          const registrations = await acrossNamespaces(namespaces, (ns) => scheduler.services.byName(ns, params.name));
          const page = paginate(registrations, {
            ...query,
            expression,
            idOf: (registration) => `${registration.Namespace}.${registration.ID}`,
          });
          return query.choose === undefined || query.choose === ''
            ? page
            : new ListPage(choose(page.items, query.choose), page.nextToken);
        },
      };
    },
  }),
  route({
    method: 'DELETE',
    path: '/v1/service/:name/:id',
    summary: 'Delete a service registration (Nomad’s `ServiceRegistration.DeleteByID`).',
    description:
      'The registration is found by its ID in the request’s namespace; the name in the path is not read, as in Nomad. A registration that is not there is a 404 (`service registration not found`; Nomad answers 500).',
    access: 'token',
    params: {
      name: z.string().check(z.describe('The service name (not read).')),
      id: z.string().check(z.describe('The registration ID.')),
    },
    query: { namespace: namespaceQuery },
    returns: 'An empty body; `X-Nomad-Index` the write’s index.',
    handler: async ({ scheduler, caller, params, query }) => {
      const namespace = query.namespace || 'default';
      if (!allowsAny((await caller()).acl, namespace, ['submit-job', 'delete-service-registration']))
        throw permissionDenied();
      const index = await scheduler.services.deleteById(params.id, () => {}, namespace);
      return { empty: true, index };
    },
  }),
];
