import * as z from 'zod';
import { badRequest } from '../../../lib/errors.ts';
import { leasedSecret, type PathSpec, path, type Reply, type Request } from '../../framework/backend.ts';
import { readAccess, requireAccess, serverVersion, upstreamFailure } from './config-access.ts';
import { ConsulClient, type CreatedToken } from './consul-client.ts';
import { isLegacy, nodeIdentity, readRole, serviceIdentity } from './roles.ts';
import { typeString } from '../../framework/vault-field-types.ts';

/**
 * `creds/:name`: a new ACL token on the mesh server with exactly the role's attributes, under a renewable
 * lease. Revoking the lease (or its expiry) deletes the token, in the namespace and partition it was made in.
 */

/** What the revoke hook needs, sealed with the lease. */
type TokenLease = {
  role: string;
  /** Where the token was made (its `MeshScope`). */
  namespace: string;
  partition: string;
  /** The token's accessor (the token API), or its secret for a legacy token, which has no accessor. */
  accessor?: string;
  legacySecret?: string;
};

export const credsPaths: PathSpec[] = [
  path({
    pattern: 'creds/:name',
    fields: z.object({ name: typeString.pipe(z.string()).describe('Name of the role to generate the token from.') }),
    summaries: {
      read: 'Generate a mesh server ACL token from the role, under a renewable lease that deletes it when it ends.',
    },
    operations: { read: issue },
  }),
];

async function issue(request: Request<{ name: string }>): Promise<Reply> {
  const { storage, mount, system, data } = request;
  const role = await readRole(storage, data.name);
  if (!role) throw badRequest(`role "${data.name}" not found`);
  const access = await requireAccess(storage, mount);
  const client = new ConsulClient(access);
  // Vault's token description, which tells operators on the server who holds a token: role, holder, time in ns.
  const description = `Vault ${data.name} ${request.caller?.entry.displayName ?? ''} ${BigInt(system.clock.now()) * 1_000_000n}`;
  const lease = { ttl: role.ttl, maxTtl: role.maxTtl, renewable: true };

  if (isLegacy(role)) {
    const version = await serverVersion({ clock: system.clock, mount, storage }, access);
    if (version.atLeast('1.11')) {
      throw badRequest(
        `role "${data.name}" makes a legacy token ("policy", "token_type"), which mesh server version ${version.text} no longer issues: rewrite the role with "mesh_policies"`,
      );
    }
    let secret: string;
    try {
      secret = await client.legacyCreate({ Name: description, Type: role.tokenType, Rules: role.policy });
    } catch (error) {
      throw upstreamFailure(error, 'the mesh server did not create the token');
    }
    const internal: TokenLease = { role: data.name, legacySecret: secret, namespace: '', partition: '' };
    return { data: { token: secret }, secret: tokenLeases.secret({ ...lease, internal }) };
  }

  let created: CreatedToken;
  try {
    created = await client.createToken({
      Description: description,
      ...(role.policies.length > 0 ? { Policies: role.policies.map((name) => ({ Name: name })) } : {}),
      ...(role.roles.length > 0 ? { Roles: role.roles.map((name) => ({ Name: name })) } : {}),
      ...(role.serviceIdentities.length > 0 ? { ServiceIdentities: role.serviceIdentities.map(serviceIdentity) } : {}),
      ...(role.nodeIdentities.length > 0 ? { NodeIdentities: role.nodeIdentities.map(nodeIdentity) } : {}),
      Local: role.local,
      ...(role.namespace ? { Namespace: role.namespace } : {}),
      ...(role.partition ? { Partition: role.partition } : {}),
    });
  } catch (error) {
    throw upstreamFailure(error, 'the mesh server did not create the token');
  }
  const internal: TokenLease = {
    role: data.name,
    accessor: created.AccessorID,
    namespace: created.Namespace ?? role.namespace,
    partition: created.Partition ?? role.partition,
  };
  return {
    data: {
      token: created.SecretID,
      accessor: created.AccessorID,
      local: created.Local ?? role.local,
      mesh_namespace: created.Namespace ?? role.namespace,
      partition: created.Partition ?? role.partition,
    },
    secret: tokenLeases.secret({ ...lease, internal }),
  };
}

const tokenLeases = leasedSecret<TokenLease>('token', {
  /** Renewal re-reads the role: its TTL applies from now on, and a deleted role ends the renewals. */
  async renew(lease) {
    const name = lease.internal.role;
    const role = await readRole(lease.storage, name);
    if (!role) throw badRequest(`issuing role "${name}" not found`);
    return { ...(role.ttl ? { ttl: role.ttl } : {}), ...(role.maxTtl ? { maxTtl: role.maxTtl } : {}) };
  },

  /** Any failure here leaves the lease queued; the sweep retries with backoff until the server answers. */
  async revoke(lease) {
    const internal = lease.internal;
    const access = await readAccess(lease.storage);
    if (!access)
      throw new Error('the mount has no access config, so the mesh server cannot be asked to delete the token');
    const client = new ConsulClient(access);
    if (internal.legacySecret) await client.legacyDestroy(internal.legacySecret);
    else
      await client.deleteToken(internal.accessor ?? '', {
        namespace: internal.namespace,
        partition: internal.partition,
      });
  },
});

export const tokenLease = tokenLeases.hooks;
