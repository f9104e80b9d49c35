import * as z from 'zod';
import { type PathSpec, path } from '../framework/backend.ts';
import type { BuiltinServices } from './builtin.ts';
import { initialize, isInitialized } from './init.ts';
import { clusterId, clusterName, version } from './server-identity.ts';

export { version };

/** `sys/health` and `sys/init`: reachable without a token, answered without the envelope as Vault does. */
export const healthAndInitPaths = (
  services: Pick<BuiltinServices, 'store' | 'clock' | 'tokens' | 'log'>,
): PathSpec[] => [
  path({
    pattern: 'health',
    fields: z.object({}),
    unauthenticated: true,
    summaries: { read: 'Returns the health status of the server.' },
    operations: {
      read: async () => ({
        unwrapped: {
          initialized: await isInitialized(services),
          sealed: false,
          standby: false,
          performance_standby: false,
          replication_performance_mode: 'disabled',
          replication_dr_mode: 'disabled',
          server_time_utc: Math.floor(services.clock.now() / 1000),
          version,
          cluster_name: clusterName,
          cluster_id: await clusterId(services),
        },
      }),
    },
  }),
  path({
    pattern: 'init',
    fields: z.object({}),
    unauthenticated: true,
    summaries: {
      read: 'Returns the initialization status of the server.',
      update: 'Initializes the server: mints the first root token.',
    },
    operations: {
      read: async () => ({ unwrapped: { initialized: await isInitialized(services) } }),
      update: async () => ({
        unwrapped: { root_token: await initialize(services), keys: [], keys_base64: [] },
      }),
    },
  }),
];
