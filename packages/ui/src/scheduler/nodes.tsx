import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { api, scheduler } from '../api.ts';
import { Details, ErrorBox, Field, Loading, Page, Table, useAction } from '../components.tsx';
import { Link, pathHref } from '../router.tsx';
import { LiveBadge } from './cluster-common.tsx';
import { CheckField, formatMapping } from './common.tsx';
import { useLive } from './live.ts';

/**
 * The cluster's nodes (`nodes`, `node/<id>`; `node:read`): the list with status, pool, eligibility and drain, and a
 * node's resources, attributes, drivers and events, live from the `Node` topic; with `node:write`, the drain and
 * eligibility actions (`node/<id>/drain`, `node/<id>/eligibility`), whose refusals the service words.
 */

interface NodeStub {
  ID: string;
  Name: string;
  NodePool: string;
  Datacenter: string;
  Status: string;
  SchedulingEligibility: string;
  Drain: boolean;
  Address: string;
}

interface NodeEvent {
  Message: string;
  Subsystem: string;
  Timestamp: string;
  CreateIndex: number;
}

interface ClusterNode {
  ID: string;
  Name: string;
  NodePool: string;
  Datacenter: string;
  NodeClass: string;
  HTTPAddr: string;
  Status: string;
  StatusDescription: string;
  SchedulingEligibility: string;
  DrainStrategy: { Deadline: number; IgnoreSystemJobs: boolean; ForceDeadline: string } | null;
  Attributes: Record<string, string>;
  Meta: Record<string, string> | null;
  NodeResources: {
    Cpu?: { CpuShares?: number; TotalCpuCores?: number };
    Memory?: { MemoryMB?: number };
    Disk?: { DiskMB?: number };
  } | null;
  Drivers: Record<string, { Detected: boolean; Healthy: boolean; HealthDescription: string }> | null;
  Events: NodeEvent[] | null;
  CreateIndex: number;
  ModifyIndex: number;
}

const base = '/ui/scheduler/nodes';
const nodePath = (id: string) => api`node/${id}`;
const statusClass = (status: string) => (status === 'ready' ? 'good' : status === 'down' ? 'bad' : '');

export function NodesPage(): JSX.Element {
  const nodes = useLive<NodeStub[]>(api`nodes`, 'Node');
  return (
    <Page title="Nodes">
      <LiveBadge mode={nodes.mode} />
      <Loading loaded={nodes}>
        {(list) => (
          <Table
            columns={['ID', 'Name', 'Pool', 'Datacenter', 'Status', 'Eligibility', 'Drain']}
            rows={list.map((node) => [
              <Link key="i" href={pathHref(base, node.ID)}>
                {node.ID.slice(0, 8)}
              </Link>,
              node.Name,
              node.NodePool,
              node.Datacenter,
              <span key="s" class={`badge ${statusClass(node.Status)}`}>
                {node.Status}
              </span>,
              node.SchedulingEligibility,
              node.Drain ? 'draining' : '—',
            ])}
            empty="No nodes: start a client agent (npm run agent) to register one."
          />
        )}
      </Loading>
    </Page>
  );
}

/** Go's duration text (`1h`, `30m`, `-1s`) → nanoseconds, for a drain deadline. */
function deadlineNanoseconds(text: string): number {
  const trimmed = text.trim();
  if (trimmed === '' || trimmed === '0') return 0;
  const match = /^(-?)(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)$/.exec(trimmed);
  if (!match) throw new Error(`"${trimmed}" is not a duration such as 1h, 30m or -1s`);
  const unit = { ns: 1, us: 1e3, µs: 1e3, ms: 1e6, s: 1e9, m: 60e9, h: 3600e9 }[match[3] as 'ns'];
  return Math.round(Number(match[2]) * unit) * (match[1] ? -1 : 1);
}

