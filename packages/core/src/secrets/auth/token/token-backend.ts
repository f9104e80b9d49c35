import * as z from 'zod';
import { epochSeconds } from '../../../lib/clock.ts';
import { type Backend, path, type Request } from '../../framework/backend.ts';
import { badRequest, type DomainError, permissionDenied } from '../../../lib/errors.ts';
import { bool, count, duration, stringList, stringMap } from '../../framework/fields.ts';
import { MountStorage } from '../../mounts/mount-storage.ts';
import { mountTtls, tokenStoreMount } from '../../mounts/mount-table.ts';
import { describeToken, isRootEntry, type TokenEntry } from '../../tokens/token-entry.ts';
import { roleForCreate, roleLimits, rolePolicies, roleRenewalPeriod, roleTokenPath, roleTokenType, sanitizePolicies, type TokenRole, tokenRolePaths } from './roles-paths.ts';

/** `auth/token/`: create, look up, renew and revoke tokens, as Vault's token store does. */

const createFields = z.object({
  id: z.string().min(1).optional(),
  policies: stringList.optional(),
  meta: stringMap.optional(),
  no_parent: bool.optional(),
  no_default_policy: bool.default(false),
  renewable: bool.default(true),
  ttl: duration.default(0),
  /** Vault's deprecated name for `ttl` (hvac's `create_token(lease=…)`), used when `ttl` is not given. */
  lease: duration.optional(),
  explicit_max_ttl: duration.default(0),
  period: duration.default(0),
  display_name: z.string().max(256).default(''),
  num_uses: count.default(0),
  type: z.enum(['service', 'batch']).optional(),
  entity_id: z.string().optional(),
});

const roleCreateFields = createFields.extend({ role_name: z.string(), entity_alias: z.string().optional() });

const tokenField = z.object({ token: z.string().min(1) });
const accessorField = z.object({ accessor: z.string().min(1) });
const incrementField = { increment: duration.default(0) };

export const tokenBackend: Backend = {
  type: 'token',
  kind: 'auth',
  paths: [
    path({
      pattern: 'create',
      fields: createFields,
      refuseUnrecognizedFields: true,
      operations: { update: (request) => create(request as Request<z.output<typeof createFields>>, false) },
    }),
    path({
      pattern: 'create-orphan',
      fields: createFields,
      refuseUnrecognizedFields: true,
      operations: { update: (request) => create(request as Request<z.output<typeof createFields>>, true) },
    }),
    path({
      pattern: 'create/:role_name',
      fields: roleCreateFields,
      refuseUnrecognizedFields: true,
      operations: { update: async (request) => create(request, false, await roleForCreate(request)) },
    }),
    ...tokenRolePaths,
    path({
      pattern: 'lookup-self',
      fields: z.object({}),
      operations: { read: async (request) => lookupReply(request, await self(request), caller(request).token) },
    }),
    path({
      pattern: 'lookup',
      fields: tokenField,
      operations: {
        update: async (request) => {
          const { token } = request.data as z.output<typeof tokenField>;
          return lookupReply(request, await known(request, token, permissionDenied('bad token')), token);
        },
      },
    }),
    path({
      pattern: 'lookup-accessor',
      fields: accessorField,
      operations: {
        update: async (request) => {
          const entry = await byAccessor(request, (request.data as z.output<typeof accessorField>).accessor);
          return lookupReply(request, entry, '');
        },
      },
    }),
    path({
      pattern: 'renew-self',
      fields: z.object(incrementField),
      operations: { update: async (request) => renew(request, caller(request).entry, caller(request).token) },
    }),
    path({
      pattern: 'renew',
      fields: z.object({ token: z.string().min(1), ...incrementField }),
      operations: {
        update: async (request) => {
          const { token } = request.data as z.output<typeof tokenField>;
          return renew(request, await known(request, token, badRequest('token not found')), token);
        },
      },
    }),
    path({
      pattern: 'renew-accessor',
      fields: z.object({ accessor: z.string().min(1), ...incrementField }),
      operations: {
        update: async (request) => renew(request, await byAccessor(request, (request.data as z.output<typeof accessorField>).accessor), ''),
      },
    }),
    path({
      pattern: 'revoke-self',
      fields: z.object({}),
      operations: { update: async (request) => revoke(request, caller(request).entry) },
    }),
    path({
      pattern: 'revoke',
      fields: tokenField,
      operations: {
        update: async (request) => revoke(request, await request.core.tokens.lookup((request.data as z.output<typeof tokenField>).token)),
      },
    }),
    path({
      pattern: 'revoke-accessor',
      fields: accessorField,
      operations: {
        update: async (request) => revoke(request, await byAccessor(request, (request.data as z.output<typeof accessorField>).accessor)),
      },
    }),
    path({
      pattern: 'accessors',
      fields: z.object({}),
      sudo: true,
      operations: { list: async (request) => ({ data: { keys: await request.core.tokens.accessorsIssued(await request.core.mounts.list('auth')) } }) },
    }),
    path({
      pattern: 'revoke-orphan',
      fields: tokenField,
      sudo: true,
      operations: {
        update: async (request) =>
          revoke(request, await known(request, (request.data as z.output<typeof tokenField>).token, badRequest('token to revoke not found')), {
            orphanChildren: true,
          }),
      },
    }),
  ],
};

