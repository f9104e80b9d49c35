import type { Backend } from '../../framework/backend.ts';
import type { Core } from '../../framework/services.ts';
import { checkAccounts, checkAccountsSoon, checkEverySeconds } from './account-check.ts';
import { configPaths } from './config.ts';
import { dynamicLease, dynamicRolePaths } from './dynamic-roles.ts';
import { libraryCheckoutPaths, libraryLease } from './library-checkouts.ts';
import { librarySetPaths } from './library-sets.ts';
import { directoryItemKinds, rotationQueue } from './records.ts';
import { rotateRootPaths } from './rotate-root.ts';
import { rotateDue } from './rotation.ts';
import { staticCredPaths } from './static-creds.ts';
import { staticRolePaths } from './static-roles.ts';
import { ldapRollback } from './write-ahead.ts';

/**
 * `ldap`: Vault's OpenLDAP secrets engine. Root credential rotation, static roles whose passwords it
 * rotates, dynamic accounts from LDIF templates, and a library of service accounts to check out.
 */
const passwordPolicyRead = 'an ldap config or role naming a password_policy reads it (ldap/config-model.ts)';

export const ldapBackend: Backend = {
  type: 'ldap',
  kind: 'secret',
  paths: [
    ...configPaths,
    ...rotateRootPaths,
    ...staticRolePaths,
    ...staticCredPaths,
    ...dynamicRolePaths,
    ...libraryCheckoutPaths,
    ...librarySetPaths,
  ],
  leases: { [dynamicLease.type]: dynamicLease.hooks, [libraryLease.type]: libraryLease.hooks },
  // A password change nothing came back to (a crash between the directory and the table) is settled by the job.
  walRollback: ldapRollback,
  // The configuration, static roles, library sets and accounts and the claims carry a MAC (records.ts).
  authenticatedItems: directoryItemKinds,
  periodic: [
    {
      // Root and static-role passwords whose time has come, and check-outs whose lease was never written.
      name: 'rotations',
      everySeconds: 5,
      run: async (core: Core) => {
        const { rotated, failed } = await rotateDue(core);
        return { done: rotated, failed };
      },
      queues: [rotationQueue],
      reads: { 'password-policies': `a rotation generates the password: ${passwordPolicyRead}` },
    },
    {
      // Every static role and library account: one bind each, paced and jittered; a dead password is healed
      // (account-check.ts). Due at once when a process starts locally, and after a restore.
      name: 'account checks',
      everySeconds: checkEverySeconds,
      run: (core: Core) => checkAccounts(core),
      start: (core: Core) => checkAccountsSoon(core),
      reads: { 'password-policies': `a heal generates the password: ${passwordPolicyRead}` },
    },
  ],
  deployment: {
    privateNetwork: true,
    reads: { 'password-policies': passwordPolicyRead },
    throttled: {
      'creds/{proxy+}': 'credentials',
      'static-cred/{proxy+}': 'credentials',
      'library/{proxy+}': 'credentials',
    },
  },
};
