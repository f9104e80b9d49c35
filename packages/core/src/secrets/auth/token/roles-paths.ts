import ipaddr from 'ipaddr.js';
import * as z from 'zod';
import { badRequest } from '../../../lib/errors.ts';
import { globMatches } from '../../../lib/glob.ts';
import { listKeysUnder, path, type Reply, type Request } from '../../framework/backend.ts';
import { bool, duration, stringList } from '../../framework/fields.ts';
import { mountTtls } from '../../mounts/mount-table.ts';
import { sanitisePolicyNames } from '../../policies/policy-names.ts';
import { typeString, vaultNamePattern } from '../../framework/vault-field-types.ts';
import { tokenRoleSettingsFields } from '../token-settings-fields.ts';

/**
 * Token roles (`auth/token/roles/:role_name`): what `auth/token/create/:role_name` issues, as in Vault. Stored in
 * the token store's own partition (`pk = mount#token`, `sk = role/<name>`). Durations in seconds; 0 is unset.
 */
export interface TokenRole {
  name: string;
  allowed_policies: string[];
  disallowed_policies: string[];
  allowed_policies_glob: string[];
  disallowed_policies_glob: string[];
  /** Stored as Vault does; `entity_alias` at create is refused, as this server has no identity store. */
  allowed_entity_aliases: string[];
  orphan: boolean;
  renewable: boolean;
  path_suffix: string;
  token_period: number;
  token_explicit_max_ttl: number;
  token_bound_cidrs: string[];
  token_no_default_policy: boolean;
  token_num_uses: number;
  token_type: 'service' | 'batch' | 'default-service' | 'default-batch';
}

const roleKey = (name: string) => `role/${name}`;

const roleFields = z.object({
  role_name: typeString.pipe(z.string()).describe('Name of the role.'),
  allowed_policies: stringList
    .optional()
    .describe(
      "If set, tokens can be created with any subset of the policies in this list, rather than the normal semantics of tokens being a subset of the calling token's policies.",
    ),
  disallowed_policies: stringList
    .optional()
    .describe(
      'If set, successful token creation via this role will require that no policies in the given list are requested.',
    ),
  allowed_policies_glob: stringList
    .optional()
    .describe('If set, tokens can be created with any subset of glob matched policies in this list.'),
  disallowed_policies_glob: stringList
    .optional()
    .describe(
      'If set, successful token creation via this role will require that no requested policies glob match any of policies in this list.',
    ),
  allowed_entity_aliases: stringList
    .optional()
    .describe(
      'If set, specifies the entity aliases which are allowed to be used during token generation (stored; entity aliases are refused at create).',
    ),
  orphan: bool.optional().describe('If true, tokens created via this role will be orphan tokens (have no parent).'),
  renewable: bool
    .optional()
    .describe('Tokens created via this role will be renewable or not according to this value. Defaults to "true".'),
  path_suffix: typeString
    .pipe(z.string())
    .optional()
    .describe(
      "If set, tokens created via this role will contain the given suffix as a part of their path, for the 'revoke-prefix' endpoint.",
    ),
  ...tokenRoleSettingsFields,
  // Deprecated spellings Vault still accepts; the `token_` field wins when both are given.
  period: duration.optional().describe("Use 'token_period' instead."),
  explicit_max_ttl: duration.optional().describe("Use 'token_explicit_max_ttl' instead."),
  bound_cidrs: stringList.optional().describe("Use 'token_bound_cidrs' instead."),
});

type RoleInput = z.output<typeof roleFields>;

export const tokenRolePaths = [
  path({
    pattern: 'roles',
    fields: z.object({}),
    summaries: { list: 'Lists the token roles.' },
    operations: { list: listKeysUnder('role/') },
  }),
  path({
    pattern: 'roles/:role_name',
    fields: roleFields,
    summaries: {
      read: 'Reads a token role.',
      create: 'Creates a token role.',
      update: 'Updates a token role.',
      delete: 'Deletes a token role.',
    },
    exists: async (request) => (await readRole(request, roleName(request.data.role_name))) !== undefined,
    operations: {
      read: async (request) => {
        const role = await readRole(request, roleName(request.data.role_name));
        return role ? { data: describeRole(role) } : undefined;
      },
      create: (request) => writeRole(request),
      update: (request) => writeRole(request),
      delete: async (request) => {
        await request.storage.delete(roleKey(roleName(request.data.role_name)));
        return undefined;
      },
    },
  }),
];

/** The role `auth/token/create/:role_name` names, or Vault's 400 for one that does not exist. */
export async function roleForCreate(
  request: Request<{ role_name: string; entity_alias?: string }>,
): Promise<TokenRole> {
  const { role_name: name, entity_alias: alias } = request.data;
  const role = validName(name) ? await readRole(request, name) : undefined;
  if (!role) throw badRequest(`unknown role ${name}`);
  if (alias !== undefined)
    throw badRequest('invalid value for "entity_alias": entity aliases are not supported (there is no identity store)');
  return role;
}

