/**
 * The node's allocation map (`Node.GetClientAllocs`), read when the server says it moved: every register and heartbeat
 * answer carries `AllocIndex`, the index of the node's allocation map, and the agent reads the map (a plain read,
 * no blocking) only when that index passed the one it holds, and once after each registration. A blocking poll held
 * open would keep a Lambda instance billed for its whole wait (docs/performance.md, "A cluster's bill"); placements
 * reach the node within one heartbeat TTL instead. The first answer marks the node's allocations synced (it may then
 * report `ready`). Every map read is handed to `onRead` (the agent's allocations, `runner/allocations.ts`, fetch what
 * changed and stop what left).
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
  /** The whole map (ID → modify index), after every answer. */
  onRead?: (allocs: Record<string, number>) => void;
}

export class AllocWatcher {
  private readonly stopping = new AbortController();
  private reading: Promise<void> | undefined;
  /** The index of the map held (the read's `Index`). */
  private index = 0;
  /** The highest `AllocIndex` an answer announced while a read was under way: read again after it. */
  private announced = 0;
  private known: Record<string, number> = {};
  synced = false;

  constructor(private readonly options: AllocWatcherOptions) {}

  /**
   * The `AllocIndex` of a register or heartbeat answer (undefined: a server without it, read anyway): reads the map
   * when it is not synced yet or the index moved past the one held. `force` reads whatever the index (registration).
   */
  update(allocIndex: number | undefined, force = false): Promise<void> {
    if (this.stopping.signal.aborted) return Promise.resolve();
    const wanted = allocIndex === undefined || force || !this.synced || allocIndex > this.index;
    if (!wanted) return this.reading ?? Promise.resolve();
    if (this.reading) {
      this.announced = Math.max(this.announced, allocIndex ?? Number.MAX_SAFE_INTEGER);
      return this.reading;
    }
    this.reading = this.read().finally(() => {
      this.reading = undefined;
    });
    return this.reading;
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    await this.reading;
  }

  get allocations(): Readonly<Record<string, number>> {
    return this.known;
  }

  /** The index of the map held. */
  get heldIndex(): number {
    return this.index;
  }

  private async read(): Promise<void> {
    const { client, nodeId, log } = this.options;
    do {
      this.announced = 0;
      try {
        const answer = await client.allocations(nodeId, this.options.credential(), 0, 0, {
          signal: this.stopping.signal,
        });
        // An index that went backwards (a restored table) is taken as it is, as Nomad's client starts over.
        this.index = answer.Index;
        this.apply(answer.Allocs);
        log(`client: allocation map read at index ${answer.Index} (${Object.keys(answer.Allocs).length} allocations)`);
        if (!this.synced) {
          this.synced = true;
          this.options.onSynced();
        }
      } catch (error) {
        if (this.stopping.signal.aborted) return;
        // Not synced or not moved: the next heartbeat's answer tries again.
        if (error instanceof ProtocolError && (error.status === 403 || error.status === 404)) this.options.onRefused();
        else log(`client: allocation read failed: ${(error as Error).message}`);
        return;
      }
    } while (this.announced > this.index && !this.stopping.signal.aborted);
  }

  private apply(allocs: Record<string, number>): void {
    const changed: Record<string, number> = {};
    for (const [id, modifyIndex] of Object.entries(allocs))
      if (this.known[id] !== modifyIndex) changed[id] = modifyIndex;
    const removed = Object.keys(this.known).filter((id) => !(id in allocs));
    this.known = { ...allocs };
    if (Object.keys(changed).length > 0 || removed.length > 0) this.options.onChanged?.(changed, removed);
    this.options.onRead?.(this.known);
  }
}
