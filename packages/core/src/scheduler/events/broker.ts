/**
 * The event buffer as a process sees it. Events live in the table (written in the same transaction as their
 * write), so every process, and every Lambda, reads the same ordered buffer. One poller per process reads
 * new batches into a bounded in-memory window and wakes the subscribers; a subscriber behind the window
 * reads its backlog from the table. Subscribers pull at their own pace: a slow reader never blocks a writer.
 */
import type { SchedulerEvent, SchedulerState } from '../state.ts';

export interface EventBatch {
  index: number;
  events: SchedulerEvent[];
  /** Epoch seconds after which the batch has left the buffer. */
  expiresAt: number;
}

export interface BrokerOptions {
  /** How often the poller looks for other processes' events (ms). */
  pollMs: number;
  /** Batches kept in memory (default 4096). */
  windowSize?: number;
}

export class EventBroker {
  private window: EventBatch[] = [];
  /** The window holds every buffered batch with an index above this. */
  private floor: number | undefined;
  private latest = 0;
  private readonly waiters = new Set<() => void>();
  private subscribers = 0;
  private timer: NodeJS.Timeout | undefined;
  private refreshing: Promise<void> | undefined;
  private unlisten: (() => void) | undefined;

  constructor(
    private readonly state: SchedulerState,
    private readonly options: BrokerOptions,
  ) {}

  /** Batches after `cursor`, oldest first (from the window when it reaches back that far, else from the table). */
  async after(cursor: number): Promise<EventBatch[]> {
    if (this.floor === undefined) await this.refresh();
    if (this.floor !== undefined && cursor >= this.floor) {
      const nowSeconds = Math.floor(this.state.clock.now() / 1000);
      return this.window.filter((batch) => batch.index > cursor && batch.expiresAt > nowSeconds);
    }
    return this.state.eventsAfter(cursor);
  }

  /** Resolves when new batches may be available, or after `timeoutMs`. */
  wait(timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      this.waiters.add(done);
    });
  }

  /** Registers a live reader; the poller runs while there is one. Returns the release function. */
  attach(): () => void {
    this.subscribers++;
    if (this.subscribers === 1) {
      this.unlisten = this.state.onChange(() => void this.poll());
      this.schedule();
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.subscribers--;
      if (this.subscribers === 0) {
        clearTimeout(this.timer);
        this.unlisten?.();
      }
    };
  }

  private schedule(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.poll(), this.options.pollMs);
  }

  private async poll(): Promise<void> {
    try {
      await this.refresh();
    } catch {
      // A failed read is retried at the next poll.
    }
    if (this.subscribers > 0) this.schedule();
  }

  private refresh(): Promise<void> {
    this.refreshing ??= (async () => {
      try {
        if (this.floor === undefined) {
          this.latest = await this.state.tableIndex(['events']);
          this.floor = this.latest;
          return;
        }
        const fresh = await this.state.eventsAfter(this.latest);
        if (fresh.length === 0) return;
        this.window.push(...fresh);
        this.latest = fresh[fresh.length - 1]?.index ?? this.latest;
        const limit = this.options.windowSize ?? 4096;
        if (this.window.length > limit) {
          const dropped = this.window.splice(0, this.window.length - limit);
          this.floor = dropped[dropped.length - 1]?.index ?? this.floor;
        }
        for (const wake of [...this.waiters]) wake();
      } finally {
        this.refreshing = undefined;
      }
    })();
    return this.refreshing;
  }
}
