import type { Backend } from '../../framework/backend.ts';
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
};
