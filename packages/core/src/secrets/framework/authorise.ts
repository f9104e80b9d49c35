import ipaddr from 'ipaddr.js';
import { permissionDenied } from '../../lib/errors.ts';
import { type Item, itemKey } from '../../storage/store.ts';
import { mountPartition } from '../mounts/mount-storage.ts';
import type { FieldDecoder } from '../policies/parameter-constraints.ts';
import type { Capability } from '../policies/policy-document.ts';
import { type Caller, tokenFromHeaders } from '../tokens/caller.ts';
import type { TokenEntry } from '../tokens/token-entry.ts';
import type { Operation } from './backend.ts';
import type { RawRequest } from './raw.ts';
import { type Route, writeKinds } from './route.ts';
import type { SecretsServices } from './services.ts';

/** What `readAhead` read: the caller's token entry (undefined when not live) and the request's storage items (absent ones as `undefined`). */
export interface ReadAhead {
  caller: TokenEntry | undefined;
  storage: Map<string, Item | undefined>;
}

type Services = Pick<SecretsServices, 'store' | 'tokens' | 'policies'>;

/**
 * A read whose storage keys the path names (`PathSpec.prefetch`): the item the caller's token needs (its own, or a
 * batch token's parent's) and the data in one BatchGetItem. The data stays unused until the caller is authorised.
 */
export async function readAhead(core: Services, raw: RawRequest, route: Route): Promise<ReadAhead | undefined> {
  if (route.operation !== 'read' || route.spec.unauthenticated) return undefined;
  const token = tokenFromHeaders(raw.headers);
  const keys = route.spec.prefetch?.(route.params) ?? [];
  const plan = token && keys.length > 0 ? core.tokens.lookupPlan(token) : undefined;
  // An orphan batch token needs no read: the data alone is one GetItem, as without reading ahead.
  if (!plan?.key) return undefined;
  const { key: tokenKey } = plan;
  const storagePk = mountPartition(route.mount.uuid);
  const items = await core.store.batchGet([tokenKey, ...keys.map((key) => ({ pk: storagePk, sk: key }))]);
  return {
    caller: await plan.entry(items.get(itemKey(tokenKey.pk, tokenKey.sk))),
    storage: new Map(keys.map((key) => [key, items.get(itemKey(storagePk, key))])),
  };
}

/**
 * Who calls: the live token the request presents, usable from the caller's address, with its policies compiled.
 * A write must be allowed as a create or an update before its fields are read.
 */
export async function authenticate(core: Services, raw: RawRequest, route: Route, ahead?: ReadAhead): Promise<Caller> {
  const token = tokenFromHeaders(raw.headers);
  if (!token) throw permissionDenied();
  const entry = ahead ? ahead.caller : await core.tokens.lookup(token);
  if (!entry) throw permissionDenied('permission denied: invalid or expired token');
  if (!cidrAllows(entry, raw.clientIp)) throw permissionDenied('permission denied: token not valid from this address');
  const caller = { token, entry, acl: await core.policies.acl(entry.policies) };
  if (route.operation === 'write' && !writeKinds.some((op) => caller.acl.allows(route.path, op as Capability))) {
    throw permissionDenied();
  }
  return caller;
}

/**
 * The caller's policy allows the operation (with `sudo` if the row needs it, and the parameter constraints on
 * `parameters`), and one use of a limited-use token is spent. The uses left afterwards, for a token that has a
 * limit (0: revoke it once the request is done).
 */
export async function authorise(
  core: Services,
  caller: Caller,
  path: string,
  operation: Operation,
  sudo: boolean | undefined,
  parameters: Record<string, unknown>,
  decodeField?: FieldDecoder,
): Promise<number | undefined> {
  if (!caller.acl.allows(path, operation as Capability, sudo, parameters, decodeField)) throw permissionDenied();
  const used = await core.tokens.consumeUse(caller.entry);
  if (!used) throw permissionDenied();
  return caller.entry.numUses > 0 ? used.numUses : undefined;
}

function cidrAllows(entry: TokenEntry, clientIp: string): boolean {
  if (entry.boundCidrs.length === 0) return true;
  if (!ipaddr.isValid(clientIp)) return false;
  const address = ipaddr.process(clientIp);
  return entry.boundCidrs.some((cidr) => {
    try {
      const range = ipaddr.parseCIDR(cidr);
      return address.kind() === range[0].kind() && address.match(range);
    } catch {
      return false;
    }
  });
}
