import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, api, secrets } from '../api.ts';
import { ErrorBox, Page, useAction, useLoad } from '../components.tsx';
import { Link, navigate } from '../router.tsx';
import { CodeEditor } from './code-editor.tsx';
import { ConfirmButton } from './confirm-button.tsx';
import { errorPosition, unlessMissing } from './paths.ts';

const policyPath = (name: string) => api`sys/policies/acl/${name}`;

/** `/ui/vault/policies/<name>`: read, create, edit and delete an ACL policy; a parse error is shown at its line. */
export function PolicyPage({ name }: { name: string }): JSX.Element {
  const loaded = useLoad(
    () =>
      unlessMissing(() =>
        secrets<{ data: { policy: string } }>('GET', policyPath(name)).then((answer) => answer.data.policy),
      ),
    [name],
  );
  return (
    <Page title={`Policy ${name}`}>
      <p>
        <Link href="/ui/vault/policies">All policies</Link>
      </p>
      {loaded.error !== undefined ? (
        <ErrorBox error={loaded.error} />
      ) : loaded.loading ? (
        <p class="loading">Loading…</p>
      ) : (
        <PolicyEditor key={name} name={name} initial={loaded.data} />
      )}
    </Page>
  );
}

function PolicyEditor({ name, initial }: { name: string; initial: string | undefined }): JSX.Element {
  const [exists, setExists] = useState(initial !== undefined);
  const [text, setText] = useState(initial ?? `path "secret/data/*" {\n  capabilities = ["read", "list"]\n}\n`);
  const [mark, setMark] = useState<{ line: number; column: number; seq: number } | undefined>(undefined);
  const [done, setDone] = useState('');
  const action = useAction();
  useEffect(() => {
    const message = action.error instanceof ApiError ? action.error.messages.join('\n') : '';
    const position = errorPosition(message);
    setMark(position ? { ...position, seq: Date.now() } : undefined);
  }, [action.error]);
  const save = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      setDone('');
      await secrets('PUT', policyPath(name), { policy: text });
      setDone(exists ? `Policy ${name} saved.` : `Policy ${name} created.`);
      setExists(true);
    });
  };
  return (
    <form onSubmit={save} aria-label={`Policy ${name}`} class="policy-form">
      {!exists ? <p class="note">A new policy: it is created when saved.</p> : null}
      <CodeEditor id="policy-text" label="Policy (HCL or JSON)" value={text} onInput={setText} mark={mark} />
      {mark ? (
        <p class="error-position" role="status">
          The server refused the policy at line {mark.line}, column {mark.column}.
        </p>
      ) : null}
      <ErrorBox error={action.error} />
      {done ? (
        <p class="success" role="status">
          {done}
        </p>
      ) : null}
      <div class="actions">
        <button type="submit" disabled={action.busy}>
          {exists ? 'Save policy' : 'Create policy'}
        </button>
        {!exists ? null : (
          <ConfirmButton
            label="Delete policy"
            question={`Delete policy ${name}?`}
            disabled={action.busy}
            onConfirm={() =>
              void action.run(async () => {
                await secrets('DELETE', policyPath(name));
                navigate('/ui/vault/policies');
              })
            }
          />
        )}
      </div>
    </form>
  );
}
