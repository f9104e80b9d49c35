import type { JSX } from 'preact';
import { api, scheduler } from '../api.ts';
import { Details, ErrorBox, Loading, Page, Table, useAction, useLoad } from '../components.tsx';
import { Link } from '../router.tsx';
import { LiveBadge } from './cluster-common.tsx';
import {
  type Deployment,
  deploymentsListHref,
  isActive,
  needsPromotion,
  progressDeadline,
} from './deployment-model.ts';
import { AllocationsTable } from './job.tsx';
import { type AllocationStub, formatNanoTime, jobHref, shortId, statusClass } from './job-model.ts';
import { useLiveReads } from './live.ts';

/**
 * A deployment's page (`deployment/<id>` and `deployment/allocations/<id>`; `read-job`): its job and version, its
 * status, each task group's part (desired, placed, healthy, unhealthy, canaries, promoted, progress deadline) and its
 * allocations, live from one stream of the deployment's `Deployment` and `Allocation` events (blocking reads for a
 * token that may not stream); with `submit-job`, Promote (`deployment/promote/<id>`, every group, while its canaries
 * wait for it), Pause or Resume (`deployment/pause/<id>`) and Fail (`deployment/fail/<id>`) while it is active. The
 * service words any refusal (a canary not yet healthy, say), and the page shows it.
 */

interface DeploymentReads extends Record<string, unknown> {
  deployment: Deployment;
  allocations: AllocationStub[];
}

const yesNo = (value: boolean) => (value ? 'yes' : 'no');

/** One deployment's task groups, as Nomad's UI lists them. */
function DeploymentGroups({ deployment }: { deployment: Deployment }): JSX.Element {
  return (
    <Table
      columns={['Group', 'Desired', 'Placed', 'Healthy', 'Unhealthy', 'Canaries', 'Promoted', 'Progress deadline']}
      rows={Object.entries(deployment.TaskGroups ?? {})
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([name, group]) => [
          name,
          group.DesiredTotal,
          group.PlacedAllocs,
          group.HealthyAllocs,
          group.UnhealthyAllocs,
          `${(group.PlacedCanaries ?? []).length} / ${group.DesiredCanaries}`,
          group.DesiredCanaries > 0 ? `${yesNo(group.Promoted)}${group.AutoPromote ? ' (auto)' : ''}` : '—',
          progressDeadline(group.RequireProgressBy),
        ])}
      empty="No task group has a placement yet."
    />
  );
}

/** Promote (while its canaries wait for it), Pause or Resume, and Fail, for a deployment still under way. */
function DeploymentActions({
  deployment,
  onChanged,
}: {
  deployment: Deployment;
  onChanged: () => void;
}): JSX.Element | null {
  const action = useAction();
  if (!isActive(deployment)) return null;
  const run = (work: () => Promise<unknown>) =>
    action.run(async () => {
      await work();
      onChanged();
    });
  const pause = (paused: boolean) =>
    run(() => scheduler('PUT', api`deployment/pause/${deployment.ID}`, { DeploymentID: deployment.ID, Pause: paused }));
  return (
    <section class="panel" aria-label="Deployment actions">
      <h2>Actions</h2>
      <ErrorBox error={action.error} />
      <div class="actions">
        {needsPromotion(deployment) ? (
          <button
            type="button"
            disabled={action.busy}
            onClick={() =>
              void run(() =>
                scheduler('PUT', api`deployment/promote/${deployment.ID}`, { DeploymentID: deployment.ID, All: true }),
              )
            }
          >
            Promote canaries
          </button>
        ) : null}
        {deployment.Status === 'paused' ? (
          <button type="button" disabled={action.busy} onClick={() => void pause(false)}>
            Resume deployment
          </button>
        ) : (
          <button type="button" disabled={action.busy} onClick={() => void pause(true)}>
            Pause deployment
          </button>
        )}
        <button
          type="button"
          class="danger"
          disabled={action.busy}
          onClick={() =>
            void run(() => scheduler('PUT', api`deployment/fail/${deployment.ID}`, { DeploymentID: deployment.ID }))
          }
        >
          Fail deployment
        </button>
      </div>
    </section>
  );
}

function LiveDeployment({ id, namespace }: { id: string; namespace: string }): JSX.Element {
  const reads = useLiveReads<DeploymentReads>(
    { deployment: api`deployment/${id}`, allocations: api`deployment/allocations/${id}` },
    // An allocation's events carry its deployment among their filter keys.
    [`Deployment:${id}`, `Allocation:${id}`],
    namespace,
  );
  return (
    <>
      <LiveBadge mode={reads.mode} />
      <Loading loaded={reads}>
        {({ deployment, allocations }) => (
          <>
            <div class="panels">
              <section class="panel" aria-label="Deployment">
                <Details
                  rows={[
                    ['ID', deployment.ID],
                    [
                      'Job',
                      <Link key="j" href={jobHref(deployment.Namespace, deployment.JobID)}>
                        {deployment.JobID}
                      </Link>,
                    ],
                    ['Namespace', deployment.Namespace],
                    ['Job version', deployment.JobVersion],
                    [
                      'Status',
                      <span key="s" class={`badge ${statusClass(deployment.Status)}`}>
                        {deployment.Status}
                      </span>,
                    ],
                    ['Description', deployment.StatusDescription],
                    ['Created', formatNanoTime(deployment.CreateTime)],
                  ]}
                />
              </section>
              <DeploymentActions deployment={deployment} onChanged={reads.reload} />
            </div>
            <section class="panel" aria-label="Task groups">
              <h2>Task groups</h2>
              <DeploymentGroups deployment={deployment} />
            </section>
            <section class="panel" aria-label="Allocations">
              <h2>Allocations</h2>
              <AllocationsTable allocations={allocations} />
            </section>
          </>
        )}
      </Loading>
    </>
  );
}

export function DeploymentPage({ id }: { id: string }): JSX.Element {
  // Read once to learn the deployment's namespace: its stream is that namespace's. (Async, so that an ID no path
  // may hold is an error shown on the page, not a throw while rendering.)
  const first = useLoad(async () => scheduler<Deployment>('GET', api`deployment/${id}`), [id]);
  return (
    <Page
      title={`Deployment ${shortId(id)}`}
      actions={<Link href={deploymentsListHref(first.data?.Namespace ?? '*', '')}>Deployments</Link>}
    >
      <Loading loaded={first}>{(deployment) => <LiveDeployment id={id} namespace={deployment.Namespace} />}</Loading>
    </Page>
  );
}
