/**
 * Blocking queries (`?index=N&wait=5m`, Nomad's long poll) as a rationed resource. In AWS a blocked query holds a
 * function instance for as long as it waits: billed by the second and counted against the API function's reserved
 * concurrency, which every other scheduler call (logins included) shares. Nomad's own waits cost nothing but a
 * goroutine; here they are granted, not assumed:
 *
 * - **Who may block, and for how long.** A caller without a token (or a row's waiter without one) waits at most
 *   `anonymousWaitSeconds` (1 s): enough for a client that always sends `?index` to keep its loop at one request a
 *   second, too little to hold the API. A token may hold `waitsPerToken` (4) blocked queries at once across every
 *   process, for the route's full wait (at most `maxQueryWaitSeconds`, 25 s in AWS); a query beyond them waits as
 *   anonymous. A blocked query's place is an item in the table (`waitSlotKey`, one conditional write to take it,
 *   one delete to give it back) because a count kept in memory would count only its own Lambda; the item carries
 *   the wait's end, so a place whose process died frees itself at that time.
 * - **Waking.** One watcher per process (`IndexWatch`) reads the index items of the tables its waiters watch (one
 *   small item per table: `tableIndexSk`), once per `indexPollMs` (1 s) while anyone waits, however many do; a
 *   write in the same process wakes its waiters at once. The data itself is read once, when the wait ends.
 *
 * A route uses all of this by declaring the tables its answer comes from (`blocking: ['acl_policy']`) and answering
 * `{ read }` (`route.ts`): the wrapper parses `index`/`wait`/`stale`/`consistent`, takes the caller's place, waits,
 * then calls `read`. A route whose callers are not ACL tokens (a cluster node's allocation poll, authenticated by the
 * node's secret) names whose places its waits take with the row's `waitsAs` (the node's ID): without it, a caller
 * with no token. The cost of a blocked query is in `docs/performance.md`.
 */
import { randomUUID } from 'node:crypto';
import { type HttpReply, jsonReply } from '../../front/exchange.ts';
import { ConditionFailed } from '../../storage/store.ts';
import { waitSlotKey } from '../keys.ts';
import type { Scheduler } from '../composition/scheduler-core.ts';
import type { SchedulerState, TableName } from '../state.ts';
import { ListPage } from './list-query.ts';
import { type BlockingParameters, indexHeaders, queryOptions } from './nomad.ts';

/** The rationing, with its defaults (a deployment may set each: `SchedulerOptions`). */
export interface WaitRules {
  /** The longest wait of a query that holds no place of a token (seconds). */
  anonymousWaitSeconds: number;
  /** How many blocked queries one token (or `waitsAs` name) may hold at once, across every process. */
  waitsPerToken: number;
  /** How often a process that has waiters reads their tables' index items (ms). */
  indexPollMs: number;
}

export const defaultWaitRules: WaitRules = { anonymousWaitSeconds: 1, waitsPerToken: 4, indexPollMs: 1_000 };

export function waitRules(scheduler: Scheduler): WaitRules {
  const { anonymousWaitSeconds, waitsPerToken, indexPollMs } = scheduler.options;
  return {
    anonymousWaitSeconds: anonymousWaitSeconds ?? defaultWaitRules.anonymousWaitSeconds,
    waitsPerToken: waitsPerToken ?? defaultWaitRules.waitsPerToken,
    indexPollMs: indexPollMs ?? defaultWaitRules.indexPollMs,
  };
}

/**
 * A blocking read: when `?index=N` is given and the tables have not passed it, waits until one of `tables` passes N,
 * the wait runs out (plus up to 1/16 jitter, on the service's clock), or the client goes away, then answers `read()`
 * with the index headers. `waiter` names whose places the wait takes (a token's accessor ID); none, or none free,
 * and the wait is the anonymous one.
 */
export async function blockingQuery(
  scheduler: Scheduler,
  signal: AbortSignal | undefined,
  tables: TableName[],
  read: () => Promise<unknown>,
  parameters: BlockingParameters,
  waiter: string | undefined,
): Promise<HttpReply> {
  const state = scheduler.state;
  const options = queryOptions(scheduler, parameters);
  const rules = waitRules(scheduler);
  let index = await state.tableIndex(tables);
  if (options.minIndex > 0 && index <= options.minIndex && !signal?.aborted) {
    let waitMs = options.waitSeconds * 1000;
    const shortMs = Math.min(waitMs, rules.anonymousWaitSeconds * 1000);
    const deadline = (ms: number) => state.clock.now() + ms + Math.random() * (ms / 16);
    let place: WaitPlace | undefined;
    if (waitMs > shortMs) {
      place = waiter ? await takePlace(state, waiter, rules.waitsPerToken, deadline(waitMs)) : undefined;
      if (!place) waitMs = shortMs;
    }
    try {
      index = await indexWatch(state, rules.indexPollMs).until(
        tables,
        options.minIndex,
        place?.until ?? deadline(waitMs),
        signal,
      );
    } finally {
      await place?.release();
    }
  }
  const body = await read();
  const headers = indexHeaders(index);
  // A list page (`list-query.ts`) is answered as its items, its next token in `X-Nomad-NextToken`.
  if (body instanceof ListPage) {
    if (body.nextToken !== '') headers['X-Nomad-NextToken'] = body.nextToken;
    return jsonReply(200, body.items, headers);
  }
  return jsonReply(200, body, headers);
}

