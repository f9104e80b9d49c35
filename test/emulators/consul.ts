/**
 * An in-process emulator of the parts of Consul's HTTP API that an ACL token issuer uses, following Consul's
 * published API reference (api-docs/acl, acl/tokens, acl/policies, acl/roles, acl/legacy, namespaces,
 * admin-partitions, agent) field by field:
 *
 * - `PUT /v1/acl/bootstrap`: once; afterwards (or when an initial management token is configured) 403
 *   `Permission denied: ACL bootstrap no longer allowed (reset index: N)`. Below 1.4 it answers `{"ID"}`.
 * - `/v1/acl/token` (create), `/v1/acl/token/:AccessorID` (read, delete), `/v1/acl/token/self`, `/v1/acl/tokens`
 * - `/v1/acl/policy` (create), `/v1/acl/policy/:id` (read, update, delete), `/v1/acl/policy/name/:name`, `/v1/acl/policies`
 * - `/v1/acl/role` … the same shapes as policies (1.5+)
 * - legacy (below 1.11): `PUT /v1/acl/create`, `PUT /v1/acl/destroy/:id`, `GET /v1/acl/info/:id`, `GET /v1/acl/list`
 * - Enterprise: `/v1/namespace` (1.7+) and `/v1/partition` (1.11+): create, read, update, delete, list
 * - `GET /v1/agent/self`: `Config.Version` tells clients which of the above exist.
 *
 * Which endpoints and request fields exist follows the server version, as the reference's "Added in" notes say:
 * the token API and policies from 1.4, roles, service identities and expiration from 1.5, namespaces from 1.7,
 * node identities from 1.8, partitions from 1.11, and the legacy API removed in 1.11. Unknown JSON keys are
 * refused the way Consul's decoder refuses them. Auth is `X-Consul-Token` (or `Authorization: Bearer`, or
 * `?token=`): no token is the anonymous token, which may do nothing; an unknown one is 403 `ACL not found`.
 * A token may manage ACLs when it links the builtin `global-management` policy (or is a legacy `management`
 * token), or when one of its policies has a rule `acl = "write"` (`"read"` for reads); `agent` / `agent_prefix`
 * rules grant `/v1/agent/self`. Rules are otherwise stored, not interpreted.
 *
 * Errors are plain text, with Consul's statuses: 400 for a body that does not decode, 403 for permission and
 * unknown tokens, 404 for unknown endpoints, 500 for the server-side validation errors (an RPC error without
 * a type, as Consul answers them). Enterprise-only error texts are not in the public reference; ours say
 * the same thing plainly.
 *
 * TLS: give `tls` (a server certificate, and a CA to require client certificates as `verify_incoming` does).
 * `stop()` closes the listener and every open connection but keeps the state; `start()` listens again on the
 * same port, so a test can take the server down in the middle of a lease's life.
 */
import { createHash, randomUUID } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';

export interface ConsulEmulatorOptions {
  /** The Consul version `/v1/agent/self` reports and the API follows. Default `1.15.4`. */
  version?: string;
  /** Enterprise has namespaces (1.7+) and admin partitions (1.11+). Default true. */
  enterprise?: boolean;
  datacenter?: string;
  /** `acl.tokens.initial_management`: a management token that exists from the start (bootstrap is then refused). */
  initialManagementToken?: string;
  tls?: { cert: string; key: string; /** Require client certificates signed by this CA. */ clientCa?: string };
}

/** A stored token as the server holds it: links resolved to names, secrets in clear. For assertions. */
export interface StoredToken {
  AccessorID: string;
  SecretID: string;
  Description: string;
  Policies: Array<{ ID: string; Name: string }>;
  Roles: Array<{ ID: string; Name: string }>;
  ServiceIdentities: Array<{ ServiceName: string; Datacenters?: string[] }>;
  NodeIdentities: Array<{ NodeName: string; Datacenter: string }>;
  Local: boolean;
  Namespace: string;
  Partition: string;
  /** Legacy tokens only: `client` or `management`, and their rules. */
  Type?: string;
  Rules?: string;
  ExpirationTime?: string;
}

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
}

