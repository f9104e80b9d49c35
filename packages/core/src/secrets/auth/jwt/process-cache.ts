import type { Clock } from '../../../lib/clock.ts';

/**
 * How long a process trusts what it read of a mount's config and roles: the mount table's rule (writes are
 * seen at once by the writing process and within this many seconds by every other Lambda).
 */
export const cacheSeconds = 5;

/** A small per-process cache whose entries age on the system clock (`request.system.clock`), so tests that move time see re-reads. */
export class ProcessCache<Value> {
  private readonly entries = new Map<string, { value: Value; loadedAt: number }>();

  constructor(private readonly maxEntries = 10_000) {}

  async get(key: string, clock: Clock, load: () => Promise<Value>): Promise<Value> {
    const now = clock.now();
    const hit = this.entries.get(key);
    if (hit && now - hit.loadedAt >= 0 && now - hit.loadedAt < cacheSeconds * 1000) return hit.value;
    const value = await load();
    this.set(key, value, clock);
    return value;
  }

  set(key: string, value: Value, clock: Clock): void {
    if (this.entries.size >= this.maxEntries) this.entries.clear();
    this.entries.set(key, { value, loadedAt: clock.now() });
  }

  delete(key: string): void {
    this.entries.delete(key);
  }
}
