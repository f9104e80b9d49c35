/**
 * A simulated fleet: N nodes speaking the client protocol from one process, for tests and benches (10,000 fit on one
 * machine). The nodes are data, not objects with timers: each is a row of typed arrays (its status, when its next
 * heartbeat is due, its TTL) plus its ID, secret and identity, and one loop beats the ones that are due, earliest
 * first, at most `concurrency` calls at a time, over one shared `ProtocolClient` (one keep-alive socket pool).
 * Each node lives as the real agent does: register with the introduction token, read its (empty) allocation map
 * once, report `ready` (with its driver's node event on that same call), then beat at the TTL each answer gives,
 * reading its allocation map again (no blocking) only when an answer's `AllocIndex` moved past the map it holds; a
 * node the server refuses registers again.
 */
import { type ClientNode, nodeEvent } from '../node.ts';
import { type ProtocolClient, ProtocolError } from '../protocol.ts';
import { seededNode, type SeededNodeOptions } from './seeded-nodes.ts';

export interface FleetOptions extends SeededNodeOptions {
  client: ProtocolClient;
  count: number;
  /** The introduction token every new node registers with (one not naming a node admits any node of its pool). */
  introToken: string;
  /** Calls in flight at once (default 32). */
  concurrency?: number;
  /** Nodes booting at once (default `concurrency`): each boot is two writes at the scheduler's one index. */
  bootConcurrency?: number;
  now?: () => number;
}

const status = { unregistered: 0, initializing: 1, ready: 2 } as const;
const statusNames = ['unregistered', 'initializing', 'ready'] as const;

export interface FleetStats {
  registrations: number;
  beats: number;
  events: number;
  allocationReads: number;
  /** Calls the server refused or failed, by HTTP status (0: no answer). */
  failures: Map<number, number>;
  /** Beats sent later than due by more than a second (the loop or the server could not keep up). */
  lateBeats: number;
}

