import type { Backend } from '../../framework/backend.ts';
import { configPaths } from './config.ts';
import { dynamicLease, dynamicRolePaths } from './dynamic-roles.ts';
import { libraryCheckoutPaths, libraryLease } from './library-checkouts.ts';
import { librarySetPaths } from './library-sets.ts';
import { rotateRootPaths } from './rotate-root.ts';
import { staticCredPaths } from './static-creds.ts';
import { staticRolePaths } from './static-roles.ts';

/**
 * `ldap`: Vault's OpenLDAP secrets engine. Root credential rotation, static roles whose passwords it
 * rotates, dynamic accounts from LDIF templates, and a library of service accounts to check out.
 */
export const ldapBackend: Backend = {
  type: 'ldap',
  kind: 'secret',
  paths: [...configPaths, ...rotateRootPaths, ...staticRolePaths, ...staticCredPaths, ...dynamicRolePaths, ...libraryCheckoutPaths, ...librarySetPaths],
  leases: { [dynamicLease.type]: dynamicLease.hooks, [libraryLease.type]: libraryLease.hooks },
};
