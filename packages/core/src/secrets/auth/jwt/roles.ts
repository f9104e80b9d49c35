import ipaddr from 'ipaddr.js';
import * as z from 'zod';
import { DurationError, maxDurationSeconds, parseDuration } from '../../../lib/duration.ts';
import { badRequest } from '../../../lib/errors.ts';
import { listKeysUnder, path, type Reply, type Request } from '../../framework/backend.ts';
import { bool, count, duration, jsonValue, stringList } from '../../framework/fields.ts';
import { mountTtls } from '../../mounts/mount-table.ts';
import { sanitisePolicyNames } from '../../policies/policy-names.ts';
import { tokenSettingsFields } from '../token-settings-fields.ts';
import { ProcessCache } from './process-cache.ts';
import { typeKvPairs, typeMap, typeString, vaultNamePattern } from '../../framework/vault-field-types.ts';

export type TokenType = 'default' | 'service' | 'batch' | 'default-service' | 'default-batch';

/** A role as stored: how a JWT or an OIDC login is bound and what token it earns. Durations in seconds. */
export interface JwtRole {
  role_type: 'jwt' | 'oidc';
  bound_audiences: string[];
  user_claim: string;
  user_claim_json_pointer: boolean;
  /** 0 means the default (60 s skew, 150 s for exp and nbf); a negative value disables the leeway. */
  clock_skew_leeway: number;
  expiration_leeway: number;
  not_before_leeway: number;
  bound_subject: string;
  bound_claims: Record<string, unknown>;
  bound_claims_type: 'string' | 'glob';
  groups_claim: string;
  claim_mappings: Record<string, string>;
  oidc_scopes: string[];
  allowed_redirect_uris: string[];
  verbose_oidc_logging: boolean;
  max_age: number;
  token_ttl: number;
  token_max_ttl: number;
  token_explicit_max_ttl: number;
  token_period: number;
  token_policies: string[];
  token_bound_cidrs: string[];
  token_no_default_policy: boolean;
  token_num_uses: number;
  token_type: TokenType;
}

const roleKey = (name: string) => `role/${name}`;
const roleCache = new ProcessCache<JwtRole | undefined>();
const reservedMetadata = ['role'];

/** Vault's signed durations for leeways: seconds (negative disables) or a duration string such as `"-1"` or `"2m"`. */
const leeway = z.union([z.number().int(), z.string()]).transform((value, ctx) => {
  if (typeof value === 'number') {
    if (Math.abs(value) <= maxDurationSeconds) return value;
    ctx.addIssue({
      code: 'custom',
      message: `is too large: ${value} (at most ${maxDurationSeconds} seconds either way)`,
    });
    return z.NEVER;
  }
  const text = value.trim();
  try {
    if (text.startsWith('-')) return -parseDuration(text.slice(1));
    return parseDuration(text);
  } catch (error) {
    ctx.addIssue({ code: 'custom', message: error instanceof DurationError ? error.message : String(error) });
    return z.NEVER;
  }
});

