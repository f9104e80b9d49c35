/**
 * `Meta` of a node pool or a namespace: a map of strings, as Nomad's. Nomad sets no limit; here the keys and values
 * together are at most 64 KiB (an item is at most 400 KB, and a pool is copied into every event and node read), and
 * a key is never empty.
 */
import * as z from 'zod/mini';

export const maxMetaBytes = 64 * 1024;

export const metaSchema = (owner: string) =>
  z
    .nullish(z.record(z.string(), z.string()))
    .check(z.describe(`${owner}'s metadata: string keys and values, at most ${maxMetaBytes} bytes in all.`));

/** What is wrong with a meta map, or undefined. */
export function metaProblem(meta: Record<string, string> | null): string | undefined {
  if (!meta) return undefined;
  let bytes = 0;
  for (const [key, value] of Object.entries(meta)) {
    if (key === '') return 'Meta keys must not be empty';
    bytes += Buffer.byteLength(key) + Buffer.byteLength(value);
  }
  if (bytes > maxMetaBytes) return `Meta is ${bytes} bytes of keys and values, at most ${maxMetaBytes}`;
  return undefined;
}
