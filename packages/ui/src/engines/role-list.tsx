import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { listKeys, secrets } from '../api.ts';
import { Details, ErrorBox, Field, Loading, Table, useAction, useLoad } from '../components.tsx';
import { Link, navigate, type RouteDef } from '../router.tsx';
import { ConfirmButton } from '../secrets/confirm-button.tsx';
import { apiPath, type EngineDef, EngineFrame, engineHref, Warnings, warningsOf } from './engine-frame.tsx';
import { type FieldSpec, readRows, SpecForm, valuesFrom } from './form.tsx';

/**
 * One collection of an engine (static roles, library sets, rolesets, …): its list, its items read, created, edited
 * and deleted through the API, and what an item adds below (its credentials, its status).
 */
export interface Collection {
  engine: EngineDef;
  /** The console segment, also the tab's. */
  segment: string;
  title: string;
  /** e.g. "static role". */
  noun: string;
  /** The API path (under the mount) that lists it, e.g. `static-role` or `rolesets`. */
  listApi: string;
  /** The API path (under the mount) of one item, before its name, e.g. `static-role` or `roleset`. */
  itemApi: string;
  /** Names may hold slashes (the list shows folders). */
  hierarchical?: boolean;
  fields: FieldSpec[];
  /** The read answer as the form's fields, where they differ (a map shown as the text it is written as). */
  toForm?: (data: Record<string, unknown>) => Record<string, unknown>;
  /** What the item's page shows below its fields: its credentials, status, actions. */
  panels?: (props: ItemProps) => JSX.Element;
}

export interface ItemProps {
  mount: string;
  name: string;
  data: Record<string, unknown>;
  reload: () => void;
}

function CollectionList({ c, mount, prefix }: { c: Collection; mount: string; prefix: string }): JSX.Element {
  const keys = useLoad(() => listKeys(apiPath(mount, c.listApi, prefix)), [mount, prefix]);
  const folders = prefix.split('/').filter(Boolean);
  return (
    <EngineFrame
      engine={c.engine}
      mount={mount}
      title={prefix ? `${c.title}: ${prefix}` : c.title}
      actions={
        <Link class="button" href={engineHref(c.engine, mount, 'create', c.segment)}>
          Create {c.noun}
        </Link>
      }
    >
      {folders.length ? (
        <nav class="breadcrumbs" aria-label="Folders">
          <Link href={engineHref(c.engine, mount, c.segment)}>{c.title}</Link>
          {folders.map((folder, index) => (
            <span key={folder}>
              {' / '}
              <Link href={`${engineHref(c.engine, mount, c.segment, folders.slice(0, index + 1).join('/'))}/`}>
                {folder}
              </Link>
            </span>
          ))}
        </nav>
      ) : null}
      <Loading loaded={keys}>
        {(names) => (
          <Table
            columns={['Name']}
            empty={`No ${c.noun}s here yet.`}
            rows={names.map((key) => [
              <Link
                key={key}
                href={`${engineHref(c.engine, mount, c.segment, `${prefix}${key.replace(/\/$/, '')}`)}${key.endsWith('/') ? '/' : ''}`}
              >
                {key}
              </Link>,
            ])}
          />
        )}
      </Loading>
    </EngineFrame>
  );
}

function CollectionItem({ c, mount, name }: { c: Collection; mount: string; name: string }): JSX.Element {
  const item = useLoad(
    () =>
      secrets<{ data: Record<string, unknown> }>('GET', apiPath(mount, c.itemApi, name)).then((answer) => answer.data),
    [mount, name],
  );
  const [editing, setEditing] = useState(false);
  const [warnings, setWarnings] = useState<string[]>([]);
  const removal = useAction();
  const remove = () =>
    void removal.run(async () => {
      await secrets('DELETE', apiPath(mount, c.itemApi, name));
      navigate(engineHref(c.engine, mount, c.segment));
    });
  const form = (data: Record<string, unknown>) =>
    valuesFrom(c.fields, c.toForm ? { ...data, ...c.toForm(data) } : data);
  return (
    <EngineFrame
      engine={c.engine}
      mount={mount}
      title={`${c.noun[0]?.toUpperCase()}${c.noun.slice(1)} ${name}`}
      actions={
        item.data && !editing ? (
          <>
            <button type="button" class="secondary" onClick={() => setEditing(true)}>
              Edit
            </button>
            <ConfirmButton
              label="Delete"
              question={`Delete this ${c.noun}?`}
              disabled={removal.busy}
              onConfirm={remove}
            />
          </>
        ) : null
      }
    >
      <ErrorBox error={removal.error} />
      <Warnings warnings={warnings} />
      <Loading loaded={item}>
        {(data) =>
          editing ? (
            <section class="panel">
              <h2>Edit {c.noun}</h2>
              <SpecForm
                label={`Edit ${c.noun} ${name}`}
                fields={c.fields}
                initial={form(data)}
                editing
                submitLabel="Save"
                onCancel={() => setEditing(false)}
                onSubmit={async (body) => {
                  setWarnings(warningsOf(await secrets('POST', apiPath(mount, c.itemApi, name), body)));
                  setEditing(false);
                  item.reload();
                }}
              />
            </section>
          ) : (
            <div class="panels">
              <section class="panel" aria-label={`The ${c.noun}`}>
                <h2>Settings</h2>
                <Details rows={readRows(c.fields, data)} />
              </section>
              {c.panels ? c.panels({ mount, name, data, reload: item.reload }) : null}
            </div>
          )
        }
      </Loading>
    </EngineFrame>
  );
}

function CollectionCreate({ c, mount }: { c: Collection; mount: string }): JSX.Element {
  const [name, setName] = useState('');
  return (
    <EngineFrame engine={c.engine} mount={mount} title={`Create a ${c.noun}`}>
      <section class="panel">
        <SpecForm
          label={`Create a ${c.noun}`}
          fields={c.fields}
          initial={valuesFrom(c.fields)}
          editing={false}
          submitLabel={`Create ${c.noun}`}
          onCancel={() => navigate(engineHref(c.engine, mount, c.segment))}
          onSubmit={async (body) => {
            const trimmed = name.trim();
            await secrets('POST', apiPath(mount, c.itemApi, trimmed), body);
            navigate(engineHref(c.engine, mount, c.segment, trimmed));
          }}
        >
          <Field
            label="Name"
            name="name"
            value={name}
            onInput={setName}
            required
            hint={c.hierarchical ? 'Slashes make folders.' : undefined}
          />
        </SpecForm>
      </section>
    </EngineFrame>
  );
}

/** The console routes of a collection: its create form, its list (and folders), its items. */
export function collectionRoutes(c: Collection): RouteDef[] {
  const base = `/ui/vault/${c.engine.kind}/:mount`;
  return [
    {
      pattern: `${base}/create/${c.segment}`,
      title: `Create a ${c.noun}`,
      view: ({ mount = '' }) => <CollectionCreate key={mount} c={c} mount={mount} />,
    },
    {
      pattern: `${base}/${c.segment}/*name`,
      title: c.title,
      view: ({ mount = '', name = '' }) =>
        name === '' || name.endsWith('/') ? (
          <CollectionList key={`${mount}|${name}`} c={c} mount={mount} prefix={name} />
        ) : (
          <CollectionItem key={`${mount}|${name}`} c={c} mount={mount} name={name} />
        ),
    },
  ];
}