const roleFields = z.object({
  name: typeString.pipe(z.string()).describe('Name of the role.'),
  role_type: typeString.pipe(z.string()).optional().describe("Type of the role, either 'jwt' or 'oidc' (the default)."),
  bound_audiences: stringList
    .optional()
    .describe("Comma-separated list of 'aud' claims that are valid for login; any match is sufficient."),
  user_claim: typeString.pipe(z.string()).optional().describe('The claim to use for the Identity entity alias name.'),
  user_claim_json_pointer: bool
    .optional()
    .describe('If true, the user_claim value will use JSON pointer syntax for referencing claims.'),
  clock_skew_leeway: leeway
    .optional()
    .describe(
      'Duration in seconds of leeway when validating all claims to account for clock skew. Defaults to 60 (1 minute) if set to 0 and can be disabled if set to -1.',
    ),
  expiration_leeway: leeway
    .optional()
    .describe(
      'Duration in seconds of leeway when validating expiration of a token to account for clock skew. Defaults to 150 (2.5 minutes) if set to 0 and can be disabled if set to -1.',
    ),
  not_before_leeway: leeway
    .optional()
    .describe(
      'Duration in seconds of leeway when validating not before values of a token to account for clock skew. Defaults to 150 (2.5 minutes) if set to 0 and can be disabled if set to -1.',
    ),
  bound_subject: typeString.pipe(z.string()).optional().describe("The 'sub' claim that is valid for login. Optional."),
  bound_claims: typeMap
    .pipe(z.record(z.string(), jsonValue))
    .optional()
    .describe(
      'Map of claims and values to match against: every claim must be present and match one of its values (a list means any).',
    ),
  bound_claims_type: typeString
    .pipe(z.string())
    .optional()
    .describe(
      "How to interpret values in the map of claims/values (which must match for login): allowed values are 'string' (the default) or 'glob'.",
    ),
  groups_claim: typeString.pipe(z.string()).optional().describe('The claim to use for the Identity group alias names.'),
  claim_mappings: typeKvPairs
    .optional()
    .describe('Mappings of claims (key) that will be copied to a metadata field (value).'),
  oidc_scopes: stringList.optional().describe("Comma-separated list of OIDC scopes to request besides 'openid'."),
  allowed_redirect_uris: stringList
    .optional()
    .describe("Comma-separated list of allowed values for redirect_uri; required for 'oidc' roles."),
  verbose_oidc_logging: bool
    .optional()
    .describe(
      'Log the claims received from the OIDC provider at each login (never the tokens). Not recommended in production since sensitive information may be present in OIDC responses.',
    ),
  max_age: duration
    .optional()
    .describe(
      'Specifies the allowable elapsed time in seconds since the last time the user was actively authenticated with the OIDC provider.',
    ),
  ...tokenSettingsFields,
  // Deprecated spellings of the token parameters, as Vault still accepts them.
  policies: stringList.optional().describe("Deprecated: use 'token_policies' (giving both is refused)."),
  bound_cidrs: stringList.optional().describe("Deprecated: use 'token_bound_cidrs' (giving both is refused)."),
  ttl: duration.optional().describe("Deprecated: use 'token_ttl' (giving both is refused)."),
  max_ttl: duration.optional().describe("Deprecated: use 'token_max_ttl' (giving both is refused)."),
  num_uses: count.optional().describe("Deprecated: use 'token_num_uses' (giving both is refused)."),
  period: duration.optional().describe("Deprecated: use 'token_period' (giving both is refused)."),
});

type RoleInput = z.output<typeof roleFields>;

/** `auth/<mount>/role/:name` and `LIST auth/<mount>/role`. */
export const rolePaths = [
  path({
    pattern: 'role',
    fields: z.object({}),
    summaries: { list: 'Lists all the roles registered with the backend.' },
    operations: {
      list: listKeysUnder('role/'),
    },
  }),
  path({
    pattern: 'role/:name',
    // Checked against the role under its stored (lower-case) name: `role/Admin` is authorised as `role/admin`.
    canonicalCaptures: { name: foldRoleName },
    fields: roleFields,
    summaries: {
      read: 'Read an existing role.',
      create: 'Register a role with the backend.',
      update: 'Update a role registered with the backend.',
      delete: 'Delete an existing role.',
    },
    exists: async (request) => (await readRole(request, roleName(request.data.name))) !== undefined,
    operations: {
      read: async (request) => {
        const role = await readRole(request, roleName(request.data.name));
        return role ? { data: describeRole(role) } : undefined;
      },
      create: (request) => writeRole(request),
      update: (request) => writeRole(request),
      delete: async (request) => {
        const name = roleName(request.data.name);
        await request.storage.delete(roleKey(name));
        roleCache.delete(cacheKey(request, name));
        return undefined;
      },
    },
  }),
];

