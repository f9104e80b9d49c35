import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, type ApiPath, requestHeaders, serviceUrl, withQuery } from '../api.ts';
import type { Loaded } from '../components.tsx';
import { readEventStream, streamPath } from './event-stream.ts';

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

/** `namespace`: the stream's (`*` for a page across namespaces; the service's `default` when none). */
export function useLive<T>(path: ApiPath, topic?: string, namespace?: string): LiveLoaded<T> {
  const [state, setState] = useState<{ data: T | undefined; error: unknown; loading: boolean; mode: LiveMode }>({
    data: undefined,
    error: undefined,
    loading: true,
    mode: 'loading',
  });
  const [tick, setTick] = useState(0);
  const reload = useCallback(() => setTick((value) => value + 1), []);
  const index = useRef(0);

  useEffect(() => {
    const controller = new AbortController();
    const { signal } = controller;
    const show = (data: T, at: number, mode?: LiveMode) => {
      index.current = at;
      setState((previous) => ({ data, error: undefined, loading: false, mode: mode ?? previous.mode }));
    };
    void (async () => {
      try {
        const first = await readWithIndex<T>(path, signal);
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
        readWithIndex<T>(path, signal)
          .then(
            (fresh) => show(fresh.data, Math.max(fresh.index, wanted)),
            () => undefined,
          )
          .finally(() => {
            reading = false;
            if (pending > wanted && !signal.aborted) refresh(pending);
          });
      };
      let useStream = topic !== undefined;
      let attempt = 0;
      while (!signal.aborted) {
        try {
          if (useStream && topic) {
            setState((previous) => ({ ...previous, mode: 'stream' }));
            const [topicName = '*', key = '*'] = topic.split(':');
            await readEventStream(streamPath(topicName, key, index.current, namespace), signal, {
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
            const fresh = await readWithIndex<T>(path, signal, index.current);
            attempt = 0;
            if (fresh.index !== index.current) show(fresh.data, fresh.index);
            continue;
          }
        } catch (error) {
          if (signal.aborted) return;
          if (useStream && error instanceof ApiError && error.status === 403) {
            // The token may read the data but not its topic: follow the read itself instead.
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
  }, [path, topic, namespace, tick]);

  return { ...state, reload };
}
