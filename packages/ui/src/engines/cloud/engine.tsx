import type { JSX } from 'preact';
import type { ConfigDef } from '../config-page.tsx';
import { GenerateCredential } from '../credential.tsx';
import { apiPath, type EngineDef } from '../engine-frame.tsx';
import type { FieldSpec } from '../form.tsx';
import type { Collection, ItemProps } from '../role-list.tsx';

/** The cloud (Google Cloud) engine's pages: config, rolesets, static and impersonated accounts (packages/core/src/secrets/engines/cloud). */
export const cloudEngine: EngineDef = {
  kind: 'cloud',
  label: 'Cloud',
  tabs: [
    { segment: '', title: 'Configuration' },
    { segment: 'roleset', title: 'Rolesets' },
    { segment: 'static-account', title: 'Static accounts' },
    { segment: 'impersonated-account', title: 'Impersonated accounts' },
  ],
};

export const cloudConfig: ConfigDef = {
  engine: cloudEngine,
  path: 'config',
  rotateRoot: 'config/rotate-root',
  writeNote: 'Fields left as they are keep their value. The credentials are sealed and never shown.',
  fields: [
    { name: 'credentials', label: 'Credentials (service-account JSON)', kind: 'textarea', writeOnly: true },
    { name: 'ttl', label: 'Key lease TTL', kind: 'duration', hint: "0 uses the mount's default." },
    { name: 'max_ttl', label: 'Key lease max TTL', kind: 'duration', hint: "0 uses the mount's maximum." },
    {
      name: 'identity_token_audience',
      label: 'Identity token audience',
      hint: 'Workload identity federation, with the service account email.',
    },
    { name: 'service_account_email', label: 'Service account email (federation)' },
    {
      name: 'rotation_period',
      label: 'Root rotation period',
      kind: 'duration',
      hint: 'Or a schedule, not both; 0 for none.',
    },
    { name: 'rotation_schedule', label: 'Root rotation schedule', hint: 'Five-field cron, UTC.' },
  ],
};

/** Bindings as read (resource → roles) written back as the HCL the form edits. */
const bindingsText = (data: Record<string, unknown>) => ({
  bindings: Object.entries((data.bindings as Record<string, string[]> | undefined) ?? {})
    .map(
      ([resource, roles]) =>
        `resource ${JSON.stringify(resource)} {\n  roles = [${roles.map((role) => JSON.stringify(role)).join(', ')}]\n}`,
    )
    .join('\n\n'),
});

const bindingsField: FieldSpec = {
  name: 'bindings',
  label: 'Bindings',
  kind: 'textarea',
  hint: 'resource "<resource>" { roles = ["roles/…"] } blocks, in HCL or JSON.',
};
const secretType: FieldSpec = {
  name: 'secret_type',
  label: 'Secret type',
  kind: 'select',
  options: ['access_token', 'service_account_key'],
  createOnly: true,
};
const scopes: FieldSpec = {
  name: 'token_scopes',
  label: 'Token scopes',
  kind: 'list',
  hint: 'For access tokens, e.g. https://www.googleapis.com/auth/cloud-platform.',
};

/** An access token (`…/token`, no lease) or a leased service-account key (`…/key`), as the account's secret type offers. */
function accountCredentials(itemApi: string) {
  return ({ mount, name, data }: ItemProps): JSX.Element => (
    <section class="panel" aria-label="Credentials">
      <h2>Credentials</h2>
      {data.secret_type === 'service_account_key' ? (
        <GenerateCredential label="Generate key" method="POST" path={apiPath(mount, itemApi, name, 'key')} body={{}} />
      ) : (
        <GenerateCredential label="Generate access token" method="GET" path={apiPath(mount, itemApi, name, 'token')} />
      )}
    </section>
  );
}

export const rolesets: Collection = {
  engine: cloudEngine,
  segment: 'roleset',
  title: 'Rolesets',
  noun: 'roleset',
  listApi: 'rolesets',
  itemApi: 'roleset',
  fields: [
    secretType,
    { name: 'project', label: 'Project', required: true, createOnly: true },
    { ...bindingsField, required: true },
    scopes,
  ],
  toForm: bindingsText,
  panels: accountCredentials('roleset'),
};

export const staticAccounts: Collection = {
  engine: cloudEngine,
  segment: 'static-account',
  title: 'Static accounts',
  noun: 'static account',
  listApi: 'static-accounts',
  itemApi: 'static-account',
  fields: [
    secretType,
    { name: 'service_account_email', label: 'Service account email', required: true, createOnly: true },
    bindingsField,
    scopes,
  ],
  toForm: bindingsText,
  panels: accountCredentials('static-account'),
};

export const impersonatedAccounts: Collection = {
  engine: cloudEngine,
  segment: 'impersonated-account',
  title: 'Impersonated accounts',
  noun: 'impersonated account',
  listApi: 'impersonated-accounts',
  itemApi: 'impersonated-account',
  fields: [
    { name: 'service_account_email', label: 'Service account email', required: true, createOnly: true },
    { ...scopes, required: true },
    { name: 'ttl', label: 'Token TTL', kind: 'duration', hint: 'At most 12h; 0 means one hour.' },
  ],
  panels: ({ mount, name }) => (
    <section class="panel" aria-label="Credentials">
      <h2>Credentials</h2>
      <GenerateCredential
        label="Generate access token"
        method="GET"
        path={apiPath(mount, 'impersonated-account', name, 'token')}
      />
    </section>
  ),
};
