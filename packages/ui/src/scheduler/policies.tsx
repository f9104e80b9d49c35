import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { api, scheduler } from '../api.ts';
import { Details, Field, Loading, Page, Table, useLoad } from '../components.tsx';
import { Link, navigate, pathHref } from '../router.tsx';
import { ActionForm, DeleteButton, EditPanel } from './common.tsx';

/** The scheduler's ACL policies (`acl/policies`, `acl/policy/<name>`): the rules text and the server's own validation message. */

interface AclPolicy {
  Name: string;
  Description: string;
  Rules?: string;
  CreateIndex: number;
  ModifyIndex: number;
}

const base = '/ui/scheduler/policies';

export function PoliciesPage(): JSX.Element {
  const policies = useLoad(() => scheduler<AclPolicy[]>('GET', api`acl/policies`), []);
  return (
    <Page
      title="ACL policies"
      actions={
        <Link class="button" href={`${base}/new`}>
          Create policy
        </Link>
      }
    >
      <Loading loaded={policies}>
        {(list) => (
          <Table
            columns={['Name', 'Description', 'Modify index']}
            rows={list.map((policy) => [
              <Link key="n" href={pathHref(base, policy.Name)}>
                {policy.Name}
              </Link>,
              policy.Description || '—',
              policy.ModifyIndex,
            ])}
            empty="No policies."
          />
        )}
      </Loading>
    </Page>
  );
}

function PolicyForm({ policy, onSaved }: { policy?: AclPolicy; onSaved: (name: string) => void }): JSX.Element {
  const [name, setName] = useState(policy?.Name ?? '');
  const [description, setDescription] = useState(policy?.Description ?? '');
  const [rules, setRules] = useState(policy?.Rules ?? '');
  return (
    <ActionForm
      label={policy ? `Edit policy ${policy.Name}` : 'Create a policy'}
      submit={policy ? 'Save policy' : 'Create policy'}
      onSubmit={async () => {
        const target = policy?.Name ?? name.trim();
        await scheduler('POST', api`acl/policy/${target}`, {
          Name: target,
          Description: description,
          Rules: rules,
        });
        onSaved(target);
      }}
    >
      {policy ? null : <Field label="Name" value={name} onInput={setName} required />}
      <Field label="Description" value={description} onInput={setDescription} />
      <Field
        label="Rules"
        value={rules}
        onInput={setRules}
        multiline
        rows={12}
        placeholder={'namespace "default" {\n  policy = "read"\n}'}
        hint="HCL or JSON; the service checks it and says what is wrong."
      />
    </ActionForm>
  );
}

export function NewPolicyPage(): JSX.Element {
  return (
    <Page title="Create an ACL policy" actions={<Link href={base}>All policies</Link>}>
      <PolicyForm onSaved={(name) => navigate(pathHref(base, name))} />
    </Page>
  );
}

export function PolicyPage({ name }: { name: string }): JSX.Element {
  const policy = useLoad(() => scheduler<AclPolicy>('GET', api`acl/policy/${name}`), [name]);
  const [saved, setSaved] = useState(false);
  return (
    <Page title={`ACL policy ${name}`} actions={<Link href={base}>All policies</Link>}>
      <Loading loaded={policy}>
        {(shown) => (
          <div class="panels">
            <section class="panel" aria-label="Policy">
              <Details
                rows={[
                  ['Name', shown.Name],
                  ['Description', shown.Description || '—'],
                  ['Create / modify index', `${shown.CreateIndex} / ${shown.ModifyIndex}`],
                ]}
              />
              <DeleteButton
                what={`policy ${shown.Name}`}
                onDelete={async () => {
                  await scheduler('DELETE', api`acl/policy/${shown.Name}`);
                  navigate(base);
                }}
              />
            </section>
            <EditPanel saved={saved}>
              <PolicyForm
                key={shown.ModifyIndex}
                policy={shown}
                onSaved={() => {
                  setSaved(true);
                  policy.reload();
                }}
              />
            </EditPanel>
          </div>
        )}
      </Loading>
    </Page>
  );
}
