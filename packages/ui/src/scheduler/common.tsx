import type { ComponentChildren, JSX } from 'preact';
import { useState } from 'preact/hooks';
import { ErrorBox, useAction } from '../components.tsx';

/** Small building blocks the scheduler pages share: selects, check boxes, list fields, a two-step delete. */

let controlIds = 0;
const useId = (prefix: string) => useState(() => `${prefix}-${++controlIds}`)[0];

/** A labelled select. */
export function SelectField(props: {
  label: string;
  value: string;
  options: Array<string | [string, string]>;
  onChange: (value: string) => void;
  disabled?: boolean;
  hint?: string;
}): JSX.Element {
  const id = useId('select');
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      <select
        id={id}
        value={props.value}
        disabled={props.disabled}
        onChange={(event) => props.onChange((event.currentTarget as HTMLSelectElement).value)}
      >
        {props.options.map((option) => {
          const [value, text] = typeof option === 'string' ? [option, option] : option;
          return (
            <option key={value} value={value}>
              {text}
            </option>
          );
        })}
      </select>
      {props.hint ? <small class="hint">{props.hint}</small> : null}
    </div>
  );
}

/** A labelled check box. */
export function CheckField({
  label,
  checked,
  onChange,
  disabled,
}: {
  label: string;
  checked: boolean;
  onChange: (value: boolean) => void;
  disabled?: boolean;
}): JSX.Element {
  const id = useId('check');
  return (
    <div class="check-field">
      <input
        id={id}
        type="checkbox"
        checked={checked}
        disabled={disabled}
        onChange={(event) => onChange((event.currentTarget as HTMLInputElement).checked)}
      />
      <label for={id}>{label}</label>
    </div>
  );
}

/** "a, b\nc" → ["a", "b", "c"]: list fields are typed comma- or line-separated. */
export const splitList = (text: string): string[] =>
  text
    .split(/[,\n]/)
    .map((item) => item.trim())
    .filter(Boolean);

export const joinList = (items: readonly string[] | null | undefined): string => (items ?? []).join(', ');

/** "claim = name" lines ↔ a map (claim names may hold `/`, as JSON pointers do; the name is after the last `=`). */
export function parseMapping(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const at = line.lastIndexOf('=');
    if (at < 0) throw new Error(`"${line.trim()}" is not of the form claim = name`);
    out[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  return out;
}

export const formatMapping = (map: Record<string, string> | null | undefined): string =>
  Object.entries(map ?? {})
    .map(([claim, name]) => `${claim} = ${name}`)
    .join('\n');

/**
 * A delete button that asks once more in place (no browser dialog): the first press shows "Confirm delete" and
 * "Cancel"; the API's refusal is shown under it.
 */
export function DeleteButton({ what, onDelete }: { what: string; onDelete: () => Promise<void> }): JSX.Element {
  const [asking, setAsking] = useState(false);
  const action = useAction();
  return (
    <div class="delete-control">
      {asking ? (
        <span class="actions">
          <button type="button" class="danger" disabled={action.busy} onClick={() => void action.run(onDelete)}>
            Confirm delete
          </button>
          <button type="button" class="secondary" onClick={() => setAsking(false)}>
            Cancel
          </button>
        </span>
      ) : (
        <button type="button" class="danger" aria-label={`Delete ${what}`} onClick={() => setAsking(true)}>
          Delete
        </button>
      )}
      <ErrorBox error={action.error} />
    </div>
  );
}

/** A form whose submit runs an API call, showing the service's refusal above its buttons. */
export function ActionForm({
  label,
  submit,
  onSubmit,
  children,
}: {
  label: string;
  submit: string;
  onSubmit: () => Promise<void>;
  children: ComponentChildren;
}): JSX.Element {
  const action = useAction();
  return (
    <form
      aria-label={label}
      onSubmit={(event) => {
        event.preventDefault();
        void action.run(onSubmit);
      }}
    >
      {children}
      <ErrorBox error={action.error} />
      <div class="actions">
        <button type="submit" disabled={action.busy}>
          {submit}
        </button>
      </div>
    </form>
  );
}

/** A yes/no badge. */
export const YesNo = ({
  value,
  yes = 'yes',
  no = 'no',
}: {
  value: boolean;
  yes?: string;
  no?: string;
}): JSX.Element => <span class={`badge ${value ? 'good' : 'bad'}`}>{value ? yes : no}</span>;

/** The edit panel of a scheduler object's page: its form, and "Saved." once a save went through. */
export function EditPanel({ saved, children }: { saved: boolean; children: ComponentChildren }): JSX.Element {
  return (
    <section class="panel" aria-label="Edit">
      <h2>Edit</h2>
      {saved ? (
        <div class="success" role="status">
          Saved.
        </div>
      ) : null}
      {children}
    </section>
  );
}
