import type { JSX } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from '../api.ts';
import { ErrorBox, Field, Json, Page } from '../components.tsx';
import { readEventStream, type SchedulerEvent, streamPath } from './event-stream.ts';
import { SelectField } from './common.tsx';

/**
 * `/ui/scheduler/events`: the event stream, live, newest first, with topic and key filters. The page keeps the last
 * index it saw; when the stream drops (or the person presses Reconnect, or resumes after Pause) it reconnects with
 * `index=<last index seen>`, and the service sends only the events after it: none is missed and none shown twice.
 * Leaving the page aborts the request.
 */

const topics = ['*', 'ACLToken', 'ACLPolicy', 'ACLRole', 'ACLAuthMethod', 'ACLBindingRule', 'NodePool', 'Node'];
/** How many events the page keeps. */
const keep = 500;
const backoffMs = (attempt: number) => Math.min(500 * 2 ** attempt, 10_000);

type Status = 'connecting' | 'open' | 'paused' | 'waiting' | 'stopped';
const statusText: Record<Status, string> = {
  connecting: 'Connecting…',
  open: 'Live',
  paused: 'Paused',
  waiting: 'Stream dropped; reconnecting…',
  stopped: 'Stopped',
};

interface Shown extends SchedulerEvent {
  /** Position in arrival order: a stable key. */
  seq: number;
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });

const withoutSeq = ({ seq: _seq, ...event }: Shown): SchedulerEvent => event;

export function EventsPage(): JSX.Element {
  const [filter, setFilter] = useState({ topic: '*', key: '*' });
  const [topic, setTopic] = useState('*');
  const [key, setKey] = useState('*');
  const [running, setRunning] = useState(true);
  const [generation, setGeneration] = useState(0);
  const [status, setStatus] = useState<Status>('connecting');
  const [note, setNote] = useState('');
  const [error, setError] = useState<unknown>(undefined);
  const [events, setEvents] = useState<Shown[]>([]);
  const [shownIndex, setShownIndex] = useState(0);
  const lastIndex = useRef(0);
  const seq = useRef(0);
  /** The filter the shown events and `lastIndex` belong to. */
  const shownFilter = useRef(filter);

  useEffect(() => {
    if (!running) {
      setStatus('paused');
      return;
    }
    if (shownFilter.current !== filter) {
      // A new filter starts from the buffer's beginning: the events shown were chosen by the old one. Done here,
      // after the old stream was aborted, so none of its batches can land in the new list.
      shownFilter.current = filter;
      lastIndex.current = 0;
      setShownIndex(0);
      setEvents([]);
    }
    const controller = new AbortController();
    const { signal } = controller;
    void (async () => {
      let attempt = 0;
      while (!signal.aborted) {
        setStatus('connecting');
        setError(undefined);
        let closing: string | undefined;
        try {
          closing = await readEventStream(streamPath(filter.topic, filter.key, lastIndex.current), signal, {
            onOpen: () => {
              attempt = 0;
              setStatus('open');
            },
            onHeartbeat: () => setStatus('open'),
            onBatch: (index, batch) => {
              // The service sends only batches after the index asked for; a batch seen already is never shown again.
              if (signal.aborted || index <= lastIndex.current) return;
              lastIndex.current = index;
              setShownIndex(index);
              const added = batch.map((event) => ({ ...event, seq: ++seq.current })).reverse();
              setEvents((previous) => [...added, ...previous].slice(0, keep));
            },
          });
        } catch (caught) {
          if (signal.aborted) return;
          if (caught instanceof ApiError && caught.status < 500) {
            // A refusal (403, a bad filter): retrying cannot help; the person may fix it and press Reconnect.
            setError(caught);
            setStatus('stopped');
            return;
          }
          setNote(caught instanceof Error ? caught.message : String(caught));
        }
        if (signal.aborted) return;
        if (closing !== undefined) setNote(`The service closed the stream: ${closing}`);
        setStatus('waiting');
        await sleep(backoffMs(attempt++), signal);
      }
    })();
    return () => controller.abort();
  }, [running, filter, generation]);

  const apply = (event: Event) => {
    event.preventDefault();
    setNote('');
    setFilter({ topic, key: key.trim() || '*' });
    setRunning(true);
  };

  return (
    <Page
      title="Event stream"
      actions={
        <>
          {running ? (
            <button type="button" class="secondary" onClick={() => setRunning(false)}>
              Pause
            </button>
          ) : (
            <button type="button" onClick={() => setRunning(true)}>
              Resume
            </button>
          )}
          <button
            type="button"
            class="secondary"
            onClick={() => {
              setNote('');
              setRunning(true);
              setGeneration((value) => value + 1);
            }}
          >
            Reconnect
          </button>
        </>
      }
    >
      <form class="row" onSubmit={apply} aria-label="Filter events">
        <SelectField label="Topic" value={topic} options={topics} onChange={setTopic} />
        <Field label="Key" value={key} onInput={setKey} />
        <button type="submit">Apply filter</button>
      </form>
      <p class="note">Key: an object's key or filter key (a role's ID or name, a policy's name), or * for all.</p>
      <p class="stream-status" role="status">
        <span class={`badge ${status === 'open' ? 'good' : status === 'stopped' || status === 'waiting' ? 'bad' : ''}`}>
          {statusText[status]}
        </span>{' '}
        Last index seen: <strong data-testid="last-index">{shownIndex}</strong> · {events.length} events shown
      </p>
      {note ? <p class="note">{note}</p> : null}
      <ErrorBox error={error} />
      {events.length === 0 ? (
        <p class="empty">No events yet: changes to ACL objects appear here as they are made.</p>
      ) : (
        <ol class="events" aria-label="Events, newest first">
          {events.map((event) => (
            <li key={event.seq} class="event">
              <div class="event-head">
                <span class="badge">{event.Topic}</span> <strong>{event.Type}</strong> <code>{event.Key}</code>{' '}
                <span class="note">index {event.Index}</span>
              </div>
              <details>
                <summary>Details</summary>
                <Json value={withoutSeq(event)} />
              </details>
            </li>
          ))}
        </ol>
      )}
    </Page>
  );
}