/** Vault's token types for a role: `service`/`batch` are imposed, `default-*` only fill in when the request names none. */
export function roleTokenType(role: TokenRole, requested: 'service' | 'batch' | undefined): 'service' | 'batch' {
  if (role.token_type === 'service' || role.token_type === 'batch') return role.token_type;
  return requested ?? (role.token_type === 'default-batch' ? 'batch' : 'service');
}

/**
 * A role listing allowed or disallowed policies decides the token's policies itself (undefined otherwise: the
 * parent's rules apply). Requested policies must be allowed (by name or glob) and none disallowed; with none
 * requested the allowed names (or, without them, the parent's) are used less the disallowed ones. `default` is
 * added unless the request or the role turns it off or the role disallows it.
 */
export function rolePolicies(
  role: TokenRole,
  requested: string[] | undefined,
  noDefault: boolean,
  parentPolicies: string[],
): string[] | undefined {
  const { allowed_policies: allowed, allowed_policies_glob: allowedGlobs } = role;
  if (![allowed, allowedGlobs, role.disallowed_policies, role.disallowed_policies_glob].some((list) => list.length > 0))
    return undefined;
  const disallowed = (name: string) =>
    role.disallowed_policies.includes(name) || role.disallowed_policies_glob.some((glob) => globMatches(glob, name));
  const addDefault = !noDefault && !role.token_no_default_policy && !disallowed('default');
  const withDefault = (names: string[]) => sanitisePolicyNames(addDefault ? [...names, 'default'] : names).sort();
  const restrictsAllowed = allowed.length > 0 || allowedGlobs.length > 0;

  if (!requested || requested.length === 0)
    return withDefault(restrictsAllowed ? allowed : parentPolicies).filter((name) => !disallowed(name));
  const policies = withDefault(requested);
  if (restrictsAllowed) {
    const allowedNames = withDefault(allowed);
    if (
      !policies.every((name) => allowedNames.includes(name) || allowedGlobs.some((glob) => globMatches(glob, name)))
    ) {
      throw badRequest(
        `token policies (${quoted(policies)}) must be subset of the role's allowed policies (${quoted(allowedNames)}) or glob policies (${quoted(allowedGlobs)})`,
      );
    }
  }
  const refused = policies.find(disallowed);
  if (refused) throw badRequest(`token policy "${refused}" is disallowed by this role`);
  return policies;
}

/** The lesser of the request's and the role's period, explicit max TTL and uses (0 being none), with Vault's warnings. */
export function roleLimits(
  role: TokenRole,
  requested: { period: number; explicitMaxTtl: number; numUses: number },
  warnings: string[],
): { period: number; explicitMaxTtl: number; numUses: number } {
  const lesser = (mine: number, roles: number) => (mine && roles ? Math.min(mine, roles) : mine || roles);
  const limits = {
    period: lesser(requested.period, role.token_period),
    explicitMaxTtl: lesser(requested.explicitMaxTtl, role.token_explicit_max_ttl),
    numUses: lesser(requested.numUses, role.token_num_uses),
  };
  if (requested.explicitMaxTtl && role.token_explicit_max_ttl) {
    warnings.push(
      `Explicit max TTL specified both during creation call and in role; using the lesser value of ${limits.explicitMaxTtl} seconds`,
    );
  }
  if (requested.period && role.token_period) {
    warnings.push(
      `Period specified both during creation call and in role; using the lesser value of ${limits.period} seconds`,
    );
  }
  return limits;
}

/** The token's path, `auth/token/create/<role>[/<path_suffix>]`, so `revoke-prefix` can take a role's tokens. */
export const roleTokenPath = (mountPath: string, role: TokenRole) =>
  `${mountPath}create/${role.name}${role.path_suffix ? `/${role.path_suffix}` : ''}`;

/** Renewing a role's token follows the role as it is now, as Vault re-reads it: its period. Refused once the role is gone. */
export async function roleRenewalPeriod(request: Request, name: string): Promise<number> {
  const role = await readRole(request, name);
  if (!role) throw badRequest(`original token role "${name}" could not be found, not renewing`);
  return role.token_period;
}

function readRole(request: Pick<Request, 'storage'>, name: string): Promise<TokenRole | undefined> {
  return request.storage.getAuthenticated<TokenRole>(roleKey(name));
}

const validName = (name: string) => vaultNamePattern.test(name);

function roleName(name: string): string {
  if (!validName(name))
    throw badRequest(`invalid value for "role_name": "${name}": use letters, digits, "_", "-" and "."`);
  return name;
}

async function writeRole(request: Request<RoleInput>): Promise<Reply | undefined> {
  const name = roleName(request.data.role_name);
  const { role, warnings } = buildRole(
    name,
    request.data,
    await readRole(request, name),
    mountTtls(request.mount).maxTtl,
  );
  await request.storage.putAuthenticated(roleKey(name), role as unknown as Record<string, unknown>);
  return warnings.length > 0 ? { warnings } : undefined;
}

