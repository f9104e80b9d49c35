import * as z from 'zod';
import { type Backend, path } from '../framework/backend.ts';
import { MountStorage } from '../mounts/mount-storage.ts';
import { identityTokenIssuer, publishedIdentityKeys } from '../identity/plugin-identity-keys.ts';

/**
 * `identity/` (built in): the OpenID discovery document and keys that verify plugin identity tokens, so a
 * cloud provider (a Google workload identity pool) can trust tokens the engines sign. Public by design.
 */
export const identityBackend: Backend = {
  type: 'identity',
  kind: 'secret',
  paths: [
    path({
      pattern: 'oidc/plugins/.well-known/openid-configuration',
      fields: z.object({}),
      unauthenticated: true,
      operations: {
        read: async () => {
          const issuer = identityTokenIssuer();
          return {
            raw: {
              status: 200,
              body: {
                issuer,
                jwks_uri: `${issuer}/.well-known/keys`,
                response_types_supported: ['id_token'],
                subject_types_supported: ['public'],
                id_token_signing_alg_values_supported: ['RS256'],
              },
            },
          };
        },
      },
    }),
    path({
      pattern: 'oidc/plugins/.well-known/keys',
      fields: z.object({}),
      unauthenticated: true,
      operations: {
        read: async ({ core }) => {
          const storages = (await core.mounts.list('secret')).map((mount) => new MountStorage(core.store, core.keyring, mount.uuid));
          return { raw: { status: 200, body: await publishedIdentityKeys(storages) } };
        },
      },
    }),
  ],
};
