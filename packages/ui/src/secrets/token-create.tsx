import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { api, secrets } from '../api.ts';
import { Details, ErrorBox, Field, formatSeconds, SecretValue, useAction } from '../components.tsx';

interface Created {
  client_token: string;
  accessor: string;
  policies: string[];
  lease_duration: number;
  renewable: boolean;
}

/** Copies the new token with `navigator.clipboard` where the browser allows it, and says whether it did. */
function CopyButton({ value }: { value: string }): JSX.Element | null {
  const [said, setSaid] = useState('');
  if (!navigator.clipboard?.writeText) return null;
  return (
    <>
      <button
        type="button"
        class="small secondary"
        onClick={() =>
          navigator.clipboard.writeText(value).then(
            () => setSaid('Copied.'),
            (error: unknown) => setSaid(`Not copied: ${error instanceof Error ? error.message : String(error)}`),
          )
        }
      >
        Copy token
      </button>{' '}
      <span role="status">{said}</span>
    </>
  );
}

/**
 * A child of the signed-in token (`auth/token/create`) with policies chosen from its own (a root token may give any
 * policy, so it is offered every ACL policy); the new token is shown once, hidden until revealed.
 */
export function TokenCreate({ ownPolicies }: { ownPolicies: string[] }): JSX.Element {
  const choosable = ownPolicies;
  // A child starts with what this token has (a root token's child with `default` only: root is given on purpose).
  const isRoot = ownPolicies.includes('root');
  const [chosen, setChosen] = useState<string[]>(choosable.filter((policy) => (isRoot ? policy === 'default' : true)));
  const [ttl, setTtl] = useState('1h');
  const [displayName, setDisplayName] = useState('');
  const [renewable, setRenewable] = useState(true);
  const [created, setCreated] = useState<Created | undefined>(undefined);
  const action = useAction();
  const submit = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      setCreated(undefined);
      const answer = await secrets<{ auth: Created }>('POST', api`auth/token/create`, {
        ...(chosen.length ? { policies: chosen } : {}),
        ...(ttl.trim() ? { ttl: ttl.trim() } : {}),
        ...(displayName.trim() ? { display_name: displayName.trim() } : {}),
        renewable,
        ...(chosen.includes('default') ? {} : { no_default_policy: true }),
      });
      setCreated(answer.auth);
    });
  };
  return (
    <form class="panel" onSubmit={submit} aria-label="Create a child token">
      <h2>Create a child token</h2>
      <fieldset class="choices">
        <legend>Policies (from this token's own)</legend>
        <p class="note">With none chosen the child gets this token's own policies.</p>
        {choosable.map((policy) => (
          <label key={policy} class="check">
            <input
              type="checkbox"
              checked={chosen.includes(policy)}
              onChange={(event) =>
                setChosen(
                  event.currentTarget.checked ? [...chosen, policy] : chosen.filter((other) => other !== policy),
                )
              }
            />{' '}
            {policy}
          </label>
        ))}
      </fieldset>
      <div class="row">
        <Field label="TTL" value={ttl} onInput={setTtl} placeholder="e.g. 1h" />
        <Field label="Display name" value={displayName} onInput={setDisplayName} />
      </div>
      <label class="check">
        <input type="checkbox" checked={renewable} onChange={(event) => setRenewable(event.currentTarget.checked)} />{' '}
        Renewable
      </label>
      <ErrorBox error={action.error} />
      <div class="actions">
        <button type="submit" disabled={action.busy}>
          Create token
        </button>
      </div>
      {created ? (
        <div class="success" role="status" aria-label="New token">
          <p>The new token is shown only now: keep it somewhere safe.</p>
          <Details
            rows={[
              [
                'Token',
                <>
                  <SecretValue value={created.client_token} label="new token" />{' '}
                  <CopyButton value={created.client_token} />
                </>,
              ],
              ['Accessor', <code>{created.accessor}</code>],
              ['Policies', created.policies.join(', ')],
              ['TTL', formatSeconds(created.lease_duration)],
              ['Renewable', created.renewable ? 'yes' : 'no'],
            ]}
          />
        </div>
      ) : null}
    </form>
  );
}
