import type { Backend } from '../../framework/backend.ts';
import type { Core } from '../../framework/services.ts';
import { googleEndpointVariables } from '../../mounts/operator-settings.ts';
import { cleanupPending } from './cleanup.ts';
import { configPaths } from './config.ts';
import { impersonatedAccountPaths } from './impersonated-accounts.ts';
import { keyLeaseHooks, keyPaths, keySecretType } from './keys.ts';
import { rolesetPaths } from './rolesets.ts';
import { rotateRootPaths } from './rotate-root.ts';
import { staticAccountPaths } from './static-accounts.ts';
import { tokenPaths } from './tokens.ts';

/**
 * `cloud`: Vault's Google Cloud secrets engine. Rolesets (a service account per roleset, with bindings),
 * static accounts (existing service accounts), impersonated accounts, OAuth2 access tokens and leased
 * service-account keys, on Google's IAM, IAM Credentials, Resource Manager, OAuth2 and STS APIs.
 */
export const cloudBackend: Backend = {
  type: 'cloud',
  kind: 'secret',
  paths: [...configPaths, ...rotateRootPaths, ...rolesetPaths, ...staticAccountPaths, ...impersonatedAccountPaths, ...tokenPaths, ...keyPaths],
  leases: { [keySecretType]: keyLeaseHooks },
  periodic: [
    {
      // Write-ahead records a crash or a Google failure left (keys and accounts to delete), and due root rotations.
      name: 'clean-up',
      everySeconds: 5,
      run: async (core: Core) => {
        const { settled, rotated, failed } = await cleanupPending(core);
        return { done: rotated + settled, failed };
      },
    },
  ],
  // Where it calls Google is the operator's (a private endpoint), as the stage's `googleEndpoints`.
  deployment: { settings: { option: 'googleEndpoints', variables: googleEndpointVariables } },
};
