/**
 * The node's allocation map, watched as Nomad's client watches it (`Node.GetClientAllocs`, a blocking query): each
 * answer is the map of allocation ID to modify index at the server's index; the next poll blocks until that index
 * passes. The first answer marks the node's allocations synced (it may then report `ready`). Part 1 has no jobs, so
 * the map stays empty; part 2 hands each changed allocation to an allocation runner from `onChanged`.
 */
import type { Log } from './log.ts';
import { type ProtocolClient, ProtocolError } from './protocol.ts';

export interface AllocWatcherOptions {
  client: ProtocolClient;
  nodeId: string;
  credential: () => string;
  log: Log;
  /** After the first answer. */
  onSynced: () => void;
  /** The server refused the node's credential or forgot the node: it must register again. */
  onRefused: () => void;
  /** Allocations added or changed (ID → modify index) and removed, after each answer that changed the map. */
  onChanged?: (changed: Record<string, number>, removed: string[]) => void;
  /** How long each poll may block (the server may answer sooner; default 30 s, what API Gateway can hold). */
  waitMs?: number;
}

export class AllocWatcher {
  private readonly stopping = new AbortController();
  private running: Promise<void> | undefined;
  private index = 0;
  private known: Record<string, number> = {};
  synced = false;

  constructor(private readonly options: AllocWatcherOptions) {}

  start(): void {
    this.running ??= this.loop();
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    await this.running;
  }

  get allocations(): Readonly<Record<string, number>> {
    return this.known;
  }

  private async loop(): Promise<void> {
    const { client, nodeId, log } = this.options;
    let failures = 0;
    while (!this.stopping.signal.aborted) {
      try {
        const answer = await client.allocations(
          nodeId,
          this.options.credential(),
          this.index,
          this.options.waitMs ?? 30_000,
          {
            signal: this.stopping.signal,
          },
        );
        failures = 0;
        // An index that went backwards (a restored table) starts the watch over, as Nomad's client does.
        this.index = answer.Index < this.index ? 0 : answer.Index;
        this.apply(answer.Allocs);
        if (!this.synced) {
          this.synced = true;
          this.options.onSynced();
        }
      } catch (error) {
        if (this.stopping.signal.aborted) return;
        failures++;
        if (error instanceof ProtocolError && (error.status === 403 || error.status === 404)) this.options.onRefused();
        else log(`client: allocation watch failed: ${(error as Error).message}`);
        const wait = Math.min(30_000, 500 * 2 ** Math.min(failures, 6));
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, wait);
          this.stopping.signal.addEventListener('abort', () => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
    }
  }

  private apply(allocs: Record<string, number>): void {
    const changed: Record<string, number> = {};
    for (const [id, modifyIndex] of Object.entries(allocs))
      if (this.known[id] !== modifyIndex) changed[id] = modifyIndex;
    const removed = Object.keys(this.known).filter((id) => !(id in allocs));
    this.known = { ...allocs };
    if (Object.keys(changed).length > 0 || removed.length > 0) this.options.onChanged?.(changed, removed);
  }
}
