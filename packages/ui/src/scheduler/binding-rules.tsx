import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { api, scheduler } from '../api.ts';
import { Details, ErrorBox, Field, Loading, Page, Table, useLoad } from '../components.tsx';
import { Link, navigate, pathHref, useLocation } from '../router.tsx';
import { ActionForm, DeleteButton, EditPanel, SelectField } from './common.tsx';

/** The scheduler's ACL binding rules (`acl/binding-rules`, `acl/binding-rule/<id>`). */

export interface AclBindingRule {
  ID: string;
  Description: string;
  AuthMethod: string;
  Selector?: string;
  BindType?: 'role' | 'policy' | 'management';
  BindName?: string;
  CreateIndex: number;
  ModifyIndex: number;
}

const base = '/ui/scheduler/binding-rules';

export function BindingRulesPage(): JSX.Element {
  const { query } = useLocation();
  const method = query.get('method') ?? '';
  const rules = useLoad(() => scheduler<AclBindingRule[]>('GET', api`acl/binding-rules`), []);
  return (
    <Page
      title={method ? `ACL binding rules of ${method}` : 'ACL binding rules'}
      actions={
        <>
          <Link class="button" href={`${base}/new${method ? `?method=${encodeURIComponent(method)}` : ''}`}>
            Create binding rule
          </Link>
          <Link class="button secondary" href={`${base}/test${method ? `?method=${encodeURIComponent(method)}` : ''}`}>
            Test binding rules
          </Link>
        </>
      }
    >
      <Loading loaded={rules}>
        {(list) => (
          <Table
            columns={['ID', 'Auth method', 'Description']}
            rows={list
              .filter((rule) => !method || rule.AuthMethod === method)
              .map((rule) => [
                <Link key="i" href={pathHref(base, rule.ID)}>
                  <code>{rule.ID}</code>
                </Link>,
                <Link key="m" href={pathHref('/ui/scheduler/auth-methods', rule.AuthMethod)}>
                  {rule.AuthMethod}
                </Link>,
                rule.Description || '—',
              ])}
            empty="No binding rules."
          />
        )}
      </Loading>
    </Page>
  );
}

/** A select of the auth methods (anyone may list them); the API's refusal is shown if the list fails. */
export function AuthMethodSelect({
  value,
  onChange,
  disabled,
}: {
  value: string;
  onChange: (name: string) => void;
  disabled?: boolean;
}): JSX.Element {
  const methods = useLoad(() => scheduler<Array<{ Name: string; Type: string }>>('GET', api`acl/auth-methods`), []);
  const names = methods.data?.map((method) => method.Name) ?? [];
  const options: Array<[string, string]> = [
    ['', 'Choose an auth method'],
    ...(methods.data ?? []).map((method): [string, string] => [method.Name, `${method.Name} (${method.Type})`]),
  ];
  if (value && !names.includes(value)) options.push([value, value]);
  return (
    <>
      <SelectField label="Auth method" value={value} options={options} onChange={onChange} disabled={disabled} />
      <ErrorBox error={methods.error} />
    </>
  );
}

function BindingRuleForm({
  rule,
  initialMethod,
  onSaved,
}: {
  rule?: AclBindingRule;
  initialMethod?: string;
  onSaved: (id: string) => void;
}): JSX.Element {
  const [method, setMethod] = useState(rule?.AuthMethod ?? initialMethod ?? '');
  const [description, setDescription] = useState(rule?.Description ?? '');
  const [selector, setSelector] = useState(rule?.Selector ?? '');
  const [bindType, setBindType] = useState<string>(rule?.BindType ?? 'role');
  const [bindName, setBindName] = useState(rule?.BindName ?? '');
  const management = bindType === 'management';
  return (
    <ActionForm
      label={rule ? 'Edit binding rule' : 'Create a binding rule'}
      submit={rule ? 'Save binding rule' : 'Create binding rule'}
      onSubmit={async () => {
        const body = {
          AuthMethod: method,
          Description: description,
          Selector: selector,
          BindType: bindType,
          BindName: management ? '' : bindName.trim(),
        };
        const saved = rule
          ? await scheduler<AclBindingRule>('POST', api`acl/binding-rule/${rule.ID}`, {
              ...body,
              ID: rule.ID,
            })
          : await scheduler<AclBindingRule>('POST', api`acl/binding-rule`, body);
        onSaved(saved.ID);
      }}
    >
      <AuthMethodSelect value={method} onChange={setMethod} disabled={Boolean(rule)} />
      <Field label="Description" value={description} onInput={setDescription} />
      <Field
        label="Selector"
        value={selector}
        onInput={setSelector}
        multiline
        rows={3}
        placeholder={'"engineering" in list.groups and value.team == "ops"'}
        hint="A boolean expression over the mapped claims (value.<name>, list.<name>); empty matches every login."
      />
      <div class="row">
        <SelectField
          label="Bind type"
          value={bindType}
          options={['role', 'policy', 'management']}
          onChange={setBindType}
        />
        <Field
          label="Bind name"
          value={management ? '' : bindName}
          onInput={setBindName}
          hint="A role or policy name; may use ${value.<name>}."
        />
      </div>
    </ActionForm>
  );
}

export function NewBindingRulePage(): JSX.Element {
  const { query } = useLocation();
  return (
    <Page title="Create an ACL binding rule" actions={<Link href={base}>All binding rules</Link>}>
      <BindingRuleForm initialMethod={query.get('method') ?? ''} onSaved={(id) => navigate(pathHref(base, id))} />
    </Page>
  );
}

export function BindingRulePage({ id }: { id: string }): JSX.Element {
  const rule = useLoad(() => scheduler<AclBindingRule>('GET', api`acl/binding-rule/${id}`), [id]);
  const [saved, setSaved] = useState(false);
  return (
    <Page title="ACL binding rule" actions={<Link href={base}>All binding rules</Link>}>
      <Loading loaded={rule}>
        {(shown) => (
          <div class="panels">
            <section class="panel" aria-label="Binding rule">
              <Details
                rows={[
                  ['ID', <code key="i">{shown.ID}</code>],
                  [
                    'Auth method',
                    <Link key="m" href={pathHref('/ui/scheduler/auth-methods', shown.AuthMethod)}>
                      {shown.AuthMethod}
                    </Link>,
                  ],
                  ['Description', shown.Description || '—'],
                  ['Selector', shown.Selector ? <code key="s">{shown.Selector}</code> : '(empty: every login)'],
                  ['Bind type', shown.BindType ?? '—'],
                  ['Bind name', shown.BindName || '—'],
                  ['Create / modify index', `${shown.CreateIndex} / ${shown.ModifyIndex}`],
                ]}
              />
              <p>
                <Link href={`${base}/test?method=${encodeURIComponent(shown.AuthMethod)}`}>
                  Test the rules of {shown.AuthMethod}
                </Link>
              </p>
              <DeleteButton
                what="binding rule"
                onDelete={async () => {
                  await scheduler('DELETE', api`acl/binding-rule/${shown.ID}`);
                  navigate(base);
                }}
              />
            </section>
            <EditPanel saved={saved}>
              <BindingRuleForm
                key={shown.ModifyIndex}
                rule={shown}
                onSaved={() => {
                  setSaved(true);
                  rule.reload();
                }}
              />
            </EditPanel>
          </div>
        )}
      </Loading>
    </Page>
  );
}
