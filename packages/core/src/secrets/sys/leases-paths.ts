import * as z from 'zod';
import { badRequest } from '../../lib/errors.ts';
import { type PathSpec, path, type Request } from '../framework/backend.ts';
import { bool, duration } from '../framework/fields.ts';
import { leaseNotFound } from '../leases/lease-manager.ts';
import type { BuiltinServices } from './builtin.ts';
import { typeString } from '../framework/vault-field-types.ts';

const leaseIdFields = z.object({
  lease_id: typeString
    .pipe(z.string().min(1))
    .optional()
    .describe('The lease identifier. This is included with a lease.'),
  url_lease_id: typeString
    .pipe(z.string())
    .optional()
    .describe('The lease identifier, in the URL (takes precedence over "lease_id").'),
});
const renewFields = leaseIdFields.extend({
  increment: duration
    .default(0)
    .describe('The desired increment in seconds to the lease (a duration such as "1h" is accepted).'),
});
const syncField = bool.default(true).describe('Whether or not to perform the revocation synchronously.');
const revokeFields = leaseIdFields.extend({ sync: syncField });
const prefixField = typeString.pipe(z.string()).describe('The path to revoke leases under. Example: "prod/aws/ops"');

type LeaseServices = Pick<BuiltinServices, 'leases' | 'mounts' | 'tokens'>;

const idOf = (data: { lease_id?: string; url_lease_id?: string }) => {
  const id = data.url_lease_id || data.lease_id;
  if (!id) throw badRequest('"lease_id" is required');
  return id;
};

/** `sys/leases/…` (and the legacy `sys/renew`, `sys/revoke…`): look up, renew and revoke leases, alone or by prefix. */
export const leasePaths = (services: LeaseServices): PathSpec[] => {
  const renew = async (request: Request<z.output<typeof renewFields>>) => {
    const data = request.data;
    const { lease, warnings } = await services.leases.renew(idOf(data), data.increment);
    return {
      renewed: { leaseId: lease.leaseId, renewable: lease.renewable, ttl: lease.expireTime - lease.lastRenewalTime! },
      warnings,
    };
  };
  const revoke = async ({ data }: Request<z.output<typeof revokeFields>>) => {
    const id = idOf(data);
    if (!(await services.leases.get(id))) throw badRequest('invalid lease ID');
    if (data.sync) await services.leases.revoke(id);
    else await services.leases.revokeLater(id);
    return undefined;
  };
  return [
    path({
      pattern: 'leases/lookup/:prefix*',
      fields: z.object({
        prefix: typeString
          .pipe(z.string())
          .default('')
          .describe('The prefix to list the leases under. Example: "aws/creds/deploy/"'),
      }),
      sudo: true,
      summaries: { list: 'Lists the lease ids under a prefix.' },
      operations: {
        list: async ({ data }) => ({
          data: { keys: await services.leases.list(data.prefix ? `${data.prefix.replace(/\/?$/, '/')}` : '') },
        }),
      },
    }),
    path({
      pattern: 'leases/lookup',
      fields: leaseIdFields,
      summaries: { update: 'Retrieves lease metadata.' },
      operations: {
        update: async ({ data }) => {
          const lease = await services.leases.get(idOf(data));
          if (!lease) throw leaseNotFound();
          return { data: services.leases.describe(lease) };
        },
      },
    }),
    // Vault still serves the pre-0.8 paths `sys/renew`, `sys/revoke`, `sys/revoke-prefix`, `sys/revoke-force` beside them.
    ...(['leases/renew', 'leases/renew/:url_lease_id+', 'renew', 'renew/:url_lease_id+'] as const).map((pattern) =>
      path({
        pattern,
        fields: renewFields,
        summaries: { update: 'Renews a lease, requesting to extend the lease.' },
        operations: { update: renew },
      }),
    ),
    ...(['leases/revoke', 'leases/revoke/:url_lease_id+', 'revoke', 'revoke/:url_lease_id+'] as const).map((pattern) =>
      path({
        pattern,
        fields: revokeFields,
        summaries: { update: 'Revokes a lease immediately.' },
        operations: { update: revoke },
      }),
    ),
    ...(['leases/revoke-prefix/:prefix+', 'revoke-prefix/:prefix+'] as const).map((pattern) =>
      path({
        pattern,
        fields: z.object({ prefix: prefixField, sync: syncField }),
        sudo: true,
        summaries: {
          update:
            "Revokes all secrets (via a lease ID prefix) or tokens (via the tokens' path property) generated under a given prefix immediately.",
        },
        operations: {
          update: async ({ data }) => {
            await revokeTokensUnder(services, data.prefix);
            await services.leases.revokePrefix(data.prefix);
            return undefined;
          },
        },
      }),
    ),
    ...(['leases/revoke-force/:prefix+', 'revoke-force/:prefix+'] as const).map((pattern) =>
      path({
        pattern,
        fields: z.object({ prefix: prefixField }),
        sudo: true,
        summaries: {
          update:
            'Revokes all secrets or tokens generated under a given prefix immediately, ignoring errors from their revocation.',
        },
        operations: {
          update: async ({ data }) => {
            await revokeTokensUnder(services, data.prefix);
            await services.leases.revokePrefix(data.prefix, { force: true });
            return undefined;
          },
        },
      }),
    ),
  ];
};

/**
 * In Vault a login token is a lease too (`auth/<mount>/login/<token>`), so a prefix under `auth/` also revokes the
 * service tokens issued under it, with their children and leases: an auth method's logins, or the token store's
 * own tokens (`auth/token/create/<role>`, `auth/token/create-orphan`, …).
 */
async function revokeTokensUnder(services: Pick<BuiltinServices, 'mounts' | 'tokens'>, prefix: string): Promise<void> {
  const under = prefix.endsWith('/') ? prefix : `${prefix}/`;
  for (const mount of await services.mounts.list('auth')) {
    if (mount.path.startsWith(under)) await services.tokens.revokeIssued(mount);
    else if (under.startsWith(mount.path)) await services.tokens.revokeIssued(mount, under);
  }
}