export interface ConsulEmulator {
  /** `host:port`, as an access config's `address`. */
  readonly address: string;
  readonly scheme: 'http' | 'https';
  /** The version the server reports; settable, to upgrade or downgrade the server under a client. */
  version: string;
  readonly running: boolean;
  /** Every request received, in order. */
  readonly requests: RecordedRequest[];
  /** Every live token, in every namespace and partition. */
  tokens(): StoredToken[];
  /** A live token by accessor or secret. */
  token(id: string): StoredToken | undefined;
  /** A request to this server over the network (HTTPS with the given client material). */
  request(method: string, path: string, options?: RequestOptions): Promise<{ status: number; body: string; json: unknown }>;
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

export interface RequestOptions {
  token?: string;
  body?: unknown;
  headers?: Record<string, string>;
  tls?: { ca?: string; cert?: string; key?: string };
}

const globalManagementId = '00000000-0000-0000-0000-000000000001';
const anonymousAccessor = '00000000-0000-0000-0000-000000000002';
const reservedPrefix = '00000000-0000-0000-0000-0000000000';
const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const policyNamePattern = /^[A-Za-z0-9\-_]{1,128}$/;
const roleNamePattern = /^[A-Za-z0-9\-_]{1,256}$/;
const identityNamePattern = /^[a-z0-9]([a-z0-9\-_]*[a-z0-9])?$/;

interface Scope {
  namespace: string;
  partition: string;
}

interface Link {
  ID: string;
}

interface Token extends Scope {
  accessor: string;
  secret: string;
  description: string;
  policies: Link[];
  roles: Link[];
  serviceIdentities: Array<{ ServiceName: string; Datacenters?: string[] }>;
  nodeIdentities: Array<{ NodeName: string; Datacenter: string }>;
  local: boolean;
  createTime: string;
  expirationTime?: string;
  createIndex: number;
  modifyIndex: number;
  legacy?: { type: 'client' | 'management'; rules: string };
}

interface Policy extends Scope {
  id: string;
  name: string;
  description: string;
  rules: string;
  datacenters: string[];
  createIndex: number;
  modifyIndex: number;
}

interface Role extends Scope {
  id: string;
  name: string;
  description: string;
  policies: Link[];
  serviceIdentities: Array<{ ServiceName: string; Datacenters?: string[] }>;
  nodeIdentities: Array<{ NodeName: string; Datacenter: string }>;
  createIndex: number;
  modifyIndex: number;
}

interface Namespace {
  name: string;
  partition: string;
  description: string;
  meta: Record<string, string>;
  createIndex: number;
  modifyIndex: number;
}

interface Partition {
  name: string;
  description: string;
  createIndex: number;
  modifyIndex: number;
}

/** A reply with Consul's status and a plain-text body. */
class ConsulError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

type Body = Record<string, unknown>;
type Version = [number, number, number];

function parseVersion(text: string): Version {
  const match = /^(\d+)\.(\d+)(?:\.(\d+))?/.exec(text);
  if (!match) throw new Error(`not a Consul version: ${text}`);
  return [Number(match[1]), Number(match[2]), Number(match[3] ?? 0)];
}

const atLeast = (version: Version, major: number, minor: number, patch = 0) =>
  version[0] !== major ? version[0] > major : version[1] !== minor ? version[1] > minor : version[2] >= patch;

export async function startConsulEmulator(options: ConsulEmulatorOptions = {}): Promise<ConsulEmulator> {
  const enterprise = options.enterprise ?? true;
  const datacenter = options.datacenter ?? 'dc1';
  let versionText = options.version ?? '1.15.4';
  let version = parseVersion(versionText);
  let index = 10;
  let bootstrapIndex = 0;
  const requests: RecordedRequest[] = [];
  const tokens = new Map<string, Token>();
  const policies = new Map<string, Policy>();
  const roles = new Map<string, Role>();
  const namespaces = new Map<string, Namespace>();
  const partitions = new Map<string, Partition>();
  const nextIndex = () => ++index;

  partitions.set('default', { name: 'default', description: 'Builtin Default Partition', createIndex: 1, modifyIndex: 1 });
  namespaces.set('default/default', { name: 'default', partition: 'default', description: 'Builtin Default Namespace', meta: {}, createIndex: 1, modifyIndex: 1 });
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
    bootstrapIndex = nextIndex();
  }

  function managementToken(secret: string, description: string): Token {
    const accessor = randomUUID();
    const at = nextIndex();
    return {
      accessor,
      secret,
      description,
      policies: atLeast(version, 1, 4) ? [{ ID: globalManagementId }] : [],
      roles: [],
      serviceIdentities: [],
      nodeIdentities: [],
      local: false,
      createTime: new Date().toISOString(),
      createIndex: at,
      modifyIndex: at,
      namespace: 'default',
      partition: 'default',
      ...(atLeast(version, 1, 4) ? {} : { legacy: { type: 'management' as const, rules: '' } }),
    };
  }

  // ---- lookups ---------------------------------------------------------------------------------------------

