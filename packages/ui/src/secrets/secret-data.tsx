import type { JSX } from 'preact';
import { Details, SecretValue } from '../components.tsx';

/** A secret's keys, each value hidden until the person reveals it. */
export function SecretData({ data }: { data: Record<string, unknown> }): JSX.Element {
  const entries = Object.entries(data);
  if (entries.length === 0) return <p class="empty">This secret has no keys.</p>;
  return (
    <Details
      rows={entries.map(([key, value]) => [
        key,
        <SecretValue value={typeof value === 'string' ? value : JSON.stringify(value)} label={key} />,
      ])}
    />
  );
}
