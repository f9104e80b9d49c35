/**
 * ACL roles: `/v1/acl/role`, `/v1/acl/role/:role_id`, `/v1/acl/roles`, `/v1/acl/role/name/:role_name`.
 * A name is unique (a name item in its own partition, written in the same transaction); every policy must exist.
 */
import type { Context, Hono } from 'hono';
import * as z from 'zod';
import { uuid } from '../../lib/random.ts';
import { badRequest, blockingQuery, notFound, permissionDenied, readBody, setIndexHeaders } from '../http/nomad.ts';
import type { SchedulerEnv } from '../scheduler.ts';
import { type SchedulerState, WriteConditionFailed } from '../state.ts';
import { sameContent, withoutKeys } from './common.ts';
import { shown, requireRoleName, requireUuid, validRoleName, validUuid } from './identifiers.ts';
import type { AclPolicies } from './policies.ts';

export const ROLE_PK = 'sched#role';
export const ROLE_NAME_PK = 'sched#role-name';

export interface AclRole {
  ID: string;
  Name: string;
  Description: string;
  Policies: Array<{ Name: string }>;
  CreateIndex: number;
  ModifyIndex: number;
}

const evenHex = /^(?:[0-9a-f]{2})*$/;

export class AclRoles {
  constructor(
    private readonly state: SchedulerState,
    private readonly policies: AclPolicies,
  ) {}

  /** The role of that ID; an ID that is not a UUID finds none (no role has one, and it might not fit a key). */
  async get(id: string): Promise<AclRole | undefined> {
    if (!validUuid.test(id)) return undefined;
    return withoutKeys<AclRole>(await this.state.store.get(ROLE_PK, id));
  }

  async getByName(name: string): Promise<AclRole | undefined> {
    if (!validRoleName.test(name)) return undefined;
    const link = await this.state.store.get(ROLE_NAME_PK, name);
    return link ? this.get(link.id as string) : undefined;
  }

  async list(): Promise<AclRole[]> {
    return (await this.state.store.prefix(ROLE_PK, '')).map((item) => withoutKeys<AclRole>(item) as AclRole);
  }

  /**
   * Creates (no `id`) or replaces the role `id`; an unchanged role keeps its index. The reads are made in the
   * write's plan, so of concurrent writers one takes a name and an identical change is made (and published) once.
   */
  async upsert(input: { Name: string; Description: string; Policies: Array<{ Name: string }> }, id?: string): Promise<AclRole> {
    const policies = [...new Set(input.Policies.map((link) => link.Name))].map((name) => ({ Name: name }));
    const problems: string[] = [];
    if (!validRoleName.test(input.Name)) problems.push(`invalid name '${shown(input.Name)}'`);
    if (input.Description.length > 256) problems.push('description longer than 256');
    if (policies.length === 0) problems.push('at least one policy should be specified');
    if (problems.length > 0) throw badRequest(`ACL role validation failed: ${problems.join('; ')}`);
    const content = { Name: input.Name, Description: input.Description, Policies: policies };
    const roleId = id ?? uuid();
    let result: AclRole | undefined;
    try {
      await this.state.commit(async (index) => {
        for (const link of policies) {
          if (!(await this.policies.get(link.Name))) throw badRequest(`cannot find policy ${shown(link.Name)}`);
        }
        const existing = id ? await this.get(id) : undefined;
        if (id && !existing) throw notFound('ACL role not found');
        if (existing && sameContent(content, { Name: existing.Name, Description: existing.Description, Policies: existing.Policies })) {
          result = existing;
          return undefined;
        }
        const holder = await this.state.store.get(ROLE_NAME_PK, content.Name);
        if (holder && holder.id !== roleId) throw badRequest(`role with name ${shown(content.Name)} already exists`);
        const stored: AclRole = { ID: roleId, ...content, CreateIndex: existing?.CreateIndex ?? index, ModifyIndex: index };
        result = stored;
        const renamed = existing && existing.Name !== content.Name;
        return {
          items: [
            {
              Put: {
                Item: { pk: ROLE_PK, sk: roleId, ...stored },
                ConditionExpression: existing ? 'ModifyIndex = :seen' : 'attribute_not_exists(pk)',
                ...(existing ? { ExpressionAttributeValues: { ':seen': existing.ModifyIndex } } : {}),
              },
            },
            ...(!existing || renamed
              ? [
                  {
                    Put: {
                      Item: { pk: ROLE_NAME_PK, sk: content.Name, id: roleId },
                      ConditionExpression: 'attribute_not_exists(pk)',
                    },
                  },
                ]
              : []),
            ...(renamed ? [{ Delete: { Key: { pk: ROLE_NAME_PK, sk: existing.Name } } }] : []),
          ],
          tables: ['acl_role'],
          events: [roleEvent('ACLRoleUpserted', stored)],
        };
      });
    } catch (error) {
      if (error instanceof WriteConditionFailed) {
        if (error.failed.includes(1)) throw badRequest(`role with name ${shown(content.Name)} already exists`);
        throw badRequest('the role was modified concurrently; retry');
      }
      throw error;
    }
    return result as AclRole;
  }

