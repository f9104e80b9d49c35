import type { Backend } from '../../framework/backend.ts';
import type { SecretsServices } from '../../framework/services.ts';
import { googleEndpointVariables } from '../../mounts/operator-settings.ts';
import { rotateDueRoots } from './cleanup.ts';
import { configPaths } from './config.ts';
import { impersonatedAccountPaths } from './impersonated-accounts.ts';
import { keyLeaseHooks, keyPaths, keySecretType } from './keys.ts';
import { cloudItemKeys, cloudItemKind, cloudItemKinds } from './records.ts';
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
      run: async (core: SecretsServices) => ({ done: (await rotateDueRoots(core)).rotated, failed: 0 }),
    },
  ],
  walRollback: cloudRollback,
  // The configuration, rolesets and accounts carry a MAC (records.ts).
  // Its items, with their protection (the rows of item-kinds.ts and docs/security.md for a cloud mount).
  storedItems: [
    {
      name: 'cloud configuration, role sets and accounts',
      where: '`mount#<uuid>` / `config`, `roleset/…`, `static-account/…`, `impersonated-account/…`, `key/…`',
      sk: cloudItemKeys,
      protection: 'MAC',
      mac: cloudItemKind,
      why: "which credentials the engine acts with (a removed credential would fall back to the server's own), which project roles a role set grants, which service account a role set or account mints keys and tokens for; the root credentials and token keys are sealed, and when the next root rotation is due stays outside the MAC as bookkeeping",
    },
  ],
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