function NodeActions({ node, onChanged }: { node: ClusterNode; onChanged: () => void }): JSX.Element {
  const [deadline, setDeadline] = useState('1h');
  const [ignoreSystem, setIgnoreSystem] = useState(false);
  const [markEligible, setMarkEligible] = useState(true);
  const action = useAction();
  const run = (work: () => Promise<unknown>) =>
    action.run(async () => {
      await work();
      onChanged();
    });
  const eligible = node.SchedulingEligibility === 'eligible';
  return (
    <section class="panel" aria-label="Node actions">
      <h2>Actions</h2>
      <ErrorBox error={action.error} />
      <div class="actions">
        <button
          type="button"
          class="secondary"
          disabled={action.busy}
          onClick={() =>
            void run(() =>
              scheduler('PUT', api`node/${node.ID}/eligibility`, {
                Eligibility: eligible ? 'ineligible' : 'eligible',
              }),
            )
          }
        >
          {eligible ? 'Mark ineligible' : 'Mark eligible'}
        </button>
      </div>
      {node.DrainStrategy ? (
        <div>
          <CheckField label="Mark eligible again" checked={markEligible} onChange={setMarkEligible} />
          <div class="actions">
            <button
              type="button"
              disabled={action.busy}
              onClick={() =>
                void run(() =>
                  scheduler('PUT', api`node/${node.ID}/drain`, { DrainSpec: null, MarkEligible: markEligible }),
                )
              }
            >
              Cancel drain
            </button>
          </div>
        </div>
      ) : (
        <form
          aria-label="Drain the node"
          onSubmit={(event) => {
            event.preventDefault();
            void run(() =>
              scheduler('PUT', api`node/${node.ID}/drain`, {
                DrainSpec: { Deadline: deadlineNanoseconds(deadline), IgnoreSystemJobs: ignoreSystem },
              }),
            );
          }}
        >
          <Field
            label="Drain deadline"
            value={deadline}
            onInput={setDeadline}
            hint="Such as 1h; 0 for none; -1s to stop everything now."
          />
          <CheckField label="Ignore system jobs" checked={ignoreSystem} onChange={setIgnoreSystem} />
          <div class="actions">
            <button type="submit" disabled={action.busy}>
              Drain
            </button>
          </div>
        </form>
      )}
    </section>
  );
}

export function NodePage({ id }: { id: string }): JSX.Element {
  const node = useLive<ClusterNode>(nodePath(id), `Node:${id}`);
  return (
    <Page title={`Node ${id.slice(0, 8)}`} actions={<Link href={base}>All nodes</Link>}>
      <LiveBadge mode={node.mode} />
      <Loading loaded={node}>
        {(shown) => {
          const resources = shown.NodeResources;
          return (
            <div class="panels">
              <section class="panel" aria-label="Node">
                <Details
                  rows={[
                    ['ID', shown.ID],
                    ['Name', shown.Name],
                    [
                      'Pool',
                      <Link key="p" href={pathHref('/ui/scheduler/node-pools', shown.NodePool)}>
                        {shown.NodePool}
                      </Link>,
                    ],
                    ['Datacenter', shown.Datacenter],
                    ['Class', shown.NodeClass || '—'],
                    ['Address', shown.HTTPAddr || '—'],
                    [
                      'Status',
                      <span key="s" class={`badge ${statusClass(shown.Status)}`}>
                        {shown.Status}
                      </span>,
                    ],
                    ['Status description', shown.StatusDescription || '—'],
                    ['Eligibility', shown.SchedulingEligibility],
                    [
                      'Drain',
                      shown.DrainStrategy ? `draining (deadline ${shown.DrainStrategy.ForceDeadline || 'none'})` : 'no',
                    ],
                    ['CPU', `${resources?.Cpu?.CpuShares ?? 0} MHz, ${resources?.Cpu?.TotalCpuCores ?? 0} cores`],
                    ['Memory', `${resources?.Memory?.MemoryMB ?? 0} MB`],
                    ['Disk', `${resources?.Disk?.DiskMB ?? 0} MB`],
                    ['Meta', formatMapping(shown.Meta) || '—'],
                    ['Create / modify index', `${shown.CreateIndex} / ${shown.ModifyIndex}`],
                  ]}
                />
              </section>
              <NodeActions node={shown} onChanged={node.reload} />
              <section class="panel" aria-label="Drivers">
                <h2>Drivers</h2>
                <Table
                  columns={['Driver', 'Detected', 'Healthy', 'Description']}
                  rows={Object.entries(shown.Drivers ?? {}).map(([name, driver]) => [
                    name,
                    driver.Detected ? 'yes' : 'no',
                    driver.Healthy ? 'yes' : 'no',
                    driver.HealthDescription || '—',
                  ])}
                  empty="No drivers."
                />
              </section>
              <section class="panel" aria-label="Events">
                <h2>Events</h2>
                <Table
                  columns={['Time', 'Subsystem', 'Message']}
                  rows={[...(shown.Events ?? [])]
                    .reverse()
                    .map((event) => [event.Timestamp, event.Subsystem, event.Message])}
                  empty="No events."
                />
              </section>
              <section class="panel" aria-label="Attributes">
                <h2>Attributes</h2>
                <Table
                  columns={['Attribute', 'Value']}
                  rows={Object.entries(shown.Attributes ?? {})
                    .sort(([a], [b]) => (a < b ? -1 : 1))
                    .map(([name, value]) => [name, value])}
                  empty="No attributes."
                />
              </section>
            </div>
          );
        }}
      </Loading>
    </Page>
  );
}