  /** Deletes a role and frees its name; 404 when there is none (also for each loser of concurrent deletes). */
  async delete(id: string): Promise<number> {
    return this.state.commit(async () => {
      const existing = await this.get(id);
      if (!existing) throw notFound('ACL role not found');
      return {
        items: [
          { Delete: { Key: { pk: ROLE_PK, sk: id }, ConditionExpression: 'attribute_exists(pk)' } },
          { Delete: { Key: { pk: ROLE_NAME_PK, sk: existing.Name } } },
        ],
        tables: ['acl_role'],
        events: [roleEvent('ACLRoleDeleted', existing)],
      };
    });
  }
}

/** Nomad publishes roles on the topic `ACLRole`; the filter key is the role's name. */
const roleEvent = (type: string, role: AclRole) => ({
  Topic: 'ACLRole',
  Type: type,
  Key: role.ID,
  Namespace: '',
  FilterKeys: [role.Name],
  Payload: { ACLRole: role },
});

const roleBody = z.object({
  ID: z.string().optional(),
  Name: z.string().optional(),
  Description: z.string().optional(),
  Policies: z
    .array(z.object({ Name: z.string() }))
    .nullish()
    .transform((value) => value ?? []),
});

export function roleRoutes(app: Hono<SchedulerEnv>): void {
  app.post('/v1/acl/role', async (c) => {
    const { scheduler } = c.var;
    await scheduler.requireManagement(c);
    const body = await readBody(c, roleBody);
    if (body.ID) throw badRequest('ACL role ID must not be set when creating a role');
    const role = await scheduler.roles.upsert({ Name: body.Name ?? '', Description: body.Description ?? '', Policies: body.Policies });
    setIndexHeaders(c, role.ModifyIndex);
    return c.json(role);
  });

  app.get('/v1/acl/roles', async (c) => {
    const { scheduler } = c.var;
    const caller = await scheduler.caller(c);
    const prefix = c.req.query('prefix') ?? '';
    if (!evenHex.test(prefix)) throw badRequest('Invalid prefix: it must be an even number of hexadecimal characters (0-9a-f)');
    return blockingQuery(c, scheduler.state, ['acl_role'], async () => {
      const mine = new Set(caller.token?.Roles.map((link) => link.ID) ?? []);
      return (await scheduler.roles.list())
        .filter((role) => role.ID.startsWith(prefix) && (caller.management || mine.has(role.ID)))
        .sort((a, b) => (a.ID < b.ID ? -1 : 1));
    });
  });

  const read = (find: (c: Context<SchedulerEnv>) => Promise<AclRole | undefined>) => async (c: Context<SchedulerEnv>) => {
    const { scheduler } = c.var;
    const caller = await scheduler.caller(c);
    const mine = new Set(caller.token?.Roles.map((link) => link.ID) ?? []);
    if (!caller.management && mine.size === 0) throw permissionDenied();
    return blockingQuery(c, scheduler.state, ['acl_role'], async () => {
      const role = await find(c);
      if (!caller.management && (!role || !mine.has(role.ID))) throw permissionDenied();
      if (!role) throw notFound('ACL role not found');
      return role;
    });
  };
  app.get('/v1/acl/role/name/:name', read((c) => c.var.scheduler.roles.getByName(requireRoleName(c.req.param('name') as string))));
  app.get('/v1/acl/role/:id', read((c) => c.var.scheduler.roles.get(requireUuid(c.req.param('id') as string, 'ACL role ID'))));

  app.post('/v1/acl/role/:id', async (c) => {
    const { scheduler } = c.var;
    await scheduler.requireManagement(c);
    const id = requireUuid(c.req.param('id'), 'ACL role ID');
    const body = await readBody(c, roleBody);
    if (!body.ID) throw badRequest('ACL role ID is required in the body');
    if (body.ID !== id) throw badRequest('ACL role ID in URL must match ID in body');
    const role = await scheduler.roles.upsert({ Name: body.Name ?? '', Description: body.Description ?? '', Policies: body.Policies }, id);
    setIndexHeaders(c, role.ModifyIndex);
    return c.json(role);
  });

  app.delete('/v1/acl/role/:id', async (c) => {
    const { scheduler } = c.var;
    await scheduler.requireManagement(c);
    setIndexHeaders(c, await scheduler.roles.delete(requireUuid(c.req.param('id'), 'ACL role ID')));
    return c.body(null, 200);
  });
}
