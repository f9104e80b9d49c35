import type { TokenEntry } from '../tokens/token-entry.ts';
import type { Reply, Request } from './backend.ts';
import type { RawResponse } from './raw.ts';
import type { Issued } from './run.ts';

/**
 * The answers that carry no envelope: a reply the handler shaped itself (`raw`), a list with no keys or a read
 * with nothing (404, as Vault), a write with nothing to say (204). Undefined when the reply gets the envelope.
 */
export function withoutEnvelope(request: Request, reply: Reply | undefined, warnings: string[]): RawResponse | undefined {
  if (reply?.raw) return reply.raw;
  if (request.operation === 'list') {
    const keys = reply?.data?.keys;
    if (!Array.isArray(keys) || keys.length === 0) return { status: 404, body: { errors: [] } };
  }
  if (!reply?.data && !reply?.secret && !reply?.auth && !reply?.token) {
    if (request.operation === 'read') return { status: 404, body: { errors: [] } };
    if (warnings.length === 0) return { status: 204 };
  }
  return undefined;
}

/** Vault's response envelope around a reply's data, with the lease and token it earned. */
export function envelope(request: Request, reply: Reply | undefined, warnings: string[], issued: Issued): RawResponse {
  const shown = [...warnings, ...(issued.lease?.warnings ?? [])];
  const body = {
    request_id: request.requestId,
    lease_id: issued.lease?.leaseId ?? '',
    renewable: issued.lease?.renewable ?? false,
    lease_duration: issued.lease?.ttl ?? 0,
    data: reply?.data ?? null,
    wrap_info: null,
    warnings: shown.length > 0 ? shown : null,
    auth: issued.token ? authBlock(issued.token.token, issued.token.entry) : null,
    mount_type: request.mount.type,
  };
  return { status: 200, body };
}

/** The `auth` block of a reply that carries a new token. */
export function authBlock(token: string, entry: TokenEntry): Record<string, unknown> {
  // The TTL just granted, from when it was granted: counting from "now" would show 7199 for a 7200 s token
  // whenever the reply is rendered a second boundary after the token was written.
  const leaseDuration = entry.expireTime ? entry.expireTime - (entry.lastRenewalTime ?? entry.creationTime) : 0;
  return {
    client_token: token,
    accessor: entry.accessor,
    policies: entry.policies,
    token_policies: entry.policies,
    identity_policies: null,
    metadata: Object.keys(entry.meta).length > 0 ? entry.meta : null,
    lease_duration: leaseDuration,
    renewable: entry.renewable,
    entity_id: entry.entityId,
    token_type: entry.type,
    orphan: entry.orphan,
    num_uses: entry.numUses,
    mfa_requirement: null,
  };
}
