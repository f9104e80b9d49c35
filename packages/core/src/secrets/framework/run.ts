import { unsupported } from '../../lib/errors.ts';
import { mountTtls } from '../mounts/mount-table.ts';
import { ownerHash } from '../tokens/caller.ts';
import type { TokenEntry } from '../tokens/token-entry.ts';
import type { Handler, Operation, Reply, Request } from './backend.ts';
import type { Route } from './route.ts';
import type { SecretsServices } from './services.ts';

/**
 * The operation a request runs as: a write is a `create` or an `update`, as the row's `exists` says (else its
 * `update` if it declares one); with the row's handler for it.
 */
export async function operationFor(
  route: Route,
  request: Request,
  method: string,
): Promise<{ operation: Operation; handler: Handler<unknown> }> {
  const { spec } = route;
  const operation =
    route.operation === 'write'
      ? await writeKind(spec.exists, request, (op) => spec.operations[op] !== undefined)
      : route.operation;
  const handler = spec.operations[operation];
  if (!handler) throw unsupported(`unsupported operation ${method} on "${route.path}"`);
  return { operation, handler };
}

async function writeKind(
  exists: ((request: Request) => Promise<boolean>) | undefined,
  request: Request,
  supported: (op: Operation) => boolean,
): Promise<Operation> {
  if (exists) return (await exists(request)) ? 'update' : 'create';
  return supported('update') ? 'update' : 'create';
}

/** What a reply earned besides its data: the lease of its secret, the token of its login. */
export interface Issued {
  lease?: { leaseId: string; ttl: number; renewable: boolean; warnings: string[] };
  /** A new token and its entry (a login's, minted here; or one the handler issued itself). */
  token?: { token: string; entry: TokenEntry };
}

/** Records the lease of a reply's secret (owned by the caller's token) and mints the token a login earned. */
export async function issue(
  core: Pick<SecretsServices, 'leases' | 'tokens'>,
  request: Request,
  reply: Reply | undefined,
): Promise<Issued> {
  const issued: Issued = {};
  if (reply?.secret)
    issued.lease = await core.leases.register(request.mount, request.path, reply.secret, ownerHash(request.caller));
  if (reply?.auth) issued.token = await login(core, request, reply.auth);
  if (reply?.token) issued.token = reply.token;
  return issued;
}

/** Mints the token a login earned: an orphan whose parameters come from the auth method's role. */
function login(
  core: Pick<SecretsServices, 'tokens'>,
  request: Request,
  auth: NonNullable<Reply['auth']>,
): Promise<{ token: string; entry: TokenEntry }> {
  const { defaultTtl, maxTtl } = mountTtls(request.mount);
  return core.tokens.create({
    policies: auth.policies,
    noDefaultPolicy: auth.noDefaultPolicy ?? false,
    displayName: auth.displayName,
    meta: auth.metadata ?? {},
    ttl: auth.ttl ?? 0,
    explicitMaxTtl: auth.explicitMaxTtl ?? 0,
    period: auth.period ?? 0,
    numUses: auth.numUses ?? 0,
    renewable: auth.renewable ?? true,
    type: auth.type ?? 'service',
    path: `${request.mount.path}${request.path}`,
    issuer: { path: request.mount.path, uuid: request.mount.uuid },
    entityId: auth.entityId ?? '',
    boundCidrs: auth.boundCidrs ?? [],
    parent: undefined,
    mountDefaultTtl: defaultTtl,
    mountMaxTtl: Math.min(auth.maxTtl || maxTtl, maxTtl),
  });
}