async function create(request: Request<z.output<typeof createFields>>, orphanPath: boolean, role?: TokenRole) {
  const parent = caller(request).entry;
  const data = request.data;
  const type = role ? roleTokenType(role, data.type) : (data.type ?? 'service');
  const privileged = isRootEntry(parent) || caller(request).acl.allows(`${request.mount.path}${request.path}`, 'sudo');
  if (parent.type === 'batch') throw badRequest('batch tokens cannot create more tokens');
  // Else a child would carry on after its parent's uses run out.
  if (parent.numUses > 0) throw badRequest('restricted use token cannot generate child tokens');
  // With a role, the role alone decides whether the token is an orphan, as in Vault.
  if (data.no_parent && !privileged && !role) throw badRequest('root or sudo privileges required to create orphan token');
  if (data.id !== undefined && !privileged) throw badRequest('root or sudo privileges required to specify token id');
  if (data.id !== undefined && (data.id.startsWith('hvb.') || type === 'batch')) {
    throw badRequest('a custom "id" cannot be used for batch tokens or begin with "hvb."');
  }
  if (data.period && !privileged) throw badRequest('root or sudo privileges required to create periodic token');
  if (data.entity_id !== undefined && !privileged) throw badRequest('root or sudo privileges required to set "entity_id"');

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
    policies = sanitizePolicies(data.policies);
    const outside = policies.filter((name) => !parent.policies.includes(name));
    if (outside.length > 0) throw badRequest(`child policies must be subset of parent: not held by the parent: ${outside.join(', ')}`);
    addDefault = parent.policies.includes('default');
  } else {
    policies = sanitizePolicies(data.policies);
    addDefault = true;
  }
  if (addDefault && !policies.includes('default')) policies = [...policies, 'default'];
  if (noDefault) policies = policies.filter((name) => name !== 'default');
  const isRoot = policies.includes('root');
  if (isRoot && !isRootEntry(parent)) throw badRequest('root tokens may not be created without parent token being root');
  const warnings: string[] = [];
  const requested = { period: data.period, explicitMaxTtl: data.explicit_max_ttl, numUses: data.num_uses };
  const { period, explicitMaxTtl, numUses } = role ? roleLimits(role, requested, warnings) : requested;
  if (type === 'batch') {
    if (isRoot) throw badRequest('batch tokens cannot be root tokens');
    const refused = ([['explicit_max_ttl', explicitMaxTtl], ['num_uses', numUses], ['period', period]] as const).find(
      ([, value]) => value > 0,
    );
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
    warnings.push(`TTL of "${requestedTtl}s" exceeded the effective max_ttl of "${ttlCap}s"; TTL value is capped accordingly`);
  }
  const orphan = role ? role.orphan : orphanPath || data.no_parent === true;
  const { token, entry } = await request.core.tokens.create({
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
    mountDefaultTtl: defaultTtl,
    mountMaxTtl: maxTtl,
    ...(data.id !== undefined ? { id: data.id } : {}),
  });
  return { token: { token, entry }, ...(warnings.length > 0 ? { warnings } : {}) };
}

function lookupReply(request: Request, entry: TokenEntry, id: string) {
  return { data: describeToken(entry, epochSeconds(request.core.clock), id) };
}

/** The caller's own token, re-read when limited-use so it shows the uses left after this request. */
async function self(request: Request): Promise<TokenEntry> {
  const { entry } = caller(request);
  if (entry.numUses === 0 || entry.type === 'batch') return entry;
  // Gone from lookups already: this request spent its last use.
  return (await request.core.tokens.lookupHash(entry.hash)) ?? { ...entry, numUses: 0 };
}

/** Renewal is bounded by the max TTL of the mount that issued the token, as tuned now. */
async function renew(request: Request, entry: TokenEntry, token: string) {
  const { increment } = request.data as { increment: number };
  const issuer = (await request.core.mounts.resolve(entry.path)) ?? request.mount;
  let maxTtl = mountTtls(issuer).maxTtl;
  let ttl = increment;
  let period: number | undefined;
  const renewLogin = issuer.uuid === request.mount.uuid ? undefined : request.core.backends.get(issuer.type)?.renewLogin;
  if (renewLogin) {
    const storage = new MountStorage(request.core.store, request.core.keyring, issuer.uuid);
    const decided = await renewLogin({ entry, mount: issuer, storage, core: request.core });
    ttl = increment || decided.ttl;
    if (decided.maxTtl) maxTtl = Math.min(maxTtl, decided.maxTtl);
    period = decided.period;
  } else if (entry.role) {
    period = await roleRenewalPeriod(request, entry.role);
  }
  const renewed = await request.core.tokens.renew(entry, ttl, maxTtl, period);
  return { token: { token, entry: renewed.entry }, warnings: renewed.warnings };
}

async function revoke(request: Request, entry: TokenEntry | undefined, options: { orphanChildren?: boolean } = {}) {
  // As Vault, revoking a token that is already gone succeeds.
  if (!entry) return undefined;
  if (entry.type === 'batch') throw badRequest('batch tokens cannot be revoked; they expire with their TTL or their parent');
  await request.core.tokens.revoke(entry.hash, options);
  return undefined;
}

const caller = (request: Request) => {
  if (!request.caller) throw permissionDenied();
  return request.caller;
};

/** The live token behind a token string; a missing one gets the answer Vault gives on that endpoint. */
async function known(request: Request, token: string, missing: DomainError): Promise<TokenEntry> {
  const entry = await request.core.tokens.lookup(token);
  if (!entry) throw missing;
  return entry;
}

async function byAccessor(request: Request, accessor: string): Promise<TokenEntry> {
  const entry = await request.core.tokens.lookupAccessor(accessor);
  if (!entry) throw badRequest('invalid accessor');
  return entry;
}

/** Vault's display names: `token`, or `token-<name>` with each run of characters outside [a-zA-Z0-9-] made a `-`. */
function displayName(requested: string): string {
  return requested ? `token-${requested}`.replace(/[^a-zA-Z0-9-]+/g, '-').replace(/-$/, '') : 'token';
}
