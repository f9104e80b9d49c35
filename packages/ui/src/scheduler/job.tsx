import type { JSX } from 'preact';
import { Details, Loading, Page, Table } from '../components.tsx';
import { Link } from '../router.tsx';
import { LiveBadge } from './cluster-common.tsx';
import { type Deployment, deploymentHref } from './deployment-model.ts';
import { JobActions, ScaleGroup } from './job-actions.tsx';
import {
  type AllocationStub,
  allocationHref,
  type Evaluation,
  formatNanoTime,
  groupResources,
  type Job,
  jobApi,
  jobStatusText,
  jobsListHref,
  nodeHref,
  shortId,
  statusClass,
} from './job-model.ts';
import { useLiveReads } from './live.ts';
import { PlacementFailures } from './placement-failures.tsx';

/**
 * A job's page (`job/<id>` and its `allocations`, `evaluations`, `versions`; `read-job`): what it is, its task groups
 * (count, resources, allocations by status) with a scale control, its allocations (status, node, version), its
 * evaluations, its versions and a link to its latest deployment, all live from one stream of the `Job`, `Allocation`, `Evaluation` and `Deployment`
 * topics filtered by the job (blocking reads for a token that may not stream), with the stop, start and purge actions.
 */

interface JobReads extends Record<string, unknown> {
  job: Job;
  allocations: AllocationStub[];
  evaluations: Evaluation[];
  versions: { Versions: Job[] | null };
  /** The job's latest deployment; null when it has none. */
  deployment: Deployment | null;
}

const badge = (status: string) => <span class={`badge ${statusClass(status)}`}>{status}</span>;

/** "running 2, pending 1" for a group's allocations that the scheduler still wants. */
function allocationCounts(allocations: AllocationStub[], group: string): string {
  const counts = new Map<string, number>();
  for (const alloc of allocations)
    if (alloc.TaskGroup === group) counts.set(alloc.ClientStatus, (counts.get(alloc.ClientStatus) ?? 0) + 1);
  return (
    [...counts.entries()]
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([status, count]) => `${status} ${count}`)
      .join(', ') || 'none'
  );
}

function TaskGroups({ reads, onChanged }: { reads: JobReads; onChanged: () => void }): JSX.Element {
  const { job, allocations } = reads;
  return (
    <section class="panel" aria-label="Task groups">
      <h2>Task groups</h2>
      <Table
        columns={['Group', 'Count', 'Tasks', 'CPU', 'Memory', 'Disk', 'Allocations', 'Scale']}
        rows={(job.TaskGroups ?? []).map((group) => {
          const resources = groupResources(group);
          return [
            group.Name,
            group.Count,
            (group.Tasks ?? []).map((task) => `${task.Name} (${task.Driver})`).join(', '),
            `${resources.cpu} MHz`,
            `${resources.memoryMB} MB`,
            `${resources.diskMB} MB`,
            allocationCounts(allocations, group.Name),
            <ScaleGroup key={`${group.Name}-${job.JobModifyIndex}`} job={job} group={group} onChanged={onChanged} />,
          ];
        })}
        empty="No task groups."
      />
    </section>
  );
}

export function AllocationsTable({ allocations }: { allocations: AllocationStub[] }): JSX.Element {
  return (
    <Table
      columns={['Allocation', 'Name', 'Node', 'Version', 'Desired', 'Status', 'Created', 'Modified']}
      rows={[...allocations]
        .sort((a, b) => b.CreateTime - a.CreateTime)
        .map((alloc) => [
          <Link key="a" href={allocationHref(alloc.ID)}>
            {shortId(alloc.ID)}
          </Link>,
          alloc.Name,
          <Link key="n" href={nodeHref(alloc.NodeID)}>
            {alloc.NodeName || shortId(alloc.NodeID)}
          </Link>,
          alloc.JobVersion,
          alloc.DesiredStatus,
          badge(alloc.ClientStatus),
          formatNanoTime(alloc.CreateTime),
          formatNanoTime(alloc.ModifyTime),
        ])}
      empty="No allocations yet."
    />
  );
}

function Evaluations({ evaluations }: { evaluations: Evaluation[] }): JSX.Element {
  return (
    <section class="panel" aria-label="Evaluations">
      <h2>Evaluations</h2>
      <Table
        columns={['Evaluation', 'Triggered by', 'Status', 'Description', 'Placement failures', 'Created']}
        rows={evaluations.map((evaluation) => [
          <span key="i" title={evaluation.ID}>
            {shortId(evaluation.ID)}
          </span>,
          evaluation.TriggeredBy,
          badge(evaluation.Status),
          evaluation.StatusDescription || '—',
          Object.keys(evaluation.FailedTGAllocs ?? {}).join(', ') || '—',
          formatNanoTime(evaluation.CreateTime),
        ])}
        empty="No evaluations."
      />
    </section>
  );
}

