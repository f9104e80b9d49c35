import * as z from 'zod';
import { type PathSpec, path } from '../framework/backend.ts';
import type { BuiltinServices } from './builtin.ts';
import { isInitialized } from './init.ts';
import { buildDate, clusterId, clusterName, version } from './server-identity.ts';

/**
 * `sys/seal-status` and `sys/leader`, unauthenticated and without the envelope, as Vault answers them. The service
 * has no seal and no standby: every process answers as an unsealed, single active node of a cluster without HA
 * storage would (`vault status`, hvac's `is_sealed`, node-vault's `status()` ask these).
 */
export const sealStatusAndLeaderPaths = (services: Pick<BuiltinServices, 'store'>): PathSpec[] => [
  path({
    pattern: 'seal-status',
    fields: z.object({}),
    unauthenticated: true,
    summaries: { read: 'Checks the seal status of the server.' },
    operations: {
      read: async () => ({
        unwrapped: {
          type: 'shamir',
          initialized: await isInitialized(services),
          sealed: false,
          t: 1,
          n: 1,
          progress: 0,
          nonce: '',
          version,
          build_date: buildDate,
          migration: false,
          cluster_name: clusterName,
          cluster_id: await clusterId(services),
          recovery_seal: false,
          storage_type: 'dynamodb',
        },
      }),
    },
  }),
  path({
    pattern: 'leader',
    fields: z.object({}),
    unauthenticated: true,
    summaries: { read: 'Returns the high availability status and current leader instance of the server.' },
    operations: {
      read: async () => ({
        unwrapped: {
          ha_enabled: false,
          is_self: false,
          active_time: '0001-01-01T00:00:00Z',
          leader_address: '',
          leader_cluster_address: '',
          performance_standby: false,
          performance_standby_last_remote_wal: 0,
        },
      }),
    },
  }),
];
