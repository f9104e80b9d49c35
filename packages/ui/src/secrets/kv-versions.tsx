import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { Table } from '../components.tsx';
import { Link } from '../router.tsx';
import { ConfirmButton } from './confirm-button.tsx';
import { isDeleted, type KvMetadata } from './kv-mount.ts';
import { timeText } from './paths.ts';

/** A kv v2 secret's versions from its metadata: read one, or delete, undelete or destroy the chosen ones. */
export function KvVersions(props: {
  metadata: KvMetadata;
  busy: boolean;
  href: (version: number) => string;
  onAct: (kind: 'delete' | 'undelete' | 'destroy', versions: number[]) => void;
}): JSX.Element {
  const [chosen, setChosen] = useState<number[]>([]);
  const versions = Object.entries(props.metadata.versions)
    .map(([number, entry]) => ({ number: Number(number), ...entry }))
    .sort((a, b) => b.number - a.number);
  const toggle = (version: number, on: boolean) =>
    setChosen(on ? [...chosen, version] : chosen.filter((other) => other !== version));
  const act = (kind: 'delete' | 'undelete' | 'destroy') => {
    props.onAct(
      kind,
      [...chosen].sort((a, b) => a - b),
    );
    setChosen([]);
  };
  const none = chosen.length === 0 || props.busy;
  return (
    <section class="panel">
      <h2>Versions</h2>
      <p class="note">
        Current version {props.metadata.current_version}; keeps {props.metadata.max_versions || 'the mount default of'}{' '}
        versions
        {props.metadata.cas_required ? '; check-and-set required' : ''}.
      </p>
      <Table
        columns={['', 'Version', 'Created', 'State']}
        rows={versions.map((entry) => [
          <input
            type="checkbox"
            aria-label={`Choose version ${entry.number}`}
            checked={chosen.includes(entry.number)}
            onChange={(event) => toggle(entry.number, event.currentTarget.checked)}
          />,
          <Link href={props.href(entry.number)}>{`Version ${entry.number}`}</Link>,
          timeText(entry.created_time),
          entry.destroyed ? (
            <span class="badge bad">destroyed</span>
          ) : isDeleted(entry) ? (
            <span class="badge bad">deleted {timeText(entry.deletion_time)}</span>
          ) : entry.number === props.metadata.current_version ? (
            <span class="badge good">current</span>
          ) : (
            <span class="badge">kept</span>
          ),
        ])}
        empty="No versions."
      />
      <div class="actions">
        <button type="button" class="secondary" disabled={none} onClick={() => act('delete')}>
          Delete chosen
        </button>
        <button type="button" class="secondary" disabled={none} onClick={() => act('undelete')}>
          Undelete chosen
        </button>
        <ConfirmButton
          label="Destroy chosen"
          question={`Destroy version ${chosen.join(', ')} for good?`}
          disabled={none}
          onConfirm={() => act('destroy')}
        />
      </div>
    </section>
  );
}
