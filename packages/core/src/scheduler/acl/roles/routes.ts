/** ACL roles over HTTP: `/v1/acl/role`, `/v1/acl/role/:id`, `/v1/acl/roles`, `/v1/acl/role/name/:name`. */
import { badRequest, notFound } from '../../../lib/errors.ts';
import { permissionDenied } from '../../http/nomad.ts';
import { route, type SchedulerRoute } from '../../http/route.ts';
import type { Scheduler, SchedulerCaller } from '../../composition/scheduler-core.ts';
import { type AclRole, roleBody, roleId, roleName, rolePrefix } from './model.ts';

/** A role read: a management token reads any role, another token only the roles it is linked to. */
const readRole =
  <Params>(find: (scheduler: Scheduler, params: Params) => Promise<AclRole | undefined>) =>
  async ({
    scheduler,
    caller,
    params,
  }: {
    scheduler: Scheduler;
    caller: () => Promise<SchedulerCaller>;
    params: Params;
  }) => {
    const who = await caller();
    const mine = new Set(who.token?.Roles.map((link) => link.ID) ?? []);
    if (!who.management && mine.size === 0) throw permissionDenied();
    return {
      read: async () => {
        const role = await find(scheduler, params);
        if (!who.management && (!role || !mine.has(role.ID))) throw permissionDenied();
        if (!role) throw notFound('ACL role not found');
        return role;
      },
    };
  };

export const roleRoutes: SchedulerRoute[] = [
  route({
    method: 'POST',
    path: '/v1/acl/role',
    summary: 'Create an ACL role.',
    access: 'management',
    body: roleBody,
    returns: 'The role, with its new ID.',
    handler: async ({ scheduler, body }) => {
      if (body.ID) throw badRequest('ACL role ID must not be set when creating a role');
      const role = await scheduler.roles.upsert({
        Name: body.Name ?? '',
        Description: body.Description ?? '',
        Policies: body.Policies,
      });
      return { json: role, index: role.ModifyIndex };
    },
  }),
  route({
    method: 'GET',
    path: '/v1/acl/roles',
    summary: 'List the ACL roles (a management token sees all, another token the roles it is linked to).',
    access: 'token',
    query: { prefix: rolePrefix },
    blocking: ['acl_role'],
    returns: 'The roles, sorted by ID.',
    handler: async ({ scheduler, caller, query }) => {
      const who = await caller();
      const prefix = query.prefix ?? '';
      return {
        read: async () => {
          const mine = new Set(who.token?.Roles.map((link) => link.ID) ?? []);
          return (await scheduler.roles.list())
            .filter((role) => role.ID.startsWith(prefix) && (who.management || mine.has(role.ID)))
            .sort((a, b) => (a.ID < b.ID ? -1 : 1));
        },
      };
    },
  }),
  route({
    method: 'GET',
    path: '/v1/acl/role/name/:name',
    summary: 'Read an ACL role by its name.',
    access: 'token',
    params: { name: roleName },
    blocking: ['acl_role'],
    returns: 'The role.',
    handler: readRole((scheduler, params: { name: string }) => scheduler.roles.getByName(params.name)),
  }),
  route({
    method: 'GET',
    path: '/v1/acl/role/:id',
    summary: 'Read an ACL role by its ID.',
    access: 'token',
    params: { id: roleId },
    blocking: ['acl_role'],
    returns: 'The role.',
    handler: readRole((scheduler, params: { id: string }) => scheduler.roles.get(params.id)),
  }),
  route({
    method: 'POST',
    path: '/v1/acl/role/:id',
    summary: 'Update an ACL role (the body names the same ID).',
    access: 'management',
    params: { id: roleId },
    body: roleBody,
    returns: 'The updated role.',
    handler: async ({ scheduler, params: { id }, body }) => {
      if (!body.ID) throw badRequest('ACL role ID is required in the body');
      if (body.ID !== id) throw badRequest('ACL role ID in URL must match ID in body');
      const role = await scheduler.roles.upsert(
        { Name: body.Name ?? '', Description: body.Description ?? '', Policies: body.Policies },
        id,
      );
      return { json: role, index: role.ModifyIndex };
    },
  }),
  route({
    method: 'DELETE',
    path: '/v1/acl/role/:id',
    summary: 'Delete an ACL role.',
    access: 'management',
    params: { id: roleId },
    returns: 'An empty body; the index headers carry the write index.',
    handler: async ({ scheduler, params }) => ({ empty: true, index: await scheduler.roles.delete(params.id) }),
  }),
];
