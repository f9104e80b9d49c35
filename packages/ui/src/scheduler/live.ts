import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, type ApiPath, requestHeaders, serviceUrl, withQuery } from '../api.ts';
import type { Loaded } from '../components.tsx';
import { readEventStream, topicsStreamPath } from './event-stream.ts';

/**
 * A scheduler read kept current, as Nomad's own UI keeps its pages: the answer and its `X-Nomad-Index`, then either
 * the event stream of `topic` (`Topic` or `Topic:Key`; every batch after that index reloads the read; topics such as `NodePool` are for
 * management tokens only) or, when there is no topic or the stream is refused, the read itself as a blocking query
 * (`?index=<n>&wait=…`), which answers when the data passes the index it has. Leaving the page aborts both.
 */

export type LiveMode = 'loading' | 'stream' | 'blocking' | 'stopped';

export interface LiveLoaded<T> extends Loaded<T> {
  /** How the page learns of changes now. */
  mode: LiveMode;
}

/** How long one blocking read may wait (below API Gateway's limit; the service may answer earlier). */
const waitSeconds = 25;
const backoffMs = (attempt: number) => Math.min(500 * 2 ** attempt, 10_000);

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });

/** A GET of the scheduler with its index header. */
async function readWithIndex<T>(
  path: ApiPath,
  signal: AbortSignal,
  after?: number,
): Promise<{ data: T; index: number }> {
  const url = after === undefined ? path : withQuery(path, { index: after, wait: `${waitSeconds}s` });
  const response = await fetch(serviceUrl('scheduler', url), { headers: requestHeaders('scheduler'), signal });
  const text = await response.text();
  if (response.status >= 400) throw new ApiError(response.status, text.trim() ? [text.trim()] : []);
  return {
    data: (text ? JSON.parse(text) : undefined) as T,
    index: Number(response.headers.get('X-Nomad-Index') ?? 0),
  };
}

/** How a live page reads its data: once, and as a blocking query after an index (undefined: nothing changed). */
interface LiveReader<T> {
  read: (signal: AbortSignal) => Promise<{ data: T; index: number }>;
  block: (signal: AbortSignal, after: number) => Promise<{ data: T; index: number } | undefined>;
}

/**
 * `topic`: `Topic` or `Topic:Key`, or several of them followed on one stream. `namespace`: the stream's (`*` for a
 * page across namespaces; the service's `default` when none).
 */
export function useLive<T>(path: ApiPath, topic?: string | readonly string[], namespace?: string): LiveLoaded<T> {
  return useLiveReader<T>(
    {
      read: (signal) => readWithIndex<T>(path, signal),
      block: async (signal, after) => {
        const fresh = await readWithIndex<T>(path, signal, after);
        return fresh.index === after ? undefined : fresh;
      },
    },
    path,
    topic,
    namespace,
  );
}

/**
 * Several reads kept current together (a job's page: the job, its allocations, its evaluations …): one stream of
 * `topics` for all of them (a browser holds six connections to a host: one stream per read would starve the page),
 * every read again on each batch; without the stream, a blocking query of each at once, all read again when one
 * answers with a newer index.
 */
export function useLiveReads<T extends Record<string, unknown>>(
  paths: { [K in keyof T]: ApiPath },
  topics: readonly string[],
  namespace?: string,
): LiveLoaded<T> {
  const names = Object.keys(paths) as Array<keyof T & string>;
  const readAll = async (signal: AbortSignal) => {
    const answers = await Promise.all(names.map((name) => readWithIndex<unknown>(paths[name], signal)));
    const data = Object.fromEntries(names.map((name, at) => [name, answers[at]?.data])) as T;
    return { data, index: Math.max(0, ...answers.map((answer) => answer.index)) };
  };
  return useLiveReader<T>(
    {
      read: readAll,
      block: async (signal, after) => {
        const each = new AbortController();
        const stop = () => each.abort();
        signal.addEventListener('abort', stop);
        try {
          const first = await Promise.race(
            names.map((name) => readWithIndex<unknown>(paths[name], each.signal, after)),
          );
          if (first.index === after) return undefined;
        } finally {
          each.abort();
          signal.removeEventListener('abort', stop);
        }
        return readAll(signal);
      },
    },
    JSON.stringify(paths),
    topics,
    namespace,
  );
}