/** Runs `task` over `items` with at most `limit` at once. */
async function eachLimited<T>(items: T[], limit: number, task: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await task(items[next++] as T);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

export class Fleet {
  readonly ids: string[];
  private readonly secrets: string[];
  private readonly identities: (string | undefined)[];
  private readonly status: Uint8Array;
  private readonly dueAt: Float64Array;
  private readonly ttlMs: Float64Array;
  /** The index of the allocation map each node holds (what its last read answered). */
  private readonly allocIndex: Float64Array;
  /** A min-heap of node positions by `dueAt`: the loop's one queue. */
  private heap: number[] = [];
  private inFlight = 0;
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private readonly now: () => number;
  private readonly concurrency: number;
  readonly stats: FleetStats = {
    registrations: 0,
    beats: 0,
    events: 0,
    allocationReads: 0,
    failures: new Map(),
    lateBeats: 0,
  };

  constructor(private readonly options: FleetOptions) {
    const { count } = options;
    this.now = options.now ?? Date.now;
    this.concurrency = options.concurrency ?? 32;
    this.ids = [];
    this.secrets = [];
    this.identities = new Array(count).fill(undefined);
    this.status = new Uint8Array(count);
    this.dueAt = new Float64Array(count);
    this.ttlMs = new Float64Array(count);
    this.allocIndex = new Float64Array(count);
    for (let position = 0; position < count; position++) {
      const node = this.node(position);
      this.ids.push(node.ID);
      this.secrets.push(node.SecretID);
    }
  }

  get count(): number {
    return this.options.count;
  }

  /** The node at `position` as it registers (built again from the seed when needed, not kept). */
  node(position: number): ClientNode {
    return seededNode(position, this.options);
  }

  statusOf(position: number): (typeof statusNames)[number] {
    return statusNames[this.status[position] as number] as (typeof statusNames)[number];
  }

  /** How many nodes are in each status. */
  statusCounts(): Record<(typeof statusNames)[number], number> {
    const counts = { unregistered: 0, initializing: 0, ready: 0 };
    for (const value of this.status) counts[statusNames[value] as keyof typeof counts]++;
    return counts;
  }

  /**
   * Registers every node not yet registered (at most `concurrency` at once), reads its allocation map once and reports
   * it `ready` with its driver event: a whole fleet booting. Failures are counted, not thrown.
   */
  async registerAll(): Promise<void> {
    const pending = [...this.status.keys()].filter((position) => this.status[position] === status.unregistered);
    await eachLimited(pending, this.options.bootConcurrency ?? this.concurrency, (position) => this.bringUp(position));
  }

  /** One heartbeat from every registered node now, whatever its TTL (benches measure a beat's cost with it). */
  async beatAll(): Promise<void> {
    const live = [...this.status.keys()].filter((position) => this.status[position] !== status.unregistered);
    await eachLimited(live, this.concurrency, (position) => this.beat(position));
  }

  /** One heartbeat now from each of the nodes at `positions` (registered ones). */
  async beatSome(positions: number[]): Promise<void> {
    const live = positions.filter((position) => this.status[position] !== status.unregistered);
    await eachLimited(live, this.concurrency, (position) => this.beat(position));
  }

  /** The credential node `position` presents (its identity, else its SecretID). */
  credentialOf(position: number): string {
    return this.credential(position);
  }

  /** Starts the loop: each node beats when its TTL says, until `stop`. */
  start(): void {
    this.running = true;
    this.heap = [];
    for (let position = 0; position < this.count; position++)
      if (this.status[position] !== status.unregistered) this.push(position);
    this.tick();
  }

  /** Stops beating (as agents stopped without deregistering: the nodes go down at their deadlines). */
  async stop(): Promise<void> {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    while (this.inFlight > 0) await new Promise((resolve) => setTimeout(resolve, 10));
  }

  private fail(error: unknown): void {
    const code = error instanceof ProtocolError ? error.status : 0;
    this.stats.failures.set(code, (this.stats.failures.get(code) ?? 0) + 1);
  }

  private credential(position: number): string {
    return this.identities[position] ?? (this.secrets[position] as string);
  }

  private accept(position: number, answer: { HeartbeatTTL: number; SignedIdentity?: string | undefined }): void {
    this.ttlMs[position] = Math.max(1000, answer.HeartbeatTTL / 1e6);
    this.dueAt[position] = this.now() + (this.ttlMs[position] as number);
    if (answer.SignedIdentity) this.identities[position] = answer.SignedIdentity;
  }

  private async bringUp(position: number): Promise<void> {
    const { client } = this.options;
    const node = this.node(position);
    try {
      this.accept(position, await client.register(node, this.options.introToken));
      this.stats.registrations++;
      this.status[position] = status.initializing;
      await this.readAllocations(position);
      // The driver's event rides on the status change (one write at the scheduler's index, not two).
      const [driver, info] = Object.entries(node.Drivers)[0] ?? [];
      const event =
        driver && info ? nodeEvent(info.HealthDescription, 'Driver', { driver }, new Date(this.now())) : undefined;
      this.accept(position, await client.updateStatus(node.ID, this.credential(position), 'ready', event));
      if (event) this.stats.events++;
      this.stats.beats++;
      this.status[position] = status.ready;
    } catch (error) {
      this.fail(error);
    }
  }

  /** A plain read of node `position`'s allocation map (no blocking), keeping its index. */
  private async readAllocations(position: number): Promise<void> {
    const answer = await this.options.client.allocations(this.ids[position] as string, this.credential(position), 0, 0);
    this.allocIndex[position] = answer.Index;
    this.stats.allocationReads++;
  }

  private async beat(position: number): Promise<void> {
    const due = this.dueAt[position] as number;
    if (this.now() - due > 1000 && due > 0) this.stats.lateBeats++;
    try {
      const wanted = this.status[position] === status.ready ? 'ready' : 'initializing';
      const answer = await this.options.client.updateStatus(
        this.ids[position] as string,
        this.credential(position),
        wanted,
      );
      this.accept(position, answer);
      this.stats.beats++;
      if ((answer.AllocIndex ?? 0) > (this.allocIndex[position] as number)) await this.readAllocations(position);
    } catch (error) {
      this.fail(error);
      if (error instanceof ProtocolError && (error.status === 404 || error.status === 403)) {
        this.identities[position] = undefined;
        this.status[position] = status.unregistered;
        await this.bringUp(position);
      } else {
        // No answer: try again within the grace, as the agent does.
        this.dueAt[position] = this.now() + 1000 + Math.random() * 2000;
      }
    }
  }

  private tick(): void {
    this.timer = undefined;
    if (!this.running) return;
    const now = this.now();
    while (
      this.inFlight < this.concurrency &&
      this.heap.length > 0 &&
      (this.dueAt[this.heap[0] as number] as number) <= now
    ) {
      const position = this.pop();
      this.inFlight++;
      void this.beat(position).finally(() => {
        this.inFlight--;
        if (this.running && this.status[position] !== status.unregistered) this.push(position);
        if (this.timer) clearTimeout(this.timer);
        this.tick();
      });
    }
    this.arm();
  }

  /** One timer for the whole fleet: until the earliest due beat (or a free call slot), at most a second away. */
  private arm(): void {
    if (!this.running || this.timer) return;
    const first = this.heap[0];
    const wait =
      first === undefined || this.inFlight >= this.concurrency
        ? 1000
        : Math.max(0, Math.min(1000, (this.dueAt[first] as number) - this.now()));
    this.timer = setTimeout(() => this.tick(), wait);
  }

  private push(position: number): void {
    const heap = this.heap;
    heap.push(position);
    let at = heap.length - 1;
    while (at > 0) {
      const parent = (at - 1) >> 1;
      if ((this.dueAt[heap[parent] as number] as number) <= (this.dueAt[position] as number)) break;
      heap[at] = heap[parent] as number;
      at = parent;
    }
    heap[at] = position;
  }

  private pop(): number {
    const heap = this.heap;
    const top = heap[0] as number;
    const last = heap.pop() as number;
    if (heap.length > 0) {
      let at = 0;
      for (;;) {
        const left = 2 * at + 1;
        if (left >= heap.length) break;
        const right = left + 1;
        const child =
          right < heap.length &&
          (this.dueAt[heap[right] as number] as number) < (this.dueAt[heap[left] as number] as number)
            ? right
            : left;
        if ((this.dueAt[heap[child] as number] as number) >= (this.dueAt[last] as number)) break;
        heap[at] = heap[child] as number;
        at = child;
      }
      heap[at] = last;
    }
    return top;
  }
}
