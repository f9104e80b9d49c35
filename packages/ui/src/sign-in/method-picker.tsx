import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ErrorBox, Field, useLoad } from '../components.tsx';
import type { Service } from '../session.ts';
import { schedulerMethods, secretsJwtMounts } from './discovery.ts';

const other = '\u0000other';
let pickers = 0;

/**
 * Chooses the auth method to sign in with: the discovered ones in a list (the scheduler's default first), or a path
 * or name typed in (a method the operator did not list for anonymous callers). `value` is the path (secrets, without
 * its slash) or the method's name (scheduler).
 */
export function MethodPicker(props: {
  service: Service;
  kind: 'OIDC' | 'JWT';
  value: string;
  onChange: (value: string) => void;
}): JSX.Element {
  const { service, kind, value, onChange } = props;
  const loaded = useLoad(
    async () =>
      service === 'secrets'
        ? (await secretsJwtMounts()).map((mount) => ({
            value: mount.path,
            label: `${mount.path}/${mount.description ? ` — ${mount.description}` : ''}`,
          }))
        : (await schedulerMethods(kind)).map((method) => ({
            value: method.Name,
            label: `${method.Name}${method.Default ? ' (default)' : ''}`,
          })),
    [service, kind],
  );
  const choices = loaded.data ?? [];
  const [typing, setTyping] = useState(false);
  const [id] = useState(() => `method-picker-${++pickers}`);
  // The first discovered method is chosen until the person picks another.
  useEffect(() => {
    if (!value && !typing && choices[0]) onChange(choices[0].value);
  }, [choices.length]);
  const label = service === 'secrets' ? 'Auth mount' : 'Auth method';
  if (loaded.loading && !loaded.data) return <p class="loading">Finding the {kind} sign-in methods…</p>;
  const typed = (
    <Field
      label={service === 'secrets' ? 'Mount path' : 'Auth method name'}
      value={value}
      onInput={onChange}
      required
      name={`${service}-${kind}-method`}
      hint={service === 'secrets' ? 'The path the auth method is enabled at, e.g. jwt or oidc.' : undefined}
    />
  );
  if (choices.length === 0) {
    return (
      <>
        <ErrorBox error={loaded.error} />
        {loaded.error ? null : <p class="note">No {kind} sign-in method is listed for this service; type one in.</p>}
        {typed}
      </>
    );
  }
  return (
    <>
      <div class="field">
        <label for={id}>{label}</label>
        <select
          id={id}
          value={typing ? other : value}
          onChange={(event) => {
            const chosen = (event.currentTarget as HTMLSelectElement).value;
            setTyping(chosen === other);
            onChange(chosen === other ? '' : chosen);
          }}
        >
          {choices.map((choice) => (
            <option key={choice.value} value={choice.value}>
              {choice.label}
            </option>
          ))}
          <option value={other}>Another {service === 'secrets' ? 'path' : 'method'}…</option>
        </select>
      </div>
      {typing ? typed : null}
    </>
  );
}
