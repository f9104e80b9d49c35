/** An ACL role: a named set of policies a token may be linked to (Nomad's `ACLRole`). */
import * as z from 'zod/mini';
import { badRequest } from '../../../lib/errors.ts';
import type { PendingEvent } from '../../state.ts';
import { roleNameParameter, shown, uuidParameter, validRoleName } from '../identifiers.ts';

export interface AclRole {
  ID: string;
  Name: string;
  Description: string;
  Policies: Array<{ Name: string }>;
  CreateIndex: number;
  ModifyIndex: number;
}

export type RoleContent = Pick<AclRole, 'Name' | 'Description' | 'Policies'>;

export const roleBody = z.object({
  ID: z
    .optional(z.string())
    .check(z.describe('The role ID: absent when creating a role, equal to the ID in the path when updating one.')),
  Name: z
    .optional(z.string())
    .check(z.describe('The role name, unique among roles: 1 to 128 letters, digits, dashes and underscores.')),
  Description: z
    .optional(z.string())
    .check(z.describe('A human-readable description of the role (at most 256 characters).')),
  Policies: z
    .pipe(
      z.nullish(z.array(z.object({ Name: z.string().check(z.describe('The name of an existing ACL policy.')) }))),
      z.transform((value) => value ?? []),
    )
    .check(z.describe('The policies the role grants, as links by name; at least one.')),
});

export const roleId = uuidParameter('ACL role ID', 'The role ID (a UUID).');
export const roleName = roleNameParameter('The role name.');

/** A role list prefix is matched against IDs: whole bytes of hex. */
const evenHex = /^(?:[0-9a-f]{2})*$/;
export const rolePrefix = z
  .optional(
    z.string().check(
      z.refine((prefix) => evenHex.test(prefix), {
        error: 'Invalid prefix: it must be an even number of hexadecimal characters (0-9a-f)',
      }),
    ),
  )
  .check(z.describe('Only roles whose ID starts with this prefix (an even number of hexadecimal characters).'));

/** The role's content with its policy links deduplicated; refuses a role Nomad would refuse, naming every problem. */
export function validateRole(input: RoleContent): RoleContent {
  const policies = [...new Set(input.Policies.map((link) => link.Name))].map((name) => ({ Name: name }));
  const problems: string[] = [];
  if (!validRoleName.test(input.Name)) problems.push(`invalid name '${shown(input.Name)}'`);
  if (input.Description.length > 256) problems.push('description longer than 256');
  if (policies.length === 0) problems.push('at least one policy should be specified');
  if (problems.length > 0) throw badRequest(`ACL role validation failed: ${problems.join('; ')}`);
  return { Name: input.Name, Description: input.Description, Policies: policies };
}

/** Nomad publishes roles on the topic `ACLRole`; the filter key is the role's name. */
export const roleEvent = (type: string, role: AclRole): PendingEvent => ({
  Topic: 'ACLRole',
  Type: type,
  Key: role.ID,
  Namespace: '',
  FilterKeys: [role.Name],
  Payload: { ACLRole: role },
});