/**
 * While the job has a blocked evaluation, why its latest failed placements failed (as Nomad's UI shows it above the
 * allocations); the blocked evaluation runs again when a node with room appears.
 */
function LatestFailures({ evaluations }: { evaluations: Evaluation[] }): JSX.Element | null {
  if (!evaluations.some((evaluation) => evaluation.Status === 'blocked')) return null;
  const latest = evaluations
    .filter((evaluation) => Object.keys(evaluation.FailedTGAllocs ?? {}).length > 0)
    .sort((a, b) => b.CreateTime - a.CreateTime)[0];
  if (!latest) return null;
  return (
    <section class="panel" aria-label="Placement failures">
      <h2>Placement failures</h2>
      <PlacementFailures failed={latest.FailedTGAllocs ?? {}} />
      <p class="note">The scheduler places them when a node with room becomes ready.</p>
    </section>
  );
}

function Versions({ versions }: { versions: Job[] }): JSX.Element {
  return (
    <section class="panel" aria-label="Versions">
      <h2>Versions</h2>
      <Table
        columns={['Version', 'Stable', 'Stopped', 'Groups (count)', 'Submitted']}
        rows={versions.map((version) => [
          version.Version,
          version.Stable ? 'yes' : 'no',
          version.Stop ? 'yes' : 'no',
          (version.TaskGroups ?? []).map((group) => `${group.Name} (${group.Count})`).join(', '),
          formatNanoTime(version.SubmitTime),
        ])}
        empty="No versions."
      />
    </section>
  );
}

/** The job's latest deployment: a link to its page, and its status. */
function LatestDeployment({ deployment }: { deployment: Deployment | null }): JSX.Element {
  if (!deployment) return <>—</>;
  return (
    <>
      <Link href={deploymentHref(deployment.ID)}>{shortId(deployment.ID)}</Link> {badge(deployment.Status)} (version{' '}
      {deployment.JobVersion})
    </>
  );
}

export function JobPage({ namespace, id }: { namespace: string; id: string }): JSX.Element {
  const reads = useLiveReads<JobReads>(
    {
      job: jobApi(namespace, id),
      allocations: jobApi(namespace, id, 'allocations'),
      evaluations: jobApi(namespace, id, 'evaluations'),
      versions: jobApi(namespace, id, 'versions'),
      deployment: jobApi(namespace, id, 'deployment'),
    },
    [`Job:${id}`, `Allocation:${id}`, `Evaluation:${id}`, `Deployment:${id}`],
    namespace,
  );
  return (
    <Page title={`Job ${id}`} actions={<Link href={jobsListHref(namespace, '')}>Jobs of {namespace}</Link>}>
      <LiveBadge mode={reads.mode} />
      <Loading loaded={reads}>
        {(shown) => {
          const { job } = shown;
          return (
            <>
              <div class="panels">
                <section class="panel" aria-label="Job">
                  <Details
                    rows={[
                      ['ID', job.ID],
                      ['Name', job.Name],
                      ['Namespace', job.Namespace],
                      ['Type', job.Type],
                      [
                        'Status',
                        <span key="s" class={`badge ${statusClass(job.Status)}`}>
                          {jobStatusText(job)}
                        </span>,
                      ],
                      ['Priority', job.Priority],
                      ['Node pool', job.NodePool || '—'],
                      ['Datacenters', (job.Datacenters ?? []).join(', ')],
                      ['Version', job.Version],
                      ['Submitted', formatNanoTime(job.SubmitTime)],
                      ['Latest deployment', <LatestDeployment key="d" deployment={shown.deployment} />],
                    ]}
                  />
                </section>
                <JobActions job={job} onChanged={reads.reload} />
              </div>
              <TaskGroups reads={shown} onChanged={reads.reload} />
              <LatestFailures evaluations={shown.evaluations} />
              <section class="panel" aria-label="Allocations">
                <h2>Allocations</h2>
                <AllocationsTable allocations={shown.allocations} />
              </section>
              <Evaluations evaluations={shown.evaluations} />
              <Versions versions={shown.versions.Versions ?? []} />
            </>
          );
        }}
      </Loading>
    </Page>
  );
}
