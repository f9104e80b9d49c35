import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { api, secrets } from '../api.ts';
import { ErrorBox, Field, Loading, Page, useAction, useLoad } from '../components.tsx';
import { listAt } from './paths.ts';
import { TokenCreate } from './token-create.tsx';
import { type TokenInfo, TokenDetails } from './token-details.tsx';

/** The signed-in token (`auth/token/lookup-self`) and `renew-self`. */
function SelfPanel(): JSX.Element {
  const loaded = useLoad(
    () => secrets<{ data: TokenInfo }>('GET', api`auth/token/lookup-self`).then((answer) => answer.data),
    [],
  );
  const [done, setDone] = useState('');
  const action = useAction();
  return (
    <section class="panel" aria-label="This token">
      <h2>This token</h2>
      <Loading loaded={loaded}>
        {(token) => (
          <>
            <TokenDetails token={token} />
            {token.renewable ? (
              <button
                type="button"
                class="secondary"
                disabled={action.busy}
                onClick={() =>
                  void action.run(async () => {
                    setDone('');
                    await secrets('PUT', api`auth/token/renew-self`, {});
                    setDone('Renewed.');
                    loaded.reload();
                  })
                }
              >
                Renew this token
              </button>
            ) : null}
          </>
        )}
      </Loading>
      {done ? (
        <p class="success" role="status">
          {done}
        </p>
      ) : null}
      <ErrorBox error={action.error} />
    </section>
  );
}

/** Look up a token by its accessor (`auth/token/lookup-accessor`) and revoke it (`revoke-accessor`). */
function AccessorPanel(): JSX.Element {
  const [accessor, setAccessor] = useState('');
  const [found, setFound] = useState<TokenInfo | undefined>(undefined);
  const [done, setDone] = useState('');
  const action = useAction();
  return (
    <form
      class="panel"
      aria-label="Look up by accessor"
      onSubmit={(event) => {
        event.preventDefault();
        void action.run(async () => {
          setFound(undefined);
          setDone('');
          setFound(
            (await secrets<{ data: TokenInfo }>('POST', api`auth/token/lookup-accessor`, { accessor: accessor.trim() }))
              .data,
          );
        });
      }}
    >
      <h2>Look up by accessor</h2>
      <Field label="Accessor" value={accessor} onInput={setAccessor} required />
      <div class="actions">
        <button type="submit" disabled={action.busy}>
          Look up
        </button>
      </div>
      {found ? (
        <>
          <TokenDetails token={found} />
          <button
            type="button"
            class="danger"
            disabled={action.busy}
            onClick={() =>
              void action.run(async () => {
                await secrets('POST', api`auth/token/revoke-accessor`, { accessor: found.accessor ?? accessor.trim() });
                setFound(undefined);
                setDone(`The token with accessor ${found.accessor ?? accessor.trim()} is revoked.`);
              })
            }
          >
            Revoke this token
          </button>
        </>
      ) : null}
      {done ? (
        <p class="success" role="status">
          {done}
        </p>
      ) : null}
      <ErrorBox error={action.error} />
    </form>
  );
}

/** Revoke a token the person pastes (`auth/token/revoke`), with its children. */
function RevokePanel(): JSX.Element {
  const [token, setToken] = useState('');
  const [done, setDone] = useState('');
  const action = useAction();
  return (
    <form
      class="panel"
      aria-label="Revoke a token"
      onSubmit={(event) => {
        event.preventDefault();
        void action.run(async () => {
          setDone('');
          await secrets('POST', api`auth/token/revoke`, { token: token.trim() });
          setToken('');
          setDone('The token and its children are revoked.');
        });
      }}
    >
      <h2>Revoke a token</h2>
      <Field label="Token to revoke" type="password" value={token} onInput={setToken} required />
      <div class="actions">
        <button type="submit" class="danger" disabled={action.busy}>
          Revoke token
        </button>
      </div>
      {done ? (
        <p class="success" role="status">
          {done}
        </p>
      ) : null}
      <ErrorBox error={action.error} />
    </form>
  );
}

/** The policies a child may be given: the token's own; for a root token every ACL policy it can list. */
async function ownPolicies(): Promise<string[]> {
  const policies = (await secrets<{ data: TokenInfo }>('GET', api`auth/token/lookup-self`)).data.policies ?? [];
  if (!policies.includes('root')) return policies;
  const all = await listAt('sys/policies/acl').catch(() => [] as string[]);
  return [...new Set([...policies, ...all])];
}

/** `/ui/vault/tokens`: this token, a child of it, look-up by accessor, revocation. */
export function TokensPage(): JSX.Element {
  const own = useLoad(ownPolicies, []);
  return (
    <Page title="Tokens">
      <div class="stacked-panels">
        <SelfPanel />
        {own.data ? <TokenCreate ownPolicies={own.data} /> : null}
        <AccessorPanel />
        <RevokePanel />
      </div>
    </Page>
  );
}
