import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { api, scheduler } from '../api.ts';
import { Details, ErrorBox, Loading, Page, Table, useAction, useLoad } from '../components.tsx';
import { Link } from '../router.tsx';
import { LiveBadge } from './cluster-common.tsx';
import {
  type AllocationStub,
  allocationHref,
  formatNanoTime,
  type Job,
  jobHref,
  nodeHref,
  shortId,
  statusClass,
  type TaskState,
} from './job-model.ts';
import { useLive } from './live.ts';

/**
 * An allocation's page (`allocation/<id>`; `read-job` in its namespace): its job, node, statuses and the resources it
 * holds, each task's state and events, live from the `Allocation` topic filtered by its ID in its namespace (read
 * once first to learn it); with `alloc-lifecycle`, Stop (`allocation/<id>/stop`: the scheduler stops it and places a
 * replacement).
 */

interface TaskResources {
  Cpu?: { CpuShares?: number };
  Memory?: { MemoryMB?: number; MemoryMaxMB?: number };
  Networks?: Array<{ IP?: string; DynamicPorts?: Array<{ Label: string; Value: number }> | null }> | null;
}

interface Allocation extends AllocationStub {
  EvalID: string;
  DesiredDescription: string;
  Job: Job | null;
  AllocatedResources: {
    Tasks?: Record<string, TaskResources> | null;
    Shared?: {
      DiskMB?: number;
      Ports?: Array<{ Label: string; Value: number; To: number; HostIP: string }> | null;
    } | null;
  } | null;
  PreviousAllocation: string;
  NextAllocation: string;
}

function TaskStates({ states }: { states: Record<string, TaskState> }): JSX.Element {
  const names = Object.keys(states).sort();
  if (names.length === 0) return <p class="empty">No task has reported yet.</p>;
  return (
    <>
      {names.map((name) => {
        const state = states[name] as TaskState;
        return (
          <section key={name} class="panel" aria-label={`Task ${name}`}>
            <h2>Task {name}</h2>
            <Details
              rows={[
                [
                  'State',
                  <span key="s" class={`badge ${state.Failed ? 'bad' : statusClass(state.State)}`}>
                    {state.Failed ? `${state.State} (failed)` : state.State}
                  </span>,
                ],
                ['Restarts', state.Restarts],
                ['Started', state.StartedAt ?? '—'],
                ['Finished', state.FinishedAt ?? '—'],
              ]}
            />
            <Table
              columns={['Time', 'Type', 'Message']}
              rows={[...(state.Events ?? [])]
                .reverse()
                .map((event) => [
                  formatNanoTime(event.Time),
                  event.Type,
                  event.DisplayMessage ||
                    event.Message ||
                    (event.ExitCode !== undefined ? `exit ${event.ExitCode}` : '—'),
                ])}
              empty="No events."
            />
          </section>
        );
      })}
    </>
  );
}

function StopAllocation({ alloc, onChanged }: { alloc: Allocation; onChanged: () => void }): JSX.Element {
  const action = useAction();
  const [asking, setAsking] = useState(false);
  const stopped = alloc.DesiredStatus !== 'run';
  return (
    <section class="panel" aria-label="Allocation actions">
      <h2>Actions</h2>
      <ErrorBox error={action.error} />
      <div class="actions">
        {asking ? (
          <>
            <button
              type="button"
              class="danger"
              disabled={action.busy}
              onClick={() =>
                void action.run(async () => {
                  setAsking(false);
                  await scheduler('PUT', api`allocation/${alloc.ID}/stop`);
                  onChanged();
                })
              }
            >
              Confirm stop
            </button>
            <button type="button" class="secondary" onClick={() => setAsking(false)}>
              Cancel
            </button>
          </>
        ) : (
          <button type="button" class="danger" disabled={action.busy || stopped} onClick={() => setAsking(true)}>
            Stop allocation
          </button>
        )}
      </div>
      {stopped ? <p class="note">The scheduler wants this allocation {alloc.DesiredStatus}.</p> : null}
    </section>
  );
}

