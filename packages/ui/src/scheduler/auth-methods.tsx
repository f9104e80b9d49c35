import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { api, scheduler } from '../api.ts';
import { Details, Field, Json, Loading, Page, Table, useLoad } from '../components.tsx';
import { Link, navigate, pathHref } from '../router.tsx';
import {
  ActionForm,
  CheckField,
  DeleteButton,
  EditPanel,
  formatMapping,
  joinList,
  parseMapping,
  SelectField,
  splitList,
  YesNo,
} from './common.tsx';

/**
 * The scheduler's ACL auth methods (`acl/auth-methods`, `acl/auth-method/<name>`). The config is edited as fields
 * or as JSON; the OIDC client secret is never shown (the service does not return it) and is typed again to save.
 */

export interface AclAuthMethod {
  Name: string;
  Type: 'JWT' | 'OIDC';
  TokenLocality: string;
  TokenNameFormat?: string;
  MaxTokenTTL: string;
  Default: boolean;
  Config?: Record<string, unknown>;
  CreateIndex: number;
  ModifyIndex: number;
}

const base = '/ui/scheduler/auth-methods';

export function AuthMethodsPage(): JSX.Element {
  const methods = useLoad(() => scheduler<AclAuthMethod[]>('GET', api`acl/auth-methods`), []);
  return (
    <Page
      title="ACL auth methods"
      actions={
        <Link class="button" href={`${base}/new`}>
          Create auth method
        </Link>
      }
    >
      <Loading loaded={methods}>
        {(list) => (
          <Table
            columns={['Name', 'Type', 'Default']}
            rows={list.map((method) => [
              <Link key="n" href={pathHref(base, method.Name)}>
                {method.Name}
              </Link>,
              method.Type,
              method.Default ? 'yes' : 'no',
            ])}
            empty="No auth methods."
          />
        )}
      </Loading>
    </Page>
  );
}

type Kind = 'text' | 'list' | 'map' | 'pem';
/** The config fields offered as form fields, per method type; every other key is kept and edited as JSON. */
const configFields: Array<{ key: string; label: string; kind: Kind; types: Array<'JWT' | 'OIDC'>; hint?: string }> = [
  {
    key: 'JWTValidationPubKeys',
    label: 'JWT validation public keys (PEM)',
    kind: 'pem',
    types: ['JWT'],
    hint: 'One of: public keys, JWKS URL, discovery URL.',
  },
  { key: 'JWKSURL', label: 'JWKS URL', kind: 'text', types: ['JWT'] },
  { key: 'OIDCDiscoveryURL', label: 'OIDC discovery URL', kind: 'text', types: ['JWT', 'OIDC'] },
  { key: 'OIDCClientID', label: 'OIDC client ID', kind: 'text', types: ['OIDC'] },
  { key: 'OIDCScopes', label: 'OIDC scopes', kind: 'list', types: ['OIDC'] },
  { key: 'AllowedRedirectURIs', label: 'Allowed redirect URIs', kind: 'list', types: ['OIDC'] },
  { key: 'BoundIssuer', label: 'Bound issuers', kind: 'list', types: ['JWT', 'OIDC'] },
  { key: 'BoundAudiences', label: 'Bound audiences', kind: 'list', types: ['JWT', 'OIDC'] },
  { key: 'SigningAlgs', label: 'Signing algorithms', kind: 'list', types: ['JWT', 'OIDC'] },
  {
    key: 'ClaimMappings',
    label: 'Claim mappings',
    kind: 'map',
    types: ['JWT', 'OIDC'],
    hint: 'One per line: claim = name (gives value.name).',
  },
  {
    key: 'ListClaimMappings',
    label: 'List claim mappings',
    kind: 'map',
    types: ['JWT', 'OIDC'],
    hint: 'One per line: claim = name (gives list.name).',
  },
];

const pemBlock = /-----BEGIN [^-]+-----[\s\S]*?-----END [^-]+-----/g;

function toDraft(kind: Kind, value: unknown): string {
  if (value === undefined || value === null) return '';
  if (kind === 'list') return joinList(value as string[]);
  if (kind === 'map') return formatMapping(value as Record<string, string>);
  if (kind === 'pem') return (value as string[]).join('\n');
  return String(value);
}

