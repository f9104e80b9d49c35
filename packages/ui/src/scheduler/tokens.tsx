import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { api, scheduler } from '../api.ts';
import { Details, Field, Loading, Page, SecretValue, Table, useLoad } from '../components.tsx';
import { Link, navigate, pathHref } from '../router.tsx';
import { ActionForm, CheckField, DeleteButton, joinList, SelectField, splitList, YesNo } from './common.tsx';

/** The scheduler's ACL tokens (`acl/tokens`, `acl/token/<accessor>`, `acl/token/self`). */

export interface AclToken {
  AccessorID: string;
  SecretID?: string;
  Name: string;
  Type: 'client' | 'management';
  Policies: string[] | null;
  Roles: Array<{ ID: string; Name: string }> | null;
  Global: boolean;
  CreateTime?: string;
  ExpirationTime?: string | null;
  ExpirationTTL?: string;
  CreateIndex: number;
  ModifyIndex: number;
}

const base = '/ui/scheduler/tokens';
const roleNames = (token: AclToken) => (token.Roles ?? []).map((role) => role.Name).join(', ');

export function TokensPage(): JSX.Element {
  const tokens = useLoad(() => scheduler<AclToken[]>('GET', api`acl/tokens`), []);
  return (
    <Page
      title="ACL tokens"
      actions={
        <>
          <Link class="button" href={`${base}/new`}>
            Create token
          </Link>
          <Link class="button secondary" href={`${base}/self`}>
            My token
          </Link>
        </>
      }
    >
      <Loading loaded={tokens}>
        {(list) => (
          <Table
            columns={['Name', 'Type', 'Accessor', 'Policies', 'Roles', 'Global', 'Expires']}
            rows={list.map((token) => [
              token.Name || '—',
              token.Type,
              <Link key="a" href={pathHref(base, token.AccessorID)}>
                <code>{token.AccessorID}</code>
              </Link>,
              joinList(token.Policies) || '—',
              roleNames(token) || '—',
              token.Global ? 'yes' : 'no',
              token.ExpirationTime ?? 'never',
            ])}
            empty="No tokens."
          />
        )}
      </Loading>
    </Page>
  );
}

/** One token; `self` reads the signed-in token. */
export function TokenPage({ accessor }: { accessor: string }): JSX.Element {
  const token = useLoad(
    () => scheduler<AclToken>('GET', accessor === 'self' ? api`acl/token/self` : api`acl/token/${accessor}`),
    [accessor],
  );
  return (
    <Page title={accessor === 'self' ? 'My ACL token' : 'ACL token'} actions={<Link href={base}>All tokens</Link>}>
      <Loading loaded={token}>
        {(shown) => (
          <>
            <TokenDetails token={shown} />
            <DeleteButton
              what={`token ${shown.Name || shown.AccessorID}`}
              onDelete={async () => {
                await scheduler('DELETE', api`acl/token/${shown.AccessorID}`);
                navigate(base);
              }}
            />
          </>
        )}
      </Loading>
    </Page>
  );
}

function TokenDetails({ token }: { token: AclToken }): JSX.Element {
  return (
    <Details
      rows={[
        ['Name', token.Name || '—'],
        ['Accessor ID', <code key="a">{token.AccessorID}</code>],
        ['Type', token.Type],
        ['Policies', joinList(token.Policies) || '—'],
        [
          'Roles',
          (token.Roles ?? []).length
            ? (token.Roles ?? []).map((role, index) => (
                <span key={role.ID}>
                  {index ? ', ' : ''}
                  <Link href={pathHref('/ui/scheduler/roles', role.ID)}>{role.Name}</Link>
                </span>
              ))
            : '—',
        ],
        ['Global', <YesNo key="g" value={token.Global} />],
        ['Created', token.CreateTime ?? '—'],
        ['Expires', token.ExpirationTime ?? 'never'],
        ['Create / modify index', `${token.CreateIndex} / ${token.ModifyIndex}`],
      ]}
    />
  );
}

export function NewTokenPage(): JSX.Element {
  const [name, setName] = useState('');
  const [type, setType] = useState('client');
  const [policies, setPolicies] = useState('');
  const [roles, setRoles] = useState('');
  const [ttl, setTtl] = useState('');
  const [global, setGlobal] = useState(false);
  const [created, setCreated] = useState<AclToken | undefined>(undefined);
  if (created) {
    return (
      <Page title="Token created" actions={<Link href={base}>All tokens</Link>}>
        <div class="success" role="status">
          The token was created. Its secret ID is shown here once: copy it now; the service never shows it again.
        </div>
        <Details rows={[['Secret ID', <SecretValue key="s" value={created.SecretID ?? ''} label="secret ID" />]]} />
        <TokenDetails token={created} />
      </Page>
    );
  }
  const management = type === 'management';
  return (
    <Page title="Create an ACL token" actions={<Link href={base}>All tokens</Link>}>
      <ActionForm
        label="Create an ACL token"
        submit="Create token"
        onSubmit={async () => {
          const body = {
            Name: name,
            Type: type,
            Policies: management ? [] : splitList(policies),
            Roles: management ? [] : splitList(roles).map((Name) => ({ Name })),
            Global: global,
            ...(ttl.trim() ? { ExpirationTTL: ttl.trim() } : {}),
          };
          setCreated(await scheduler<AclToken>('POST', api`acl/token`, body));
        }}
      >
        <Field label="Name" value={name} onInput={setName} />
        <SelectField label="Type" value={type} options={['client', 'management']} onChange={setType} />
        <Field
          label="Policies"
          value={policies}
          onInput={setPolicies}
          hint="Policy names, comma-separated (client tokens)."
        />
        <Field label="Roles" value={roles} onInput={setRoles} hint="Role names, comma-separated (client tokens)." />
        <Field
          label="Expiration TTL"
          value={ttl}
          onInput={setTtl}
          placeholder="e.g. 1h"
          hint="Empty: the token does not expire."
        />
        <CheckField label="Global (replicated to every region)" checked={global} onChange={setGlobal} />
      </ActionForm>
    </Page>
  );
}
