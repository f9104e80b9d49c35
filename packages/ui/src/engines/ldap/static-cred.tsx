import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { secrets } from '../../api.ts';
import { Details, ErrorBox, formatSeconds, Loading, SecretValue, useAction, useLoad } from '../../components.tsx';
import { apiPath } from '../engine-frame.tsx';
import type { ItemProps } from '../role-list.tsx';

interface StaticCred {
  dn: string;
  username: string;
  password: string;
  last_password: string;
  last_service_rotation: string | null;
  rotation_period: number;
  ttl: number;
}

/** A static role's credentials (`static-cred/<name>`): the password hidden until revealed, the last and next rotation, rotate now. */
export function StaticCredPanel({ mount, name }: ItemProps): JSX.Element {
  const cred = useLoad(async () => {
    const answer = await secrets<{ data: StaticCred }>('GET', apiPath(mount, 'static-cred', name));
    return { ...answer.data, readAt: Date.now() };
  }, [mount, name]);
  const rotation = useAction();
  const [rotatedAt, setRotatedAt] = useState<string | undefined>(undefined);
  return (
    <section class="panel" aria-label="Credentials">
      <h2>Credentials</h2>
      <Loading loaded={cred}>
        {(data) => (
          <Details
            rows={[
              ['Username', data.username],
              ['DN', data.dn],
              ['Password', <SecretValue key={data.password} value={data.password} label="password" />],
              [
                'Previous password',
                data.last_password ? (
                  <SecretValue key={data.last_password} value={data.last_password} label="previous password" />
                ) : (
                  '—'
                ),
              ],
              ['Last rotation', data.last_service_rotation ?? '—'],
              [
                'Next rotation',
                data.ttl > 0
                  ? `in ${formatSeconds(data.ttl)} (${new Date(data.readAt + data.ttl * 1000).toISOString().replace(/\.\d+Z$/, 'Z')})`
                  : 'due now',
              ],
              ['Rotation period', formatSeconds(data.rotation_period)],
            ]}
          />
        )}
      </Loading>
      <div class="actions">
        <button
          type="button"
          disabled={rotation.busy}
          onClick={() =>
            void rotation.run(async () => {
              await secrets('POST', apiPath(mount, 'rotate-role', name));
              setRotatedAt(new Date().toISOString());
              cred.reload();
            })
          }
        >
          Rotate now
        </button>
      </div>
      <ErrorBox error={rotation.error} />
      {rotatedAt ? (
        <p class="success" role="status">
          Rotated at {rotatedAt}: the directory has the new password.
        </p>
      ) : null}
    </section>
  );
}
