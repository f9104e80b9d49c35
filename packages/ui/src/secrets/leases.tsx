import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, secrets, segments } from '../api.ts';
import { Details, ErrorBox, Field, formatSeconds, Loading, Page, Table, useAction, useLoad } from '../components.tsx';
import { Link, navigate, useLocation } from '../router.tsx';
import { ConfirmButton } from './confirm-button.tsx';
import { apiPath, listAt, timeText } from './paths.ts';

interface LeaseInfo {
  id: string;
  issue_time: string;
  expire_time: string | null;
  last_renewal: string | null;
  renewable: boolean;
  ttl: number;
}

const leasesHref = (prefix: string, lease?: string) => {
  const query = new URLSearchParams();
  if (prefix) query.set('prefix', prefix);
  if (lease) query.set('lease', lease);
  const text = query.toString();
  return `/ui/vault/leases${text ? `?${text}` : ''}`;
};

/** One lease: looked up with `PUT sys/leases/lookup`, renewed with an increment, revoked. */
function Lease({ id, onGone }: { id: string; onGone: () => void }): JSX.Element {
  const loaded = useLoad(
    () => secrets<{ data: LeaseInfo }>('PUT', api`sys/leases/lookup`, { lease_id: id }).then((answer) => answer.data),
    [id],
  );
  const [increment, setIncrement] = useState('');
  const [done, setDone] = useState('');
  const action = useAction();
  const renew = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      setDone('');
      const answer = await secrets<{ lease_duration?: number; warnings?: string[] | null }>(
        'PUT',
        api`sys/leases/renew`,
        {
          lease_id: id,
          ...(increment.trim()
            ? { increment: /^\d+$/.test(increment.trim()) ? Number(increment.trim()) : increment.trim() }
            : {}),
        },
      );
      setDone(
        `Renewed: ${formatSeconds(answer?.lease_duration)} left.${answer?.warnings?.length ? ` ${answer.warnings.join(' ')}` : ''}`,
      );
      loaded.reload();
    });
  };
  return (
    <section class="panel" aria-label="Lease">
      <h2>Lease</h2>
      <Loading loaded={loaded}>
        {(lease) => (
          <>
            <Details
              rows={[
                ['Lease ID', <code>{lease.id}</code>],
                ['Issued', timeText(lease.issue_time)],
                ['Expires', timeText(lease.expire_time)],
                ['Last renewal', timeText(lease.last_renewal)],
                ['TTL', formatSeconds(lease.ttl)],
                ['Renewable', lease.renewable ? 'yes' : 'no'],
              ]}
            />
            <form onSubmit={renew} class="row" aria-label="Renew lease">
              <Field label="Increment" value={increment} onInput={setIncrement} placeholder="e.g. 1h or 3600" />
              <button type="submit" disabled={action.busy}>
                Renew
              </button>
            </form>
            <div class="actions">
              <ConfirmButton
                label="Revoke lease"
                question="Revoke this lease now?"
                disabled={action.busy}
                onConfirm={() =>
                  void action.run(async () => {
                    await secrets('PUT', api`sys/leases/revoke`, { lease_id: id });
                    onGone();
                  })
                }
              />
            </div>
          </>
        )}
      </Loading>
      {done ? (
        <p class="success" role="status">
          {done}
        </p>
      ) : null}
      <ErrorBox error={action.error} />
    </section>
  );
}

/** `/ui/vault/leases`: leases by prefix (`LIST sys/leases/lookup/<prefix>`), one looked up, revoke by prefix. */
export function LeasesPage(): JSX.Element {
  const { query } = useLocation();
  const prefix = query.get('prefix') ?? '';
  const lease = query.get('lease') ?? '';
  const [typed, setTyped] = useState(prefix);
  const [leaseTyped, setLeaseTyped] = useState(lease);
  // The fields follow the address when a link (a prefix, a lease) moves it.
  useEffect(() => setTyped(prefix), [prefix]);
  useEffect(() => setLeaseTyped(lease), [lease]);
  const [done, setDone] = useState('');
  const folder = prefix && !prefix.endsWith('/') ? `${prefix}/` : prefix;
  const listed = useLoad(() => listAt(`sys/leases/lookup/${folder}`), [folder]);
  const action = useAction();
  return (
    <Page title="Leases">
      <div class="stacked-panels">
        <form
          class="panel"
          aria-label="List leases"
          onSubmit={(event) => {
            event.preventDefault();
            setDone('');
            navigate(leasesHref(typed.trim()));
          }}
        >
          <Field
            label="Prefix"
            value={typed}
            onInput={setTyped}
            placeholder="e.g. kv/app/"
            hint="Lease IDs begin with the path that made them."
          />
          <button type="submit">List</button>
        </form>
        <form
          class="panel"
          aria-label="Look up a lease"
          onSubmit={(event) => {
            event.preventDefault();
            navigate(leasesHref(prefix, leaseTyped.trim()));
          }}
        >
          <Field label="Lease ID" value={leaseTyped} onInput={setLeaseTyped} />
          <button type="submit">Look up</button>
        </form>
      </div>
      <div class="stack">
        {lease ? (
          <Lease
            key={lease}
            id={lease}
            onGone={() => {
              setDone(`Lease ${lease} revoked.`);
              navigate(leasesHref(prefix));
              listed.reload();
            }}
          />
        ) : null}
        {done ? (
          <p class="success" role="status">
            {done}
          </p>
        ) : null}
        <section class="panel" aria-label="Leases under the prefix">
          <h2>Under {folder || 'every path'}</h2>
          {folder ? (
            <Link
              href={leasesHref(
                folder.split('/').slice(0, -2).join('/') ? `${folder.split('/').slice(0, -2).join('/')}/` : '',
              )}
            >
              Up one level
            </Link>
          ) : null}
          <Loading loaded={listed}>
            {(keys) => (
              <Table
                columns={['Key', '']}
                rows={keys.map((key) =>
                  key.endsWith('/')
                    ? [<Link href={leasesHref(`${folder}${key}`)}>{key}</Link>, 'prefix']
                    : [<Link href={leasesHref(prefix, `${folder}${key}`)}>{key}</Link>, 'lease'],
                )}
                empty="No leases under this prefix."
              />
            )}
          </Loading>
          {folder ? (
            <div class="actions">
              <ConfirmButton
                label="Revoke every lease under this prefix"
                question={`Revoke every lease under ${folder}?`}
                disabled={action.busy}
                onConfirm={() =>
                  void action.run(async () => {
                    setDone('');
                    await secrets('PUT', api`sys/leases/revoke-prefix/${segments(folder.replace(/\/+$/, ''))}`);
                    setDone(`Every lease under ${folder} revoked.`);
                    listed.reload();
                  })
                }
              />
            </div>
          ) : null}
          <ErrorBox error={action.error} />
        </section>
      </div>
    </Page>
  );
}