const cacheKey = (request: Pick<Request, 'mount'>, name: string) => `${request.mount.uuid}|${name}`;

/** The role a login names, through the per-process cache. */
export function loadRole(
  request: Pick<Request, 'storage' | 'system' | 'mount'>,
  name: string,
): Promise<JwtRole | undefined> {
  return roleCache.get(cacheKey(request, name), request.system.clock, () => readRole(request, name));
}

/** Role names are case-insensitive, as in Vault: stored and looked up in lower case. */
function foldRoleName(raw: string): string {
  return raw.toLowerCase();
}

/** A valid role name in its stored spelling; a 400 naming it otherwise. */
export function roleName(raw: string): string {
  const name = foldRoleName(raw);
  if (!vaultNamePattern.test(name))
    throw badRequest(`invalid role name "${raw}": use letters, digits, "_", "-" and "."`);
  return name;
}

/** The role as stored now, past the cache. */
export function readRole(request: Pick<Request, 'storage'>, name: string): Promise<JwtRole | undefined> {
  return request.storage.getAuthenticated<JwtRole>(roleKey(name));
}

async function writeRole(request: Request<RoleInput>): Promise<Reply | undefined> {
  const name = roleName(request.data.name);
  const existing = await readRole(request, name);
  const { role, warnings } = buildRole(request.data, existing, mountTtls(request.mount).maxTtl);
  await request.storage.putAuthenticated(roleKey(name), role as unknown as Record<string, unknown>);
  roleCache.set(cacheKey(request, name), role, request.system.clock);
  return warnings.length > 0 ? { warnings } : undefined;
}

const emptyRole: JwtRole = {
  role_type: 'oidc',
  bound_audiences: [],
  user_claim: '',
  user_claim_json_pointer: false,
  clock_skew_leeway: 0,
  expiration_leeway: 0,
  not_before_leeway: 0,
  bound_subject: '',
  bound_claims: {},
  bound_claims_type: 'string',
  groups_claim: '',
  claim_mappings: {},
  oidc_scopes: [],
  allowed_redirect_uris: [],
  verbose_oidc_logging: false,
  max_age: 0,
  token_ttl: 0,
  token_max_ttl: 0,
  token_explicit_max_ttl: 0,
  token_period: 0,
  token_policies: [],
  token_bound_cidrs: [],
  token_no_default_policy: false,
  token_num_uses: 0,
  token_type: 'default',
};

