import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { secrets } from '../../api.ts';
import { ErrorBox, Field, Loading, Table, useAction, useLoad } from '../../components.tsx';
import { CredentialView, type IssuedCredential } from '../credential.tsx';
import { apiPath } from '../engine-frame.tsx';
import type { ItemProps } from '../role-list.tsx';

type AccountStatus =
  | { available: true }
  | { available: false; borrower_client_token: string; borrower_entity_id: string };

/**
 * A library set's accounts (`library/<set>/status`), each available or checked out, a check-out with its credential
 * (hidden until revealed) and lease, and a check-in per account (`library/<set>/check-in`).
 */
export function LibraryPanel({ mount, name }: ItemProps): JSX.Element {
  const status = useLoad(
    () =>
      secrets<{ data: Record<string, AccountStatus> }>('GET', apiPath(mount, 'library', name, 'status')).then(
        (answer) => answer.data,
      ),
    [mount, name],
  );
  const checkOut = useAction();
  const checkIn = useAction();
  const [ttl, setTtl] = useState('');
  const [issued, setIssued] = useState<IssuedCredential | undefined>(undefined);
  const [checkedIn, setCheckedIn] = useState<string[] | undefined>(undefined);
  const submitCheckOut = (event: Event) => {
    event.preventDefault();
    void checkOut.run(async () => {
      setCheckedIn(undefined);
      setIssued(
        await secrets<IssuedCredential>(
          'POST',
          apiPath(mount, 'library', name, 'check-out'),
          ttl.trim() ? { ttl: ttl.trim() } : {},
        ),
      );
      status.reload();
    });
  };
  const returnAccount = (account: string) =>
    void checkIn.run(async () => {
      const answer = await secrets<{ data?: { check_ins?: string[] } }>(
        'POST',
        apiPath(mount, 'library', name, 'check-in'),
        { service_account_names: [account] },
      );
      setCheckedIn(answer?.data?.check_ins ?? []);
      if (issued?.data?.service_account_name === account) setIssued(undefined);
      status.reload();
    });
  return (
    <section class="panel" aria-label="Accounts">
      <h2>Accounts</h2>
      <Loading loaded={status}>
        {(accounts) => (
          <Table
            columns={['Account', 'Status', 'Borrower (token accessor)', '']}
            rows={Object.entries(accounts).map(([account, state]) => [
              account,
              state.available ? <span class="badge good">available</span> : <span class="badge bad">checked out</span>,
              state.available ? '—' : <code>{state.borrower_client_token || '—'}</code>,
              state.available ? null : (
                <button
                  type="button"
                  class="small"
                  disabled={checkIn.busy}
                  aria-label={`Check in ${account}`}
                  onClick={() => returnAccount(account)}
                >
                  Check in
                </button>
              ),
            ])}
          />
        )}
      </Loading>
      <ErrorBox error={checkIn.error} />
      {checkedIn ? (
        <p class="success" role="status">
          {checkedIn.length
            ? `Checked in: ${checkedIn.join(', ')} (each has a new password now).`
            : 'Nothing was checked in.'}
        </p>
      ) : null}
      <form class="check-out" onSubmit={submitCheckOut} aria-label="Check out an account">
        <h3>Check out</h3>
        <Field
          label="Check-out TTL"
          name="ttl"
          value={ttl}
          onInput={setTtl}
          placeholder="the set's ttl"
          hint="Optional, e.g. 1h; at most the set's ttl."
        />
        <div class="actions">
          <button type="submit" disabled={checkOut.busy}>
            Check out an account
          </button>
        </div>
      </form>
      <ErrorBox error={checkOut.error} />
      {issued ? <CredentialView credential={issued} title="Checked-out account" /> : null}
    </section>
  );
}
