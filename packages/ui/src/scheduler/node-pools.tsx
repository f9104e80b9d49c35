import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { api, scheduler } from '../api.ts';
import { Details, ErrorBox, Field, Loading, Page, Table } from '../components.tsx';
import { Link, navigate, pathHref } from '../router.tsx';
import { ActionForm, DeleteButton, EditPanel, formatMapping, SelectField } from './common.tsx';
import { formatNanoseconds, LiveBadge, parseMeta } from './cluster-common.tsx';
import { useLive } from './live.ts';

/**
 * The scheduler's node pools (`node/pools`, `node/pool/<name>`): the list (live from the `NodePool` topic, or from
 * blocking reads for a token that may not stream it), a pool's settings, its nodes, and the edit and delete forms.
 * `all` and `default` are built in: the service refuses to change or delete them, and the page offers neither.
 */

interface NodePool {
  Name: string;
  Description: string;
  Meta: Record<string, string> | null;
  SchedulerConfiguration: { SchedulerAlgorithm: string; MemoryOversubscriptionEnabled: boolean | null } | null;
  NodeIdentityTTL: number;
  CreateIndex: number;
  ModifyIndex: number;
}

interface NodeStub {
  ID: string;
  Name?: string;
  Status?: string;
  Datacenter?: string;
}

const base = '/ui/scheduler/node-pools';
const builtIn = (name: string) => name === 'all' || name === 'default';
const poolPath = (name: string) => api`node/pool/${name}`;

export function NodePoolsPage(): JSX.Element {
  const pools = useLive<NodePool[]>(api`node/pools`, 'NodePool');
  return (
    <Page
      title="Node pools"
      actions={
        <Link class="button" href={`${base}/new`}>
          Create node pool
        </Link>
      }
    >
      <LiveBadge mode={pools.mode} />
      <Loading loaded={pools}>
        {(list) => (
          <Table
            columns={['Name', 'Description', 'Node identity TTL', 'Modify index']}
            rows={list.map((pool) => [
              <Link key="n" href={pathHref(base, pool.Name)}>
                {pool.Name}
              </Link>,
              pool.Description || '—',
              formatNanoseconds(pool.NodeIdentityTTL),
              pool.ModifyIndex,
            ])}
            empty="No node pools you may read."
          />
        )}
      </Loading>
    </Page>
  );
}

function PoolForm({ pool, onSaved }: { pool?: NodePool; onSaved: (name: string) => void }): JSX.Element {
  const [name, setName] = useState(pool?.Name ?? '');
  const [description, setDescription] = useState(pool?.Description ?? '');
  const [ttl, setTtl] = useState(pool ? formatNanoseconds(pool.NodeIdentityTTL) : '24h');
  const [meta, setMeta] = useState(formatMapping(pool?.Meta));
  const [algorithm, setAlgorithm] = useState(pool?.SchedulerConfiguration?.SchedulerAlgorithm ?? '');
  const oversubscription = pool?.SchedulerConfiguration?.MemoryOversubscriptionEnabled;
  const [memory, setMemory] = useState(
    oversubscription === undefined || oversubscription === null ? '' : String(oversubscription),
  );
  return (
    <ActionForm
      label={pool ? `Edit node pool ${pool.Name}` : 'Create a node pool'}
      submit={pool ? 'Save node pool' : 'Create node pool'}
      onSubmit={async () => {
        const target = pool?.Name ?? name.trim();
        const configured = algorithm !== '' || memory !== '';
        await scheduler('PUT', poolPath(target), {
          Name: target,
          Description: description,
          NodeIdentityTTL: ttl.trim(),
          Meta: parseMeta(meta),
          SchedulerConfiguration: configured
            ? { SchedulerAlgorithm: algorithm, MemoryOversubscriptionEnabled: memory === '' ? null : memory === 'true' }
            : null,
        });
        onSaved(target);
      }}
    >
      {pool ? null : (
        <Field label="Name" value={name} onInput={setName} required hint="Letters, digits, - and _ (at most 128)." />
      )}
      <Field label="Description" value={description} onInput={setDescription} />
      <Field
        label="Node identity TTL"
        value={ttl}
        onInput={setTtl}
        hint="How long a node identity of this pool lives, such as 24h or 90m."
      />
      <Field label="Meta" value={meta} onInput={setMeta} multiline rows={4} placeholder="key = value" />
      <SelectField
        label="Scheduler algorithm"
        value={algorithm}
        options={[
          ['', 'Cluster default'],
          ['binpack', 'binpack'],
          ['spread', 'spread'],
        ]}
        onChange={setAlgorithm}
      />
      <SelectField
        label="Memory oversubscription"
        value={memory}
        options={[
          ['', 'Cluster default'],
          ['true', 'Enabled'],
          ['false', 'Disabled'],
        ]}
        onChange={setMemory}
      />
    </ActionForm>
  );
}