  const live = (token: Token) => !token.expirationTime || Date.parse(token.expirationTime) > Date.now();
  const bySecret = (secret: string) => [...tokens.values()].find((token) => token.secret === secret && live(token));
  const inScope = (item: Scope, scope: Scope) => item.namespace === scope.namespace && item.partition === scope.partition;

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
    token.legacy?.type === 'management' || token.policies.some((link) => link.ID === globalManagementId) ||
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
    throw new ConsulError(403, `Permission denied: token with AccessorID '${caller.accessor}' lacks permission '${permission}'`);
  }

  // ---- views -----------------------------------------------------------------------------------------------

  const hash = (value: unknown) => createHash('sha256').update(JSON.stringify(value)).digest('base64');
  const links = (items: Link[], lookup: (link: Link) => { name: string } | undefined) =>
    items.map((link) => ({ ID: link.ID, Name: lookup(link)?.name ?? '' }));
  const entMeta = (scope: Scope) =>
    enterprise ? { ...(atLeast(version, 1, 11) ? { Partition: scope.partition } : {}), ...(atLeast(version, 1, 7) ? { Namespace: scope.namespace } : {}) } : {};

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
      Hash: hash([token.description, token.policies, token.roles, token.serviceIdentities, token.nodeIdentities, token.local]),
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
    ...(atLeast(version, 1, 11) ? { Partition: namespace.partition } : {}),
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
      throw new ConsulError(400, `${what} decoding failed: 1 error(s) decoding:\n\n* '' expected a map, got '${Array.isArray(body) ? 'slice' : typeof body}'`);
    }
    const unknown = Object.keys(body).filter((key) => !known.includes(key));
    if (unknown.length > 0) {
      throw new ConsulError(400, `${what} decoding failed: 1 error(s) decoding:\n\n* '' has invalid keys: ${unknown.join(', ')}`);
    }
    return body as Body;
  }

  function field<T>(body: Body, key: string, check: (value: unknown) => value is T, what: string, type: string): T | undefined {
    const value = body[key];
    if (value === undefined || value === null) return undefined;
    if (!check(value)) throw new ConsulError(400, `${what} decoding failed: 1 error(s) decoding:\n\n* '${key}' expected type '${type}'`);
    return value;
  }
  const isString = (value: unknown): value is string => typeof value === 'string';
  const isBool = (value: unknown): value is boolean => typeof value === 'boolean';
  const isArray = (value: unknown): value is unknown[] => Array.isArray(value);

  const entKeys = () => [...(enterprise && atLeast(version, 1, 7) ? ['Namespace'] : []), ...(enterprise && atLeast(version, 1, 11) ? ['Partition'] : [])];

  /** The namespace and partition a request acts in: body, then query, then header, then the caller's token, then `default`. */
  function scopeOf(request: ParsedRequest, caller: Token, body?: Body): Scope {
    const namespace = (body?.Namespace as string | undefined) || request.query.ns || request.headers['x-consul-namespace'] || '';
    const partition = (body?.Partition as string | undefined) || request.query.partition || request.headers['x-consul-partition'] || '';
    if (namespace && (!enterprise || !atLeast(version, 1, 7))) {
      throw new ConsulError(400, `Invalid query parameter: "ns" - Namespaces are a Consul Enterprise feature${enterprise ? ` (version ${versionText} has none)` : ''}`);
    }
    if (partition && (!enterprise || !atLeast(version, 1, 11))) {
      throw new ConsulError(400, `Invalid query parameter: "partition" - Partitions are a Consul Enterprise feature${enterprise ? ` (version ${versionText} has none)` : ''}`);
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
      const found = link.ID ? policies.get(link.ID) : [...policies.values()].find((policy) => policy.name === link.Name && inScope(policy, scope));
      return found && (found.id === globalManagementId || inScope(found, scope)) ? found.id : undefined;
    });
  }

  function roleLinks(value: unknown, scope: Scope, what: string): Link[] {
    return resolveLinks(value, what, 'Roles', 'role', (link) => {
      const found = link.ID ? roles.get(link.ID) : [...roles.values()].find((role) => role.name === link.Name && inScope(role, scope));
      return found && inScope(found, scope) ? found.id : undefined;
    });
  }

  function resolveLinks(value: unknown, what: string, key: string, kind: string, find: (link: { ID?: string; Name?: string }) => string | undefined): Link[] {
    if (value === undefined || value === null) return [];
    if (!isArray(value)) throw new ConsulError(400, `${what} decoding failed: 1 error(s) decoding:\n\n* '${key}': source data must be an array or slice, got ${typeof value}`);
    const resolved: Link[] = [];
    for (const raw of value) {
      const link = (raw ?? {}) as { ID?: string; Name?: string };
      const id = find(link);
      if (!id) {
        throw new ConsulError(500, link.ID ? `No such ACL ${kind} with ID "${link.ID}"` : `No such ACL ${kind} with name "${link.Name ?? ''}"`);
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
      if (typeof name !== 'string' || name === '') throw new ConsulError(500, 'Service identity is missing the service name field on this token');
      const datacenters = Array.isArray(identity.Datacenters) ? identity.Datacenters.map(String) : [];
      if (local && datacenters.length > 0) {
        throw new ConsulError(500, `Service identity "${name}" cannot specify a list of datacenters on a local token`);
      }
      if (name.length > 256 || !identityNamePattern.test(name)) {
        throw new ConsulError(500, `Service identity "${name}" has an invalid name. Only lowercase alphanumeric characters, '-' and '_' are allowed`);
      }
      return datacenters.length > 0 ? { ServiceName: name, Datacenters: datacenters } : { ServiceName: name };
    });
  }

  function nodeIdentities(value: unknown, what: string): Token['nodeIdentities'] {
    if (value === undefined || value === null) return [];
    if (!isArray(value)) throw new ConsulError(400, `${what} decoding failed: 'NodeIdentities' must be an array`);
    return value.map((raw) => {
      const identity = (raw ?? {}) as { NodeName?: unknown; Datacenter?: unknown };
      if (typeof identity.NodeName !== 'string' || identity.NodeName === '') throw new ConsulError(500, 'Node identity is missing the node name field on this token');
      if (typeof identity.Datacenter !== 'string' || identity.Datacenter === '') throw new ConsulError(500, 'Node identity is missing the datacenter field on this token');
      if (identity.NodeName.length > 256 || !identityNamePattern.test(identity.NodeName)) {
        throw new ConsulError(500, "Node identity has an invalid name. Only lowercase alphanumeric characters, '-' and '_' are allowed");
      }
      return { NodeName: identity.NodeName, Datacenter: identity.Datacenter };
    });
  }

  function expiration(body: Body, createTime: number): string | undefined {
    const ttl = field(body, 'ExpirationTTL', (v): v is string | number => typeof v === 'string' || typeof v === 'number', 'Token', 'duration');
    const time = field(body, 'ExpirationTime', isString, 'Token', 'time');
    if (ttl !== undefined && time !== undefined) throw new ConsulError(500, 'Token Expiration TTL and Expiration Time cannot both be set');
    let expiresAt: number | undefined;
    if (ttl !== undefined) {
      const seconds = typeof ttl === 'number' ? ttl / 1e9 : goDurationSeconds(ttl);
      if (seconds < 0) throw new ConsulError(500, `Token Expiration TTL '${ttl}' should be > 0`);
      if (seconds > 0) expiresAt = createTime + seconds * 1000;
    } else if (time !== undefined) {
      expiresAt = Date.parse(time);
      if (Number.isNaN(expiresAt)) throw new ConsulError(400, `Token decoding failed: ExpirationTime "${time}" is not a time`);
    }
    if (expiresAt === undefined) return undefined;
    const inSeconds = (expiresAt - createTime) / 1000;
    if (inSeconds < 0) throw new ConsulError(500, 'ExpirationTime cannot be before CreateTime');
    if (inSeconds > 86_400) throw new ConsulError(500, `ExpirationTime cannot be more than 24h0m0s in the future (was ${inSeconds}s)`);
    if (inSeconds < 60) throw new ConsulError(500, `ExpirationTime cannot be less than 1m0s in the future (was ${inSeconds}s)`);
    return new Date(expiresAt).toISOString();
  }

  function freshId(given: unknown, label: 'AccessorID' | 'SecretID'): string {
    if (given === undefined || given === '') return randomUUID();
    if (typeof given !== 'string' || !uuidPattern.test(given)) throw new ConsulError(500, `Invalid Token: ${label} - not a valid UUID`);
    if (given.startsWith(reservedPrefix)) throw new ConsulError(500, `Invalid Token: ${label} - UUIDs with the prefix "${reservedPrefix}" are reserved`);
    if ([...tokens.values()].some((token) => token.accessor === given || token.secret === given)) {
      throw new ConsulError(500, `Invalid Token: ${label} is already in use`);
    }
    return given;
  }

  // ---- endpoints -------------------------------------------------------------------------------------------

  function bootstrap(): unknown {
    if (bootstrapIndex > 0) throw new ConsulError(403, `Permission denied: ACL bootstrap no longer allowed (reset index: ${bootstrapIndex})`);
    const token = managementToken(randomUUID(), 'Bootstrap Token (Global Management)');
    tokens.set(token.accessor, token);
    bootstrapIndex = token.createIndex;
    if (!atLeast(version, 1, 4)) return { ID: token.secret };
    return { ID: token.secret, ...tokenView(token, true) };
  }

  function createToken(request: ParsedRequest, caller: Token): unknown {
    const known = ['AccessorID', 'SecretID', 'Description', 'Policies', 'Local', 'CreateTime', 'Hash', 'CreateIndex', 'ModifyIndex', ...entKeys()];
    if (atLeast(version, 1, 5)) known.push('Roles', 'ServiceIdentities', 'ExpirationTime', 'ExpirationTTL', 'AuthMethod');
    if (atLeast(version, 1, 8, 1)) known.push('NodeIdentities');
    if (!atLeast(version, 1, 11)) known.push('Type', 'Rules');
    const body = decode(request.body, 'Token', known);
    const scope = scopeOf(request, caller, body);
    demand(caller, 'acl:write');
    if (body.Rules) throw new ConsulError(500, 'Rules cannot be specified for this token');
    if (body.Type) throw new ConsulError(500, 'Type cannot be specified for this token');
    if (body.AuthMethod) throw new ConsulError(500, 'AuthMethod field is disallowed outside of login');
    const local = field(body, 'Local', isBool, 'Token', 'bool') ?? false;
    const createTime = Date.now();
    const at = nextIndex();
    const token: Token = {
      accessor: freshId(body.AccessorID, 'AccessorID'),
      secret: freshId(body.SecretID, 'SecretID'),
      description: field(body, 'Description', isString, 'Token', 'string') ?? '',
      roles: roleLinks(body.Roles, scope, 'Token'),
      policies: policyLinks(body.Policies, scope, 'Token'),
      serviceIdentities: serviceIdentities(body.ServiceIdentities, local, 'Token'),
      nodeIdentities: nodeIdentities(body.NodeIdentities, 'Token'),
      local,
      createTime: new Date(createTime).toISOString(),
      createIndex: at,
      modifyIndex: at,
      ...scope,
    };
    const expires = expiration(body, createTime);
    if (expires) token.expirationTime = expires;
    tokens.set(token.accessor, token);
    return tokenView(token, true);
  }

  function readToken(request: ParsedRequest, caller: Token, accessor: string): unknown {
    if (accessor === 'self') return tokenView(caller, true);
    const scope = scopeOf(request, caller);
    demand(caller, 'acl:read');
    const token = tokens.get(accessor);
    if (!token || !live(token) || !inScope(token, scope)) throw new ConsulError(403, 'ACL not found');
    return tokenView(token, allows(caller, 'acl:write'));
  }

  function deleteToken(request: ParsedRequest, caller: Token, accessor: string): unknown {
    const scope = scopeOf(request, caller);
    demand(caller, 'acl:write');
    if (!uuidPattern.test(accessor)) throw new ConsulError(500, 'Accessor ID is missing or an invalid UUID');
    if (accessor === anonymousAccessor) throw new ConsulError(500, 'Delete operation not permitted on the anonymous token');
    const token = tokens.get(accessor);
    // Consul answers true for a token that is not there: there is nothing to do.
    if (token && inScope(token, scope)) tokens.delete(accessor);
    return true;
  }

  function listTokens(request: ParsedRequest, caller: Token): unknown {
    const everywhere = request.query.ns === '*';
    const scope = everywhere ? undefined : scopeOf(request, caller);
    demand(caller, 'acl:read');
    const showSecret = allows(caller, 'acl:write');
    return [...tokens.values()]
      .filter((token) => live(token) && (!scope || inScope(token, scope)))
      .filter((token) => !request.query.policy || token.policies.some((link) => link.ID === request.query.policy))
      .filter((token) => !request.query.role || token.roles.some((link) => link.ID === request.query.role))
      .map((token) => tokenView(token, showSecret));
  }

  function writePolicy(request: ParsedRequest, caller: Token, id?: string): unknown {
    const body = decode(request.body, 'Policy', ['ID', 'Name', 'Description', 'Rules', 'Datacenters', 'Hash', 'CreateIndex', 'ModifyIndex', ...entKeys()]);
    const scope = scopeOf(request, caller, body);
    demand(caller, 'acl:write');
    const name = field(body, 'Name', isString, 'Policy', 'string') ?? '';
    if (name === '') throw new ConsulError(500, 'Invalid Policy: no Name is set');
    if (!policyNamePattern.test(name)) throw new ConsulError(500, "Invalid Policy: invalid Name. Only alphanumeric characters, '-' and '_' are allowed");
    if (id && body.ID && body.ID !== id) throw new ConsulError(400, 'Policy Update failed: the ID in the body does not match the ID in the URL');
    const existing = id ? policies.get(id) : undefined;
    if (id && (!existing || !inScope(existing, scope))) throw new ConsulError(500, `cannot find policy ${id}`);
    const clash = [...policies.values()].find((policy) => policy.name === name && inScope(policy, scope) && policy.id !== id);
    if (clash) throw new ConsulError(500, `Invalid Policy: A Policy with Name "${name}" already exists`);
    if (id === globalManagementId) throw new ConsulError(500, 'Changing the Rules for the builtin global-management policy is not permitted');
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
    const policy = key.id ? policies.get(key.id) : [...policies.values()].find((item) => item.name === key.name && inScope(item, scope));
    if (!policy || (policy.id !== globalManagementId && !inScope(policy, scope))) throw new ConsulError(404, 'ACL policy not found');
    return policy;
  }

  function deletePolicy(request: ParsedRequest, caller: Token, id: string): unknown {
    const scope = scopeOf(request, caller);
    demand(caller, 'acl:write');
    if (id === globalManagementId) throw new ConsulError(500, 'Delete operation not permitted on the builtin global-management policy');
    const policy = policies.get(id);
    if (policy && inScope(policy, scope)) policies.delete(id);
    return true;
  }

  function writeRole(request: ParsedRequest, caller: Token, id?: string): unknown {
    const known = ['ID', 'Name', 'Description', 'Policies', 'ServiceIdentities', 'Hash', 'CreateIndex', 'ModifyIndex', ...entKeys()];
    if (atLeast(version, 1, 8, 1)) known.push('NodeIdentities');
    const body = decode(request.body, 'Role', known);
    const scope = scopeOf(request, caller, body);
    demand(caller, 'acl:write');
    const name = field(body, 'Name', isString, 'Role', 'string') ?? '';
    if (name === '') throw new ConsulError(500, 'Role name is missing');
    if (!roleNamePattern.test(name)) throw new ConsulError(500, "Role name invalid. Only alphanumeric characters, '-' and '_' are allowed");
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
    const role = key.id ? roles.get(key.id) : [...roles.values()].find((item) => item.name === key.name && inScope(item, scope));
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

  function legacyCreate(request: ParsedRequest, caller: Token): unknown {
    const body = decode(request.body, 'ACL', ['ID', 'Name', 'Type', 'Rules']);
    requireLegacyManagement(caller);
    const type = field(body, 'Type', isString, 'ACL', 'string') || 'client';
    if (type !== 'client' && type !== 'management') throw new ConsulError(500, `Invalid ACL Type "${type}"`);
    const secret = body.ID === undefined || body.ID === '' ? randomUUID() : String(body.ID);
    if ([...tokens.values()].some((token) => token.secret === secret)) throw new ConsulError(500, 'ACL with that ID already exists');
    const at = nextIndex();
    const token: Token = {
      accessor: randomUUID(),
      secret,
      description: field(body, 'Name', isString, 'ACL', 'string') ?? '',
      policies: [],
      roles: [],
      serviceIdentities: [],
      nodeIdentities: [],
      local: false,
      createTime: new Date().toISOString(),
      createIndex: at,
      modifyIndex: at,
      namespace: 'default',
      partition: 'default',
      legacy: { type, rules: field(body, 'Rules', isString, 'ACL', 'string') ?? '' },
    };
    tokens.set(token.accessor, token);
    return { ID: token.secret };
  }

  /** The legacy endpoints ask for a management token, not a permission. */
  function requireLegacyManagement(caller: Token): void {
    if (!isManagement(caller)) throw new ConsulError(403, 'Permission denied');
  }

  const legacyView = (token: Token) => ({
    CreateIndex: token.createIndex,
    ModifyIndex: token.modifyIndex,
    ID: token.secret,
    Name: token.description,
    Type: token.legacy?.type ?? (isManagement(token) ? 'management' : 'client'),
    Rules: token.legacy?.rules ?? '',
  });

  function writeNamespace(request: ParsedRequest, caller: Token, name?: string): unknown {
    const body = decode(request.body, 'Namespace', ['Name', 'Description', 'ACLs', 'Meta', 'Partition', 'Hash', 'CreateIndex', 'ModifyIndex']);
    demand(caller, 'operator:write');
    const wanted = field(body, 'Name', isString, 'Namespace', 'string') ?? name ?? '';
    if (wanted === '') throw new ConsulError(400, 'Namespace name is required');
    if (name && wanted !== name) throw new ConsulError(400, 'Namespace name in the body does not match the URL');
    if (!/^[a-zA-Z0-9]([a-zA-Z0-9-_]{0,62}[a-zA-Z0-9])?$/.test(wanted)) throw new ConsulError(400, `Invalid namespace name "${wanted}"`);
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
    if (!/^[a-zA-Z0-9]([a-zA-Z0-9-]{0,30}[a-zA-Z0-9])?$/.test(wanted)) throw new ConsulError(400, `Invalid partition name "${wanted}"`);
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
      namespaces.set(`${wanted}/default`, { name: 'default', partition: wanted, description: 'Builtin Default Namespace', meta: {}, createIndex: at, modifyIndex: at });
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

  function agentSelf(caller: Token): unknown {
    demand(caller, 'agent:read');
    const reported = enterprise ? `${versionText}+ent` : versionText;
    return {
      Config: {
        Datacenter: datacenter,
        PrimaryDatacenter: datacenter,
        NodeName: 'consul-emulator',
        NodeID: '5f0c7a59-6a8c-4ad4-9a4c-6c4f0c8c5a10',
        ...(enterprise && atLeast(version, 1, 11) ? { Partition: 'default' } : {}),
        Revision: 'emulator',
        Server: true,
        Version: reported,
        BuildDate: '2024-01-01T00:00:00Z',
      },
      DebugConfig: {},
      Coord: null,
      Member: { Name: 'consul-emulator', Addr: '127.0.0.1', Port: 8301, Tags: { build: `${reported}:emulator`, dc: datacenter, role: 'consul' }, Status: 1 },
      Stats: {},
      Meta: { 'consul-network-segment': '' },
    };
  }

  // ---- routing ---------------------------------------------------------------------------------------------

  interface ParsedRequest {
    method: string;
    path: string;
    query: Record<string, string>;
    headers: Record<string, string>;
    body: string;
  }

  function callerOf(request: ParsedRequest): Token {
    const bearer = /^Bearer\s+(.+)$/i.exec(request.headers.authorization ?? '')?.[1];
    const secret = request.headers['x-consul-token'] || bearer || request.query.token || '';
    if (secret === '') return tokens.get(anonymousAccessor) as Token;
    const token = bySecret(secret);
    if (!token) throw new ConsulError(403, 'ACL not found');
    return token;
  }

  function route(request: ParsedRequest): unknown {
    const { method, path } = request;
    const segments = path.split('/').filter((segment) => segment !== '').map(decodeURIComponent);
    if (segments[0] !== 'v1') throw new ConsulError(404, '404 page not found');
    const [, area, kind, ...rest] = segments;
    const hasTokenApi = atLeast(version, 1, 4);
    const hasLegacy = !atLeast(version, 1, 11);
    const only = (...methods: string[]) => {
      if (!methods.includes(method)) throw new ConsulError(405, `method ${method} not allowed`);
    };

    if (area === 'agent' && kind === 'self' && rest.length === 0) {
      only('GET');
      return agentSelf(callerOf(request));
    }
    if (area === 'acl' && kind === 'bootstrap' && rest.length === 0) {
      only('PUT');
      return bootstrap();
    }
    if (area === 'acl' && hasTokenApi) {
      const caller = () => callerOf(request);
      if (kind === 'token' && rest.length === 0) {
        only('PUT');
        return createToken(request, caller());
      }
      if (kind === 'token' && rest.length === 1) {
        only('GET', 'DELETE');
        return method === 'GET' ? readToken(request, caller(), rest[0] as string) : deleteToken(request, caller(), rest[0] as string);
      }
      if (kind === 'tokens' && rest.length === 0) {
        only('GET');
        return listTokens(request, caller());
      }
      if (kind === 'policy' && rest.length === 0) {
        only('PUT');
        return writePolicy(request, caller());
      }
      if (kind === 'policy' && rest[0] === 'name' && rest.length === 2) {
        only('GET');
        return policyView(findPolicy(request, caller(), { name: rest[1] as string }));
      }
      if (kind === 'policy' && rest.length === 1) {
        only('GET', 'PUT', 'DELETE');
        const id = rest[0] as string;
        if (method === 'GET') return policyView(findPolicy(request, caller(), { id }));
        return method === 'PUT' ? writePolicy(request, caller(), id) : deletePolicy(request, caller(), id);
      }
      if (kind === 'policies' && rest.length === 0) {
        only('GET');
        const who = caller();
        const scope = scopeOf(request, who);
        demand(who, 'acl:read');
        return [...policies.values()].filter((policy) => inScope(policy, scope) || policy.id === globalManagementId).map((policy) => policyView(policy, false));
      }
      if (atLeast(version, 1, 5)) {
        if (kind === 'role' && rest.length === 0) {
          only('PUT');
          return writeRole(request, caller());
        }
        if (kind === 'role' && rest[0] === 'name' && rest.length === 2) {
          only('GET');
          return roleView(findRole(request, caller(), { name: rest[1] as string }));
        }
        if (kind === 'role' && rest.length === 1) {
          only('GET', 'PUT', 'DELETE');
          const id = rest[0] as string;
          if (method === 'GET') return roleView(findRole(request, caller(), { id }));
          return method === 'PUT' ? writeRole(request, caller(), id) : deleteRole(request, caller(), id);
        }
        if (kind === 'roles' && rest.length === 0) {
          only('GET');
          const who = caller();
          const scope = scopeOf(request, who);
          demand(who, 'acl:read');
          return [...roles.values()].filter((role) => inScope(role, scope)).map(roleView);
        }
      }
    }
    if (area === 'acl' && hasLegacy) {
      if (kind === 'create' && rest.length === 0) {
        only('PUT');
        return legacyCreate(request, callerOf(request));
      }
      if (kind === 'destroy' && rest.length === 1) {
        only('PUT');
        requireLegacyManagement(callerOf(request));
        const token = [...tokens.values()].find((item) => item.secret === rest[0]);
        if (token && token.accessor !== anonymousAccessor) tokens.delete(token.accessor);
        return true;
      }
      if (kind === 'info' && rest.length === 1) {
        only('GET');
        const token = bySecret(rest[0] as string);
        return token ? [legacyView(token)] : [];
      }
      if (kind === 'list' && rest.length === 0) {
        only('GET');
        requireLegacyManagement(callerOf(request));
        return [...tokens.values()].filter(live).map(legacyView);
      }
    }
    if (enterprise && area === 'namespace' && atLeast(version, 1, 7)) {
      const caller = callerOf(request);
      if (kind === undefined) {
        only('PUT');
        return writeNamespace(request, caller);
      }
      if (rest.length === 0) {
        only('GET', 'PUT', 'DELETE');
        if (method === 'PUT') return writeNamespace(request, caller, kind);
        if (method === 'DELETE') return deleteNamespace(request, caller, kind);
        const namespace = namespaces.get(`${request.query.partition || 'default'}/${kind}`);
        if (!namespace) throw new ConsulError(404, '');
        return namespaceView(namespace);
      }
    }
    if (enterprise && area === 'namespaces' && kind === undefined && atLeast(version, 1, 7)) {
      only('GET');
      callerOf(request);
      const partition = request.query.partition || 'default';
      return [...namespaces.values()].filter((namespace) => namespace.partition === partition).map(namespaceView);
    }
    if (enterprise && area === 'partition' && atLeast(version, 1, 11)) {
      const caller = callerOf(request);
      if (kind === undefined) {
        only('PUT');
        return writePartition(request, caller);
      }
      if (rest.length === 0) {
        only('GET', 'PUT', 'DELETE');
        if (method === 'PUT') return writePartition(request, caller, kind);
        if (method === 'DELETE') return deletePartition(caller, kind);
        const partition = partitions.get(kind);
        if (!partition) throw new ConsulError(404, '');
        return partitionView(partition);
      }
    }
    if (enterprise && area === 'partitions' && kind === undefined && atLeast(version, 1, 11)) {
      only('GET');
      callerOf(request);
      return [...partitions.values()].map(partitionView);
    }
    throw new ConsulError(404, '404 page not found');
  }

  async function handle(incoming: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(incoming.url ?? '/', 'http://consul');
    const chunks: Buffer[] = [];
    for await (const chunk of incoming) chunks.push(chunk as Buffer);
    const request: ParsedRequest = {
      method: incoming.method ?? 'GET',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers: Object.fromEntries(Object.entries(incoming.headers).map(([key, value]) => [key, Array.isArray(value) ? (value[0] ?? '') : (value ?? '')])),
      body: Buffer.concat(chunks).toString('utf8'),
    };
    requests.push({ method: request.method, path: request.path, query: request.query });
    let status = 200;
    let body: string;
    try {
      body = JSON.stringify(route(request));
      response.setHeader('Content-Type', 'application/json');
      response.setHeader('X-Consul-Index', String(index));
      response.setHeader('X-Consul-KnownLeader', 'true');
      response.setHeader('X-Consul-LastContact', '0');
    } catch (error) {
      if (!(error instanceof ConsulError)) throw error;
      status = error.status;
      body = error.message;
      response.setHeader('Content-Type', 'text/plain; charset=utf-8');
    }
    response.statusCode = status;
    response.end(body);
  }

  const listener = (incoming: IncomingMessage, response: ServerResponse) => {
    handle(incoming, response).catch((error: unknown) => {
      response.statusCode = 500;
      response.end(String(error));
    });
  };
  const tls = options.tls;
  const makeServer = () =>
    tls
      ? https.createServer({ cert: tls.cert, key: tls.key, ...(tls.clientCa ? { ca: tls.clientCa, requestCert: true, rejectUnauthorized: true } : {}) }, listener)
      : http.createServer(listener);

  let server: http.Server | undefined;
  let port = 0;
  const listen = async () => {
    const created = makeServer();
    await new Promise<void>((resolve, reject) => {
      created.once('error', reject);
      created.listen(port, '127.0.0.1', () => resolve());
    });
    port = (created.address() as AddressInfo).port;
    server = created;
  };
  const shut = async () => {
    const current = server;
    if (!current) return;
    server = undefined;
    current.closeAllConnections();
    await new Promise<void>((resolve) => current.close(() => resolve()));
  };
  await listen();
  const scheme = tls ? ('https' as const) : ('http' as const);

  return {
    get address() {
      return `127.0.0.1:${port}`;
    },
    scheme,
    get version() {
      return versionText;
    },
    set version(value: string) {
      version = parseVersion(value);
      versionText = value;
    },
    get running() {
      return server !== undefined;
    },
    requests,
    tokens: () => [...tokens.values()].filter((token) => token.accessor !== anonymousAccessor && live(token)).map(stored),
    token(id) {
      const found = [...tokens.values()].find((token) => (token.accessor === id || token.secret === id) && live(token));
      return found && stored(found);
    },
    request: (method, path, requestOptions = {}) => send(scheme, `127.0.0.1:${port}`, method, path, requestOptions),
    stop: shut,
    start: async () => {
      if (!server) await listen();
    },
    close: shut,
  };
}

/** A plain HTTP(S) call, the way a Consul client makes one; the body comes back as text and, when it parses, JSON. */
function send(scheme: 'http' | 'https', address: string, method: string, path: string, options: RequestOptions) {
  const [host, port] = address.split(':') as [string, string];
  const payload = options.body === undefined ? undefined : typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
  const headers: Record<string, string> = { ...(options.token ? { 'X-Consul-Token': options.token } : {}), ...options.headers };
  if (payload !== undefined) headers['Content-Length'] = String(Buffer.byteLength(payload));
  return new Promise<{ status: number; body: string; json: unknown }>((resolve, reject) => {
    const common = { host, port: Number(port), method, path, headers, agent: false as const };
    const request =
      scheme === 'https'
        ? https.request({ ...common, ...(options.tls ?? {}) })
        : http.request(common);
    request.on('response', (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = JSON.parse(body);
        } catch {
          json = undefined;
        }
        resolve({ status: response.statusCode ?? 0, body, json });
      });
    });
    request.on('error', reject);
    request.end(payload);
  });
}

/** Go's `time.ParseDuration` for the units Consul's duration fields take. */
function goDurationSeconds(text: string): number {
  const units: Record<string, number> = { ns: 1e-9, us: 1e-6, µs: 1e-6, ms: 1e-3, s: 1, m: 60, h: 3600 };
  const sign = text.startsWith('-') ? -1 : 1;
  let rest = text.replace(/^[-+]/, '');
  if (rest === '0') return 0;
  let total = 0;
  while (rest.length > 0) {
    const match = /^(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/.exec(rest);
    if (!match) throw new ConsulError(400, `Token decoding failed: time: invalid duration "${text}"`);
    total += Number(match[1]) * (units[match[2] as string] as number);
    rest = rest.slice(match[0].length);
  }
  return sign * total;
}