function useLiveReader<T>(
  reader: LiveReader<T>,
  readKey: string,
  topic: string | readonly string[] | undefined,
  namespace: string | undefined,
): LiveLoaded<T> {
  const [state, setState] = useState<{ data: T | undefined; error: unknown; loading: boolean; mode: LiveMode }>({
    data: undefined,
    error: undefined,
    loading: true,
    mode: 'loading',
  });
  const [tick, setTick] = useState(0);
  const reload = useCallback(() => setTick((value) => value + 1), []);
  const index = useRef(0);
  const topics = topic === undefined ? undefined : typeof topic === 'string' ? [topic] : [...topic];
  const topicKey = topics?.join('\n');
  // The reader is remade on each render; the effect runs again only when what it reads changes.
  const current = useRef(reader);
  current.current = reader;

  useEffect(() => {
    const controller = new AbortController();
    const { signal } = controller;
    const { read, block } = current.current;
    const show = (data: T, at: number, mode?: LiveMode) => {
      index.current = at;
      setState((previous) => ({ data, error: undefined, loading: false, mode: mode ?? previous.mode }));
    };
    void (async () => {
      try {
        const first = await read(signal);
        show(first.data, first.index);
      } catch (error) {
        if (!signal.aborted) setState({ data: undefined, error, loading: false, mode: 'stopped' });
        return;
      }
      // One re-read at a time, and one more after it when events arrived meanwhile: a slower, older read never
      // lands after a newer one.
      let reading = false;
      let pending = 0;
      const refresh = (batchIndex: number) => {
        pending = Math.max(pending, batchIndex);
        if (reading) return;
        reading = true;
        const wanted = pending;
        read(signal)
          .then(
            (fresh) => show(fresh.data, Math.max(fresh.index, wanted)),
            (error: unknown) => {
              // Gone (purged, deleted) or no longer readable: say so rather than keep showing what was.
              if (!signal.aborted && error instanceof ApiError && (error.status === 404 || error.status === 403))
                setState((previous) => ({ ...previous, error }));
            },
          )
          .finally(() => {
            reading = false;
            if (pending > wanted && !signal.aborted) refresh(pending);
          });
      };
      let useStream = topics !== undefined && topics.length > 0;
      let attempt = 0;
      while (!signal.aborted) {
        try {
          if (useStream && topics) {
            setState((previous) => ({ ...previous, mode: 'stream' }));
            await readEventStream(topicsStreamPath(topics, index.current, namespace), signal, {
              onOpen: () => {
                attempt = 0;
              },
              onHeartbeat: () => undefined,
              onBatch: (batchIndex) => {
                if (batchIndex > index.current) refresh(batchIndex);
              },
            });
          } else {
            setState((previous) => ({ ...previous, mode: 'blocking' }));
            const fresh = await block(signal, index.current);
            attempt = 0;
            if (fresh) show(fresh.data, fresh.index);
            continue;
          }
        } catch (error) {
          if (signal.aborted) return;
          if (useStream && error instanceof ApiError && error.status >= 400 && error.status < 500) {
            // The token may read the data but not its topic (or the service refuses the filter, such as a key with
            // a colon): follow the read itself instead.
            useStream = false;
            continue;
          }
          if (error instanceof ApiError && error.status < 500 && !useStream) {
            setState((previous) => ({ ...previous, error, mode: 'stopped' }));
            return;
          }
        }
        await sleep(backoffMs(attempt++), signal);
      }
    })();
    return () => controller.abort();
  }, [readKey, topicKey, namespace, tick]);

  return { ...state, reload };
}
