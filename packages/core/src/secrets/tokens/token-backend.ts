import { z } from 'zod';
import { type Backend, type Request, path } from '../../http/backend.ts';
import { badRequest, permissionDenied } from '../../http/errors.ts';
import { bool, count, duration, stringList, stringMap } from '../../http/fields.ts';
import { epochSeconds } from '../../lib/clock.ts';
import { mountTtls } from '../mounts/mount-table.ts';
import { type TokenEntry, describeToken, isRootEntry } from './token-entry.ts';

/** `auth/token/`: create, look up, renew and revoke tokens, as Vault's token store does. */

const createFields = z.object({
  id: z.string().min(1).optional(),
  policies: stringList.optional(),
  meta: stringMap.optional(),
  no_parent: bool.optional(),
  no_default_policy: bool.default(false),
  renewable: bool.default(true),
  ttl: duration.default(0),
  explicit_max_ttl: duration.default(0),
  period: duration.default(0),
  display_name: z.string().max(256).default(''),
  num_uses: count.default(0),
  type: z.enum(['service', 'batch']).default('service'),
  entity_id: z.string().optional(),
});

const tokenField = z.object({ token: z.string().min(1) });
const accessorField = z.object({ accessor: z.string().min(1) });
const incrementField = { increment: duration.default(0) };

export const tokenBackend: Backend = {
  type: 'token',
  kind: 'auth',
  paths: [
    path({ pattern: 'create', fields: createFields, operations: { update: (request) => create(request as Request<z.output<typeof createFields>>, false) } }),
    path({ pattern: 'create-orphan', fields: createFields, operations: { update: (request) => create(request as Request<z.output<typeof createFields>>, true) } }),
    path({
      pattern: 'lookup-self',
      fields: z.object({}),
      operations: { read: async (request) => lookupReply(request, caller(request).entry, caller(request).token) },
    }),
    path({
      pattern: 'lookup',
      fields: tokenField,
      operations: {
        update: async (request) => {
          const { token } = request.data as z.output<typeof tokenField>;
          return lookupReply(request, await known(request, token), token);
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
          return renew(request, await known(request, token), token);
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
        update: async (request) => revoke(request, await known(request, (request.data as z.output<typeof tokenField>).token)),
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
      pattern: 'revoke-orphan',
      fields: tokenField,
      sudo: true,
      operations: {
        update: async (request) =>
          revoke(request, await known(request, (request.data as z.output<typeof tokenField>).token), { orphanChildren: true }),
      },
    }),
  ],
};

async function create(request: Request<z.output<typeof createFields>>, orphanPath: boolean) {
  const parent = caller(request).entry;
  const data = request.data;
  const privileged = isRootEntry(parent) || caller(request).acl.allows(`${request.mount.path}${request.path}`, 'sudo');
  if (parent.type === 'batch') throw badRequest('batch tokens cannot create child tokens');
  if (data.no_parent && !privileged) throw badRequest('root or sudo privileges required to create orphan token');
  if (data.id !== undefined && !privileged) throw badRequest('root or sudo privileges required to specify token id');
  if (data.id !== undefined && (data.id.startsWith('hvb.') || data.type === 'batch')) {
    throw badRequest('a custom "id" cannot be used for batch tokens or begin with "hvb."');
  }
  if (data.period && !privileged) throw badRequest('root or sudo privileges required to create periodic token');
  if (data.entity_id !== undefined && !privileged) throw badRequest('root or sudo privileges required to set "entity_id"');

  const policies = data.policies ?? parent.policies.filter((name) => name !== 'default');
  if (!privileged) {
    const outside = policies.filter((name) => name !== 'default' && !parent.policies.includes(name.toLowerCase()));
    if (outside.length > 0) throw badRequest(`child policies must be subset of parent: not held by the parent: ${outside.join(', ')}`);
  }
  if (data.type === 'batch') {
    if (policies.includes('root')) throw badRequest('batch tokens cannot be root tokens');
    if (data.num_uses > 0) throw badRequest('batch tokens cannot have "num_uses"');
    if (data.period > 0) throw badRequest('batch tokens cannot be periodic');
  }
  if (data.explicit_max_ttl && data.ttl > data.explicit_max_ttl) throw badRequest('"ttl" must not be greater than "explicit_max_ttl"');
  const { defaultTtl, maxTtl } = mountTtls(request.mount);
  const orphan = orphanPath || data.no_parent === true;
  const { token, entry } = await request.core.tokens.create({
    policies,
    noDefaultPolicy: data.no_default_policy,
    displayName: displayName(data.display_name),
    meta: data.meta ?? {},
    ttl: data.ttl,
    explicitMaxTtl: data.explicit_max_ttl,
    period: data.period,
    numUses: data.num_uses,
    renewable: data.renewable,
    type: data.type,
    path: `${request.mount.path}${request.path}`,
    entityId: data.entity_id ?? parent.entityId,
    boundCidrs: [],
    parent: orphan ? undefined : parent,
    mountDefaultTtl: defaultTtl,
    mountMaxTtl: maxTtl,
    ...(data.id !== undefined ? { id: data.id } : {}),
  });
  return { token: { token, entry } };
}

function lookupReply(request: Request, entry: TokenEntry, id: string) {
  return { data: describeToken(entry, epochSeconds(request.core.clock), id) };
}

async function renew(request: Request, entry: TokenEntry, token: string) {
  const { increment } = request.data as { increment: number };
  const renewed = await request.core.tokens.renew(entry, increment, mountTtls(request.mount).maxTtl);
  return { token: { token, entry: renewed.entry }, warnings: renewed.warnings };
}

async function revoke(request: Request, entry: TokenEntry, options: { orphanChildren?: boolean } = {}) {
  if (entry.type === 'batch') throw badRequest('batch tokens cannot be revoked; they expire with their TTL or their parent');
  await request.core.tokens.revoke(entry.hash, options);
  return undefined;
}

const caller = (request: Request) => {
  if (!request.caller) throw permissionDenied();
  return request.caller;
};

async function known(request: Request, token: string): Promise<TokenEntry> {
  const entry = await request.core.tokens.lookup(token);
  if (!entry) throw permissionDenied('bad token');
  return entry;
}

async function byAccessor(request: Request, accessor: string): Promise<TokenEntry> {
  const entry = await request.core.tokens.lookupAccessor(accessor);
  if (!entry) throw badRequest('invalid accessor');
  return entry;
}

/** Vault's display names: `token`, or `token-<name>` with the name reduced to [a-z0-9-]. */
function displayName(requested: string): string {
  const cleaned = requested.toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/^-+|-+$/g, '');
  return cleaned ? `token-${cleaned}` : 'token';
}
