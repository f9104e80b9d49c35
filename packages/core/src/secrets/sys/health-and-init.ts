import * as z from 'zod';
import { type PathSpec, path } from '../../http/backend.ts';
import { initialize, isInitialized } from './init.ts';

export const version = '0.1.0';

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
            version,
            server_time_utc: Math.floor(core.clock.now() / 1000),
            cluster_name: 'keyhaven',
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
