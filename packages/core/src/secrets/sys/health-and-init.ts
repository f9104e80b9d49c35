import * as z from 'zod';
import { type PathSpec, path } from '../framework/backend.ts';
import { initialize, isInitialized } from './init.ts';
import { clusterId, clusterName, version } from './server-identity.ts';

export { version };

/** `sys/health` and `sys/init`: reachable without a token, answered without the envelope as Vault does. */
export const healthAndInitPaths: PathSpec[] = [
  path({
    pattern: 'health',
    fields: z.object({}),
    unauthenticated: true,
    operations: {
      read: async ({ core }) => ({
        raw: {
          status: 200,
          body: {
            initialized: await isInitialized(core),
            sealed: false,
            standby: false,
            performance_standby: false,
            replication_performance_mode: 'disabled',
            replication_dr_mode: 'disabled',
            server_time_utc: Math.floor(core.clock.now() / 1000),
            version,
            cluster_name: clusterName,
            cluster_id: await clusterId(core),
          },
        },
      }),
    },
  }),
  path({
    pattern: 'init',
    fields: z.object({}),
    unauthenticated: true,
    operations: {
      read: async ({ core }) => ({ raw: { status: 200, body: { initialized: await isInitialized(core) } } }),
      update: async ({ core }) => ({
        raw: { status: 200, body: { root_token: await initialize(core), keys: [], keys_base64: [] } },
      }),
    },
  }),
];