/** A blocked query's place among its token's, held until `until` (epoch ms) at the latest. */
interface WaitPlace {
  until: number;
  release(): Promise<void>;
}

/**
 * Takes one of the waiter's places: the first whose item is absent or whose holder's wait has ended. Each attempt is
 * one conditional write, so a token whose places are all taken costs `waitsPerToken` refused writes and then waits as
 * anonymous. A place is given back when the wait ends; the table's TTL removes one a process left behind.
 */
async function takePlace(
  state: SchedulerState,
  waiter: string,
  places: number,
  until: number,
): Promise<WaitPlace | undefined> {
  const owner = randomUUID();
  const now = state.clock.now();
  for (let slot = 0; slot < places; slot++) {
    const key = waitSlotKey(waiter, slot);
    try {
      await state.store.put(
        { ...key, owner, until, expiresAt: Math.ceil(until / 1000) + 60 },
        { when: { any: [{ absent: true }, { below: { until: now } }] } },
      );
    } catch (error) {
      if (error instanceof ConditionFailed) continue;
      throw error;
    }
    return {
      until,
      release: async () => {
        try {
          await state.store.delete(key, { when: { equals: { owner } } });
        } catch (error) {
          if (!(error instanceof ConditionFailed)) throw error;
        }
      },
    };
  }
  return undefined;
}

interface Waiter {
  tables: TableName[];
  minIndex: number;
  /** Epoch ms on the service's clock. */
  deadline: number;
  signal: AbortSignal | undefined;
  settle(index: number): void;
}

const watches = new WeakMap<SchedulerState, IndexWatch>();

/** The process's one watcher of a scheduler state's table indexes. */
export function indexWatch(state: SchedulerState, pollMs: number): IndexWatch {
  let watch = watches.get(state);
  if (!watch) {
    watch = new IndexWatch(state, pollMs);
    watches.set(state, watch);
  }
  return watch;
}

/**
 * Every blocked query of a process, woken by one reader: while anyone waits, the index items of the tables they
 * watch are read every `pollMs` (and at once after a write of this process), and each waiter whose table passed its
 * index, whose deadline passed, or whose client went away is answered. N waiters cost one read of each watched
 * table's index item per poll, not N.
 */
export class IndexWatch {
  private readonly waiters = new Set<Waiter>();
  private timer: NodeJS.Timeout | undefined;
  private unlisten: (() => void) | undefined;
  private checking: Promise<void> | undefined;
  private again = false;
  /** Checks made and index items read by them, for the tests that count them. */
  checks = 0;
  reads = 0;

  constructor(
    private readonly state: SchedulerState,
    private readonly pollMs: number,
  ) {}

  /** How many queries of this process are blocked now. */
  get waiting(): number {
    return this.waiters.size;
  }

  /** Resolves with the tables' index once it passes `minIndex`, or at `deadline` or abort with the index then. */
  until(tables: TableName[], minIndex: number, deadline: number, signal: AbortSignal | undefined): Promise<number> {
    return new Promise((resolve) => {
      const waiter: Waiter = {
        tables,
        minIndex,
        deadline,
        signal,
        settle: (index) => {
          this.waiters.delete(waiter);
          signal?.removeEventListener('abort', onAbort);
          if (this.waiters.size === 0) this.idle();
          resolve(index);
        },
      };
      const onAbort = () => this.check();
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.add(waiter);
      if (this.waiters.size === 1) this.unlisten = this.state.onChange(() => this.check());
      this.schedule();
    });
  }

  private idle(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.unlisten?.();
    this.unlisten = undefined;
  }

  /** The next check: after `pollMs`, or sooner when a waiter's deadline (on a clock that runs in step with time) comes first. */
  private schedule(): void {
    if (this.waiters.size === 0) return;
    const now = this.state.clock.now();
    let delay = this.pollMs;
    for (const waiter of this.waiters) delay = Math.min(delay, Math.max(0, waiter.deadline - now));
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.check(), delay);
  }

  /** Reads the watched tables' indexes once and answers whoever is done; a check asked for meanwhile runs after. */
  private check(): void {
    if (this.checking) {
      this.again = true;
      return;
    }
    this.checking = (async () => {
      try {
        do {
          this.again = false;
          await this.checkOnce();
        } while (this.again);
      } finally {
        this.checking = undefined;
        this.schedule();
      }
    })();
  }

  private async checkOnce(): Promise<void> {
    const tables = [...new Set([...this.waiters].flatMap((waiter) => waiter.tables))];
    if (tables.length === 0) return;
    const indexes = new Map<TableName, number>();
    this.checks++;
    try {
      this.reads += tables.length;
      await Promise.all(tables.map(async (table) => indexes.set(table, await this.state.tableIndex([table]))));
    } catch {
      // A failed read is tried again at the next poll; waiters past their deadline are still answered below.
    }
    const now = this.state.clock.now();
    for (const waiter of [...this.waiters]) {
      const known = waiter.tables.every((table) => indexes.has(table));
      // Unread (the read failed), a waiter that must answer now answers at the index it had: its read says the rest.
      const index = known ? Math.max(0, ...waiter.tables.map((table) => indexes.get(table) ?? 0)) : waiter.minIndex;
      if ((known && index > waiter.minIndex) || now >= waiter.deadline || waiter.signal?.aborted) waiter.settle(index);
    }
  }
}
