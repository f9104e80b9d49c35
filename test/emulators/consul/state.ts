import { createHash, randomUUID } from 'node:crypto';
import type { ConsulEmulatorOptions, RecordedRequest, StoredToken } from '../consul.ts';
import {
  anonymousAccessor,
  atLeast,
  type Body,
  ConsulError,
  globalManagementId,
  goDurationSeconds,
  identityNamePattern,
  type Link,
  type Namespace,
  type ParsedRequest,
  type Partition,
  type Policy,
  parseVersion,
  type Role,
  reservedPrefix,
  type Scope,
  type Token,
  uuidPattern,
} from './model.ts';

/**
 * The Consul emulator's state (tokens, policies, roles, namespaces, partitions, the raft index, the version) and the
 * helpers every endpoint shares: lookups and permission checks, the API's views of stored items, and the decoding of
 * request bodies the way Consul's decoder does it.
 */
export function createConsulState(options: ConsulEmulatorOptions) {
  const enterprise = options.enterprise ?? true;
  const datacenter = options.datacenter ?? 'dc1';
  const versionText = options.version ?? '1.15.4';
  /** The mutable parts: the version (settable under a client), the raft index, and the bootstrap's reset index. */
  const s = { versionText, version: parseVersion(versionText), index: 10, bootstrapIndex: 0 };
  const requests: RecordedRequest[] = [];
  const tokens = new Map<string, Token>();
  const policies = new Map<string, Policy>();
  const roles = new Map<string, Role>();
  const namespaces = new Map<string, Namespace>();
  const partitions = new Map<string, Partition>();
  const nextIndex = () => ++s.index;

  partitions.set('default', {
    name: 'default',
    description: 'Builtin Default Partition',
    createIndex: 1,
    modifyIndex: 1,
  });
  namespaces.set('default/default', {
    name: 'default',
    partition: 'default',
    description: 'Builtin Default Namespace',
    meta: {},
    createIndex: 1,
    modifyIndex: 1,
  });
  policies.set(globalManagementId, {
    id: globalManagementId,
    name: 'global-management',
    description: 'Builtin Policy that grants unlimited access',
    rules: 'acl = "write"\nagent_prefix "" { policy = "write" }\noperator = "write"',
    datacenters: [],
    namespace: 'default',
    partition: 'default',
    createIndex: 4,
    modifyIndex: 4,
  });
  tokens.set(anonymousAccessor, {
    accessor: anonymousAccessor,
    secret: 'anonymous',
    description: 'Anonymous Token',
    policies: [],
    roles: [],
    serviceIdentities: [],
    nodeIdentities: [],
    local: false,
    createTime: new Date(0).toISOString(),
    createIndex: 5,
    modifyIndex: 5,
    namespace: 'default',
    partition: 'default',
  });
  if (options.initialManagementToken) {
    tokens.set(randomUUID(), managementToken(options.initialManagementToken, 'Initial Management Token'));
    s.bootstrapIndex = nextIndex();
  }

  function managementToken(secret: string, description: string): Token {
    const accessor = randomUUID();
    const at = nextIndex();
    return {
      accessor,
      secret,
      description,
      policies: atLeast(s.version, 1, 4) ? [{ ID: globalManagementId }] : [],
      roles: [],
      serviceIdentities: [],
      nodeIdentities: [],
      local: false,
      createTime: new Date().toISOString(),
      createIndex: at,
      modifyIndex: at,
      namespace: 'default',
      partition: 'default',
      ...(atLeast(s.version, 1, 4) ? {} : { legacy: { type: 'management' as const, rules: '' } }),
    };
  }

  // ---- lookups ---------------------------------------------------------------------------------------------

  const live = (token: Token) => !token.expirationTime || Date.parse(token.expirationTime) > Date.now();
  const bySecret = (secret: string) => [...tokens.values()].find((token) => token.secret === secret && live(token));
  const inScope = (item: Scope, scope: Scope) =>
    item.namespace === scope.namespace && item.partition === scope.partition;

  function policyOf(link: Link): Policy | undefined {
    return policies.get(link.ID);
  }

  function rulesOf(token: Token): string[] {
    if (token.legacy) return [token.legacy.rules];
    const linked = [...token.policies];
    for (const roleLink of token.roles) linked.push(...(roles.get(roleLink.ID)?.policies ?? []));
    return linked.map((link) => policyOf(link)?.rules ?? '');
  }

  const isManagement = (token: Token) =>
    token.legacy?.type === 'management' ||
    token.policies.some((link) => link.ID === globalManagementId) ||
    token.roles.some((link) => roles.get(link.ID)?.policies.some((policy) => policy.ID === globalManagementId));

  function allows(token: Token, permission: 'acl:read' | 'acl:write' | 'agent:read' | 'operator:write'): boolean {
    if (isManagement(token)) return true;
    const rules = rulesOf(token).join('\n');
    switch (permission) {
      case 'acl:write':
        return /\bacl\s*=\s*"write"/.test(rules);
      case 'acl:read':
        return /\bacl\s*=\s*"(read|write)"/.test(rules);
      case 'agent:read':
        return /\bagent(_prefix)?\s+"[^"]*"\s*\{\s*policy\s*=\s*"(read|write)"/.test(rules);
      case 'operator:write':
        return /\boperator\s*=\s*"write"/.test(rules);
    }
  }

  function demand(caller: Token, permission: Parameters<typeof allows>[1]): void {
    if (allows(caller, permission)) return;
    if (caller.accessor === anonymousAccessor) {
      throw new ConsulError(
        403,
        `Permission denied: anonymous token lacks permission '${permission}'. The anonymous token is used implicitly when a request does not specify a token.`,
      );
    }
    throw new ConsulError(
      403,
      `Permission denied: token with AccessorID '${caller.accessor}' lacks permission '${permission}'`,
    );
  }

  // ---- views -----------------------------------------------------------------------------------------------

  const hash = (value: unknown) => createHash('sha256').update(JSON.stringify(value)).digest('base64');
  const links = (items: Link[], lookup: (link: Link) => { name: string } | undefined) =>
    items.map((link) => ({ ID: link.ID, Name: lookup(link)?.name ?? '' }));
  const entMeta = (scope: Scope) =>
    enterprise
      ? {
          ...(atLeast(s.version, 1, 11) ? { Partition: scope.partition } : {}),
          ...(atLeast(s.version, 1, 7) ? { Namespace: scope.namespace } : {}),
        }
      : {};

  function tokenView(token: Token, showSecret: boolean): Body {
    const policyLinks = links(token.policies, policyOf);
    const roleLinks = links(token.roles, (link) => roles.get(link.ID));
    return {
      AccessorID: token.accessor,
      SecretID: showSecret ? token.secret : '<hidden>',
      Description: token.description,
      ...(policyLinks.length > 0 ? { Policies: policyLinks } : {}),
      ...(roleLinks.length > 0 ? { Roles: roleLinks } : {}),
      ...(token.serviceIdentities.length > 0 ? { ServiceIdentities: token.serviceIdentities } : {}),
      ...(token.nodeIdentities.length > 0 ? { NodeIdentities: token.nodeIdentities } : {}),
      ...(token.legacy ? { Type: token.legacy.type, Rules: token.legacy.rules, Legacy: true } : {}),
      Local: token.local,
      ...(token.expirationTime ? { ExpirationTime: token.expirationTime } : {}),
      CreateTime: token.createTime,
      Hash: hash([
        token.description,
        token.policies,
        token.roles,
        token.serviceIdentities,
        token.nodeIdentities,
        token.local,
      ]),
      CreateIndex: token.createIndex,
      ModifyIndex: token.modifyIndex,
      ...entMeta(token),
    };
  }

  const policyView = (policy: Policy, withRules = true): Body => ({
    ID: policy.id,
    Name: policy.name,
    Description: policy.description,
    ...(withRules ? { Rules: policy.rules } : {}),
    Datacenters: policy.datacenters.length > 0 ? policy.datacenters : null,
    Hash: hash([policy.name, policy.rules, policy.datacenters]),
    CreateIndex: policy.createIndex,
    ModifyIndex: policy.modifyIndex,
    ...entMeta(policy),
  });

  const roleView = (role: Role): Body => ({
    ID: role.id,
    Name: role.name,
    Description: role.description,
    ...(role.policies.length > 0 ? { Policies: links(role.policies, policyOf) } : {}),
    ...(role.serviceIdentities.length > 0 ? { ServiceIdentities: role.serviceIdentities } : {}),
    ...(role.nodeIdentities.length > 0 ? { NodeIdentities: role.nodeIdentities } : {}),
    Hash: hash([role.name, role.policies, role.serviceIdentities, role.nodeIdentities]),
    CreateIndex: role.createIndex,
    ModifyIndex: role.modifyIndex,
    ...entMeta(role),
  });

  const namespaceView = (namespace: Namespace): Body => ({
    Name: namespace.name,
    Description: namespace.description,
    ACLs: { PolicyDefaults: [], RoleDefaults: [] },
    Meta: namespace.meta,
    ...(atLeast(s.version, 1, 11) ? { Partition: namespace.partition } : {}),
    CreateIndex: namespace.createIndex,
    ModifyIndex: namespace.modifyIndex,
  });

  const partitionView = (partition: Partition): Body => ({
    Name: partition.name,
    Description: partition.description,
    CreateIndex: partition.createIndex,
    ModifyIndex: partition.modifyIndex,
  });

  function stored(token: Token): StoredToken {
    return {
      AccessorID: token.accessor,
      SecretID: token.secret,
      Description: token.description,
      Policies: links(token.policies, policyOf),
      Roles: links(token.roles, (link) => roles.get(link.ID)),
      ServiceIdentities: token.serviceIdentities,
      NodeIdentities: token.nodeIdentities,
      Local: token.local,
      Namespace: token.namespace,
      Partition: token.partition,
      ...(token.legacy ? { Type: token.legacy.type, Rules: token.legacy.rules } : {}),
      ...(token.expirationTime ? { ExpirationTime: token.expirationTime } : {}),
    };
  }

  // ---- request parsing -------------------------------------------------------------------------------------

  /** Consul's decoder refuses keys its struct does not have; the struct grows with the version. */
  function decode(raw: string, what: string, known: string[]): Body {
    let body: unknown;
    try {
      body = raw.trim() === '' ? {} : JSON.parse(raw);
    } catch (error) {
      throw new ConsulError(400, `${what} decoding failed: ${(error as Error).message}`);
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw new ConsulError(
        400,
        `${what} decoding failed: 1 error(s) decoding:\n\n* '' expected a map, got '${Array.isArray(body) ? 'slice' : typeof body}'`,
      );
    }
    const unknown = Object.keys(body).filter((key) => !known.includes(key));
    if (unknown.length > 0) {
      throw new ConsulError(
        400,
        `${what} decoding failed: 1 error(s) decoding:\n\n* '' has invalid keys: ${unknown.join(', ')}`,
      );
    }
    return body as Body;
  }

  function field<T>(
    body: Body,
    key: string,
    check: (value: unknown) => value is T,
    what: string,
    type: string,
  ): T | undefined {
    const value = body[key];
    if (value === undefined || value === null) return undefined;
    if (!check(value))
      throw new ConsulError(400, `${what} decoding failed: 1 error(s) decoding:\n\n* '${key}' expected type '${type}'`);
    return value;
  }
  const isString = (value: unknown): value is string => typeof value === 'string';
  const isBool = (value: unknown): value is boolean => typeof value === 'boolean';
  const isArray = (value: unknown): value is unknown[] => Array.isArray(value);

  const entKeys = () => [
    ...(enterprise && atLeast(s.version, 1, 7) ? ['Namespace'] : []),
    ...(enterprise && atLeast(s.version, 1, 11) ? ['Partition'] : []),
  ];

  /** The namespace and partition a request acts in: body, then query, then header, then the caller's token, then `default`. */
  function scopeOf(request: ParsedRequest, caller: Token, body?: Body): Scope {
    const namespace =
      (body?.Namespace as string | undefined) || request.query.ns || request.headers['x-consul-namespace'] || '';
    const partition =
      (body?.Partition as string | undefined) || request.query.partition || request.headers['x-consul-partition'] || '';
    if (namespace && (!enterprise || !atLeast(s.version, 1, 7))) {
      throw new ConsulError(
        400,
        `Invalid query parameter: "ns" - Namespaces are a Consul Enterprise feature${enterprise ? ` (version ${s.versionText} has none)` : ''}`,
      );
    }
    if (partition && (!enterprise || !atLeast(s.version, 1, 11))) {
      throw new ConsulError(
        400,
        `Invalid query parameter: "partition" - Partitions are a Consul Enterprise feature${enterprise ? ` (version ${s.versionText} has none)` : ''}`,
      );
    }
    const scope = { namespace: namespace || caller.namespace, partition: partition || caller.partition };
    if (!partitions.has(scope.partition)) throw new ConsulError(500, `Partition "${scope.partition}" does not exist`);
    if (!namespaces.has(`${scope.partition}/${scope.namespace}`)) {
      throw new ConsulError(500, `Namespace "${scope.namespace}" does not exist in partition "${scope.partition}"`);
    }
    return scope;
  }

  function policyLinks(value: unknown, scope: Scope, what: string): Link[] {
    return resolveLinks(value, what, 'Policies', 'policy', (link) => {
      const found = link.ID
        ? policies.get(link.ID)
        : [...policies.values()].find((policy) => policy.name === link.Name && inScope(policy, scope));
      return found && (found.id === globalManagementId || inScope(found, scope)) ? found.id : undefined;
    });
  }

  function roleLinks(value: unknown, scope: Scope, what: string): Link[] {
    return resolveLinks(value, what, 'Roles', 'role', (link) => {
      const found = link.ID
        ? roles.get(link.ID)
        : [...roles.values()].find((role) => role.name === link.Name && inScope(role, scope));
      return found && inScope(found, scope) ? found.id : undefined;
    });
  }

  function resolveLinks(
    value: unknown,
    what: string,
    key: string,
    kind: string,
    find: (link: { ID?: string; Name?: string }) => string | undefined,
  ): Link[] {
    if (value === undefined || value === null) return [];
    if (!isArray(value))
      throw new ConsulError(
        400,
        `${what} decoding failed: 1 error(s) decoding:\n\n* '${key}': source data must be an array or slice, got ${typeof value}`,
      );
    const resolved: Link[] = [];
    for (const raw of value) {
      const link = (raw ?? {}) as { ID?: string; Name?: string };
      const id = find(link);
      if (!id) {
        throw new ConsulError(
          500,
          link.ID ? `No such ACL ${kind} with ID "${link.ID}"` : `No such ACL ${kind} with name "${link.Name ?? ''}"`,
        );
      }
      if (!resolved.some((existing) => existing.ID === id)) resolved.push({ ID: id });
    }
    return resolved;
  }

  function serviceIdentities(value: unknown, local: boolean, what: string): Token['serviceIdentities'] {
    if (value === undefined || value === null) return [];
    if (!isArray(value)) throw new ConsulError(400, `${what} decoding failed: 'ServiceIdentities' must be an array`);
    return value.map((raw) => {
      const identity = (raw ?? {}) as { ServiceName?: unknown; Datacenters?: unknown };
      const name = identity.ServiceName;
      if (typeof name !== 'string' || name === '')
        throw new ConsulError(500, 'Service identity is missing the service name field on this token');
      const datacenters = Array.isArray(identity.Datacenters) ? identity.Datacenters.map(String) : [];
      if (local && datacenters.length > 0) {
        throw new ConsulError(500, `Service identity "${name}" cannot specify a list of datacenters on a local token`);
      }
      if (name.length > 256 || !identityNamePattern.test(name)) {
        throw new ConsulError(
          500,
          `Service identity "${name}" has an invalid name. Only lowercase alphanumeric characters, '-' and '_' are allowed`,
        );
      }
      return datacenters.length > 0 ? { ServiceName: name, Datacenters: datacenters } : { ServiceName: name };
    });
  }

  function nodeIdentities(value: unknown, what: string): Token['nodeIdentities'] {
    if (value === undefined || value === null) return [];
    if (!isArray(value)) throw new ConsulError(400, `${what} decoding failed: 'NodeIdentities' must be an array`);
    return value.map((raw) => {
      const identity = (raw ?? {}) as { NodeName?: unknown; Datacenter?: unknown };
      if (typeof identity.NodeName !== 'string' || identity.NodeName === '')
        throw new ConsulError(500, 'Node identity is missing the node name field on this token');
      if (typeof identity.Datacenter !== 'string' || identity.Datacenter === '')
        throw new ConsulError(500, 'Node identity is missing the datacenter field on this token');
      if (identity.NodeName.length > 256 || !identityNamePattern.test(identity.NodeName)) {
        throw new ConsulError(
          500,
          "Node identity has an invalid name. Only lowercase alphanumeric characters, '-' and '_' are allowed",
        );
      }
      return { NodeName: identity.NodeName, Datacenter: identity.Datacenter };
    });
  }

  function expiration(body: Body, createTime: number): string | undefined {
    const ttl = field(
      body,
      'ExpirationTTL',
      (v): v is string | number => typeof v === 'string' || typeof v === 'number',
      'Token',
      'duration',
    );
    const time = field(body, 'ExpirationTime', isString, 'Token', 'time');
    if (ttl !== undefined && time !== undefined)
      throw new ConsulError(500, 'Token Expiration TTL and Expiration Time cannot both be set');
    let expiresAt: number | undefined;
    if (ttl !== undefined) {
      const seconds = typeof ttl === 'number' ? ttl / 1e9 : goDurationSeconds(ttl);
      if (seconds < 0) throw new ConsulError(500, `Token Expiration TTL '${ttl}' should be > 0`);
      if (seconds > 0) expiresAt = createTime + seconds * 1000;
    } else if (time !== undefined) {
      expiresAt = Date.parse(time);
      if (Number.isNaN(expiresAt))
        throw new ConsulError(400, `Token decoding failed: ExpirationTime "${time}" is not a time`);
    }
    if (expiresAt === undefined) return undefined;
    const inSeconds = (expiresAt - createTime) / 1000;
    if (inSeconds < 0) throw new ConsulError(500, 'ExpirationTime cannot be before CreateTime');
    if (inSeconds > 86_400)
      throw new ConsulError(500, `ExpirationTime cannot be more than 24h0m0s in the future (was ${inSeconds}s)`);
    if (inSeconds < 60)
      throw new ConsulError(500, `ExpirationTime cannot be less than 1m0s in the future (was ${inSeconds}s)`);
    return new Date(expiresAt).toISOString();
  }

  function freshId(given: unknown, label: 'AccessorID' | 'SecretID'): string {
    if (given === undefined || given === '') return randomUUID();
    if (typeof given !== 'string' || !uuidPattern.test(given))
      throw new ConsulError(500, `Invalid Token: ${label} - not a valid UUID`);
    if (given.startsWith(reservedPrefix))
      throw new ConsulError(500, `Invalid Token: ${label} - UUIDs with the prefix "${reservedPrefix}" are reserved`);
    if ([...tokens.values()].some((token) => token.accessor === given || token.secret === given)) {
      throw new ConsulError(500, `Invalid Token: ${label} is already in use`);
    }
    return given;
  }

  // ---- endpoints -------------------------------------------------------------------------------------------

  function callerOf(request: ParsedRequest): Token {
    const bearer = /^Bearer\s+(.+)$/i.exec(request.headers.authorization ?? '')?.[1];
    const secret = request.headers['x-consul-token'] || bearer || request.query.token || '';
    if (secret === '') return tokens.get(anonymousAccessor) as Token;
    const token = bySecret(secret);
    if (!token) throw new ConsulError(403, 'ACL not found');
    return token;
  }

  return Object.assign(s, {
    enterprise,
    datacenter,
    requests,
    tokens,
    policies,
    roles,
    namespaces,
    partitions,
    nextIndex,
    managementToken,
    live,
    bySecret,
    inScope,
    policyOf,
    rulesOf,
    isManagement,
    allows,
    demand,
    hash,
    links,
    entMeta,
    tokenView,
    policyView,
    roleView,
    namespaceView,
    partitionView,
    stored,
    decode,
    field,
    isString,
    isBool,
    isArray,
    entKeys,
    scopeOf,
    policyLinks,
    roleLinks,
    resolveLinks,
    serviceIdentities,
    nodeIdentities,
    expiration,
    freshId,
    callerOf,
  });
}

export type ConsulState = ReturnType<typeof createConsulState>;
