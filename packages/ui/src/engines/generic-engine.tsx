import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { api, secrets, withQuery } from '../api.ts';
import { ErrorBox, Json, Loading, Page, Table, useAction, useLoad } from '../components.tsx';
import type { RouteDef } from '../router.tsx';
import { apiPath } from './engine-frame.tsx';
import { type DescribedPath, describedPaths, type OpenApiDocument } from './openapi-paths.ts';

/** A path's read or list, called from the page: its answer (or the API's refusal) shown below the table. */
function useCall(mount: string) {
  const action = useAction();
  const [answer, setAnswer] = useState<{ path: string; body: unknown } | undefined>();
  const call = (described: DescribedPath, operation: 'read' | 'list') =>
    void action.run(async () => {
      setAnswer(undefined);
      const path = apiPath(mount, described.path.replace(/\/$/, ''));
      const body = await secrets('GET', operation === 'list' ? withQuery(path, { list: 'true' }) : path);
      setAnswer({ path: described.path, body });
    });
  return { call, answer, error: action.error, busy: action.busy };
}

/**
 * `/ui/vault/engine/<mount>`: a secrets engine the console has no page of its own for, as the service describes it
 * (the OpenAPI document of `sys/internal/specs/openapi`, built from the engine's path rows): each path under the mount
 * with its operations and summary, and a read or list of a path without parameters, its answer shown as it came. A
 * new engine's mounts are linked here from the mounts page with nothing written in the console.
 */
function GenericEnginePage({ mount }: { mount: string }): JSX.Element {
  const loaded = useLoad(
    () => secrets<OpenApiDocument>('GET', api`sys/internal/specs/openapi`).then((doc) => describedPaths(doc, mount)),
    [mount],
  );
  const { call, answer, error, busy } = useCall(mount);
  const shown = mount.replace(/\/*$/, '/');
  return (
    <Page title={`Engine at ${shown}`}>
      <p class="note">
        The paths of <code>{shown}</code> as the service describes them (<code>sys/internal/specs/openapi</code>).
      </p>
      <Loading loaded={loaded}>
        {(paths) => (
          <Table
            columns={['Path', 'Operations', 'Summary', '']}
            rows={paths.map((described) => {
              const callable = (['read', 'list'] as const).filter(
                (operation) => !described.parameterised && described.operations.includes(operation),
              );
              return [
                <code>{`${shown}${described.path}`}</code>,
                described.operations.join(', '),
                described.summary,
                callable.map((operation) => (
                  <button
                    key={operation}
                    type="button"
                    class="secondary"
                    disabled={busy}
                    onClick={() => call(described, operation)}
                  >
                    {`${operation === 'read' ? 'Read' : 'List'} ${described.path.replace(/\/$/, '') || shown}`}
                  </button>
                )),
              ];
            })}
            empty={`The service's OpenAPI document describes no paths under ${shown} (in AWS it describes only what the system function bundles).`}
          />
        )}
      </Loading>
      <ErrorBox error={error} />
      {answer ? (
        <section aria-label="Answer">
          <h2>
            <code>{`${shown}${answer.path}`}</code>
          </h2>
          <Json value={answer.body} />
        </section>
      ) : null}
    </Page>
  );
}

export const genericEngineRoute: RouteDef = {
  pattern: '/ui/vault/engine/:mount',
  title: 'Secrets engine',
  view: ({ mount }) => <GenericEnginePage mount={mount ?? ''} />,
};
