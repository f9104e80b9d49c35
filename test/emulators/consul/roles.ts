import { randomUUID } from 'node:crypto';
import { atLeast, ConsulError, type ParsedRequest, type Role, roleNamePattern, type Token } from './model.ts';
import type { ConsulState } from './state.ts';

/** Roles (1.5+): `/v1/acl/role` (create, read by id or name, update, delete) and `/v1/acl/roles`. */
export function roleEndpoints(s: ConsulState) {
  const {
    roles,
    nextIndex,
    inScope,
    demand,
    roleView,
    decode,
    field,
    isString,
    entKeys,
    scopeOf,
    policyLinks,
    serviceIdentities,
    nodeIdentities,
  } = s;
  function writeRole(request: ParsedRequest, caller: Token, id?: string): unknown {
    const known = [
      'ID',
      'Name',
      'Description',
      'Policies',
      'ServiceIdentities',
      'Hash',
      'CreateIndex',
      'ModifyIndex',
      ...entKeys(),
    ];
    if (atLeast(s.version, 1, 8, 1)) known.push('NodeIdentities');
    const body = decode(request.body, 'Role', known);
    const scope = scopeOf(request, caller, body);
    demand(caller, 'acl:write');
    const name = field(body, 'Name', isString, 'Role', 'string') ?? '';
    if (name === '') throw new ConsulError(500, 'Role name is missing');
    if (!roleNamePattern.test(name))
      throw new ConsulError(500, "Role name invalid. Only alphanumeric characters, '-' and '_' are allowed");
    const existing = id ? roles.get(id) : undefined;
    if (id && (!existing || !inScope(existing, scope))) throw new ConsulError(500, `cannot find role ${id}`);
    const clash = [...roles.values()].find((role) => role.name === name && inScope(role, scope) && role.id !== id);
    if (clash) throw new ConsulError(500, `Invalid Role: A Role with Name "${name}" already exists`);
    const at = nextIndex();
    const role: Role = {
      id: existing?.id ?? randomUUID(),
      name,
      description: field(body, 'Description', isString, 'Role', 'string') ?? '',
      policies: policyLinks(body.Policies, scope, 'Role'),
      serviceIdentities: serviceIdentities(body.ServiceIdentities, false, 'Role'),
      nodeIdentities: nodeIdentities(body.NodeIdentities, 'Role'),
      createIndex: existing?.createIndex ?? at,
      modifyIndex: at,
      ...scope,
    };
    roles.set(role.id, role);
    return roleView(role);
  }

  function findRole(request: ParsedRequest, caller: Token, key: { id?: string; name?: string }): Role {
    const scope = scopeOf(request, caller);
    demand(caller, 'acl:read');
    const role = key.id
      ? roles.get(key.id)
      : [...roles.values()].find((item) => item.name === key.name && inScope(item, scope));
    if (!role || !inScope(role, scope)) throw new ConsulError(404, 'ACL role not found');
    return role;
  }

  function deleteRole(request: ParsedRequest, caller: Token, id: string): unknown {
    const scope = scopeOf(request, caller);
    demand(caller, 'acl:write');
    const role = roles.get(id);
    if (role && inScope(role, scope)) roles.delete(id);
    return true;
  }

  return { writeRole, findRole, deleteRole };
}
