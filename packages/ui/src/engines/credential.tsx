import type { ComponentChildren, JSX } from 'preact';
import { useState } from 'preact/hooks';
import { api, type ApiPath, secrets } from '../api.ts';
import { Details, ErrorBox, formatSeconds, SecretValue, useAction } from '../components.tsx';
import { shownValue } from './form.tsx';

/** A credential an engine issued: its values (the secret ones hidden until revealed) and its lease. */
export interface IssuedCredential {
  data?: Record<string, unknown>;
  lease_id?: string;
  lease_duration?: number;
  renewable?: boolean;
}

/** The response fields that are secrets: hidden until the person reveals them. */
const secretFields = new Set(['password', 'last_password', 'token', 'private_key_data', 'secret_id', 'client_token']);

const labels: Record<string, string> = {
  expires_at_seconds: 'expires at',
  token_ttl: 'token ttl',
};

function valueRow(key: string, value: unknown): [string, ComponentChildren] {
  if (secretFields.has(key) && typeof value === 'string' && value !== '')
    return [key, <SecretValue key={key} value={value} label={key.replace(/_/g, ' ')} />];
  if (key === 'expires_at_seconds' && typeof value === 'number')
    return [labels[key] ?? key, new Date(value * 1000).toISOString()];
  if (key === 'token_ttl' && typeof value === 'number') return [labels[key] ?? key, formatSeconds(value)];
  return [key, shownValue(value)];
}

export function CredentialView({ credential, title }: { credential: IssuedCredential; title: string }): JSX.Element {
  const revoke = useAction();
  const [revoked, setRevoked] = useState(false);
  const rows = Object.entries(credential.data ?? {}).map(([key, value]) => valueRow(key, value));
  if (credential.lease_id) {
    rows.push(
      ['lease id', <code key="lease">{credential.lease_id}</code>],
      ['lease duration', formatSeconds(credential.lease_duration)],
      ['renewable', credential.renewable ? 'yes' : 'no'],
    );
  } else rows.push(['lease', 'none (the engine cannot revoke this credential)']);
  return (
    <section class="credential" aria-label={title}>
      <h3>{title}</h3>
      <Details rows={rows} />
      {credential.lease_id ? (
        <div class="actions">
          <button
            type="button"
            class="secondary small"
            disabled={revoke.busy || revoked}
            onClick={() =>
              void revoke.run(async () => {
                await secrets('PUT', api`sys/leases/revoke`, { lease_id: credential.lease_id });
                setRevoked(true);
              })
            }
          >
            {revoked ? 'Lease revoked' : 'Revoke lease'}
          </button>
        </div>
      ) : null}
      <ErrorBox error={revoke.error} />
    </section>
  );
}

/** A button that asks the engine for a credential, then shows it (until another is asked for). */
export function GenerateCredential(props: {
  label: string;
  method: 'GET' | 'POST';
  path: ApiPath;
  body?: unknown;
  onIssued?: () => void;
}): JSX.Element {
  const action = useAction();
  const [issued, setIssued] = useState<IssuedCredential | undefined>(undefined);
  return (
    <div class="generate">
      <button
        type="button"
        disabled={action.busy}
        onClick={() =>
          void action.run(async () => {
            setIssued(await secrets<IssuedCredential>(props.method, props.path, props.body));
            props.onIssued?.();
          })
        }
      >
        {props.label}
      </button>
      <ErrorBox error={action.error} />
      {issued ? <CredentialView credential={issued} title="Issued credential" /> : null}
    </div>
  );
}
