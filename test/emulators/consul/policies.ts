import { randomUUID } from 'node:crypto';
import {
  ConsulError,
  globalManagementId,
  type ParsedRequest,
  type Policy,
  policyNamePattern,
  type Token,
} from './model.ts';
import type { ConsulState } from './state.ts';

/** Policies: `/v1/acl/policy` (create, read by id or name, update, delete) and `/v1/acl/policies`. */
export function policyEndpoints(s: ConsulState) {
  const { policies, nextIndex, inScope, demand, policyView, decode, field, isString, isArray, entKeys, scopeOf } = s;
  function writePolicy(request: ParsedRequest, caller: Token, id?: string): unknown {
    const body = decode(request.body, 'Policy', [
      'ID',
      'Name',
      'Description',
      'Rules',
      'Datacenters',
      'Hash',
      'CreateIndex',
      'ModifyIndex',
      ...entKeys(),
    ]);
    const scope = scopeOf(request, caller, body);
    demand(caller, 'acl:write');
    const name = field(body, 'Name', isString, 'Policy', 'string') ?? '';
    if (name === '') throw new ConsulError(500, 'Invalid Policy: no Name is set');
    if (!policyNamePattern.test(name))
      throw new ConsulError(500, "Invalid Policy: invalid Name. Only alphanumeric characters, '-' and '_' are allowed");
    if (id && body.ID && body.ID !== id)
      throw new ConsulError(400, 'Policy Update failed: the ID in the body does not match the ID in the URL');
    const existing = id ? policies.get(id) : undefined;
    if (id && (!existing || !inScope(existing, scope))) throw new ConsulError(500, `cannot find policy ${id}`);
    const clash = [...policies.values()].find(
      (policy) => policy.name === name && inScope(policy, scope) && policy.id !== id,
    );
    if (clash) throw new ConsulError(500, `Invalid Policy: A Policy with Name "${name}" already exists`);
    if (id === globalManagementId)
      throw new ConsulError(500, 'Changing the Rules for the builtin global-management policy is not permitted');
    const at = nextIndex();
    const policy: Policy = {
      id: existing?.id ?? randomUUID(),
      name,
      description: field(body, 'Description', isString, 'Policy', 'string') ?? '',
      rules: field(body, 'Rules', isString, 'Policy', 'string') ?? '',
      datacenters: (field(body, 'Datacenters', isArray, 'Policy', '[]string') ?? []).map(String),
      createIndex: existing?.createIndex ?? at,
      modifyIndex: at,
      ...scope,
    };
    policies.set(policy.id, policy);
    return policyView(policy);
  }

  function findPolicy(request: ParsedRequest, caller: Token, key: { id?: string; name?: string }): Policy {
    const scope = scopeOf(request, caller);
    demand(caller, 'acl:read');
    const policy = key.id
      ? policies.get(key.id)
      : [...policies.values()].find((item) => item.name === key.name && inScope(item, scope));
    if (!policy || (policy.id !== globalManagementId && !inScope(policy, scope)))
      throw new ConsulError(404, 'ACL policy not found');
    return policy;
  }

  function deletePolicy(request: ParsedRequest, caller: Token, id: string): unknown {
    const scope = scopeOf(request, caller);
    demand(caller, 'acl:write');
    if (id === globalManagementId)
      throw new ConsulError(500, 'Delete operation not permitted on the builtin global-management policy');
    const policy = policies.get(id);
    if (policy && inScope(policy, scope)) policies.delete(id);
    return true;
  }

  return { writePolicy, findPolicy, deletePolicy };
}
