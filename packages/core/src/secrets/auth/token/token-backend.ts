import * as z from 'zod';
import { epochSeconds } from '../../../lib/clock.ts';
import { badRequest, type DomainError, permissionDenied } from '../../../lib/errors.ts';
import { type PathSpec, path, type Request } from '../../framework/backend.ts';
import { bool, count, duration, stringList } from '../../framework/fields.ts';
import { MountStorage } from '../../mounts/mount-storage.ts';
import { type MountEntry, mountTtls, tokenStoreMount } from '../../mounts/mount-table.ts';
import { type BuiltinServices, builtin } from '../../sys/builtin.ts';
import { describeToken, isRootEntry, type TokenEntry } from '../../tokens/token-entry.ts';
import { sanitisePolicyNames } from '../../policies/policy-names.ts';
import {
  roleForCreate,
  roleLimits,
  rolePolicies,
  roleRenewalPeriod,
  roleTokenPath,
  roleTokenType,
  type TokenRole,
  tokenRolePaths,
} from './roles-paths.ts';
import { typeString, weakStringMapping } from '../../framework/vault-field-types.ts';

const createFields = z.object({
  id: typeString.pipe(z.string().min(1)).optional().describe('Value for the token (root or sudo only).'),
  policies: stringList.optional().describe('List of policies for the token.'),
  meta: weakStringMapping.optional().describe('Arbitrary key=value metadata to associate with the token.'),
  no_parent: bool.optional().describe('Create the token with no parent (root or sudo only).'),
  no_default_policy: bool.default(false).describe('Do not include the default policy for this token.'),
  renewable: bool
    .default(true)
    .describe('Allow the token to be renewed past its initial TTL up to the system/mount maximum TTL.'),
  ttl: duration.default(0).describe('Time to live for this token.'),
  /** Vault's deprecated name for `ttl` (hvac's `create_token(lease=…)`), used when `ttl` is not given. */
  lease: duration.optional().describe("Use 'ttl' instead."),
  explicit_max_ttl: duration.default(0).describe('Explicit max TTL for this token.'),
  period: duration
    .default(0)
    .describe('Renew period: a periodic token is renewed by this much each time (root or sudo only).'),
  display_name: typeString.pipe(z.string().max(256)).default('').describe('Name to associate with this token.'),
  num_uses: count.default(0).describe('Max number of uses for this token.'),
  type: typeString
    .pipe(z.enum(['service', 'batch']))
    .optional()
    .describe('Token type: service or batch.'),
  entity_id: typeString.pipe(z.string()).optional().describe('The entity the token is tied to (root or sudo only).'),
});

const roleCreateFields = createFields.extend({
  role_name: typeString.pipe(z.string()).describe('Name of the role.'),
  entity_alias: typeString
    .pipe(z.string())
    .optional()
    .describe('Name of the entity alias to associate with this token (refused: there is no identity store).'),
});

const tokenField = z.object({ token: typeString.pipe(z.string().min(1)).describe('The token (request body).') });
const accessorField = z.object({
  accessor: typeString.pipe(z.string().min(1)).describe('Accessor of the token (request body).'),
});
const incrementField = {
  increment: duration.default(0).describe('The desired increment in seconds to the token expiration.'),
};

/** What the token store's paths use. */
export type TokenServices = Pick<BuiltinServices, 'tokens' | 'mounts' | 'clock' | 'store' | 'keyring'> & {
  /**
   * The backends this process bundles, for an auth method's renewal rule. Its hook is given these services where it
   * takes the core.
   */
  backends: ReadonlyMap<
    string,
    { renewLogin?(context: RenewLoginContext): Promise<{ ttl: number; maxTtl: number; period: number }> }
  >;
};

interface RenewLoginContext {
  entry: TokenEntry;
  mount: MountEntry;
  storage: MountStorage;
}

