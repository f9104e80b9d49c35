import type { ConfigDef } from '../config-page.tsx';
import { GenerateCredential } from '../credential.tsx';
import { apiPath, type EngineDef } from '../engine-frame.tsx';
import type { Collection } from '../role-list.tsx';

/** The mesh engine's pages: access config and roles, with a token per role (packages/core/src/secrets/engines/mesh). */
export const meshEngine: EngineDef = {
  kind: 'mesh',
  label: 'Mesh',
  tabs: [
    { segment: '', title: 'Configuration' },
    { segment: 'roles', title: 'Roles' },
  ],
};

export const meshConfig: ConfigDef = {
  engine: meshEngine,
  path: 'config/access',
  writeNote:
    "A write replaces the whole access config. With no token, the engine bootstraps the mesh server's ACL system and keeps the token it gets; the token and client key are never shown.",
  fields: [
    { name: 'address', label: 'Address', required: true, hint: 'host:port of the mesh server, e.g. 127.0.0.1:8500.' },
    { name: 'scheme', label: 'Scheme', kind: 'select', options: ['http', 'https'] },
    { name: 'token', label: 'Management token', kind: 'password', writeOnly: true },
    { name: 'ca_cert', label: 'CA certificate (PEM)', kind: 'textarea' },
    { name: 'client_cert', label: 'Client certificate (PEM)', kind: 'textarea' },
    { name: 'client_key', label: 'Client key (PEM)', kind: 'textarea', writeOnly: true },
  ],
};

export const meshRoles: Collection = {
  engine: meshEngine,
  segment: 'roles',
  title: 'Roles',
  noun: 'role',
  listApi: 'roles',
  itemApi: 'roles',
  fields: [
    {
      name: 'mesh_policies',
      label: 'Mesh policies',
      kind: 'list',
      hint: 'One of policies, roles or identities is required.',
    },
    { name: 'mesh_roles', label: 'Mesh roles', kind: 'list' },
    {
      name: 'service_identities',
      label: 'Service identities',
      hint: 'service or service:dc1,dc2; separate identities with ";".',
    },
    { name: 'node_identities', label: 'Node identities', kind: 'list', hint: 'node:datacenter.' },
    { name: 'mesh_namespace', label: 'Namespace' },
    { name: 'partition', label: 'Partition' },
    { name: 'local', label: 'Local to this datacenter', kind: 'bool' },
    { name: 'token_type', label: 'Token type', kind: 'select', options: ['client', 'management'] },
    { name: 'ttl', label: 'Lease TTL', kind: 'duration' },
    { name: 'max_ttl', label: 'Lease max TTL', kind: 'duration' },
  ],
  toForm: (data) => ({
    service_identities: Array.isArray(data.service_identities) ? data.service_identities.join('; ') : '',
  }),
  panels: ({ mount, name }) => (
    <section class="panel" aria-label="Credentials">
      <h2>Token</h2>
      <p class="note">Each request creates a new ACL token on the mesh server, deleted when its lease ends.</p>
      <GenerateCredential label="Generate token" method="GET" path={apiPath(mount, 'creds', name)} />
    </section>
  ),
};
