import * as z from 'zod';
import { formatDuration } from '../../../lib/duration.ts';
import { badRequest } from '../../../lib/errors.ts';
import { listKeysUnder, path, type PathSpec, type Request } from '../../framework/backend.ts';
import { bool, duration, stringList } from '../../framework/fields.ts';
import type { MountStorage } from '../../mounts/mount-storage.ts';
import { requireAccess, serverVersion } from './config-access.ts';
import type { ServerVersion } from './consul-client.ts';
import { typeString, vaultNamePattern } from '../../framework/vault-field-types.ts';

/**
 * `roles/:name`: what a token issued from the role carries on the mesh server. Which fields are valid, and
 * which are required, depends on the server's version (read from the server at write time):
 *
 * | from | fields |
 * |---|---|
 * | any | `ttl`, `max_ttl` (Keyhaven's lease, not the server's) |
 * | below 1.11 | `token_type`, `policy`, `lease`: a legacy token made with `/v1/acl/create` |
 * | 1.4 | `mesh_policies` (alias `policies`), `local` |
 * | 1.5 | `mesh_roles`, `service_identities` |
 * | 1.7 | `mesh_namespace` |
 * | 1.8 | `node_identities` |
 * | 1.11 | `partition` |
 */

export interface MeshRole {
  policies: string[];
  roles: string[];
  /** `service[:dc1,dc2]`. */
  serviceIdentities: string[];
  /** `node:dc`. */
  nodeIdentities: string[];
  namespace: string;
  partition: string;
  local: boolean;
  ttl: number;
  maxTtl: number;
  tokenType: 'client' | 'management';
  /** Legacy ACL rules, decoded from the base64 `policy`. */
  policy: string;
  /**
   * A `management` role on a server without legacy tokens (1.11 on): its tokens are modern ones linking the builtin
   * `global-management` policy, which is in `policies`.
   */
  managementByPolicy?: boolean;
}

/** A role whose tokens come from the legacy endpoint (Vault's rule: a policy document, or a management token). */
export const isLegacy = (role: MeshRole) =>
  role.policy !== '' || (role.tokenType === 'management' && !role.managementByPolicy);

/** The mesh server's builtin policy that makes a token a management token. */
const globalManagement = 'global-management';

export const roleKey = (name: string) => `role/${name}`;

export async function readRole(storage: MountStorage, name: string): Promise<MeshRole | undefined> {
  // Authenticated: a role's policies are what the mesh tokens it issues may do.
  return storage.getAuthenticated<MeshRole>(roleKey(name));
}

const roleName = typeString.pipe(
  z
    .string()
    .regex(
      vaultNamePattern,
      'a role name is letters, digits, "_", "-" and ".", starting and ending with a letter or digit',
    ),
);

/**
 * Service identities as a list, or as one string where `;` or `,` separate items and a `,` after
 * `service:dc1` adds a datacenter: `api,web:dc1,dc2` is `api` everywhere and `web` in dc1 and dc2.
 */
const serviceIdentityList = z.union([z.array(z.string()), typeString.pipe(z.string())]).transform((value) => {
  if (Array.isArray(value)) return value.map((item) => item.trim()).filter((item) => item !== '');
  const items: string[] = [];
  for (const group of value.split(';')) {
    let current: string | undefined;
    for (const piece of group.split(',').map((item) => item.trim())) {
      if (piece === '') continue;
      if (current?.includes(':') && !piece.includes(':')) current += `,${piece}`;
      else {
        if (current !== undefined) items.push(current);
        current = piece;
      }
    }
    if (current !== undefined) items.push(current);
  }
  return items;
});

