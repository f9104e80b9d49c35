import type { MountRef } from '../mounts/mount-table.ts';

/** A token as stored (service) or carried inside itself (batch). Times are epoch seconds; 0 means never. */
export interface TokenEntry {
  /** Keyed hash of the token; '' for batch tokens, which are never stored. */
  hash: string;
  accessor: string;
  policies: string[];
  parentHash?: string;
  displayName: string;
  meta: Record<string, string>;
  /** Uses left; 0 is unlimited. */
  numUses: number;
  creationTime: number;
  creationTtl: number;
  expireTime: number;
  explicitMaxTtl: number;
  period: number;
  renewable: boolean;
  type: 'service' | 'batch';
  path: string;
  /**
   * The auth method that issued the token (a login's mount, or the built-in token store): its service tokens are
   * indexed under it (`sys/leases/revoke-prefix`) and revoked when it is disabled; its batch tokens are refused
   * once it is gone.
   */
  issuer?: MountRef;
  entityId: string;
  orphan: boolean;
  boundCidrs: string[];
  lastRenewalTime?: number;
  /** The token role it was created from (`auth/token/create/<role>`); its renewals follow the role. */
  role?: string;
}

export const isRootEntry = (entry: TokenEntry) => entry.policies.includes('root');

/** The token as Vault's lookup endpoints show it. `id` is known only when the caller presented the token. */
export function describeToken(entry: TokenEntry, nowSeconds: number, id = ''): Record<string, unknown> {
  return {
    id,
    accessor: entry.accessor,
    policies: entry.policies,
    path: entry.path,
    meta: Object.keys(entry.meta).length > 0 ? entry.meta : null,
    display_name: entry.displayName,
    num_uses: entry.numUses,
    orphan: entry.orphan,
    creation_time: entry.creationTime,
    creation_ttl: entry.creationTtl,
    expire_time: entry.expireTime ? new Date(entry.expireTime * 1000).toISOString() : null,
    issue_time: new Date(entry.creationTime * 1000).toISOString(),
    ...(entry.lastRenewalTime ? { last_renewal_time: entry.lastRenewalTime } : {}),
    explicit_max_ttl: entry.explicitMaxTtl,
    period: entry.period || undefined,
    ttl: entry.expireTime ? Math.max(0, entry.expireTime - nowSeconds) : 0,
    renewable: entry.renewable,
    type: entry.type,
    entity_id: entry.entityId,
    bound_cidrs: entry.boundCidrs.length > 0 ? entry.boundCidrs : undefined,
    role: entry.role || undefined,
  };
}
