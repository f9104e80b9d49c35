import ipaddr from 'ipaddr.js';
import { badRequest, permissionDenied } from '../../../lib/errors.ts';
import type { Claims } from '../../../lib/jwt/claims.ts';
import type { LoginResult, Reply, Request } from '../../framework/backend.ts';
import type { MountStorage } from '../../mounts/mount-storage.ts';
import { refuseRootFromAuthMethod } from '../../policies/policy-names.ts';
import type { TokenEntry } from '../../tokens/token-entry.ts';
import { checkBoundClaims, claimMetadata, groupNames, userName } from './claims.ts';
import { resolveEntity } from './identity.ts';
import { type JwtRole, readRole } from './roles.ts';

/** Vault's rule, checked before any token is looked at: the caller's address must be inside the role's CIDRs. */
export function requireAllowedAddress(role: JwtRole, clientIp: string): void {
  if (role.token_bound_cidrs.length === 0) return;
  if (!addressIn(role.token_bound_cidrs, clientIp)) throw permissionDenied();
}

function addressIn(cidrs: string[], clientIp: string): boolean {
  if (!ipaddr.isValid(clientIp)) return false;
  const address = ipaddr.process(clientIp);
  return cidrs.some((cidr) => {
    const range = ipaddr.parseCIDR(cidr);
    return address.kind() === range[0].kind() && address.match(range);
  });
}

/**
 * The end both logins share once a token's signature and times are good: the role's claim rules, the
 * identity, and the token parameters the pipeline mints from.
 */
export async function finishLogin(request: Request, role: JwtRole, roleName: string, claims: Claims): Promise<Reply> {
  const user = userName(claims, role);
  const groups = groupNames(claims, role);
  const metadata = claimMetadata(claims, role, roleName);
  checkBoundClaims(claims, role);
  // Before the identity is touched: a role stored before its policies were sanitised may still name root.
  refuseRootFromAuthMethod(role.token_policies);
  const entityId = await resolveEntity(request, { name: user, metadata }, groups);
  return { auth: loginResult(role, { displayName: `${mountSlug(request.mount.path)}-${user}`, metadata, entityId }) };
}

/** `auth/jwt/` → `jwt`: Vault prefixes a login token's display name with its mount. */
const mountSlug = (mountPath: string) =>
  mountPath
    .replace(/^auth\//, '')
    .replace(/\/$/, '')
    .replaceAll('/', '-');

export function loginResult(
  role: JwtRole,
  who: { displayName: string; metadata: Record<string, string>; entityId: string },
): LoginResult {
  return {
    policies: role.token_policies,
    noDefaultPolicy: role.token_no_default_policy,
    displayName: who.displayName,
    metadata: who.metadata,
    entityId: who.entityId,
    ttl: role.token_ttl,
    maxTtl: role.token_max_ttl,
    explicitMaxTtl: role.token_explicit_max_ttl,
    period: role.token_period,
    numUses: role.token_num_uses,
    renewable: true,
    type: role.token_type === 'batch' || role.token_type === 'default-batch' ? 'batch' : 'service',
    boundCidrs: role.token_bound_cidrs,
  };
}

/**
 * What a renewal of a token this method issued gets, as Vault's `pathLoginRenew` decides it: the role (named
 * in the token's `role` metadata) must still exist, and its current TTL, max TTL and period apply (read past
 * the per-process cache: a renewal is rare and must see the role as it is now).
 */
export async function renewLogin(context: {
  entry: TokenEntry;
  storage: MountStorage;
}): Promise<{ ttl: number; maxTtl: number; period: number }> {
  const name = context.entry.meta.role;
  if (!name) throw badRequest('failed to fetch the role name during renewal');
  const role = await readRole(context, name);
  if (!role) throw badRequest(`role ${name} does not exist during renewal`);
  return { ttl: role.token_ttl, maxTtl: role.token_max_ttl, period: role.token_period };
}
