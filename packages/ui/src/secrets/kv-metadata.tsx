import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { ErrorBox, Field, useAction } from '../components.tsx';
import type { KvMetadata } from './kv-mount.ts';
import { parseOptions, timeText } from './paths.ts';

/** A kv v2 secret's settings: max_versions, cas_required, delete_version_after and custom_metadata. */
export function KvMetadataForm({
  metadata,
  onSave,
}: {
  metadata: KvMetadata;
  onSave: (changes: Record<string, unknown>) => Promise<void>;
}): JSX.Element {
  const [maxVersions, setMaxVersions] = useState(String(metadata.max_versions ?? 0));
  const [casRequired, setCasRequired] = useState(metadata.cas_required);
  const [deleteAfter, setDeleteAfter] = useState(metadata.delete_version_after || '0s');
  const [custom, setCustom] = useState(
    Object.entries(metadata.custom_metadata ?? {})
      .map(([key, value]) => `${key}=${value}`)
      .join('\n'),
  );
  const action = useAction();
  const submit = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      const max = Number(maxVersions);
      if (!Number.isInteger(max) || max < 0)
        throw new Error('max versions must be a whole number (0: the mount default)');
      await onSave({
        max_versions: max,
        cas_required: casRequired,
        delete_version_after: deleteAfter.trim() || '0s',
        custom_metadata: parseOptions(custom),
      });
    });
  };
  return (
    <form class="panel" onSubmit={submit} aria-label="Metadata">
      <h2>Metadata</h2>
      <p class="note">
        Created {timeText(metadata.created_time)}, updated {timeText(metadata.updated_time)}.
      </p>
      <Field label="Max versions" value={maxVersions} onInput={setMaxVersions} hint="0 keeps the mount's setting." />
      <label class="check">
        <input
          type="checkbox"
          checked={casRequired}
          onChange={(event) => setCasRequired(event.currentTarget.checked)}
        />{' '}
        Require check-and-set
      </label>
      <Field
        label="Delete versions after"
        value={deleteAfter}
        onInput={setDeleteAfter}
        hint='A duration such as "720h"; "0s" keeps them.'
      />
      <Field
        label="Custom metadata"
        multiline
        rows={4}
        value={custom}
        onInput={setCustom}
        hint="One key=value a line."
      />
      <ErrorBox error={action.error} />
      <div class="actions">
        <button type="submit" disabled={action.busy}>
          Save metadata
        </button>
      </div>
    </form>
  );
}