/** Vault's rules for a role write: given fields replace the stored ones (or the defaults), then the whole role is checked. */
function buildRole(
  name: string,
  input: RoleInput,
  existing: TokenRole | undefined,
  mountMaxTtl: number,
): { role: TokenRole; warnings: string[] } {
  const role: TokenRole = existing ?? {
    name,
    allowed_policies: [],
    disallowed_policies: [],
    allowed_policies_glob: [],
    disallowed_policies_glob: [],
    allowed_entity_aliases: [],
    orphan: false,
    renewable: true,
    path_suffix: '',
    token_period: 0,
    token_explicit_max_ttl: 0,
    token_bound_cidrs: [],
    token_no_default_policy: false,
    token_num_uses: 0,
    token_type: 'default-service',
  };
  for (const field of [
    'allowed_policies',
    'disallowed_policies',
    'allowed_policies_glob',
    'disallowed_policies_glob',
    'allowed_entity_aliases',
  ] as const) {
    const value = input[field];
    if (value !== undefined) role[field] = sanitisePolicyNames(value).sort();
  }
  if (input.orphan !== undefined) role.orphan = input.orphan;
  if (input.renewable !== undefined) role.renewable = input.renewable;
  if (input.token_no_default_policy !== undefined) role.token_no_default_policy = input.token_no_default_policy;
  if (input.token_num_uses !== undefined) role.token_num_uses = input.token_num_uses;
  const period = input.token_period ?? input.period;
  if (period !== undefined) role.token_period = period;
  const explicitMaxTtl = input.token_explicit_max_ttl ?? input.explicit_max_ttl;
  if (explicitMaxTtl !== undefined) role.token_explicit_max_ttl = explicitMaxTtl;
  const cidrs = input.token_bound_cidrs ?? input.bound_cidrs;
  if (cidrs !== undefined) role.token_bound_cidrs = cidrs.map(checkedCidr);
  if (input.token_type !== undefined)
    role.token_type = input.token_type === 'default' ? 'default-service' : input.token_type;
  if (input.path_suffix !== undefined) {
    const suffix = input.path_suffix.trim().replace(/^\/+|\/+$/g, '');
    if (suffix.split('/').includes('..'))
      throw badRequest('invalid value for "path_suffix": must not contain ".." segments');
    role.path_suffix = suffix;
  }

  if (role.token_type === 'batch') {
    if (role.token_period > 0)
      throw badRequest(
        'invalid value for "token_type": "batch" cannot be set when the role generates periodic tokens ("token_period")',
      );
    if (role.token_num_uses > 0)
      throw badRequest(
        'invalid value for "token_type": "batch" cannot be set when the role generates limited-use tokens ("token_num_uses")',
      );
    if (role.token_explicit_max_ttl > 0) {
      throw badRequest(
        'invalid value for "token_type": "batch" cannot be set when the role generates tokens with an explicit max TTL ("token_explicit_max_ttl")',
      );
    }
  }
  const warnings: string[] = [];
  if (role.token_explicit_max_ttl > mountMaxTtl) {
    warnings.push(
      `Given explicit max TTL of ${role.token_explicit_max_ttl} is greater than system/mount allowed value of ${mountMaxTtl} seconds; tokens from this role are capped to it`,
    );
  }
  return { role, warnings };
}

function describeRole(role: TokenRole): Record<string, unknown> {
  return {
    name: role.name,
    allowed_policies: role.allowed_policies,
    disallowed_policies: role.disallowed_policies,
    allowed_policies_glob: role.allowed_policies_glob,
    disallowed_policies_glob: role.disallowed_policies_glob,
    allowed_entity_aliases: role.allowed_entity_aliases,
    orphan: role.orphan,
    renewable: role.renewable,
    path_suffix: role.path_suffix,
    token_period: role.token_period,
    period: role.token_period,
    token_explicit_max_ttl: role.token_explicit_max_ttl,
    explicit_max_ttl: role.token_explicit_max_ttl,
    token_bound_cidrs: role.token_bound_cidrs,
    token_no_default_policy: role.token_no_default_policy,
    token_num_uses: role.token_num_uses,
    token_type: role.token_type,
  };
}

/** A CIDR block as the pipeline matches it: a bare address becomes a /32 (or /128). */
function checkedCidr(raw: string): string {
  if (ipaddr.isValidCIDR(raw)) return raw;
  if (!ipaddr.isValid(raw))
    throw badRequest(`invalid value for "token_bound_cidrs": "${raw}" is not an IP address or CIDR block`);
  return `${raw}/${ipaddr.parse(raw).kind() === 'ipv4' ? 32 : 128}`;
}

const quoted = (names: string[]) => names.map((name) => JSON.stringify(name)).join(' ');
