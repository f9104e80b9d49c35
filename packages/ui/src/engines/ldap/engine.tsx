import type { ConfigDef } from '../config-page.tsx';
import { GenerateCredential } from '../credential.tsx';
import { apiPath, type EngineDef } from '../engine-frame.tsx';
import type { Collection } from '../role-list.tsx';
import { LibraryPanel } from './library-status.tsx';
import { StaticCredPanel } from './static-cred.tsx';

/** The directory (`ldap`) engine's pages: config, static roles, dynamic roles and library sets (packages/core/src/secrets/engines/ldap). */
export const ldapEngine: EngineDef = {
  kind: 'ldap',
  label: 'Directory',
  tabs: [
    { segment: '', title: 'Configuration' },
    { segment: 'static-role', title: 'Static roles' },
    { segment: 'role', title: 'Dynamic roles' },
    { segment: 'library', title: 'Library sets' },
  ],
};

export const ldapConfig: ConfigDef = {
  engine: ldapEngine,
  path: 'config',
  rotateRoot: 'rotate-root',
  writeNote:
    'Fields left as they are keep their value. The bind password is required on the first write and whenever the URL or TLS settings change.',
  fields: [
    { name: 'url', label: 'URL', hint: 'ldap:// or ldaps://host:port; a comma-separated list is tried in order.' },
    { name: 'binddn', label: 'Bind DN', hint: 'The entry the engine binds as.' },
    { name: 'bindpass', label: 'Bind password', kind: 'password', writeOnly: true },
    {
      name: 'userdn',
      label: 'User DN',
      hint: "Base DN under which a role's or library account's username is searched for.",
    },
    {
      name: 'userattr',
      label: 'User attribute',
      hint: 'cn for openldap, userPrincipalName for ad, racfid for racf when empty.',
    },
    { name: 'schema', label: 'Schema', kind: 'select', options: ['openldap', 'racf', 'ad'] },
    { name: 'upndomain', label: 'UPN domain', hint: 'Active Directory: bind as binddn@upndomain.' },
    {
      name: 'password_policy',
      label: 'Password policy',
      hint: 'The name of a password policy (sys/policies/password).',
    },
    { name: 'starttls', label: 'StartTLS', kind: 'bool' },
    { name: 'insecure_tls', label: 'Skip TLS verification (tests only)', kind: 'bool' },
    { name: 'certificate', label: 'CA certificate (PEM)', kind: 'textarea' },
    { name: 'request_timeout', label: 'Request timeout', kind: 'duration' },
    { name: 'connection_timeout', label: 'Connection timeout', kind: 'duration' },
    {
      name: 'rotation_period',
      label: 'Root rotation period',
      kind: 'duration',
      hint: 'Or a schedule, not both; 0 for none.',
    },
    { name: 'rotation_schedule', label: 'Root rotation schedule', hint: 'Five-field cron, UTC.' },
    {
      name: 'skip_static_role_import_rotation',
      label: 'Do not rotate passwords when a static role is created (default)',
      kind: 'bool',
    },
  ],
};

export const staticRoles: Collection = {
  engine: ldapEngine,
  segment: 'static-role',
  title: 'Static roles',
  noun: 'static role',
  listApi: 'static-role',
  itemApi: 'static-role',
  hierarchical: true,
  fields: [
    {
      name: 'username',
      label: 'Username',
      required: true,
      createOnly: true,
      hint: 'The existing entry whose password the engine rotates.',
    },
    { name: 'dn', label: 'DN', createOnly: true, hint: "Optional: found under the config's user DN when empty." },
    {
      name: 'rotation_period',
      label: 'Rotation period',
      kind: 'duration',
      required: true,
      hint: 'e.g. 24h; at least 5s.',
    },
    { name: 'skip_import_rotation', label: 'Skip the rotation at creation', kind: 'bool', createOnly: true },
  ],
  panels: StaticCredPanel,
};

export const dynamicRoles: Collection = {
  engine: ldapEngine,
  segment: 'role',
  title: 'Dynamic roles',
  noun: 'dynamic role',
  listApi: 'role',
  itemApi: 'role',
  hierarchical: true,
  fields: [
    { name: 'creation_ldif', label: 'Creation LDIF', kind: 'textarea', required: true },
    { name: 'deletion_ldif', label: 'Deletion LDIF', kind: 'textarea', required: true },
    { name: 'rollback_ldif', label: 'Rollback LDIF', kind: 'textarea' },
    { name: 'username_template', label: 'Username template' },
    { name: 'default_ttl', label: 'Default TTL', kind: 'duration' },
    { name: 'max_ttl', label: 'Max TTL', kind: 'duration' },
  ],
  panels: ({ mount, name }) => (
    <section class="panel" aria-label="Credentials">
      <h2>Credentials</h2>
      <p class="note">Each request creates a new account, deleted when its lease ends.</p>
      <GenerateCredential label="Generate credentials" method="GET" path={apiPath(mount, 'creds', name)} />
    </section>
  ),
};

export const librarySets: Collection = {
  engine: ldapEngine,
  segment: 'library',
  title: 'Library sets',
  noun: 'library set',
  listApi: 'library',
  itemApi: 'library',
  hierarchical: true,
  fields: [
    { name: 'service_account_names', label: 'Service accounts', kind: 'list', required: true },
    { name: 'ttl', label: 'Check-out TTL', kind: 'duration', hint: 'Default 24h.' },
    { name: 'max_ttl', label: 'Max check-out TTL', kind: 'duration', hint: 'Default 24h.' },
    { name: 'disable_check_in_enforcement', label: 'Anyone may check an account in', kind: 'bool' },
  ],
  panels: LibraryPanel,
};