/** Vault's rules for a role write: given fields replace the stored ones, then the whole role is checked. */
export function buildRole(
  input: RoleInput,
  existing: JwtRole | undefined,
  mountMaxTtl: number,
): { role: JwtRole; warnings: string[] } {
  const role: JwtRole = { ...emptyRole, ...existing };
  const warnings: string[] = [];

  const roleType = input.role_type ?? (existing ? existing.role_type : 'oidc');
  if (roleType !== 'jwt' && roleType !== 'oidc')
    throw badRequest(`invalid 'role_type': "${roleType}": use 'jwt' or 'oidc'`);
  role.role_type = roleType;

  const upgraded = (current: keyof RoleInput, deprecated: keyof RoleInput) => {
    if (input[current] !== undefined && input[deprecated] !== undefined)
      throw badRequest(`cannot specify both '${current}' and '${deprecated}'`);
    return input[current] ?? input[deprecated];
  };
  const policies = upgraded('token_policies', 'policies') as string[] | undefined;
  if (policies) {
    // Stored sanitised (CVE-2025-5999); refused at write rather than at every login, as no login may carry root.
    role.token_policies = sanitisePolicyNames(policies);
    if (role.token_policies.includes('root')) {
      throw badRequest(
        'invalid \'token_policies\': auth methods cannot create root tokens, so a role may not grant the "root" policy',
      );
    }
  }
  const cidrs = upgraded('token_bound_cidrs', 'bound_cidrs') as string[] | undefined;
  if (cidrs) role.token_bound_cidrs = cidrs.map(normaliseCidr);
  const numbers = [
    ['token_ttl', 'ttl'],
    ['token_max_ttl', 'max_ttl'],
    ['token_period', 'period'],
    ['token_num_uses', 'num_uses'],
  ] as const;
  for (const [current, deprecated] of numbers) {
    const value = upgraded(current, deprecated) as number | undefined;
    if (value !== undefined) role[current] = value;
  }
  if (input.token_explicit_max_ttl !== undefined) role.token_explicit_max_ttl = input.token_explicit_max_ttl;
  if (input.token_no_default_policy !== undefined) role.token_no_default_policy = input.token_no_default_policy;
  if (input.token_type !== undefined) role.token_type = input.token_type;
  if (role.token_type === 'batch' || role.token_type === 'default-batch') {
    if (role.token_period > 0)
      throw badRequest(
        "'token_type' cannot be 'batch' or 'default-batch' when set to generate periodic tokens ('token_period')",
      );
    if (role.token_num_uses > 0)
      throw badRequest(
        "'token_type' cannot be 'batch' or 'default-batch' when set to generate tokens with limited use count ('token_num_uses')",
      );
  }
  if (role.token_period > mountMaxTtl) {
    throw badRequest(
      `'token_period' of ${role.token_period}s is greater than the backend's maximum lease TTL of ${mountMaxTtl}s`,
    );
  }

  for (const name of ['clock_skew_leeway', 'expiration_leeway', 'not_before_leeway', 'max_age'] as const) {
    if (input[name] !== undefined) role[name] = input[name];
  }
  for (const name of ['bound_audiences', 'oidc_scopes', 'allowed_redirect_uris'] as const) {
    if (input[name] !== undefined) role[name] = input[name];
  }
  for (const name of ['bound_subject', 'user_claim', 'groups_claim'] as const) {
    if (input[name] !== undefined) role[name] = input[name];
  }
  if (input.user_claim_json_pointer !== undefined) role.user_claim_json_pointer = input.user_claim_json_pointer;
  if (input.verbose_oidc_logging !== undefined) role.verbose_oidc_logging = input.verbose_oidc_logging;

  const claimsType = input.bound_claims_type ?? role.bound_claims_type;
  if (claimsType !== 'string' && claimsType !== 'glob')
    throw badRequest(`invalid 'bound_claims_type': "${claimsType}": use 'string' or 'glob'`);
  role.bound_claims_type = claimsType;
  if (input.bound_claims !== undefined) role.bound_claims = input.bound_claims;
  checkBoundClaims(role.bound_claims, role.bound_claims_type);

  if (input.claim_mappings !== undefined) {
    const targets = new Set<string>();
    for (const [claim, target] of Object.entries(input.claim_mappings)) {
      if (reservedMetadata.includes(target))
        throw badRequest(
          `invalid 'claim_mappings': metadata key "${target}" is reserved and may not be a mapping destination`,
        );
      if (targets.has(target))
        throw badRequest(
          `invalid 'claim_mappings': multiple keys are mapped to metadata key "${target}" (again by claim "${claim}")`,
        );
      targets.add(target);
    }
    role.claim_mappings = input.claim_mappings;
  }

  if (role.user_claim === '') throw badRequest("a user claim must be defined on the role ('user_claim')");
  if (role.role_type === 'oidc' && role.allowed_redirect_uris.length === 0) {
    throw badRequest("'allowed_redirect_uris' must be set if 'role_type' is 'oidc' or unspecified");
  }
  if (role.role_type === 'jwt') {
    const bound =
      role.bound_audiences.length > 0 ||
      role.token_bound_cidrs.length > 0 ||
      role.bound_subject !== '' ||
      Object.keys(role.bound_claims).length > 0;
    if (!bound) {
      throw badRequest(
        "must have at least one bound constraint when creating/updating a 'jwt' role: set 'bound_audiences', 'bound_subject', 'bound_claims' or 'token_bound_cidrs'",
      );
    }
  }
  if (role.token_max_ttl > 0 && role.token_ttl > role.token_max_ttl) {
    throw badRequest(
      `'token_ttl' (${role.token_ttl}s) should not be greater than 'token_max_ttl' (${role.token_max_ttl}s)`,
    );
  }
  if (role.token_max_ttl > mountMaxTtl) {
    warnings.push(
      "token max ttl is greater than the system or backend mount's maximum TTL value; issued tokens' max TTL value will be truncated",
    );
  }
  if (role.verbose_oidc_logging) {
    warnings.push(
      'verbose_oidc_logging has been enabled for this role. This is not recommended in production since sensitive information may be present in OIDC responses.',
    );
  }
  return { role, warnings };
}

