import * as z from 'zod';
import type { Core } from '../../packages/core/src/composition/secrets-core.ts';
import type { Backend, LeaseContext } from '../../packages/core/src/secrets/framework/backend.ts';
import { bool, duration } from '../../packages/core/src/secrets/framework/fields.ts';
import type { MountStorage } from '../../packages/core/src/secrets/mounts/mount-storage.ts';
import type { Store } from '../../packages/core/src/storage/store.ts';
import type { SecretsService } from './secrets-harness.ts';

/**
 * A small secrets engine for lease tests, built like a real one: `roles/:name` sets the TTLs of the accounts
 * that `creds/:name` issues under a lease, and the revoke hook deletes the account upstream. Its "upstream" is a
 * journal in the table (`pk = recording-upstream`, one item per lease) that outlives the mount, so a test can
 * see every call of the hook even after disabling the mount wiped the mount's own storage. `config` can make
 * the hook fail, as an unreachable upstream would, and set what the renew hook answers.
 */

interface EngineConfig {
  failRevoke: boolean;
  renewTtl: number;
  renewMaxTtl: number;
}

/** What the upstream saw for one lease: how often the hook tried, how often it deleted the account. */
export interface UpstreamRecord {
  leaseId: string;
  username: string;
  attempts: number;
  revoked: number;
  renewals: number;
}

export const upstreamPk = 'recording-upstream';

/**
 * The "upstream" the recording engine reports to: a partition of the test's table, outside every mount (so it
 * outlives a disabled mount), as a real engine's directory or cloud outlives it. Set when the engine is mounted.
 */
let upstream: Store | undefined;

const configFields = z.object({
  fail_revoke: bool.default(false),
  renew_ttl: duration.default(0),
  renew_max_ttl: duration.default(0),
});
const roleFields = z.object({
  name: z.string().min(1),
  ttl: duration.default(0),
  max_ttl: duration.default(0),
  renewable: bool.default(true),
});

async function config(storage: MountStorage): Promise<EngineConfig> {
  return (await storage.get<EngineConfig>('config')) ?? { failRevoke: false, renewTtl: 0, renewMaxTtl: 0 };
}

/** Counts atomically, so concurrent calls of a hook are all seen. */
async function countUpstream(
  lease: LeaseContext,
  counts: { attempts?: number; revoked?: number; renewals?: number },
): Promise<void> {
  if (!upstream) throw new Error('the recording engine was not mounted with mountRecording');
  await upstream.update(
    { pk: upstreamPk, sk: lease.leaseId },
    {
      set: { username: lease.internal.username },
      add: { attempts: counts.attempts ?? 0, revoked: counts.revoked ?? 0, renewals: counts.renewals ?? 0 },
    },
  );
}

export const recordingBackend: Backend = {
  type: 'recording',
  kind: 'secret',
  paths: [
    {
      pattern: 'config',
      fields: configFields,
      operations: {
        update: async ({ storage, data }) => {
          const fields = data as z.output<typeof configFields>;
          await storage.put('config', {
            failRevoke: fields.fail_revoke,
            renewTtl: fields.renew_ttl,
            renewMaxTtl: fields.renew_max_ttl,
          });
          return undefined;
        },
      },
    },
    {
      pattern: 'roles/:name',
      fields: roleFields,
      operations: {
        update: async ({ storage, data }) => {
          const role = data as z.output<typeof roleFields>;
          await storage.put(`roles/${role.name}`, { ttl: role.ttl, maxTtl: role.max_ttl, renewable: role.renewable });
          return undefined;
        },
      },
    },
    {
      pattern: 'creds/:name',
      fields: z.object({ name: z.string().min(1) }),
      operations: {
        read: async ({ storage, data, requestId }) => {
          const name = (data as { name: string }).name;
          const role = await storage.get<{ ttl: number; maxTtl: number; renewable: boolean }>(`roles/${name}`);
          if (!role) return undefined;
          const username = `${name}-${requestId.slice(0, 8)}`;
          return {
            data: { username },
            secret: {
              type: 'account',
              ttl: role.ttl,
              maxTtl: role.maxTtl,
              renewable: role.renewable,
              internal: { username },
            },
          };
        },
      },
    },
  ],
  leases: {
    account: {
      async revoke(lease) {
        const { failRevoke } = await config(lease.storage);
        await countUpstream(lease, { attempts: 1, revoked: failRevoke ? 0 : 1 });
        if (failRevoke) throw new Error(`upstream refused to delete ${lease.internal.username as string}`);
      },
      async renew(lease) {
        const { renewTtl, renewMaxTtl } = await config(lease.storage);
        await countUpstream(lease, { renewals: 1 });
        return { ...(renewTtl ? { ttl: renewTtl } : {}), ...(renewMaxTtl ? { maxTtl: renewMaxTtl } : {}) };
      },
    },
  },
};

/** An auth method with nothing behind it, so `sys/auth` has a type to enable besides the built-in token store. */
export const nullAuthBackend: Backend = {
  type: 'null-auth',
  kind: 'auth',
  paths: [
    {
      pattern: 'login',
      fields: z.object({}),
      unauthenticated: true,
      operations: { update: async () => ({ auth: { policies: ['default'], displayName: 'null-auth' } }) },
    },
  ],
};

/** What the recording engine's upstream saw for a lease (undefined: the hook never ran for it). */
export async function upstreamOf(core: Core, leaseId: string): Promise<UpstreamRecord | undefined> {
  const item = await core.store.get(upstreamPk, leaseId);
  return (
    item && {
      leaseId,
      username: item.username as string,
      attempts: item.attempts as number,
      revoked: item.revoked as number,
      renewals: item.renewals as number,
    }
  );
}

/** Mounts the recording engine at `path` (with the mount's `config`) and writes its roles, as a user would. */
export async function mountRecording(
  h: SecretsService,
  path: string,
  options: { config?: Record<string, unknown>; roles?: Record<string, Record<string, unknown>> } = {},
): Promise<void> {
  upstream = h.core.store;
  const token = h.rootToken;
  const enabled = await h.call('POST', `/v1/sys/mounts/${path}`, {
    token,
    body: { type: 'recording', config: options.config ?? {} },
  });
  if (enabled.status !== 204) throw new Error(`enabling ${path}: ${enabled.status} ${JSON.stringify(enabled.body)}`);
  for (const [name, role] of Object.entries(options.roles ?? { app: {} })) {
    const written = await h.call('POST', `/v1/${path}/roles/${name}`, { token, body: role });
    if (written.status !== 204)
      throw new Error(`writing role ${name}: ${written.status} ${JSON.stringify(written.body)}`);
  }
}
