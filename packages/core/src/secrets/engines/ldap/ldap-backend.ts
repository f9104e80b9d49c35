import { authenticatedValueKind } from '../../mounts/mount-storage.ts';
import type { Backend } from '../../framework/backend.ts';
import type { SecretsServices } from '../../framework/services.ts';
import { checkAccounts, checkAccountsSoon, checkEverySeconds } from './account-check.ts';
import { configPaths } from './config.ts';
import { dynamicLease, dynamicRolePaths } from './dynamic-roles.ts';
import { libraryCheckoutPaths, libraryLease } from './library-checkouts.ts';
import { librarySetPaths } from './library-sets.ts';
import { directoryItemKeys, directoryItemKind, directoryItemKinds, rotationQueue } from './records.ts';
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
  // Its items, with their protection (the rows of item-kinds.ts and docs/security.md for a ldap mount).
  storedItems: [
    {
      name: 'directory dynamic roles',
      where: '`mount#<uuid>` / `role/<name>`',
      sk: /^role\//,
      protection: 'MAC',
      mac: authenticatedValueKind,
      why: 'the LDIF the engine writes into the directory with its own bind credentials',
    },
    {
      name: "directory account check's place",
      where: '`mount#<uuid>` / `account-check`',
      sk: /^account-check$/,
      protection: 'not security state',
      why: 'where the periodic check of managed accounts stands and when it runs next',
    },
    {
      name: 'directory configuration, static roles, library sets and accounts',
      where: '`mount#<uuid>` / `config`, `static-role/…`, `library/…`, `library-account/…`, `managed/…`',
      sk: directoryItemKeys,
      protection: 'MAC',
      mac: directoryItemKind,
      why: 'where the bind password goes (the directory URL, bind DN, TLS settings), whose password a static role or library account rotates and hands out (its DN), which accounts a set lends and who manages an account; passwords are sealed, and rotation and check-out state stay outside the MAC as bookkeeping (signed by `MountStorage` on every write, including each partial update and transaction)',
    },
  ],
  periodic: [
    {
      // Root and static-role passwords whose time has come, and check-outs whose lease was never written.
      name: 'rotations',
      everySeconds: 5,
      run: async (core: SecretsServices) => {
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
      run: (core: SecretsServices) => checkAccounts(core),
      start: (core: SecretsServices) => checkAccountsSoon(core),
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
