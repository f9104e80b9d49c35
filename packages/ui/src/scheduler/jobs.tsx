import type { JSX } from 'preact';
import { api, scheduler, withQuery } from '../api.ts';
import { Loading, Page, Table, useLoad } from '../components.tsx';
import { Link, navigate, useLocation } from '../router.tsx';
import { LiveBadge } from './cluster-common.tsx';
import { SelectField } from './common.tsx';
import {
  formatNanoTime,
  type JobStub,
  jobHref,
  jobStatusText,
  jobsBase,
  jobsListHref,
  statusClass,
} from './job-model.ts';
import { useLive } from './live.ts';

/**
 * The jobs list (`jobs?namespace=…`; `list-jobs`): one namespace or all of them the token may list (`*`), filtered by
 * status, live from the `Job` topic (blocking reads for a token that may not stream the namespaces it lists). The
 * namespace and the status are the address's query, so a filtered list can be linked and reloaded.
 */

const jobStatuses = ['pending', 'running', 'dead'];

/** The namespaces the token may use, for a picker (`*`, all of them, first); the current one kept when unlisted. */
export function useNamespaceOptions(current: string, withAll: boolean): Array<string | [string, string]> {
  const namespaces = useLoad(() => scheduler<Array<{ Name: string }>>('GET', api`namespaces`), []);
  const names = (namespaces.data ?? []).map((namespace) => namespace.Name);
  if (current !== '*' && !names.includes(current)) names.unshift(current);
  return withAll ? [['*', 'All namespaces'], ...names] : names;
}

/**
 * The namespace and status pickers of a list whose address holds both (`href(namespace, status)`): each choice
 * replaces the address, so the list reads it again.
 */
export function ListFilters(props: {
  namespace: string;
  status: string;
  statuses: string[];
  href: (namespace: string, status: string) => string;
}): JSX.Element {
  const { namespace, status, href } = props;
  const namespaces = useNamespaceOptions(namespace, true);
  return (
    <div class="row">
      <SelectField
        label="Namespace"
        value={namespace}
        options={namespaces}
        onChange={(value) => navigate(href(value, status), { replace: true })}
      />
      <SelectField
        label="Status"
        value={status}
        options={[['', 'Any status'], ...props.statuses]}
        onChange={(value) => navigate(href(namespace, value), { replace: true })}
      />
    </div>
  );
}

export function JobsPage(): JSX.Element {
  const { query } = useLocation();
  const namespace = query.get('namespace') || '*';
  const status = query.get('status') ?? '';
  const jobs = useLive<JobStub[]>(withQuery(api`jobs`, { namespace }), 'Job', namespace);
  return (
    <Page
      title="Jobs"
      actions={
        <Link class="button" href={`${jobsBase}/new`}>
          Run a job
        </Link>
      }
    >
      <ListFilters namespace={namespace} status={status} statuses={jobStatuses} href={jobsListHref} />
      <LiveBadge mode={jobs.mode} />
      <Loading loaded={jobs}>
        {(list) => (
          <Table
            columns={['Job', 'Namespace', 'Type', 'Priority', 'Node pool', 'Groups', 'Status', 'Submitted']}
            rows={list
              .filter((job) => status === '' || job.Status === status)
              .map((job) => [
                <Link key="j" href={jobHref(job.Namespace, job.ID)}>
                  {job.ID}
                </Link>,
                job.Namespace,
                job.Type,
                job.Priority,
                job.NodePool || '—',
                Object.keys(job.JobSummary?.Summary ?? {}).length,
                <span key="s" class={`badge ${statusClass(job.Status)}`}>
                  {jobStatusText(job)}
                </span>,
                formatNanoTime(job.SubmitTime),
              ])}
            empty={status ? `No ${status} jobs here.` : 'No jobs here: run one.'}
          />
        )}
      </Loading>
    </Page>
  );
}
