import type { ComponentChildren, JSX } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { ApiError } from './api.ts';

/** Shared building blocks of every page: loading an API answer, showing its error, forms, tables, hidden values. */

export interface Loaded<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => void;
}

/** Runs `load` when `deps` change (and on `reload`), keeping its answer or its error. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data: T | undefined; error: unknown; loading: boolean }>({
    data: undefined,
    error: undefined,
    loading: true,
  });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let current = true;
    setState((previous) => ({ ...previous, loading: true }));
    load().then(
      (data) => current && setState({ data, error: undefined, loading: false }),
      (error: unknown) => current && setState({ data: undefined, error, loading: false }),
    );
    return () => {
      current = false;
    };
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((value) => value + 1), []);
  return { ...state, reload };
}

/** Runs an action from a button or form, showing its error and disabling the control while it runs. */
export function useAction(): {
  busy: boolean;
  error: unknown;
  run: (action: () => Promise<void>) => Promise<void>;
  clear: () => void;
} {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const run = useCallback(async (action: () => Promise<void>) => {
    setBusy(true);
    setError(undefined);
    try {
      await action();
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, error, run, clear: () => setError(undefined) };
}

/** An API refusal as the service worded it, with its status; any other failure by its message. */
export function ErrorBox({ error }: { error: unknown }): JSX.Element | null {
  if (error === undefined || error === null) return null;
  if (error instanceof ApiError) {
    return (
      <div class="error" role="alert">
        <strong>{error.status === 403 ? 'Permission denied' : `Error ${error.status}`}</strong>
        {error.messages.length ? (
          <ul>
            {error.messages.map((message) => (
              <li key={message}>{message}</li>
            ))}
          </ul>
        ) : null}
        <span class="status">HTTP {error.status}</span>
      </div>
    );
  }
  return (
    <div class="error" role="alert">
      <strong>Error</strong> {error instanceof Error ? error.message : String(error)}
    </div>
  );
}

/** Shows a load's error, a loading line, or its content. */
export function Loading<T>({
  loaded,
  children,
}: {
  loaded: Loaded<T>;
  children: (data: T) => ComponentChildren;
}): JSX.Element {
  if (loaded.error !== undefined) return <ErrorBox error={loaded.error} />;
  if (loaded.loading && loaded.data === undefined) return <p class="loading">Loading…</p>;
  return <>{loaded.data === undefined ? null : children(loaded.data)}</>;
}

export function Page({
  title,
  actions,
  children,
}: {
  title: string;
  actions?: ComponentChildren;
  children: ComponentChildren;
}): JSX.Element {
  useEffect(() => {
    document.title = `${title} · Keyhaven`;
  }, [title]);
  return (
    <section class="page">
      <header class="page-header">
        <h1>{title}</h1>
        {actions ? <div class="actions">{actions}</div> : null}
      </header>
      {children}
    </section>
  );
}

let fieldIds = 0;
/** A labelled input; `multiline` makes a textarea. */
export function Field(props: {
  label: string;
  value: string;
  onInput: (value: string) => void;
  type?: string;
  multiline?: boolean;
  rows?: number;
  placeholder?: string;
  required?: boolean;
  hint?: string;
  name?: string;
  autocomplete?: string;
}): JSX.Element {
  const [id] = useState(() => `field-${++fieldIds}`);
  const common = {
    id,
    name: props.name ?? props.label,
    value: props.value,
    placeholder: props.placeholder,
    required: props.required,
    onInput: (event: Event) => props.onInput((event.currentTarget as HTMLInputElement).value),
  };
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      {props.multiline ? (
        <textarea {...common} rows={props.rows ?? 8} spellcheck={false} />
      ) : (
        <input {...common} type={(props.type ?? 'text') as 'text'} autocomplete={props.autocomplete ?? 'off'} />
      )}
      {props.hint ? <small class="hint">{props.hint}</small> : null}
    </div>
  );
}

/** A value hidden until the person reveals it (secrets are never shown by default). */
export function SecretValue({ value, label }: { value: string; label: string }): JSX.Element {
  const [shown, setShown] = useState(false);
  return (
    <span class="secret-value">
      <code>{shown ? value : '••••••••'}</code>
      <button
        type="button"
        class="small"
        aria-label={`${shown ? 'Hide' : 'Reveal'} ${label}`}
        onClick={() => setShown(!shown)}
      >
        {shown ? 'Hide' : 'Reveal'}
      </button>
    </span>
  );
}

/** Rows of name and value. */
export function Details({ rows }: { rows: Array<[string, ComponentChildren]> }): JSX.Element {
  return (
    <dl class="details">
      {rows.map(([name, value]) => (
        <div key={name}>
          <dt>{name}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  );
}

export function Json({ value }: { value: unknown }): JSX.Element {
  return <pre class="json">{JSON.stringify(value, null, 2)}</pre>;
}

/** A table from column names and rows of cells. */
export function Table({
  columns,
  rows,
  empty,
}: {
  columns: string[];
  rows: ComponentChildren[][];
  empty?: string;
}): JSX.Element {
  if (rows.length === 0) return <p class="empty">{empty ?? 'Nothing here yet.'}</p>;
  return (
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            {columns.map((column) => (
              <th key={column} scope="col">
                {column}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((row, index) => (
            <tr key={index}>
              {row.map((cell, cellIndex) => (
                <td key={cellIndex}>{cell}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** "1h2m" style durations from seconds, as the services print them. */
export function formatSeconds(seconds: number | undefined): string {
  if (seconds === undefined || seconds === null) return '—';
  if (seconds === 0) return 'never';
  const parts: string[] = [];
  let rest = Math.floor(seconds);
  for (const [unit, size] of [
    ['d', 86_400],
    ['h', 3_600],
    ['m', 60],
  ] as const) {
    if (rest >= size) {
      parts.push(`${Math.floor(rest / size)}${unit}`);
      rest %= size;
    }
  }
  if (rest || parts.length === 0) parts.push(`${rest}s`);
  return parts.join('');
}
