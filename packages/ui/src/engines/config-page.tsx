import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { ApiError, secrets } from '../api.ts';
import { Details, ErrorBox, useAction, useLoad } from '../components.tsx';
import type { RouteDef } from '../router.tsx';
import { apiPath, type EngineDef, EngineFrame, Warnings, warningsOf } from './engine-frame.tsx';
import { type FieldSpec, readRows, SpecForm, valuesFrom } from './form.tsx';

/** An engine's configuration page: what the API reads back (never its secrets), its edit form, root rotation. */
export interface ConfigDef {
  engine: EngineDef;
  /** The API path under the mount, e.g. `config` or `config/access`. */
  path: string;
  fields: FieldSpec[];
  /** A note above the form (how a write treats fields not sent). */
  writeNote: string;
  /** The API path that rotates the root credential, if the engine has one. */
  rotateRoot?: string;
}

function ConfigPage({ def, mount }: { def: ConfigDef; mount: string }): JSX.Element {
  const config = useLoad(
    () => secrets<{ data: Record<string, unknown> }>('GET', apiPath(mount, def.path)).then((answer) => answer.data),
    [mount],
  );
  const [editing, setEditing] = useState(false);
  const [warnings, setWarnings] = useState<string[]>([]);
  const [rotated, setRotated] = useState(false);
  const rotation = useAction();
  const unconfigured = config.error instanceof ApiError && config.error.status === 404;
  const actions = editing ? null : (
    <>
      <button type="button" class="secondary" onClick={() => setEditing(true)}>
        {config.data ? 'Edit configuration' : 'Configure'}
      </button>
      {def.rotateRoot && config.data ? (
        <button
          type="button"
          class="secondary"
          disabled={rotation.busy}
          onClick={() =>
            void rotation.run(async () => {
              setRotated(false);
              await secrets('POST', apiPath(mount, def.rotateRoot as string));
              setRotated(true);
              config.reload();
            })
          }
        >
          Rotate root credential
        </button>
      ) : null}
    </>
  );
  return (
    <EngineFrame engine={def.engine} mount={mount} title={`${def.engine.label} configuration`} actions={actions}>
      <ErrorBox error={rotation.error} />
      {rotated ? (
        <p class="success" role="status">
          The root credential was rotated; the new one is stored and never shown.
        </p>
      ) : null}
      <Warnings warnings={warnings} />
      {editing ? (
        <section class="panel">
          <h2>{config.data ? 'Edit configuration' : 'Configure'}</h2>
          <p class="note">{def.writeNote}</p>
          <SpecForm
            label={`${def.engine.label} configuration`}
            fields={def.fields}
            initial={valuesFrom(def.fields, config.data)}
            editing={false}
            submitLabel="Save configuration"
            onCancel={() => setEditing(false)}
            onSubmit={async (body) => {
              setWarnings(warningsOf(await secrets('POST', apiPath(mount, def.path), body)));
              setEditing(false);
              config.reload();
            }}
          />
        </section>
      ) : unconfigured ? (
        <p class="empty">This mount is not configured yet.</p>
      ) : config.error !== undefined ? (
        <ErrorBox error={config.error} />
      ) : config.data ? (
        <section class="panel" aria-label="Configuration">
          <Details rows={readRows(def.fields, config.data)} />
        </section>
      ) : (
        <p class="loading">Loading…</p>
      )}
    </EngineFrame>
  );
}

export const configRoute = (def: ConfigDef): RouteDef => ({
  pattern: `/ui/vault/${def.engine.kind}/:mount`,
  title: `${def.engine.label} configuration`,
  view: ({ mount = '' }) => <ConfigPage key={mount} def={def} mount={mount} />,
});