const tokenPaths = (services: TokenServices): PathSpec[] => [
  path({
    pattern: 'create',
    fields: createFields,
    refuseUnrecognizedFields: true,
    summaries: { update: "Creates a new token, a child of the caller's." },
    operations: { update: (request) => create(services, request as Request<z.output<typeof createFields>>, false) },
  }),
  path({
    pattern: 'create-orphan',
    fields: createFields,
    refuseUnrecognizedFields: true,
    summaries: { update: 'Creates a new orphan token (one without a parent).' },
    operations: { update: (request) => create(services, request as Request<z.output<typeof createFields>>, true) },
  }),
  path({
    pattern: 'create/:role_name',
    fields: roleCreateFields,
    refuseUnrecognizedFields: true,
    summaries: { update: 'Creates a new token from the named role.' },
    operations: { update: async (request) => create(services, request, false, await roleForCreate(request)) },
  }),
  ...tokenRolePaths,
  path({
    pattern: 'lookup-self',
    fields: z.object({}),
    summaries: { read: "Returns information about the caller's token." },
    operations: {
      read: async (request) => lookupReply(services, await self(services, request), caller(request).token),
    },
  }),
  path({
    pattern: 'lookup',
    fields: tokenField,
    summaries: { update: 'Returns information about a token.' },
    operations: {
      update: async ({ data }) =>
        lookupReply(services, await known(services, data.token, permissionDenied('bad token')), data.token),
    },
  }),
  path({
    pattern: 'lookup-accessor',
    fields: accessorField,
    summaries: { update: 'Returns information about the token with the given accessor (without its id).' },
    operations: { update: async ({ data }) => lookupReply(services, await byAccessor(services, data.accessor), '') },
  }),
  path({
    pattern: 'renew-self',
    fields: z.object(incrementField),
    summaries: { update: "Renews the caller's token." },
    operations: { update: async (request) => renew(services, request, caller(request).entry, caller(request).token) },
  }),
  path({
    pattern: 'renew',
    fields: z.object({ token: tokenField.shape.token, ...incrementField }),
    summaries: { update: 'Renews a token.' },
    operations: {
      update: async (request) =>
        renew(
          services,
          request,
          await known(services, request.data.token, badRequest('token not found')),
          request.data.token,
        ),
    },
  }),
  path({
    pattern: 'renew-accessor',
    fields: z.object({ accessor: accessorField.shape.accessor, ...incrementField }),
    summaries: { update: 'Renews the token with the given accessor.' },
    operations: {
      update: async (request) => renew(services, request, await byAccessor(services, request.data.accessor), ''),
    },
  }),
  path({
    pattern: 'revoke-self',
    fields: z.object({}),
    summaries: { update: "Revokes the caller's token and all its children." },
    operations: { update: async (request) => revoke(services, caller(request).entry) },
  }),
  path({
    pattern: 'revoke',
    fields: tokenField,
    summaries: { update: 'Revokes a token and all its children.' },
    operations: { update: async ({ data }) => revoke(services, await services.tokens.lookup(data.token)) },
  }),
  path({
    pattern: 'revoke-accessor',
    fields: accessorField,
    summaries: { update: 'Revokes the token with the given accessor and all its children.' },
    operations: { update: async ({ data }) => revoke(services, await byAccessor(services, data.accessor)) },
  }),
  path({
    pattern: 'accessors',
    fields: z.object({}),
    sudo: true,
    summaries: { list: 'Lists the accessors of the tokens issued.' },
    operations: {
      list: async () => ({ data: { keys: await services.tokens.accessorsIssued(await services.mounts.list('auth')) } }),
    },
  }),
  path({
    pattern: 'revoke-orphan',
    fields: tokenField,
    sudo: true,
    summaries: { update: 'Revokes a token but not its children, which become orphans.' },
    operations: {
      update: async ({ data }) =>
        revoke(services, await known(services, data.token, badRequest('token to revoke not found')), {
          orphanChildren: true,
        }),
    },
  }),
];

/** `auth/token/`: create, look up, renew and revoke tokens, as Vault's token store does. */
export const tokenBackend = builtin('token', 'auth', tokenPaths);