function checkBoundClaims(boundClaims: Record<string, unknown>, type: 'string' | 'glob'): void {
  for (const [claim, expected] of Object.entries(boundClaims)) {
    const values = Array.isArray(expected) ? expected : [expected];
    for (const value of values) {
      const scalar =
        typeof value === 'string' ||
        typeof value === 'boolean' ||
        (typeof value === 'number' && Number.isFinite(value));
      if (!scalar)
        throw badRequest(
          `invalid 'bound_claims': the value of claim "${claim}" must be a string, number, boolean or a list of them`,
        );
      if (type === 'glob' && typeof value !== 'string') {
        throw badRequest(
          `invalid 'bound_claims': with bound_claims_type "glob" the value of claim "${claim}" must be a string or a list of strings`,
        );
      }
    }
  }
}

function normaliseCidr(raw: string): string {
  try {
    if (raw.includes('/')) {
      const [address, bits] = ipaddr.parseCIDR(raw);
      return `${address.toString()}/${bits}`;
    }
    const address = ipaddr.parse(raw);
    return `${address.toString()}/${address.kind() === 'ipv4' ? 32 : 128}`;
  } catch {
    throw badRequest(`invalid 'token_bound_cidrs': "${raw}" is not an IP address or CIDR block`);
  }
}

function describeRole(role: JwtRole): Record<string, unknown> {
  return {
    role_type: role.role_type,
    bound_audiences: role.bound_audiences,
    bound_subject: role.bound_subject,
    bound_claims_type: role.bound_claims_type,
    bound_claims: Object.keys(role.bound_claims).length > 0 ? role.bound_claims : null,
    claim_mappings: Object.keys(role.claim_mappings).length > 0 ? role.claim_mappings : null,
    user_claim: role.user_claim,
    user_claim_json_pointer: role.user_claim_json_pointer,
    groups_claim: role.groups_claim,
    allowed_redirect_uris: role.allowed_redirect_uris,
    oidc_scopes: role.oidc_scopes,
    verbose_oidc_logging: role.verbose_oidc_logging,
    max_age: role.max_age,
    clock_skew_leeway: role.clock_skew_leeway,
    expiration_leeway: role.expiration_leeway,
    not_before_leeway: role.not_before_leeway,
    token_ttl: role.token_ttl,
    token_max_ttl: role.token_max_ttl,
    token_explicit_max_ttl: role.token_explicit_max_ttl,
    token_period: role.token_period,
    token_policies: role.token_policies,
    token_bound_cidrs: role.token_bound_cidrs,
    token_no_default_policy: role.token_no_default_policy,
    token_num_uses: role.token_num_uses,
    token_type: role.token_type,
    // The deprecated names, as the reference's read result lists them.
    policies: role.token_policies,
    bound_cidrs: role.token_bound_cidrs,
    ttl: role.token_ttl,
    max_ttl: role.token_max_ttl,
    period: role.token_period,
    num_uses: role.token_num_uses,
  };
}