function LiveAllocation({ id, namespace }: { id: string; namespace: string }): JSX.Element {
  const alloc = useLive<Allocation>(api`allocation/${id}`, `Allocation:${id}`, namespace);
  return (
    <>
      <LiveBadge mode={alloc.mode} />
      <Loading loaded={alloc}>
        {(shown) => {
          const tasks = shown.AllocatedResources?.Tasks ?? {};
          const ports = shown.AllocatedResources?.Shared?.Ports ?? [];
          return (
            <>
              <div class="panels">
                <section class="panel" aria-label="Allocation">
                  <Details
                    rows={[
                      ['ID', shown.ID],
                      ['Name', shown.Name],
                      [
                        'Job',
                        <Link key="j" href={jobHref(shown.Namespace, shown.JobID)}>
                          {shown.JobID}
                        </Link>,
                      ],
                      ['Namespace', shown.Namespace],
                      ['Task group', shown.TaskGroup],
                      ['Job version', shown.JobVersion],
                      [
                        'Node',
                        <Link key="n" href={nodeHref(shown.NodeID)}>
                          {shown.NodeName || shortId(shown.NodeID)}
                        </Link>,
                      ],
                      [
                        'Client status',
                        <span key="c" class={`badge ${statusClass(shown.ClientStatus)}`}>
                          {shown.ClientStatus}
                        </span>,
                      ],
                      ['Client description', shown.ClientDescription || '—'],
                      ['Desired status', shown.DesiredStatus],
                      ['Desired description', shown.DesiredDescription || '—'],
                      ['Evaluation', shortId(shown.EvalID)],
                      [
                        'Previous allocation',
                        shown.PreviousAllocation ? (
                          <Link key="p" href={allocationHref(shown.PreviousAllocation)}>
                            {shortId(shown.PreviousAllocation)}
                          </Link>
                        ) : (
                          '—'
                        ),
                      ],
                      [
                        'Next allocation',
                        shown.NextAllocation ? (
                          <Link key="x" href={allocationHref(shown.NextAllocation)}>
                            {shortId(shown.NextAllocation)}
                          </Link>
                        ) : (
                          '—'
                        ),
                      ],
                      ['Created', formatNanoTime(shown.CreateTime)],
                      ['Modified', formatNanoTime(shown.ModifyTime)],
                    ]}
                  />
                </section>
                <StopAllocation alloc={shown} onChanged={alloc.reload} />
              </div>
              <section class="panel" aria-label="Resources">
                <h2>Resources</h2>
                <Table
                  columns={['Task', 'CPU', 'Memory']}
                  rows={Object.entries(tasks).map(([name, resources]) => [
                    name,
                    `${resources.Cpu?.CpuShares ?? 0} MHz`,
                    `${resources.Memory?.MemoryMB ?? 0} MB`,
                  ])}
                  empty="No task resources."
                />
                <Details
                  rows={[
                    ['Disk', `${shown.AllocatedResources?.Shared?.DiskMB ?? 0} MB`],
                    [
                      'Ports',
                      ports.length > 0
                        ? ports.map((port) => `${port.Label} ${port.HostIP}:${port.Value}`).join(', ')
                        : '—',
                    ],
                  ]}
                />
              </section>
              <TaskStates states={shown.TaskStates ?? {}} />
            </>
          );
        }}
      </Loading>
    </>
  );
}

export function AllocationPage({ id }: { id: string }): JSX.Element {
  // Read once to learn the allocation's namespace: its stream is that namespace's.
  const first = useLoad(() => scheduler<Allocation>('GET', api`allocation/${id}`), [id]);
  return (
    <Page
      title={`Allocation ${shortId(id)}`}
      actions={
        first.data ? <Link href={jobHref(first.data.Namespace, first.data.JobID)}>Job {first.data.JobID}</Link> : null
      }
    >
      <Loading loaded={first}>{(alloc) => <LiveAllocation id={id} namespace={alloc.Namespace} />}</Loading>
    </Page>
  );
}