async function create(
  services: TokenServices,
  request: Request<z.output<typeof createFields>>,
  orphanPath: boolean,
  role?: TokenRole,
) {
  const parent = caller(request).entry;
  const data = request.data;
  const type = role ? roleTokenType(role, data.type) : (data.type ?? 'service');
  const privileged = isRootEntry(parent) || caller(request).acl.allows(`${request.mount.path}${request.path}`, 'sudo');
  if (parent.type === 'batch') throw badRequest('batch tokens cannot create more tokens');
  // Else a child would carry on after its parent's uses run out.
  if (parent.numUses > 0) throw badRequest('restricted use token cannot generate child tokens');
  // With a role, the role alone decides whether the token is an orphan, as in Vault.
  if (data.no_parent && !privileged && !role)
    throw badRequest('root or sudo privileges required to create orphan token');
  if (data.id !== undefined && !privileged) throw badRequest('root or sudo privileges required to specify token id');
  if (data.id !== undefined && (data.id.startsWith('hvb.') || type === 'batch')) {
    throw badRequest('a custom "id" cannot be used for batch tokens or begin with "hvb."');
  }
  if (data.period && !privileged) throw badRequest('root or sudo privileges required to create periodic token');
  if (data.entity_id !== undefined && !privileged)
    throw badRequest('root or sudo privileges required to set "entity_id"');

  // Vault's rules: a role listing allowed or disallowed policies decides them; otherwise an inheriting child gets
  // `default` only if its parent has it; an ordinary parent can give only what it holds (and `default` only when
  // it holds it); root or sudo can give anything but root.
  const noDefault = data.no_default_policy || role?.token_no_default_policy === true;
  let policies: string[];
  let addDefault = false;
  const fromRole = role && rolePolicies(role, data.policies, noDefault, parent.policies);
  if (fromRole) {
    policies = fromRole;
  } else if (data.policies === undefined) {
    policies = parent.policies;
  } else if (!privileged) {
    policies = sanitisePolicyNames(data.policies);
    const outside = policies.filter((name) => !parent.policies.includes(name));
    if (outside.length > 0)
      throw badRequest(`child policies must be subset of parent: not held by the parent: ${outside.join(', ')}`);
    addDefault = parent.policies.includes('default');
  } else {
    policies = sanitisePolicyNames(data.policies);
    addDefault = true;
  }
  if (addDefault && !policies.includes('default')) policies = [...policies, 'default'];
  if (noDefault) policies = policies.filter((name) => name !== 'default');
  const isRoot = policies.includes('root');
  if (isRoot && !isRootEntry(parent))
    throw badRequest('root tokens may not be created without parent token being root');
  const warnings: string[] = [];
  const requested = { period: data.period, explicitMaxTtl: data.explicit_max_ttl, numUses: data.num_uses };
  const { period, explicitMaxTtl, numUses } = role ? roleLimits(role, requested, warnings) : requested;
  if (type === 'batch') {
    if (isRoot) throw badRequest('batch tokens cannot be root tokens');
    const refused = (
      [
        ['explicit_max_ttl', explicitMaxTtl],
        ['num_uses', numUses],
        ['period', period],
      ] as const
    ).find(([, value]) => value > 0);
    if (refused) throw badRequest(`batch tokens cannot have "${refused[0]}" set`);
  }
  const ttl = data.ttl || data.lease || 0;
  if (isRoot && !ttl && !period && !explicitMaxTtl && parent.expireTime > 0) {
    throw badRequest('expiring root tokens cannot create non-expiring root tokens');
  }

  const { defaultTtl, maxTtl } = mountTtls(request.mount);
  const requestedTtl = period || ttl;
  const ttlCap = Math.min(...[explicitMaxTtl, maxTtl].filter((cap) => cap > 0));
  if (requestedTtl > ttlCap) {
    warnings.push(
      `TTL of "${requestedTtl}s" exceeded the effective max_ttl of "${ttlCap}s"; TTL value is capped accordingly`,
    );
  }
  const orphan = role ? role.orphan : orphanPath || data.no_parent === true;
  const { token, entry } = await services.tokens.create({
    policies,
    noDefaultPolicy: !policies.includes('default'),
    displayName: displayName(data.display_name),
    meta: data.meta ?? {},
    ttl,
    explicitMaxTtl,
    period,
    numUses,
    renewable: data.renewable && (role?.renewable ?? true),
    type,
    path: role ? roleTokenPath(request.mount.path, role) : `${request.mount.path}${request.path}`,
    ...(role ? { role: role.name } : {}),
    issuer: tokenStoreMount,
    // A child carries its parent's identity and address restriction; an orphan starts afresh.
    entityId: data.entity_id ?? (orphan ? '' : parent.entityId),
    boundCidrs: role?.token_bound_cidrs.length ? role.token_bound_cidrs : orphan ? [] : parent.boundCidrs,
    parent: orphan ? undefined : parent,
    creator: parent,
    mountDefaultTtl: defaultTtl,
    mountMaxTtl: maxTtl,
    ...(data.id !== undefined ? { id: data.id } : {}),
  });
  return { token: { token, entry }, ...(warnings.length > 0 ? { warnings } : {}) };
}