const roleFields = z.object({
  name: roleName.describe('Name of the role.'),
  mesh_policies: stringList
    .optional()
    .describe(
      'List of mesh server ACL policies to attach to the token. Available from server version 1.4; one of the policies, roles or identities is required.',
    ),
  policies: stringList.optional().describe('Deprecated alias of "mesh_policies".'),
  mesh_roles: stringList
    .optional()
    .describe('List of mesh server ACL roles to attach to the token. Available from server version 1.5.'),
  service_identities: serviceIdentityList
    .optional()
    .describe(
      'List of service identities to attach to the token, each "service" or "service:dc1,dc2"; as one string, separated by semicolons. Available from server version 1.5.',
    ),
  node_identities: stringList
    .optional()
    .describe(
      'List of node identities to attach to the token, each "node:datacenter". Available from server version 1.8.',
    ),
  mesh_namespace: typeString
    .pipe(z.string().trim())
    .optional()
    .describe('Namespace the token is created within; defaults to "default". Available from server version 1.7.'),
  // Vault's names for the same fields, accepted as aliases.
  consul_policies: stringList.optional().describe('Vault\'s name for "mesh_policies", accepted as an alias.'),
  consul_roles: stringList.optional().describe('Vault\'s name for "mesh_roles", accepted as an alias.'),
  consul_namespace: typeString
    .pipe(z.string().trim())
    .optional()
    .describe('Vault\'s name for "mesh_namespace", accepted as an alias.'),
  partition: typeString
    .pipe(z.string().trim())
    .optional()
    .describe(
      'Admin partition the token is created within; defaults to "default". Available from server version 1.11.',
    ),
  local: bool
    .optional()
    .describe(
      'Whether the token is local to the current datacenter instead of replicated globally. Available from server version 1.4.',
    ),
  ttl: duration.optional().describe('TTL of the lease of a token created from the role.'),
  max_ttl: duration.optional().describe('Maximum TTL of the lease of a token created from the role.'),
  token_type: z
    .enum(['client', 'management'])
    .optional()
    .describe(
      'Which type of token to create: "client" (the default) or "management"; a management role needs no policy.',
    ),
  policy: typeString
    .pipe(z.string())
    .optional()
    .describe(
      'Legacy ACL policy document, base64 encoded, for a legacy client token. Required before server version 1.4; removed in 1.11.',
    ),
  lease: duration.optional().describe('Deprecated: use "ttl".'),
});
type RoleFields = z.output<typeof roleFields>;

export const rolePaths: PathSpec[] = [
  path({
    pattern: 'roles',
    fields: z.object({}),
    summaries: { list: 'List the roles.' },
    operations: {
      list: listKeysUnder('role/'),
    },
  }),
  path({
    pattern: 'roles/:name',
    fields: roleFields,
    summaries: {
      read: 'Read a role.',
      create: 'Create a role: what a token issued from it carries on the mesh server.',
      update: 'Update a role: what a token issued from it carries on the mesh server.',
      delete: 'Delete a role; the tokens issued from it stay until their leases end.',
    },
    exists: async ({ storage, data }) => (await readRole(storage, data.name)) !== undefined,
    operations: {
      read: async ({ storage, data }) => {
        const role = await readRole(storage, data.name);
        return role && { data: describeRole(role) };
      },
      create: writeRole,
      update: writeRole,
      delete: async ({ storage, data }) => {
        await storage.delete(roleKey(data.name));
        return undefined;
      },
    },
  }),
];

/** Vault's read view, with the mesh names; lists only when set, `lease` as a Go duration. */
function describeRole(role: MeshRole): Record<string, unknown> {
  return {
    ...(role.policies.length > 0 ? { mesh_policies: role.policies } : {}),
    ...(role.roles.length > 0 ? { mesh_roles: role.roles } : {}),
    ...(role.serviceIdentities.length > 0 ? { service_identities: role.serviceIdentities } : {}),
    ...(role.nodeIdentities.length > 0 ? { node_identities: role.nodeIdentities } : {}),
    mesh_namespace: role.namespace,
    partition: role.partition,
    local: role.local,
    ttl: role.ttl,
    max_ttl: role.maxTtl,
    lease: formatDuration(role.ttl),
    token_type: role.tokenType,
    ...(role.policy ? { policy: Buffer.from(role.policy, 'utf8').toString('base64') } : {}),
  };
}

