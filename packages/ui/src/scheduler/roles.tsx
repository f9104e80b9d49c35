import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { api, scheduler } from '../api.ts';
import { Details, ErrorBox, Field, Loading, Page, Table, useLoad } from '../components.tsx';
import { Link, navigate, pathHref } from '../router.tsx';
import { ActionForm, CheckField, DeleteButton, EditPanel, splitList } from './common.tsx';

/** The scheduler's ACL roles (`acl/roles`, `acl/role/<id>`): a name and links to policies. */

interface AclRole {
  ID: string;
  Name: string;
  Description: string;
  Policies: Array<{ Name: string }> | null;
  CreateIndex: number;
  ModifyIndex: number;
}

const base = '/ui/scheduler/roles';

const policyLinks = (role: AclRole) =>
  (role.Policies ?? []).map((policy, index) => (
    <span key={policy.Name}>
      {index ? ', ' : ''}
      <Link href={pathHref('/ui/scheduler/policies', policy.Name)}>{policy.Name}</Link>
    </span>
  ));

export function RolesPage(): JSX.Element {
  const roles = useLoad(() => scheduler<AclRole[]>('GET', api`acl/roles`), []);
  return (
    <Page
      title="ACL roles"
      actions={
        <Link class="button" href={`${base}/new`}>
          Create role
        </Link>
      }
    >
      <Loading loaded={roles}>
        {(list) => (
          <Table
            columns={['Name', 'Description', 'Policies']}
            rows={list.map((role) => [
              <Link key="n" href={pathHref(base, role.ID)}>
                {role.Name}
              </Link>,
              role.Description || '—',
              policyLinks(role),
            ])}
            empty="No roles."
          />
        )}
      </Loading>
    </Page>
  );
}

/**
 * The role's policies: a check box per policy the token may list, plus a text field for names it cannot see (a
 * list the service refuses is shown as its refusal; the names can still be typed).
 */
function PolicyPicker({ chosen, onChange }: { chosen: string[]; onChange: (names: string[]) => void }): JSX.Element {
  const policies = useLoad(() => scheduler<Array<{ Name: string }>>('GET', api`acl/policies`), []);
  const known = policies.data?.map((policy) => policy.Name) ?? [];
  const [otherText, setOtherText] = useState<string | undefined>(undefined);
  const others = otherText ?? chosen.filter((name) => !known.includes(name)).join(', ');
  const toggle = (name: string, on: boolean) =>
    onChange(on ? [...chosen, name] : chosen.filter((each) => each !== name));
  return (
    <fieldset class="picker">
      <legend>Policies</legend>
      {policies.error ? <ErrorBox error={policies.error} /> : null}
      {known.map((name) => (
        <CheckField key={name} label={name} checked={chosen.includes(name)} onChange={(on) => toggle(name, on)} />
      ))}
      <Field
        label="Other policy names"
        value={others}
        onInput={(text) => {
          setOtherText(text);
          onChange([...new Set([...chosen.filter((name) => known.includes(name)), ...splitList(text)])]);
        }}
        hint="Comma-separated."
      />
    </fieldset>
  );
}

function RoleForm({ role, onSaved }: { role?: AclRole; onSaved: (id: string) => void }): JSX.Element {
  const [name, setName] = useState(role?.Name ?? '');
  const [description, setDescription] = useState(role?.Description ?? '');
  const [policies, setPolicies] = useState<string[]>((role?.Policies ?? []).map((policy) => policy.Name));
  return (
    <ActionForm
      label={role ? `Edit role ${role.Name}` : 'Create a role'}
      submit={role ? 'Save role' : 'Create role'}
      onSubmit={async () => {
        const body = { Name: name.trim(), Description: description, Policies: policies.map((Name) => ({ Name })) };
        const saved = role
          ? await scheduler<AclRole>('POST', api`acl/role/${role.ID}`, { ...body, ID: role.ID })
          : await scheduler<AclRole>('POST', api`acl/role`, body);
        onSaved(saved.ID);
      }}
    >
      <Field label="Name" value={name} onInput={setName} required />
      <Field label="Description" value={description} onInput={setDescription} />
      <PolicyPicker chosen={policies} onChange={setPolicies} />
    </ActionForm>
  );
}

export function NewRolePage(): JSX.Element {
  return (
    <Page title="Create an ACL role" actions={<Link href={base}>All roles</Link>}>
      <RoleForm onSaved={(id) => navigate(pathHref(base, id))} />
    </Page>
  );
}

export function RolePage({ id }: { id: string }): JSX.Element {
  const role = useLoad(() => scheduler<AclRole>('GET', api`acl/role/${id}`), [id]);
  const [saved, setSaved] = useState(false);
  return (
    <Page title="ACL role" actions={<Link href={base}>All roles</Link>}>
      <Loading loaded={role}>
        {(shown) => (
          <div class="panels">
            <section class="panel" aria-label="Role">
              <Details
                rows={[
                  ['Name', shown.Name],
                  ['ID', <code key="i">{shown.ID}</code>],
                  ['Description', shown.Description || '—'],
                  ['Policies', policyLinks(shown)],
                  ['Create / modify index', `${shown.CreateIndex} / ${shown.ModifyIndex}`],
                ]}
              />
              <DeleteButton
                what={`role ${shown.Name}`}
                onDelete={async () => {
                  await scheduler('DELETE', api`acl/role/${shown.ID}`);
                  navigate(base);
                }}
              />
            </section>
            <EditPanel saved={saved}>
              <RoleForm
                key={shown.ModifyIndex}
                role={shown}
                onSaved={() => {
                  setSaved(true);
                  role.reload();
                }}
              />
            </EditPanel>
          </div>
        )}
      </Loading>
    </Page>
  );
}
