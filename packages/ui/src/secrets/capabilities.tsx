import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { api, secrets } from '../api.ts';
import { ErrorBox, Field, Page, Table, useAction } from '../components.tsx';

/** `/ui/vault/capabilities`: what the signed-in token may do at each path (`POST sys/capabilities-self`). */
export function CapabilitiesPage(): JSX.Element {
  const [text, setText] = useState('secret/data/');
  const [answer, setAnswer] = useState<Array<[string, string[]]> | undefined>(undefined);
  const action = useAction();
  const submit = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      setAnswer(undefined);
      const paths = [
        ...new Set(
          text
            .split('\n')
            .map((line) => line.trim())
            .filter(Boolean),
        ),
      ];
      const reply = await secrets<{ data: Record<string, string[]> }>('POST', api`sys/capabilities-self`, { paths });
      setAnswer(paths.map((path) => [path, reply.data[path.replace(/^\/+/, '')] ?? []]));
    });
  };
  return (
    <Page title="Capabilities">
      <form onSubmit={submit} aria-label="Capabilities of this token">
        <Field
          label="Paths"
          multiline
          rows={4}
          value={text}
          onInput={setText}
          hint="One path a line, as in a policy: secret/data/app, sys/mounts, …"
        />
        <div class="actions">
          <button type="submit" disabled={action.busy}>
            Check
          </button>
        </div>
      </form>
      <ErrorBox error={action.error} />
      {answer ? (
        <Table
          columns={['Path', 'Capabilities']}
          rows={answer.map(([path, capabilities]) => [
            <code>{path}</code>,
            <span class="capabilities">
              {capabilities.map((capability) => (
                <span key={capability} class={`badge ${capability === 'deny' ? 'bad' : 'good'}`}>
                  {capability}
                </span>
              ))}
            </span>,
          ])}
        />
      ) : null}
    </Page>
  );
}