/** Vault's field names and ours: either may be given, not both. */
const aliases: Array<[keyof RoleFields, keyof RoleFields]> = [
  ['mesh_policies', 'consul_policies'],
  ['mesh_roles', 'consul_roles'],
  ['mesh_namespace', 'consul_namespace'],
];

/** Fields by the server version that introduced them. */
const introducedIn: Array<[keyof RoleFields, string]> = [
  ['mesh_policies', '1.4'],
  ['policies', '1.4'],
  ['local', '1.4'],
  ['mesh_roles', '1.5'],
  ['service_identities', '1.5'],
  ['mesh_namespace', '1.7'],
  ['node_identities', '1.8'],
  ['partition', '1.11'],
];
const removedIn: Array<[keyof RoleFields, string]> = [
  ['policy', '1.11'],
  ['lease', '1.11'],
];
const grantingFields: Array<[keyof RoleFields, string]> = [
  ['mesh_policies', '1.4'],
  ['mesh_roles', '1.5'],
  ['service_identities', '1.5'],
  ['node_identities', '1.8'],
];

const given = (data: RoleFields, field: keyof RoleFields) => {
  const value = data[field];
  // `client` is every role's token type: naming it asks for nothing.
  if (field === 'token_type') return value === 'management';
  if (Array.isArray(value)) return value.length > 0;
  if (typeof value === 'boolean') return value;
  return value !== undefined && value !== '';
};

async function writeRole(request: Request<RoleFields>) {
  const { data, storage, mount, system } = request;
  const access = await requireAccess(storage, mount);
  const version = await serverVersion({ clock: system.clock, mount, storage }, access);
  const where = `the mesh server at ${access.address} runs ${version.text}`;

  for (const [ours, vaults] of aliases) {
    if (given(data, ours) && given(data, vaults)) throw badRequest(`give "${ours}" or its alias "${vaults}", not both`);
    if (!given(data, ours) && given(data, vaults)) Object.assign(data, { [ours]: data[vaults] });
  }

  for (const [field, since] of introducedIn) {
    if (given(data, field) && !version.atLeast(since))
      throw badRequest(`"${field}" needs mesh server version ${since} or later; ${where}`);
  }
  for (const [field, gone] of removedIn) {
    if (given(data, field) && version.atLeast(gone))
      throw badRequest(`"${field}" was removed in mesh server version ${gone}; ${where}`);
  }
  if (given(data, 'mesh_policies') && given(data, 'policies')) {
    throw badRequest('give "mesh_policies" or its deprecated alias "policies", not both');
  }
  const role: MeshRole = {
    policies: data.mesh_policies ?? data.policies ?? [],
    roles: data.mesh_roles ?? [],
    serviceIdentities: data.service_identities ?? [],
    nodeIdentities: data.node_identities ?? [],
    namespace: data.mesh_namespace ?? '',
    partition: data.partition ?? '',
    local: data.local ?? false,
    ttl: data.ttl ?? data.lease ?? 0,
    maxTtl: data.max_ttl ?? 0,
    tokenType: data.token_type ?? 'client',
    policy: data.policy ? decodePolicy(data.policy) : '',
  };
  // As Vault, `management` stays valid once the server has no legacy tokens: a modern token with the management policy.
  if (role.tokenType === 'management' && version.atLeast('1.11')) {
    role.managementByPolicy = true;
    if (!role.policies.includes(globalManagement)) role.policies = [...role.policies, globalManagement];
  }
  checkIdentities(role);
  checkShape(role, data, version);

  const warnings: string[] = [];
  if (given(data, 'policies')) warnings.push('"policies" is deprecated: use "mesh_policies"');
  if (data.lease !== undefined) warnings.push('"lease" is deprecated: use "ttl"');
  if (isLegacy(role))
    warnings.push('legacy tokens ("policy", "token_type") are deprecated and gone from mesh server version 1.11 on');

  await storage.putAuthenticated(roleKey(data.name), role as unknown as Record<string, unknown>);
  return warnings.length > 0 ? { warnings } : undefined;
}

