import type { TokenEntry } from '../tokens/token-entry.ts';
import type { Reply, Request } from './backend.ts';
import type { RawResponse } from './raw.ts';
import type { Issued } from './run.ts';
import { injectsDataAtTopLevel } from './top-level-data.ts';

/**
 * The answers that carry no envelope: an answer Vault gives as is (`unwrapped`), a list with
 * no keys or a read with nothing (404, as Vault), a write with nothing to say (204). Undefined when the reply gets
 * the envelope.
 */
export function withoutEnvelope(
  request: Request,
  reply: Reply | undefined,
  warnings: string[],
): RawResponse | undefined {
  if (reply?.unwrapped) return { status: 200, body: reply.unwrapped };
  if (request.operation === 'list') {
    const keys = reply?.data?.keys;
    if (!Array.isArray(keys) || keys.length === 0) return { status: 404, body: { errors: [] } };
  }
  if (!reply?.data && !reply?.secret && !reply?.auth && !reply?.token && !reply?.renewed) {
    if (request.operation === 'read') return { status: 404, body: { errors: [] } };
    if (warnings.length === 0) return { status: 204 };
  }
  return undefined;
}

/**
 * Vault's response envelope around a reply's data, with the lease and token it earned (or the lease it renewed).
 * The older shapes some paths keep (`renewed`, `status`) are answered as they always were here, without `mount_type`.
 * On the system routes Vault lists (`top-level-data.ts`) the data's fields are at the top level too, the envelope's
 * own fields winning a clash as they do for a client reading Vault's answer.
 */
export function envelope(request: Request, reply: Reply | undefined, warnings: string[], issued: Issued): RawResponse {
  const shown = [...warnings, ...(issued.lease?.warnings ?? [])];
  const lease = reply?.renewed ?? issued.lease;
  const older = Boolean(reply?.renewed || reply?.status);
  const body = {
    request_id: request.requestId,
    lease_id: lease?.leaseId ?? '',
    renewable: lease?.renewable ?? false,
    lease_duration: lease?.ttl ?? 0,
    data: reply?.data ?? null,
    wrap_info: null,
    warnings: shown.length > 0 ? shown : null,
    auth: issued.token ? authBlock(issued.token.token, issued.token.entry) : null,
    ...(older ? {} : { mount_type: request.mount.type }),
  };
  const data = reply?.data;
  const atTopLevel = data && Object.keys(data).length > 0 && injectsDataAtTopLevel(request.mount.path + request.path);
  return { status: reply?.status ?? 200, body: atTopLevel ? { ...data, ...body } : body };
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
