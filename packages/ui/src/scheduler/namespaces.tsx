import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { api, scheduler } from '../api.ts';
import { Details, Field, Loading, Page, Table } from '../components.tsx';
import { Link, navigate, pathHref } from '../router.tsx';
import { LiveBadge, parseMeta } from './cluster-common.tsx';
import { ActionForm, DeleteButton, EditPanel, formatMapping, joinList, splitList } from './common.tsx';
import { useLive } from './live.ts';

/**
 * The scheduler's namespaces (`namespaces`, `namespace/<name>`): the list of those the token may use, a namespace's
 * settings, and (for a management token: the service refuses others) the edit and delete forms. Nomad publishes no
 * namespace events, so the pages follow changes with blocking reads.
 */

interface Namespace {
  Name: string;
  Description: string;
  Quota: string;
  Meta: Record<string, string> | null;
  Capabilities: {
    EnabledTaskDrivers: string[] | null;
    DisabledTaskDrivers: string[] | null;
    EnabledNetworkModes: string[] | null;
    DisabledNetworkModes: string[] | null;
  } | null;
  NodePoolConfiguration: { Default: string; Allowed: string[] | null; Denied: string[] | null } | null;
  CreateIndex: number;
  ModifyIndex: number;
}

const base = '/ui/scheduler/namespaces';
const namespacePath = (name: string) => api`namespace/${name}`;
const orNull = (items: string[]) => (items.length > 0 ? items : null);

export function NamespacesPage(): JSX.Element {
  const namespaces = useLive<Namespace[]>(api`namespaces`);
  return (
    <Page
      title="Namespaces"
      actions={
        <Link class="button" href={`${base}/new`}>
          Create namespace
        </Link>
      }
    >
      <LiveBadge mode={namespaces.mode} />
      <Loading loaded={namespaces}>
        {(list) => (
          <Table
            columns={['Name', 'Description', 'Modify index']}
            rows={list.map((namespace) => [
              <Link key="n" href={pathHref(base, namespace.Name)}>
                {namespace.Name}
              </Link>,
              namespace.Description || '—',
              namespace.ModifyIndex,
            ])}
            empty="No namespaces you may use."
          />
        )}
      </Loading>
    </Page>
  );
}

function NamespaceForm({
  namespace,
  onSaved,
}: {
  namespace?: Namespace;
  onSaved: (name: string) => void;
}): JSX.Element {
  const [name, setName] = useState(namespace?.Name ?? '');
  const [description, setDescription] = useState(namespace?.Description ?? '');
  const [meta, setMeta] = useState(formatMapping(namespace?.Meta));
  const [enabled, setEnabled] = useState(joinList(namespace?.Capabilities?.EnabledTaskDrivers));
  const [disabled, setDisabled] = useState(joinList(namespace?.Capabilities?.DisabledTaskDrivers));
  const [defaultPool, setDefaultPool] = useState(namespace?.NodePoolConfiguration?.Default ?? '');
  const [allowedPools, setAllowedPools] = useState(joinList(namespace?.NodePoolConfiguration?.Allowed));
  const [deniedPools, setDeniedPools] = useState(joinList(namespace?.NodePoolConfiguration?.Denied));
  return (
    <ActionForm
      label={namespace ? `Edit namespace ${namespace.Name}` : 'Create a namespace'}
      submit={namespace ? 'Save namespace' : 'Create namespace'}
      onSubmit={async () => {
        const target = namespace?.Name ?? name.trim();
        const drivers = [splitList(enabled), splitList(disabled)];
        const pools = [defaultPool.trim(), splitList(allowedPools), splitList(deniedPools)] as const;
        await scheduler('PUT', namespacePath(target), {
          Name: target,
          Description: description,
          Meta: parseMeta(meta),
          Capabilities:
            drivers.some((list) => list.length > 0) ||
            namespace?.Capabilities?.EnabledNetworkModes ||
            namespace?.Capabilities?.DisabledNetworkModes
              ? {
                  EnabledTaskDrivers: orNull(drivers[0] ?? []),
                  DisabledTaskDrivers: orNull(drivers[1] ?? []),
                  EnabledNetworkModes: namespace?.Capabilities?.EnabledNetworkModes ?? null,
                  DisabledNetworkModes: namespace?.Capabilities?.DisabledNetworkModes ?? null,
                }
              : null,
          NodePoolConfiguration:
            pools[0] !== '' || pools[1].length > 0 || pools[2].length > 0
              ? { Default: pools[0], Allowed: orNull(pools[1]), Denied: orNull(pools[2]) }
              : null,
        });
        onSaved(target);
      }}
    >
      {namespace ? null : (
        <Field label="Name" value={name} onInput={setName} required hint="Letters, digits and - (at most 128)." />
      )}
      <Field label="Description" value={description} onInput={setDescription} />
      <Field label="Meta" value={meta} onInput={setMeta} multiline rows={3} placeholder="key = value" />
      <Field label="Enabled task drivers" value={enabled} onInput={setEnabled} hint="Comma-separated; none: all." />
      <Field label="Disabled task drivers" value={disabled} onInput={setDisabled} />
      <Field label="Default node pool" value={defaultPool} onInput={setDefaultPool} hint="Empty: default." />
      <Field label="Allowed node pools" value={allowedPools} onInput={setAllowedPools} hint="Globs; not with denied." />
      <Field label="Denied node pools" value={deniedPools} onInput={setDeniedPools} />
    </ActionForm>
  );
}

export function NewNamespacePage(): JSX.Element {
  return (
    <Page title="Create a namespace" actions={<Link href={base}>All namespaces</Link>}>
      <NamespaceForm onSaved={(name) => navigate(pathHref(base, name))} />
    </Page>
  );
}

export function NamespacePage({ name }: { name: string }): JSX.Element {
  const namespace = useLive<Namespace>(namespacePath(name));
  const [saved, setSaved] = useState(false);
  return (
    <Page title={`Namespace ${name}`} actions={<Link href={base}>All namespaces</Link>}>
      <LiveBadge mode={namespace.mode} />
      <Loading loaded={namespace}>
        {(shown) => (
          <div class="panels">
            <section class="panel" aria-label="Namespace">
              <Details
                rows={[
                  ['Name', shown.Name],
                  ['Description', shown.Description || '—'],
                  ['Meta', formatMapping(shown.Meta) || '—'],
                  ['Enabled task drivers', joinList(shown.Capabilities?.EnabledTaskDrivers) || 'all'],
                  ['Disabled task drivers', joinList(shown.Capabilities?.DisabledTaskDrivers) || '—'],
                  ['Default node pool', shown.NodePoolConfiguration?.Default || 'default'],
                  ['Allowed node pools', joinList(shown.NodePoolConfiguration?.Allowed) || '—'],
                  ['Denied node pools', joinList(shown.NodePoolConfiguration?.Denied) || '—'],
                  ['Create / modify index', `${shown.CreateIndex} / ${shown.ModifyIndex}`],
                ]}
              />
              {shown.Name === 'default' ? (
                <p class="note">The default namespace cannot be deleted.</p>
              ) : (
                <DeleteButton
                  what={`namespace ${shown.Name}`}
                  onDelete={async () => {
                    await scheduler('DELETE', namespacePath(shown.Name));
                    navigate(base);
                  }}
                />
              )}
            </section>
            <EditPanel saved={saved}>
              <NamespaceForm
                key={shown.ModifyIndex}
                namespace={shown}
                onSaved={() => {
                  setSaved(true);
                  namespace.reload();
                }}
              />
            </EditPanel>
          </div>
        )}
      </Loading>
    </Page>
  );
}
