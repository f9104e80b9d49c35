import { ApiError, type ApiPath, api, requestHeaders, serviceUrl, withQuery } from '../api.ts';

/**
 * The scheduler's event stream (`GET /v1/event/stream`): newline-delimited JSON over one long response, read with
 * `fetch` and the body's reader. `{}` lines are heartbeats; `{"Index": n, "Events": […]}` a batch; a line that is not
 * JSON is the service's last word before it ends the stream (Nomad's "subscription closed by server, …").
 */

export interface SchedulerEvent {
  Topic: string;
  Type: string;
  Key: string;
  Namespace?: string;
  FilterKeys?: string[] | null;
  Index: number;
  Payload?: unknown;
}

export interface StreamHandlers {
  /** The response arrived: the stream is open. */
  onOpen: () => void;
  onHeartbeat: () => void;
  onBatch: (index: number, events: SchedulerEvent[]) => void;
}

/** `event/stream?topic=<Topic>:<Key>&index=<n>`: the events after index `n`. */
export function streamPath(topic: string, key: string, afterIndex: number, namespace?: string): ApiPath {
  return topicsStreamPath([`${topic || '*'}:${key || '*'}`], afterIndex, namespace);
}

/** One stream of several topics (`Topic:Key` each), as one connection: `topic=Job:web&topic=Allocation:web`. */
export function topicsStreamPath(topics: readonly string[], afterIndex: number, namespace?: string): ApiPath {
  return withQuery(api`event/stream`, {
    topic: topics,
    index: afterIndex,
    ...(namespace ? { namespace } : {}),
  });
}

/**
 * Reads one stream until it ends; answers the closing message the service wrote, if any. Throws `ApiError` with the
 * service's text for a refusal (403, 400), and the fetch's error when the connection drops or `signal` aborts.
 */
export async function readEventStream(
  path: ApiPath,
  signal: AbortSignal,
  handlers: StreamHandlers,
): Promise<string | undefined> {
  const response = await fetch(serviceUrl('scheduler', path), {
    headers: requestHeaders('scheduler'),
    signal,
    cache: 'no-store',
  });
  if (response.status >= 400 || !response.body) {
    const text = (await response.text()).trim();
    throw new ApiError(response.status, text ? [text] : []);
  }
  handlers.onOpen();
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffered = '';
  let closing: string | undefined;
  const line = (text: string) => {
    const trimmed = text.trim();
    if (!trimmed) return;
    let parsed: { Index?: number; Events?: Array<Omit<SchedulerEvent, 'Index'>> };
    try {
      parsed = JSON.parse(trimmed);
    } catch {
      closing = trimmed;
      return;
    }
    if (parsed.Index === undefined || !Array.isArray(parsed.Events)) handlers.onHeartbeat();
    else {
      const index = parsed.Index;
      handlers.onBatch(
        index,
        parsed.Events.map((event) => ({ ...event, Index: index })),
      );
    }
  };
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buffered += decoder.decode(value, { stream: true });
    let newline = buffered.indexOf('\n');
    while (newline >= 0) {
      line(buffered.slice(0, newline));
      buffered = buffered.slice(newline + 1);
      newline = buffered.indexOf('\n');
    }
  }
  line(buffered + decoder.decode());
  return closing;
}
