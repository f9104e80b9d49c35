import type { Backend } from '../../framework/backend.ts';
import type { Core } from '../../framework/services.ts';
import { googleEndpointVariables } from '../../mounts/operator-settings.ts';
import { rotateDueRoots } from './cleanup.ts';
import { configPaths } from './config.ts';
import { impersonatedAccountPaths } from './impersonated-accounts.ts';
import { keyLeaseHooks, keyPaths, keySecretType } from './keys.ts';
import { cloudItemKinds } from './records.ts';
import { rolesetPaths } from './rolesets.ts';
import { rotateRootPaths } from './rotate-root.ts';
import { staticAccountPaths } from './static-accounts.ts';
import { tokenPaths } from './tokens.ts';
import { cloudRollback } from './wal.ts';

/**
 * `cloud`: Vault's Google Cloud secrets engine. Rolesets (a service account per roleset, with bindings),
 * static accounts (existing service accounts), impersonated accounts, OAuth2 access tokens and leased
 * service-account keys, on Google's IAM, IAM Credentials, Resource Manager, OAuth2 and STS APIs.
 */
export const cloudBackend: Backend = {
  type: 'cloud',
  kind: 'secret',
  paths: [
    ...configPaths,
    ...rotateRootPaths,
    ...rolesetPaths,
    ...staticAccountPaths,
    ...impersonatedAccountPaths,
    ...tokenPaths,
    ...keyPaths,
  ],
  leases: { [keySecretType]: keyLeaseHooks },
  // Due root rotations; the clean-up of what a crash or a Google failure left (keys and accounts to delete) is its
  // write-ahead rollback, which the framework runs.
  periodic: [
    {
      name: 'root rotations',
      everySeconds: 5,
      run: async (core: Core) => ({ done: (await rotateDueRoots(core)).rotated, failed: 0 }),
    },
  ],
  walRollback: cloudRollback,
  // The configuration, rolesets and accounts carry a MAC (records.ts).
  authenticatedItems: cloudItemKinds,
  // Where it calls Google is the operator's (a private endpoint), as the stage's `googleEndpoints`.
  deployment: {
    settings: { option: 'googleEndpoints', variables: googleEndpointVariables },
    throttled: {
      'token/{proxy+}': 'credentials',
      'key/{proxy+}': 'credentials',
      'roleset/{name}/token': 'credentials',
      'roleset/{name}/key': 'credentials',
      'static-account/{name}/token': 'credentials',
      'static-account/{name}/key': 'credentials',
      'impersonated-account/{name}/token': 'credentials',
    },
  },
};
