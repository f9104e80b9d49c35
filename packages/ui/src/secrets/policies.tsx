import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { Field, Loading, Page, Table, useLoad } from '../components.tsx';
import { Link, navigate } from '../router.tsx';
import { listAt } from './paths.ts';

export const policyHref = (name: string, query = '') =>
  `/ui/vault/policies/${encodeURIComponent(name)}${query ? `?${query}` : ''}`;

/** `/ui/vault/policies`: the ACL policies (`LIST sys/policies/acl`), and a name for a new one. */
export function PoliciesPage(): JSX.Element {
  const loaded = useLoad(() => listAt('sys/policies/acl'), []);
  const [name, setName] = useState('');
  return (
    <Page title="ACL policies">
      <form
        class="row"
        aria-label="New policy"
        onSubmit={(event) => {
          event.preventDefault();
          if (name.trim()) navigate(policyHref(name.trim(), 'new'));
        }}
      >
        <Field label="New policy name" value={name} onInput={setName} required />
        <button type="submit">Create policy</button>
      </form>
      <Loading loaded={loaded}>
        {(names) => (
          <Table
            columns={['Name']}
            rows={names.map((policy) => [<Link href={policyHref(policy)}>{policy}</Link>])}
            empty="No policies."
          />
        )}
      </Loading>
    </Page>
  );
}
