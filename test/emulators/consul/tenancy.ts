import { ConsulError, type Namespace, type ParsedRequest, type Partition, type Scope, type Token } from './model.ts';
import type { ConsulState } from './state.ts';

/** Enterprise tenancy: `/v1/namespace` (1.7+) and `/v1/partition` (1.11+), create, read, update, delete, list. */
export function tenancyEndpoints(s: ConsulState) {
  const {
    tokens,
    policies,
    roles,
    namespaces,
    partitions,
    nextIndex,
    inScope,
    demand,
    namespaceView,
    partitionView,
    decode,
    field,
    isString,
  } = s;
  function writeNamespace(request: ParsedRequest, caller: Token, name?: string): unknown {
    const body = decode(request.body, 'Namespace', [
      'Name',
      'Description',
      'ACLs',
      'Meta',
      'Partition',
      'Hash',
      'CreateIndex',
      'ModifyIndex',
    ]);
    demand(caller, 'operator:write');
    const wanted = field(body, 'Name', isString, 'Namespace', 'string') ?? name ?? '';
    if (wanted === '') throw new ConsulError(400, 'Namespace name is required');
    if (name && wanted !== name) throw new ConsulError(400, 'Namespace name in the body does not match the URL');
    if (!/^[a-zA-Z0-9]([a-zA-Z0-9-_]{0,62}[a-zA-Z0-9])?$/.test(wanted))
      throw new ConsulError(400, `Invalid namespace name "${wanted}"`);
    const partition = (body.Partition as string | undefined) || request.query.partition || 'default';
    if (!partitions.has(partition)) throw new ConsulError(500, `Partition "${partition}" does not exist`);
    const key = `${partition}/${wanted}`;
    const existing = namespaces.get(key);
    if (!name && existing) throw new ConsulError(500, `Namespace "${wanted}" already exists`);
    if (name && !existing) throw new ConsulError(404, `Namespace "${wanted}" not found`);
    const at = nextIndex();
    const namespace: Namespace = {
      name: wanted,
      partition,
      description: field(body, 'Description', isString, 'Namespace', 'string') ?? '',
      meta: (body.Meta as Record<string, string> | undefined) ?? {},
      createIndex: existing?.createIndex ?? at,
      modifyIndex: at,
    };
    namespaces.set(key, namespace);
    return namespaceView(namespace);
  }

  function deleteNamespace(request: ParsedRequest, caller: Token, name: string): unknown {
    demand(caller, 'operator:write');
    const partition = request.query.partition || 'default';
    if (name === 'default') throw new ConsulError(500, 'Deletion of the default namespace is not permitted');
    const scope = { namespace: name, partition };
    namespaces.delete(`${partition}/${name}`);
    for (const store of [tokens, policies, roles] as Array<Map<string, Scope>>) {
      for (const [id, item] of store) if (inScope(item, scope)) store.delete(id);
    }
    return true;
  }

  function writePartition(request: ParsedRequest, caller: Token, name?: string): unknown {
    const body = decode(request.body, 'Partition', ['Name', 'Description', 'CreateIndex', 'ModifyIndex']);
    demand(caller, 'operator:write');
    const wanted = field(body, 'Name', isString, 'Partition', 'string') ?? name ?? '';
    if (wanted === '') throw new ConsulError(400, 'Partition name is required');
    if (name && wanted !== name) throw new ConsulError(400, 'Partition name in the body does not match the URL');
    if (!/^[a-zA-Z0-9]([a-zA-Z0-9-]{0,30}[a-zA-Z0-9])?$/.test(wanted))
      throw new ConsulError(400, `Invalid partition name "${wanted}"`);
    const existing = partitions.get(wanted);
    if (!name && existing) throw new ConsulError(500, `Partition "${wanted}" already exists`);
    if (name && !existing) throw new ConsulError(404, `Partition "${wanted}" not found`);
    const at = nextIndex();
    const partition: Partition = {
      name: wanted,
      description: field(body, 'Description', isString, 'Partition', 'string') ?? '',
      createIndex: existing?.createIndex ?? at,
      modifyIndex: at,
    };
    partitions.set(wanted, partition);
    if (!existing) {
      namespaces.set(`${wanted}/default`, {
        name: 'default',
        partition: wanted,
        description: 'Builtin Default Namespace',
        meta: {},
        createIndex: at,
        modifyIndex: at,
      });
    }
    return partitionView(partition);
  }

  function deletePartition(caller: Token, name: string): unknown {
    demand(caller, 'operator:write');
    if (name === 'default') throw new ConsulError(500, 'Deletion of the default partition is not permitted');
    partitions.delete(name);
    for (const key of [...namespaces.keys()]) if (key.startsWith(`${name}/`)) namespaces.delete(key);
    for (const store of [tokens, policies, roles] as Array<Map<string, Scope>>) {
      for (const [id, item] of store) if (item.partition === name) store.delete(id);
    }
    return true;
  }

  return { writeNamespace, deleteNamespace, writePartition, deletePartition };
}
