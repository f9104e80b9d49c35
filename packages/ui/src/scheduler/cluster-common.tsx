import type { JSX } from 'preact';
import type { LiveMode } from './live.ts';

/** What the cluster pages (node pools, namespaces, nodes) share: durations, meta fields, the live badge. */

/** Nanoseconds as Go prints a duration (`24h0m0s`, `1m30s`, `500ms`), which the service reads back. */
export function formatNanoseconds(nanoseconds: number): string {
  if (nanoseconds === 0) return '0s';
  if (nanoseconds < 1e9) {
    if (nanoseconds % 1e6 === 0) return `${nanoseconds / 1e6}ms`;
    if (nanoseconds % 1e3 === 0) return `${nanoseconds / 1e3}µs`;
    return `${nanoseconds}ns`;
  }
  const seconds = nanoseconds / 1e9;
  const hours = Math.floor(seconds / 3600);
  const minutes = Math.floor((seconds % 3600) / 60);
  const rest = Number((seconds % 60).toFixed(9));
  if (hours > 0) return `${hours}h${minutes}m${rest}s`;
  if (minutes > 0) return `${minutes}m${rest}s`;
  return `${rest}s`;
}

/** "key = value" lines → a meta map (null when there are none); the value is after the first `=`. */
export function parseMeta(text: string): Record<string, string> | null {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const at = line.indexOf('=');
    if (at < 0) throw new Error(`"${line.trim()}" is not of the form key = value`);
    out[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  return Object.keys(out).length > 0 ? out : null;
}

const liveText: Record<LiveMode, string> = {
  loading: 'Loading…',
  stream: 'Live (event stream)',
  blocking: 'Live (blocking queries)',
  stopped: 'Not updating',
};

/** Whether the page is following changes, and how. */
export function LiveBadge({ mode }: { mode: LiveMode }): JSX.Element {
  return (
    <p class="stream-status" role="status" aria-label="Updates">
      <span class={`badge ${mode === 'stream' || mode === 'blocking' ? 'good' : mode === 'stopped' ? 'bad' : ''}`}>
        {liveText[mode]}
      </span>
    </p>
  );
}