/** A role makes either a legacy token or a token with policies, roles or identities; one of them is required. */
function checkShape(role: MeshRole, data: RoleFields, version: ServerVersion): void {
  const modern = [
    'mesh_policies',
    'policies',
    'mesh_roles',
    'service_identities',
    'node_identities',
    'local',
    'mesh_namespace',
    'partition',
  ] as const;
  if (isLegacy(role)) {
    const mixed = modern.filter((field) => given(data, field));
    if (mixed.length > 0) {
      throw badRequest(
        `a role with "policy" or "token_type": "management" makes a legacy token, which has no ${mixed.map((field) => `"${field}"`).join(', ')}`,
      );
    }
    return;
  }
  if (role.policies.length + role.roles.length + role.serviceIdentities.length + role.nodeIdentities.length > 0) return;
  if (!version.atLeast('1.4')) {
    throw badRequest(
      `"policy" is required unless "token_type" is "management": mesh server version ${version.text} has only legacy tokens`,
    );
  }
  const choices = grantingFields.filter(([, since]) => version.atLeast(since)).map(([field]) => `"${field}"`);
  const legacy = version.atLeast('1.11') ? '' : ', or a legacy "policy" (or "token_type": "management")';
  throw badRequest(
    `${choices.length > 1 ? `at least one of ${choices.join(', ')}` : choices[0]} is required by mesh server version ${version.text}${legacy}`,
  );
}

const identityName = /^[a-z0-9]([a-z0-9\-_]*[a-z0-9])?$/;

function checkIdentities(role: MeshRole): void {
  for (const item of role.serviceIdentities) {
    const [service = '', datacenters, ...extra] = item.split(':');
    const dcs = datacenters?.split(',').map((dc) => dc.trim()) ?? [];
    if (
      extra.length > 0 ||
      !identityName.test(service) ||
      service.length > 256 ||
      dcs.some((dc) => dc === '') ||
      (datacenters !== undefined && dcs.length === 0)
    ) {
      throw badRequest(
        `invalid value for "service_identities": "${item}" is not <service>[:<datacenter>[,<datacenter>…]] with a service name of lowercase letters, digits, "-" and "_"`,
      );
    }
    if (role.local && dcs.length > 0) {
      throw badRequest(
        `invalid value for "service_identities": "${item}" names datacenters, which a local token cannot have`,
      );
    }
  }
  for (const item of role.nodeIdentities) {
    const [node = '', datacenter = '', ...extra] = item.split(':');
    if (extra.length > 0 || !identityName.test(node) || node.length > 256 || datacenter.trim() === '') {
      throw badRequest(
        `invalid value for "node_identities": "${item}" is not <node>:<datacenter> with a node name of lowercase letters, digits, "-" and "_"`,
      );
    }
  }
}

/** Base64 as Go's StdEncoding reads it: padded, nothing else. */
function decodePolicy(encoded: string): string {
  const text = encoded.trim();
  if (text.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(text)) {
    throw badRequest('invalid value for "policy": not base64 (the legacy ACL rules are sent base64-encoded)');
  }
  return Buffer.from(text, 'base64').toString('utf8');
}

/** `service[:dc1,dc2]` as the server's `ServiceIdentities` item. */
export function serviceIdentity(item: string): { ServiceName: string; Datacenters?: string[] } {
  const [service = '', datacenters] = item.split(':');
  return datacenters
    ? { ServiceName: service, Datacenters: datacenters.split(',').map((dc) => dc.trim()) }
    : { ServiceName: service };
}

/** `node:dc` as the server's `NodeIdentities` item. */
export function nodeIdentity(item: string): { NodeName: string; Datacenter: string } {
  const [node = '', datacenter = ''] = item.split(':');
  return { NodeName: node, Datacenter: datacenter.trim() };
}
