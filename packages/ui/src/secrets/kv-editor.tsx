import type { ComponentChildren, JSX } from 'preact';
import { useState } from 'preact/hooks';
import { ErrorBox, useAction } from '../components.tsx';

/** A secret's data edited as key/value rows or as JSON (a toggle), with check-and-set for kv version 2. */
interface Row {
  key: string;
  value: string;
  /** A value that is not text (a number, an object): edited as its JSON. */
  json: boolean;
}

const toRows = (data: Record<string, unknown>): Row[] => {
  const rows = Object.entries(data).map(([key, value]) =>
    typeof value === 'string' ? { key, value, json: false } : { key, value: JSON.stringify(value), json: true },
  );
  return rows.length ? rows : [{ key: '', value: '', json: false }];
};

function fromRows(rows: Row[]): Record<string, unknown> {
  const data: Record<string, unknown> = {};
  rows.forEach((row, index) => {
    if (!row.key && !row.value) return;
    if (!row.key) throw new Error(`row ${index + 1} has a value but no key`);
    if (row.key in data) throw new Error(`key "${row.key}" is given twice`);
    try {
      data[row.key] = row.json ? JSON.parse(row.value) : row.value;
    } catch {
      throw new Error(`the value of "${row.key}" is not valid JSON`);
    }
  });
  return data;
}

function fromJson(text: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new Error(`the JSON is not valid: ${(error as Error).message}`);
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new Error('the JSON must be an object of keys and values');
  return parsed as Record<string, unknown>;
}

export interface CasChoice {
  /** The metadata's `cas_required` (or the mount's): check-and-set is always sent. */
  required: boolean;
  /** The version the new one must follow (0: the secret must not exist yet). */
  current: number;
}

export function KvEditor(props: {
  initial: Record<string, unknown>;
  cas?: CasChoice;
  submitLabel: string;
  onSave: (data: Record<string, unknown>, cas: number | undefined) => Promise<void>;
  onCancel?: () => void;
  /** Fields shown first in the same form (a new secret's path), so Enter in them submits too. */
  children?: ComponentChildren;
}): JSX.Element {
  const [mode, setMode] = useState<'rows' | 'json'>('rows');
  const [rows, setRows] = useState<Row[]>(() => toRows(props.initial));
  const [json, setJson] = useState(() => JSON.stringify(props.initial, null, 2));
  const [showValues, setShowValues] = useState(false);
  const [useCas, setUseCas] = useState(props.cas?.required ?? false);
  const [casVersion, setCasVersion] = useState(String(props.cas?.current ?? 0));
  const action = useAction();
  const switchTo = (next: 'rows' | 'json') => {
    if (next === mode) return;
    void action.run(async () => {
      if (next === 'json') setJson(JSON.stringify(fromRows(rows), null, 2));
      else setRows(toRows(fromJson(json)));
      setMode(next);
    });
  };
  const setRow = (index: number, change: Partial<Row>) =>
    setRows(rows.map((row, at) => (at === index ? { ...row, ...change } : row)));
  const submit = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      const data = mode === 'rows' ? fromRows(rows) : fromJson(json);
      const cas = props.cas && (useCas || props.cas.required) ? Number(casVersion) : undefined;
      if (cas !== undefined && !(Number.isInteger(cas) && cas >= 0))
        throw new Error('the check-and-set version must be a whole number');
      await props.onSave(data, cas);
    });
  };
  return (
    <form onSubmit={submit} class="kv-editor" aria-label="Secret data">
      {props.children}
      <fieldset class="plain actions" aria-label="Edit as">
        <button type="button" class="secondary small" aria-pressed={mode === 'rows'} onClick={() => switchTo('rows')}>
          Key/value rows
        </button>
        <button type="button" class="secondary small" aria-pressed={mode === 'json'} onClick={() => switchTo('json')}>
          JSON
        </button>
      </fieldset>
      {mode === 'rows' ? (
        <>
          {rows.map((row, index) => (
            <div class="row kv-row" key={index}>
              <input
                aria-label={`Key ${index + 1}`}
                value={row.key}
                placeholder="key"
                onInput={(event) => setRow(index, { key: event.currentTarget.value })}
              />
              <input
                aria-label={`Value ${index + 1}`}
                type={(showValues ? 'text' : 'password') as 'text'}
                autocomplete="off"
                value={row.value}
                placeholder={row.json ? 'JSON value' : 'value'}
                onInput={(event) => setRow(index, { value: event.currentTarget.value })}
              />
              <button
                type="button"
                class="secondary small"
                aria-label={`Remove row ${index + 1}`}
                onClick={() => setRows(rows.filter((_, at) => at !== index))}
              >
                Remove
              </button>
            </div>
          ))}
          <div class="actions">
            <button
              type="button"
              class="secondary small"
              onClick={() => setRows([...rows, { key: '', value: '', json: false }])}
            >
              Add row
            </button>
            <label class="check">
              <input
                type="checkbox"
                checked={showValues}
                onChange={(event) => setShowValues(event.currentTarget.checked)}
              />{' '}
              Show values
            </label>
          </div>
        </>
      ) : (
        <div class="field">
          <label for="kv-json">Secret data (JSON)</label>
          <textarea
            id="kv-json"
            rows={10}
            spellcheck={false}
            value={json}
            onInput={(event) => setJson(event.currentTarget.value)}
          />
        </div>
      )}
      {props.cas ? (
        <div class="row">
          <label class="check">
            <input
              type="checkbox"
              checked={useCas || props.cas.required}
              disabled={props.cas.required}
              onChange={(event) => setUseCas(event.currentTarget.checked)}
            />{' '}
            Check-and-set{props.cas.required ? ' (required for this secret)' : ''}
          </label>
          {useCas || props.cas.required ? (
            <div class="field">
              <label for="kv-cas">Only if the current version is</label>
              <input
                id="kv-cas"
                inputMode="numeric"
                value={casVersion}
                onInput={(event) => setCasVersion(event.currentTarget.value)}
              />
            </div>
          ) : null}
        </div>
      ) : null}
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
