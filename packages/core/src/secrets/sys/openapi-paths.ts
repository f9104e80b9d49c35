import * as z from 'zod';
import { type PathSpec, path } from '../framework/backend.ts';
import { openApiDocument } from '../framework/openapi.ts';
import type { BuiltinServices } from './builtin.ts';
import { version } from './server-identity.ts';

/**
 * `sys/internal/specs/openapi`: the OpenAPI 3.1 document of every enabled mount's paths, under the mount's path, as
 * Vault serves it (a token is needed; the document itself is the answer, not wrapped in the envelope). A mount whose
 * backend this process does not bundle is left out.
 */
export const openApiPaths = (services: Pick<BuiltinServices, 'mounts' | 'backends'>): PathSpec[] => [
  path({
    pattern: 'internal/specs/openapi',
    fields: z.object({}),
    summaries: { read: 'Generate an OpenAPI 3.1 document of the enabled mounts.' },
    operations: {
      // The system backend sees the mount table and the backends, as Vault's does.
      read: async () => ({ unwrapped: openApiDocument(await services.mounts.list(), services.backends, version) }),
    },
  }),
];