function fromDraft(kind: Kind, text: string): unknown {
  if (!text.trim()) return undefined;
  if (kind === 'list') return splitList(text);
  if (kind === 'map') return parseMapping(text);
  if (kind === 'pem') return text.match(pemBlock) ?? [text.trim()];
  return text.trim();
}

/** The config the fields describe, over `config` (keys without a field are kept as they are). */
function configFromDrafts(config: Record<string, unknown>, drafts: Record<string, string>): Record<string, unknown> {
  const out = { ...config };
  for (const field of configFields) {
    if (!(field.key in drafts)) continue;
    const value = fromDraft(field.kind, drafts[field.key] ?? '');
    if (value === undefined) delete out[field.key];
    else out[field.key] = value;
  }
  return out;
}

const draftsFromConfig = (config: Record<string, unknown>): Record<string, string> =>
  Object.fromEntries(configFields.map((field) => [field.key, toDraft(field.kind, config[field.key])]));

function AuthMethodForm({ method, onSaved }: { method?: AclAuthMethod; onSaved: (name: string) => void }): JSX.Element {
  const [name, setName] = useState(method?.Name ?? '');
  const [type, setType] = useState<'JWT' | 'OIDC'>(method?.Type ?? 'JWT');
  const [locality, setLocality] = useState(method?.TokenLocality ?? 'local');
  const [ttl, setTtl] = useState(method?.MaxTokenTTL ?? '1h');
  const [nameFormat, setNameFormat] = useState(method?.TokenNameFormat ?? '');
  const [isDefault, setDefault] = useState(method?.Default ?? false);
  const [config, setConfig] = useState<Record<string, unknown>>(method?.Config ?? {});
  const [drafts, setDrafts] = useState<Record<string, string>>(() => draftsFromConfig(method?.Config ?? {}));
  const [mode, setMode] = useState<'fields' | 'json'>('fields');
  const [jsonText, setJsonText] = useState('');
  const [clientSecret, setClientSecret] = useState('');
  const [modeError, setModeError] = useState('');

  /** The config as the current mode has it; throws with what is wrong. */
  const currentConfig = (): Record<string, unknown> => {
    if (mode === 'fields') return configFromDrafts(config, drafts);
    let parsed: unknown;
    try {
      parsed = JSON.parse(jsonText || '{}');
    } catch (error) {
      throw new Error(`Config is not valid JSON: ${(error as Error).message}`);
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('Config must be a JSON object');
    return parsed as Record<string, unknown>;
  };
  const switchTo = (next: 'fields' | 'json') => {
    if (next === mode) return;
    try {
      const current = currentConfig();
      setConfig(current);
      if (next === 'json') setJsonText(JSON.stringify(current, null, 2));
      else setDrafts(draftsFromConfig(current));
      setMode(next);
      setModeError('');
    } catch (error) {
      setModeError((error as Error).message);
    }
  };

  return (
    <ActionForm
      label={method ? `Edit auth method ${method.Name}` : 'Create an auth method'}
      submit={method ? 'Save auth method' : 'Create auth method'}
      onSubmit={async () => {
        const target = method?.Name ?? name.trim();
        const finalConfig = { ...currentConfig(), ...(clientSecret ? { OIDCClientSecret: clientSecret } : {}) };
        const body = {
          Name: target,
          Type: type,
          TokenLocality: locality,
          MaxTokenTTL: ttl.trim(),
          TokenNameFormat: nameFormat,
          Default: isDefault,
          Config: finalConfig,
        };
        const saved = method
          ? await scheduler<AclAuthMethod>('POST', api`acl/auth-method/${target}`, body)
          : await scheduler<AclAuthMethod>('POST', api`acl/auth-method`, body);
        setClientSecret('');
        onSaved(saved.Name);
      }}
    >
      {method ? null : <Field label="Name" value={name} onInput={setName} required />}
      <div class="row">
        <SelectField
          label="Type"
          value={type}
          options={['JWT', 'OIDC']}
          onChange={(value) => setType(value as 'JWT' | 'OIDC')}
        />
        <SelectField label="Token locality" value={locality} options={['local', 'global']} onChange={setLocality} />
        <Field label="Max token TTL" value={ttl} onInput={setTtl} placeholder="1h" />
      </div>
      <Field
        label="Token name format"
        value={nameFormat}
        onInput={setNameFormat}
        placeholder="${auth_method_type}-${auth_method_name}"
      />
      <CheckField label={`Default ${type} method`} checked={isDefault} onChange={setDefault} />
      <fieldset class="picker">
        <legend>Config</legend>
        <div role="tablist" class="tabs" aria-label="Edit the config as">
          {(['fields', 'json'] as const).map((each) => (
            <button key={each} type="button" role="tab" aria-selected={mode === each} onClick={() => switchTo(each)}>
              {each === 'fields' ? 'Fields' : 'JSON'}
            </button>
          ))}
        </div>
        {modeError ? (
          <div class="error" role="alert">
            {modeError}
          </div>
        ) : null}
        {mode === 'fields' ? (
          configFields
            .filter((field) => field.types.includes(type))
            .map((field) => (
              <Field
                key={field.key}
                label={field.label}
                value={drafts[field.key] ?? ''}
                onInput={(text) => setDrafts({ ...drafts, [field.key]: text })}
                multiline={field.kind === 'map' || field.kind === 'pem'}
                rows={field.kind === 'pem' ? 6 : 3}
                hint={field.hint ?? (field.kind === 'list' ? 'Comma-separated.' : undefined)}
              />
            ))
        ) : (
          <Field
            label="Config (JSON)"
            value={jsonText}
            onInput={setJsonText}
            multiline
            rows={14}
            hint="Every config key; the client secret goes in its own field below."
          />
        )}
      </fieldset>
      {type === 'OIDC' ? (
        <Field
          label="OIDC client secret"
          type="password"
          value={clientSecret}
          onInput={setClientSecret}
          autocomplete="new-password"
          hint={
            method
              ? 'The service never shows the stored secret: type it again to save the method.'
              : 'Stored sealed; never shown again.'
          }
        />
      ) : null}
    </ActionForm>
  );
}

export function NewAuthMethodPage(): JSX.Element {
  return (
    <Page title="Create an ACL auth method" actions={<Link href={base}>All auth methods</Link>}>
      <AuthMethodForm onSaved={(name) => navigate(pathHref(base, name))} />
    </Page>
  );
}

export function AuthMethodPage({ name }: { name: string }): JSX.Element {
  const method = useLoad(() => scheduler<AclAuthMethod>('GET', api`acl/auth-method/${name}`), [name]);
  const [saved, setSaved] = useState(false);
  return (
    <Page title={`ACL auth method ${name}`} actions={<Link href={base}>All auth methods</Link>}>
      <Loading loaded={method}>
        {(shown) => (
          <div class="panels">
            <section class="panel" aria-label="Auth method">
              <Details
                rows={[
                  ['Name', shown.Name],
                  ['Type', shown.Type],
                  ['Token locality', shown.TokenLocality],
                  ['Max token TTL', shown.MaxTokenTTL],
                  ['Token name format', shown.TokenNameFormat ?? '—'],
                  ['Default', <YesNo key="d" value={shown.Default} />],
                  ['Create / modify index', `${shown.CreateIndex} / ${shown.ModifyIndex}`],
                ]}
              />
              <h2>Config</h2>
              <Json value={shown.Config ?? {}} />
              <p class="actions">
                <Link href={`/ui/scheduler/binding-rules?method=${encodeURIComponent(shown.Name)}`}>
                  Its binding rules
                </Link>
                <Link href={`/ui/scheduler/binding-rules/test?method=${encodeURIComponent(shown.Name)}`}>
                  Test its binding rules
                </Link>
              </p>
              <DeleteButton
                what={`auth method ${shown.Name}`}
                onDelete={async () => {
                  await scheduler('DELETE', api`acl/auth-method/${shown.Name}`);
                  navigate(base);
                }}
              />
            </section>
            <EditPanel saved={saved}>
              <AuthMethodForm
                key={shown.ModifyIndex}
                method={shown}
                onSaved={() => {
                  setSaved(true);
                  method.reload();
                }}
              />
            </EditPanel>
          </div>
        )}
      </Loading>
    </Page>
  );
}
