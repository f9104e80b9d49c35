import * as z from 'zod';
import { type PathSpec, path } from '../framework/backend.ts';
import { identityTokenIssuer, publishedIdentityKeys } from '../identity/plugin-identity-keys.ts';
import { MountStorage } from '../mounts/mount-storage.ts';
import { type BuiltinServices, builtin } from '../sys/builtin.ts';

/**
 * `identity/` (built in): the OpenID discovery document and keys that verify plugin identity tokens, so a
 * cloud provider (a Google workload identity pool) can trust tokens the engines sign. Public by design.
 */
const identityPaths = (services: Pick<BuiltinServices, 'mounts' | 'store' | 'keyring'>): PathSpec[] => [
  path({
    pattern: 'oidc/plugins/.well-known/openid-configuration',
    fields: z.object({}),
    unauthenticated: true,
    summaries: { read: 'Returns the OpenID discovery document for plugin identity tokens.' },
    operations: {
      read: async () => {
        const issuer = identityTokenIssuer();
        return {
          unwrapped: {
            issuer,
            jwks_uri: `${issuer}/.well-known/keys`,
            response_types_supported: ['id_token'],
            subject_types_supported: ['public'],
            id_token_signing_alg_values_supported: ['RS256'],
          },
        };
      },
    },
  }),
  path({
    pattern: 'oidc/plugins/.well-known/keys',
    fields: z.object({}),
    unauthenticated: true,
    summaries: { read: 'Returns the public keys that verify plugin identity tokens (a JSON Web Key Set).' },
    operations: {
      read: async () => {
        const storages = (await services.mounts.list('secret')).map(
          (mount) => new MountStorage(services.store, services.keyring, mount.uuid),
        );
        return { unwrapped: await publishedIdentityKeys(storages) };
      },
    },
  }),
];

export const identityBackend = builtin('identity', 'secret', identityPaths);
