import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { ErrorBox, Field, formatSeconds, useAction } from '../components.tsx';

/** The fields of an engine's config or role, as a form: what is shown, what is sent, what is never read back. */
export interface FieldSpec {
  /** The API's field name. */
  name: string;
  label: string;
  kind?: 'text' | 'password' | 'textarea' | 'bool' | 'select' | 'list' | 'duration';
  options?: string[];
  hint?: string;
  required?: boolean;
  /** Set when the item is created, never changed after: left out of the edit form. */
  createOnly?: boolean;
  /** A secret the API never returns: empty in the form, and not sent while empty (the stored one is kept). */
  writeOnly?: boolean;
}

export type FormValues = Record<string, string | boolean>;

/** The form's starting values from what the API read (or nothing, for a new item). */
export function valuesFrom(fields: FieldSpec[], data: Record<string, unknown> = {}): FormValues {
  const values: FormValues = {};
  for (const field of fields) {
    const value = field.writeOnly ? undefined : data[field.name];
    if (field.kind === 'bool') values[field.name] = value === true;
    else if (Array.isArray(value)) values[field.name] = value.join(', ');
    else if (value === undefined || value === null)
      values[field.name] = field.kind === 'select' ? (field.options?.[0] ?? '') : '';
    else values[field.name] = typeof value === 'object' ? JSON.stringify(value) : String(value);
  }
  return values;
}

/**
 * What a write sends: every filled-in field, a field emptied by the person (as empty), and every checkbox; an empty
 * write-only field is left out so the stored secret stays. Lists go as arrays (comma or line separated in the form).
 */
export function bodyFrom(fields: FieldSpec[], values: FormValues, initial: FormValues): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const field of fields) {
    const value = values[field.name];
    if (typeof value === 'boolean') {
      body[field.name] = value;
      continue;
    }
    const text = value ?? '';
    if (text.trim() === '' && (field.writeOnly || (initial[field.name] ?? '') === '')) continue;
    body[field.name] = field.kind === 'list' ? splitList(text) : text;
  }
  return body;
}

const splitList = (text: string) =>
  text
    .split(/[,\n]/)
    .map((item) => item.trim())
    .filter((item) => item !== '');

let ids = 0;
const useId = () => useState(() => `engine-field-${++ids}`)[0];

function CheckField({
  label,
  checked,
  onChange,
  hint,
}: {
  label: string;
  checked: boolean;
  onChange: (value: boolean) => void;
  hint?: string;
}): JSX.Element {
  const id = useId();
  return (
    <div class="field check-field">
      <label for={id}>
        <input
          id={id}
          type="checkbox"
          checked={checked}
          onChange={(event) => onChange((event.currentTarget as HTMLInputElement).checked)}
        />{' '}
        {label}
      </label>
      {hint ? <small class="hint">{hint}</small> : null}
    </div>
  );
}

function SelectField({
  label,
  value,
  options,
  onChange,
  hint,
}: {
  label: string;
  value: string;
  options: string[];
  onChange: (value: string) => void;
  hint?: string;
}): JSX.Element {
  const id = useId();
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <select id={id} value={value} onChange={(event) => onChange((event.currentTarget as HTMLSelectElement).value)}>
        {options.map((option) => (
          <option key={option} value={option}>
            {option}
          </option>
        ))}
      </select>
      {hint ? <small class="hint">{hint}</small> : null}
    </div>
  );
}

/** One field of a `SpecForm`. */
export function SpecField({
  field,
  value,
  onChange,
}: {
  field: FieldSpec;
  value: string | boolean;
  onChange: (value: string | boolean) => void;
}): JSX.Element {
  if (field.kind === 'bool')
    return <CheckField label={field.label} checked={value === true} onChange={onChange} hint={field.hint} />;
  if (field.kind === 'select')
    return (
      <SelectField
        label={field.label}
        value={String(value)}
        options={field.options ?? []}
        onChange={onChange}
        hint={field.hint}
      />
    );
  const hint = field.writeOnly
    ? [field.hint, 'Never shown; leave empty to keep the stored value.'].filter(Boolean).join(' ')
    : field.hint;
  return (
    <Field
      label={field.label}
      name={field.name}
      value={String(value)}
      onInput={onChange}
      type={field.kind === 'password' ? 'password' : 'text'}
      multiline={field.kind === 'textarea'}
      rows={6}
      required={field.required}
      hint={field.kind === 'list' ? [hint, 'Separate items with commas.'].filter(Boolean).join(' ') : hint}
      autocomplete={field.kind === 'password' ? 'new-password' : 'off'}
    />
  );
}

/** A value as read from the API, for a details row. */
export function shownValue(value: unknown, kind?: FieldSpec['kind']): string {
  if (value === undefined || value === null || value === '') return '—';
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  if (kind === 'duration' && typeof value === 'number')
    return value === 0 ? '0 s' : `${formatSeconds(value)} (${value} s)`;
  if (Array.isArray(value)) return value.length ? value.join(', ') : '—';
  if (typeof value === 'object' && Object.values(value).every(Array.isArray)) {
    // A map of lists (a roleset's bindings: resource → roles), one entry a line.
    return Object.entries(value as Record<string, unknown[]>)
      .map(([key, items]) => `${key}: ${items.join(', ')}`)
      .join('\n');
  }
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/**
 * The create or edit form of a config or role: the fields (without the create-only ones when editing), the API's
 * refusal as it worded it, and submit on Enter.
 */
export function SpecForm(props: {
  label: string;
  fields: FieldSpec[];
  initial: FormValues;
  editing: boolean;
  submitLabel: string;
  /** Sends the body; a refusal is shown above the buttons. */
  onSubmit: (body: Record<string, unknown>) => Promise<void>;
  onCancel?: () => void;
  /** Fields before the spec's (e.g. the new item's name). */
  children?: JSX.Element | null;
}): JSX.Element {
  const [values, setValues] = useState<FormValues>(props.initial);
  const action = useAction();
  const shown = props.fields.filter((field) => !(props.editing && field.createOnly));
  const submit = (event: Event) => {
    event.preventDefault();
    void action.run(() => props.onSubmit(bodyFrom(shown, values, props.initial)));
  };
  return (
    <form onSubmit={submit} aria-label={props.label}>
      {props.children}
      {shown.map((field) => (
        <SpecField
          key={field.name}
          field={field}
          value={values[field.name] ?? ''}
          onChange={(value) => setValues((previous) => ({ ...previous, [field.name]: value }))}
        />
      ))}
      <ErrorBox error={action.error} />
      <div class="actions">
        <button type="submit" disabled={action.busy}>
          {props.submitLabel}
        </button>
        {props.onCancel ? (
          <button type="button" class="secondary" onClick={props.onCancel}>
            Cancel
          </button>
        ) : null}
      </div>
    </form>
  );
}

/** The rows of a read answer: each field by its form label where it has one, its value as `shownValue` prints it. */
export function readRows(fields: FieldSpec[], data: Record<string, unknown>): Array<[string, string]> {
  return Object.entries(data).map(([key, value]) => {
    const field = fields.find((candidate) => candidate.name === key);
    return [field?.label ?? key.replace(/_/g, ' '), shownValue(value, field?.kind)];
  });
}
