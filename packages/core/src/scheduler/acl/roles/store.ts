/**
 * ACL roles in the table: one item per role (`ROLE_PK`, the ID) and one per name (`ROLE_NAME_PK`, the name → the ID),
 * written in the same transaction, so a name is unique. Every policy a role names must exist.
 */
import { badRequest, notFound } from '../../../lib/errors.ts';
import { uuid } from '../../../lib/random.ts';
import { ROLE_NAME_PK, ROLE_PK } from '../../keys.ts';
import { type SchedulerState, WriteConditionFailed } from '../../state.ts';
import { itemKind } from '../../../storage/item-mac.ts';
import type { Write } from '../../../storage/store.ts';
import { sameContent, unchangedSince, withoutKeys } from '../common.ts';
import { shown, validRoleName, validUuid } from '../identifiers.ts';
import type { AclPolicies } from '../policies/store.ts';
import { type AclRole, type RoleContent, roleEvent, validateRole } from './model.ts';

/** A role item is authenticated whole (`storage/item-mac.ts`): a forged or moved one does not exist. */
export const roleKind = itemKind('scheduler-acl-role', [], { epoch: 'bootstrap' });

export class AclRoles {
  constructor(
    private readonly state: SchedulerState,
    private readonly policies: AclPolicies,
  ) {}

  /** The role of that ID; an ID that is not a UUID finds none (no role has one, and it might not fit a key). */
  async get(id: string): Promise<AclRole | undefined> {
    if (!validUuid.test(id)) return undefined;
    return withoutKeys<AclRole>(await this.state.store.getVerified(roleKind, ROLE_PK, id));
  }

  async getByName(name: string): Promise<AclRole | undefined> {
    if (!validRoleName.test(name)) return undefined;
    const link = await this.state.store.get(ROLE_NAME_PK, name);
    // The name link is not authenticated; the role is, and must carry this name back.
    const role = link ? await this.get(link.id as string) : undefined;
    return role?.Name === name ? role : undefined;
  }

  async list(): Promise<AclRole[]> {
    return (await this.state.store.list(ROLE_PK))
      .filter((item) => this.state.store.verified(roleKind, item))
      .map((item) => withoutKeys<AclRole>(item) as AclRole);
  }

  /**
   * Creates (no `id`) or replaces the role `id`; an unchanged role keeps its index. The reads are made in the
   * write's plan, so of concurrent writers one takes a name and an identical change is made (and published) once.
   */
  async upsert(input: RoleContent, id?: string): Promise<AclRole> {
    const content = validateRole(input);
    const policies = content.Policies;
    const roleId = id ?? uuid();
    let result: AclRole | undefined;
    try {
      await this.state.commit(async (index) => {
        for (const link of policies) {
          if (!(await this.policies.get(link.Name))) throw badRequest(`cannot find policy ${shown(link.Name)}`);
        }
        const existing = id ? await this.get(id) : undefined;
        if (id && !existing) throw notFound('ACL role not found');
        if (
          existing &&
          sameContent(content, { Name: existing.Name, Description: existing.Description, Policies: existing.Policies })
        ) {
          result = existing;
          return undefined;
        }
        const holder = await this.state.store.get(ROLE_NAME_PK, content.Name);
        if (holder && holder.id !== roleId) throw badRequest(`role with name ${shown(content.Name)} already exists`);
        const stored: AclRole = {
          ID: roleId,
          ...content,
          CreateIndex: existing?.CreateIndex ?? index,
          ModifyIndex: index,
        };
        result = stored;
        const renamed = existing && existing.Name !== content.Name;
        return {
          items: [
            {
              put: this.state.store.signed(roleKind, { pk: ROLE_PK, sk: roleId, ...stored }),
              when: unchangedSince(existing),
            },
            ...(!existing || renamed
              ? [{ put: { pk: ROLE_NAME_PK, sk: content.Name, id: roleId }, when: { absent: true } } satisfies Write]
              : []),
            ...(renamed ? [{ delete: { pk: ROLE_NAME_PK, sk: existing.Name } }] : []),
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
          { delete: { pk: ROLE_PK, sk: id }, when: { exists: true } },
          { delete: { pk: ROLE_NAME_PK, sk: existing.Name } },
        ],
        tables: ['acl_role'],
        events: [roleEvent('ACLRoleDeleted', existing)],
      };
    });
  }
}
