import type { JSX } from 'preact';
import { api, scheduler, withQuery } from '../api.ts';
import { Loading, Page, Table } from '../components.tsx';
import { Link, pathHref } from '../router.tsx';
import { LiveBadge } from './cluster-common.tsx';
import { DeleteButton } from './common.tsx';
import { useLive } from './live.ts';

/**
 * Nomad's service discovery (`services`, `service/<name>`; `read-job`): every service of the namespaces the token may
 * read with its tags, and a service's registrations (which allocation on which node answers at which address), live
 * from the `Service` topic (blocking reads for a token that may not stream every namespace). With `submit-job` (or
 * `delete-service-registration`) a registration can be deleted; the node re-registers what still runs.
 */

interface ServiceStub {
  ServiceName: string;
  Tags: string[];
}

interface NamespaceServices {
  Namespace: string;
  Services: ServiceStub[];
}

interface Registration {
  ID: string;
  ServiceName: string;
  Namespace: string;
  NodeID: string;
  Datacenter: string;
  JobID: string;
  AllocID: string;
  Tags: string[] | null;
  Address: string;
  Port: number;
  CreateIndex: number;
  ModifyIndex: number;
}

const base = '/ui/scheduler/services';
const tagList = (tags: string[] | null) => (tags && tags.length > 0 ? tags.join(', ') : '—');

export function ServicesPage(): JSX.Element {
  const services = useLive<NamespaceServices[]>(withQuery(api`services`, { namespace: '*' }), 'Service', '*');
  return (
    <Page title="Services">
      <LiveBadge mode={services.mode} />
      <Loading loaded={services}>
        {(list) => (
          <Table
            columns={['Service', 'Namespace', 'Tags']}
            rows={list.flatMap((entry) =>
              entry.Services.map((service) => [
                <Link key="s" href={pathHref(base, entry.Namespace, service.ServiceName)}>
                  {service.ServiceName}
                </Link>,
                entry.Namespace,
                tagList(service.Tags),
              ]),
            )}
            empty="No services registered in the namespaces you may read."
          />
        )}
      </Loading>
    </Page>
  );
}

export function ServicePage({ namespace, name }: { namespace: string; name: string }): JSX.Element {
  const registrations = useLive<Registration[]>(
    withQuery(api`service/${name}`, { namespace }),
    `Service:${name}`,
    namespace,
  );
  return (
    <Page title={`Service ${name}`} actions={<Link href={base}>All services</Link>}>
      <p>
        Namespace <strong>{namespace}</strong>
      </p>
      <LiveBadge mode={registrations.mode} />
      <Loading loaded={registrations}>
        {(list) => (
          <Table
            columns={['Address', 'Tags', 'Job', 'Allocation', 'Node', 'Datacenter', '']}
            rows={list.map((registration) => [
              `${registration.Address}:${registration.Port}`,
              tagList(registration.Tags),
              registration.JobID,
              <span key="a" title={registration.AllocID}>
                {registration.AllocID.slice(0, 8)}
              </span>,
              <Link key="n" href={pathHref('/ui/scheduler/nodes', registration.NodeID)}>
                {registration.NodeID.slice(0, 8)}
              </Link>,
              registration.Datacenter,
              <DeleteButton
                key="d"
                what={`registration ${registration.Address}:${registration.Port}`}
                onDelete={async () => {
                  await scheduler(
                    'DELETE',
                    withQuery(api`service/${registration.ServiceName}/${registration.ID}`, { namespace }),
                  );
                  registrations.reload();
                }}
              />,
            ])}
            empty="No registrations: nothing of this service is running."
          />
        )}
      </Loading>
    </Page>
  );
}
