import * as z from 'zod';
import type { Core } from '../../core.ts';
import { type PathSpec, path, type Request } from '../framework/backend.ts';
import { badRequest } from '../../lib/errors.ts';
import { bool, duration } from '../framework/fields.ts';
import { leaseNotFound } from '../leases/lease-manager.ts';

const leaseIdFields = z.object({ lease_id: z.string().min(1).optional(), url_lease_id: z.string().optional() });
const renewFields = leaseIdFields.extend({ increment: duration.default(0) });
const revokeFields = leaseIdFields.extend({ sync: bool.default(true) });

const idOf = (data: { lease_id?: string; url_lease_id?: string }) => {
  const id = data.url_lease_id || data.lease_id;
  if (!id) throw badRequest('"lease_id" is required');
  return id;
};

/** `sys/leases/…` (and the legacy `sys/renew`, `sys/revoke…`): look up, renew and revoke leases, alone or by prefix. */
export const leasePaths: PathSpec[] = [
  path({
    pattern: 'leases/lookup/:prefix*',
    fields: z.object({ prefix: z.string().default('') }),
    sudo: true,
    operations: {
      list: async ({ core, data }) => ({ data: { keys: await core.leases.list(data.prefix ? `${data.prefix.replace(/\/?$/, '/')}` : '') } }),
    },
  }),
  path({
    pattern: 'leases/lookup',
    fields: leaseIdFields,
    operations: {
      update: async ({ core, data }) => {
        const lease = await core.leases.get(idOf(data));
        if (!lease) throw leaseNotFound();
        return { data: core.leases.describe(lease) };
      },
    },
  }),
  // Vault still serves the pre-0.8 paths `sys/renew`, `sys/revoke`, `sys/revoke-prefix`, `sys/revoke-force` beside them.
  ...(['leases/renew', 'leases/renew/:url_lease_id+', 'renew', 'renew/:url_lease_id+'] as const).map(
    (pattern) => path({ pattern, fields: renewFields, operations: { update: renew } }),
  ),
  ...(['leases/revoke', 'leases/revoke/:url_lease_id+', 'revoke', 'revoke/:url_lease_id+'] as const).map(
    (pattern) => path({ pattern, fields: revokeFields, operations: { update: revoke } }),
  ),
  ...(['leases/revoke-prefix/:prefix+', 'revoke-prefix/:prefix+'] as const).map((pattern) =>
    path({
      pattern,
      fields: z.object({ prefix: z.string(), sync: bool.default(true) }),
      sudo: true,
      operations: {
        update: async ({ core, data }) => {
          await revokeTokensUnder(core, data.prefix);
          await core.leases.revokePrefix(data.prefix);
          return undefined;
        },
      },
    }),
  ),
  ...(['leases/revoke-force/:prefix+', 'revoke-force/:prefix+'] as const).map((pattern) =>
    path({
      pattern,
      fields: z.object({ prefix: z.string() }),
      sudo: true,
      operations: {
        update: async ({ core, data }) => {
          await revokeTokensUnder(core, data.prefix);
          await core.leases.revokePrefix(data.prefix, { force: true });
          return undefined;
        },
      },
    }),
  ),
];

async function renew(request: Request<z.output<typeof renewFields>>) {
  const data = request.data;
  const { lease, warnings } = await request.core.leases.renew(idOf(data), data.increment);
  return {
    raw: {
      status: 200,
      body: {
        request_id: request.requestId,
        lease_id: lease.leaseId,
        renewable: lease.renewable,
        lease_duration: lease.expireTime - lease.lastRenewalTime!,
        data: null,
        wrap_info: null,
        warnings: warnings.length > 0 ? warnings : null,
        auth: null,
      },
    },
  };
}

async function revoke(request: Request<z.output<typeof revokeFields>>) {
  const data = request.data;
  const id = idOf(data);
  if (!(await request.core.leases.get(id))) throw badRequest('invalid lease ID');
  if (data.sync) await request.core.leases.revoke(id);
  else await request.core.leases.revokeLater(id);
  return undefined;
}

/**
 * In Vault a login token is a lease too (`auth/<mount>/login/<token>`), so a prefix under `auth/` also revokes the
 * service tokens issued under it, with their children and leases: an auth method's logins, or the token store's
 * own tokens (`auth/token/create/<role>`, `auth/token/create-orphan`, …).
 */
async function revokeTokensUnder(core: Core, prefix: string): Promise<void> {
  const under = prefix.endsWith('/') ? prefix : `${prefix}/`;
  for (const mount of await core.mounts.list('auth')) {
    if (mount.path.startsWith(under)) await core.tokens.revokeIssued(mount);
    else if (under.startsWith(mount.path)) await core.tokens.revokeIssued(mount, under);
  }
}