function lookupReply(services: TokenServices, entry: TokenEntry, id: string) {
  return { data: describeToken(entry, epochSeconds(services.clock), id) };
}

/** The caller's own token, re-read when limited-use so it shows the uses left after this request. */
async function self(services: TokenServices, request: Request): Promise<TokenEntry> {
  const { entry } = caller(request);
  if (entry.numUses === 0 || entry.type === 'batch') return entry;
  // Gone from lookups already: this request spent its last use.
  return (await services.tokens.lookupHash(entry.hash)) ?? { ...entry, numUses: 0 };
}

/** Renewal is bounded by the max TTL of the mount that issued the token, as tuned now. */
async function renew(
  services: TokenServices,
  request: Request<{ increment: number }>,
  entry: TokenEntry,
  token: string,
) {
  const { increment } = request.data;
  const issuer = (await services.mounts.resolve(entry.path)) ?? request.mount;
  let maxTtl = mountTtls(issuer).maxTtl;
  let ttl = increment;
  let period: number | undefined;
  const issuerBackend = issuer.uuid === request.mount.uuid ? undefined : services.backends.get(issuer.type);
  if (issuerBackend?.renewLogin) {
    const storage = new MountStorage(services.store, services.keyring, issuer.uuid);
    const decided = await issuerBackend.renewLogin({ entry, mount: issuer, storage });
    ttl = increment || decided.ttl;
    if (decided.maxTtl) maxTtl = Math.min(maxTtl, decided.maxTtl);
    period = decided.period;
  } else if (entry.role) {
    period = await roleRenewalPeriod(request, entry.role);
  }
  const renewed = await services.tokens.renew(entry, ttl, maxTtl, period);
  return { token: { token, entry: renewed.entry }, warnings: renewed.warnings };
}

async function revoke(
  services: TokenServices,
  entry: TokenEntry | undefined,
  options: { orphanChildren?: boolean } = {},
) {
  // As Vault, revoking a token that is already gone succeeds.
  if (!entry) return undefined;
  if (entry.type === 'batch')
    throw badRequest('batch tokens cannot be revoked; they expire with their TTL or their parent');
  await services.tokens.revoke(entry.hash, options);
  return undefined;
}

const caller = (request: Request) => {
  if (!request.caller) throw permissionDenied();
  return request.caller;
};

/** The live token behind a token string; a missing one gets the answer Vault gives on that endpoint. */
async function known(services: TokenServices, token: string, missing: DomainError): Promise<TokenEntry> {
  const entry = await services.tokens.lookup(token);
  if (!entry) throw missing;
  return entry;
}

async function byAccessor(services: TokenServices, accessor: string): Promise<TokenEntry> {
  const entry = await services.tokens.lookupAccessor(accessor);
  if (!entry) throw badRequest('invalid accessor');
  return entry;
}

/** Vault's display names: `token`, or `token-<name>` with each run of characters outside [a-zA-Z0-9-] made a `-`. */
function displayName(requested: string): string {
  return requested ? `token-${requested}`.replace(/[^a-zA-Z0-9-]+/g, '-').replace(/-$/, '') : 'token';
}