export function NewNodePoolPage(): JSX.Element {
  return (
    <Page title="Create a node pool" actions={<Link href={base}>All node pools</Link>}>
      <PoolForm onSaved={(name) => navigate(pathHref(base, name))} />
    </Page>
  );
}

export function NodePoolPage({ name }: { name: string }): JSX.Element {
  const pool = useLive<NodePool>(poolPath(name), 'NodePool');
  const [saved, setSaved] = useState(false);
  return (
    <Page title={`Node pool ${name}`} actions={<Link href={base}>All node pools</Link>}>
      <LiveBadge mode={pool.mode} />
      <Loading loaded={pool}>
        {(shown) => (
          <div class="panels">
            <section class="panel" aria-label="Node pool">
              <Details
                rows={[
                  ['Name', shown.Name],
                  ['Description', shown.Description || '—'],
                  ['Node identity TTL', formatNanoseconds(shown.NodeIdentityTTL)],
                  ['Scheduler algorithm', shown.SchedulerConfiguration?.SchedulerAlgorithm || 'cluster default'],
                  [
                    'Memory oversubscription',
                    shown.SchedulerConfiguration?.MemoryOversubscriptionEnabled === undefined ||
                    shown.SchedulerConfiguration?.MemoryOversubscriptionEnabled === null
                      ? 'cluster default'
                      : shown.SchedulerConfiguration.MemoryOversubscriptionEnabled
                        ? 'enabled'
                        : 'disabled',
                  ],
                  ['Meta', formatMapping(shown.Meta) || '—'],
                  ['Create / modify index', `${shown.CreateIndex} / ${shown.ModifyIndex}`],
                ]}
              />
              {builtIn(shown.Name) ? (
                <p class="note">A built-in pool: it cannot be changed or deleted.</p>
              ) : (
                <DeleteButton
                  what={`node pool ${shown.Name}`}
                  onDelete={async () => {
                    await scheduler('DELETE', poolPath(shown.Name));
                    navigate(base);
                  }}
                />
              )}
            </section>
            {builtIn(shown.Name) ? null : (
              <EditPanel saved={saved}>
                <PoolForm
                  key={shown.ModifyIndex}
                  pool={shown}
                  onSaved={() => {
                    setSaved(true);
                    pool.reload();
                  }}
                />
              </EditPanel>
            )}
            <PoolNodes name={shown.Name} />
          </div>
        )}
      </Loading>
    </Page>
  );
}

/** The nodes of the pool (`node/pool/<name>/nodes`: needs `node:read` too), live from the `Node` topic. */
function PoolNodes({ name }: { name: string }): JSX.Element {
  const nodes = useLive<NodeStub[]>(api`node/pool/${name}/nodes`, 'Node');
  return (
    <section class="panel" aria-label="Nodes in the pool">
      <h2>Nodes</h2>
      {nodes.error ? (
        <ErrorBox error={nodes.error} />
      ) : (
        <Table
          columns={['ID', 'Name', 'Datacenter', 'Status']}
          rows={(nodes.data ?? []).map((node) => [
            <Link key="i" href={pathHref('/ui/scheduler/nodes', node.ID)}>
              {node.ID.slice(0, 8)}
            </Link>,
            node.Name ?? '—',
            node.Datacenter ?? '—',
            node.Status ?? '—',
          ])}
          empty="No nodes in this pool."
        />
      )}
    </section>
  );
}
