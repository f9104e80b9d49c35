import type { JSX } from 'preact';
import { api, withQuery } from '../api.ts';
import { Loading, Page, Table } from '../components.tsx';
import { Link, useLocation } from '../router.tsx';
import { LiveBadge } from './cluster-common.tsx';
import { type Deployment, deploymentHref, deploymentStatuses, deploymentsListHref } from './deployment-model.ts';
import { formatNanoTime, jobHref, shortId, statusClass } from './job-model.ts';
import { ListFilters } from './jobs.tsx';
import { useLive } from './live.ts';

/**
 * The deployments list (`deployments?namespace=…`; `read-job`): one namespace or all of them the token may read
 * (`*`), filtered by status, newest first, live from the `Deployment` topic (blocking reads for a token that may not
 * stream the namespaces it lists). The namespace and the status are the address's query, as the jobs list's.
 */
export function DeploymentsPage(): JSX.Element {
  const { query } = useLocation();
  const namespace = query.get('namespace') || '*';
  const status = query.get('status') ?? '';
  const deployments = useLive<Deployment[]>(withQuery(api`deployments`, { namespace }), 'Deployment', namespace);
  return (
    <Page title="Deployments">
      <ListFilters namespace={namespace} status={status} statuses={deploymentStatuses} href={deploymentsListHref} />
      <LiveBadge mode={deployments.mode} />
      <Loading loaded={deployments}>
        {(list) => (
          <Table
            columns={['Deployment', 'Job', 'Namespace', 'Job version', 'Status', 'Description', 'Created']}
            rows={list
              .filter((deployment) => status === '' || deployment.Status === status)
              .sort((a, b) => b.CreateTime - a.CreateTime)
              .map((deployment) => [
                <Link key="d" href={deploymentHref(deployment.ID)}>
                  {shortId(deployment.ID)}
                </Link>,
                <Link key="j" href={jobHref(deployment.Namespace, deployment.JobID)}>
                  {deployment.JobID}
                </Link>,
                deployment.Namespace,
                deployment.JobVersion,
                <span key="s" class={`badge ${statusClass(deployment.Status)}`}>
                  {deployment.Status}
                </span>,
                deployment.StatusDescription,
                formatNanoTime(deployment.CreateTime),
              ])}
            empty={
              status
                ? `No ${status} deployments here.`
                : 'No deployments here: a service job with an update block makes one.'
            }
          />
        )}
      </Loading>
    </Page>
  );
}
