/**
 * The scheduler's Raft-like state on the one table: a single monotonically increasing index (an atomic
 * counter item), an index per table for blocking queries, and the event buffer. Every write goes through
 * `commit`, which advances the counter, stamps the table indexes and stores the write's events in one
 * DynamoDB transaction, so an event is published if and only if its write happened. A write that changes a node or
 * allocations also moves the mark on the nodes' beats (`beat-marks.ts`), in the same transaction.
 */
import type { Clock } from '../lib/clock.ts';
import { conflict } from '../lib/errors.ts';
import { ConditionFailed, type Store, type Write } from '../storage/store.ts';
import { maxTransactionWrites } from '../storage/intent.ts';
import { EVENT_PK, eventKey, INDEX_SK, META_PK, tableIndexSk } from './keys.ts';
import { beatMarks } from './beat-marks.ts';

export { EVENT_PK, eventKey, META_PK } from './keys.ts';

export type TableName =
  | 'acl_token'
  | 'acl_policy'
  | 'acl_role'
  | 'acl_auth_method'
  | 'acl_binding_rule'
  | 'events'
  | 'nodes'
  | 'node_pools'
  | 'namespaces'
  | 'jobs'
  | 'job_summary'
  | 'allocs'
  | 'evals'
  | 'service_registrations'
  | 'deployment'
  | 'scheduler_config';

/** An event as a write produces it; the index is the write's. */
export interface PendingEvent {
  Topic: string;
  Type: string;
  Key: string;
  Namespace: string;
  FilterKeys: string[] | null;
  Payload: Record<string, unknown>;
}

export interface SchedulerEvent extends PendingEvent {
  Index: number;
}

/** What a write puts in its transaction. */
export interface WritePlan {
  items: Write[];
  tables: TableName[];
  events?: PendingEvent[];
}

/** A write whose own condition failed; `failed` holds the positions in `items` that failed. */
export class WriteConditionFailed extends ConditionFailed {
  constructor(
    message: string,
    readonly failed: number[],
  ) {
    super(message);
  }
}

/** A write that lost the race for the index this many times in a row gives up with `WriteContention`. */
const maxAttempts = 100;

/** Too many writers at once: the write did not happen and may be sent again (a conflict, 409). */
export const writeContention = () =>
  conflict('too many concurrent writes to the scheduler state; the write did not happen, retry it');

export interface StateOptions {
  /** How long events stay in the buffer (seconds); default one hour. */
  eventTtlSeconds?: number;
}

export class SchedulerState {
  private readonly listeners = new Set<() => void>();
  readonly eventTtlSeconds: number;

  constructor(
    readonly store: Store,
    readonly clock: Clock,
    options: StateOptions = {},
  ) {
    this.eventTtlSeconds = options.eventTtlSeconds ?? 3600;
  }

  /** The service-wide index. */
  async currentIndex(): Promise<number> {
    return ((await this.store.get(META_PK, INDEX_SK))?.value as number | undefined) ?? 0;
  }

  /** The highest index of the given tables (for blocking queries and X-Scheduler-Index). */
  async tableIndex(tables: TableName[]): Promise<number> {
    const values = await Promise.all(
      tables.map(
        async (table) => ((await this.store.get(META_PK, tableIndexSk(table)))?.value as number | undefined) ?? 0,
      ),
    );
    return Math.max(0, ...values);
  }

  /**
   * Runs one write at the next index. `plan` is called with that index after the index was read (again when another
   * writer took the index first) and returns the items, the tables it touches and its events, or nothing when there
   * is nothing to write. The transaction only commits if the index has not moved since, so what `plan` read stays
   * true until the write lands: reads made inside `plan` make the write serializable with every other scheduler
   * write (a check-then-write such as "delete if it exists" happens exactly once, and so does its event).
   */
  async commit(plan: (index: number) => WritePlan | Promise<WritePlan>): Promise<number>;
  async commit(
    plan: (index: number) => WritePlan | undefined | Promise<WritePlan | undefined>,
  ): Promise<number | undefined>;
  async commit(
    plan: (index: number) => WritePlan | undefined | Promise<WritePlan | undefined>,
  ): Promise<number | undefined> {
    for (let attempt = 0; ; attempt++) {
      const current = await this.currentIndex();
      const index = current + 1;
      const planned = await plan(index);
      if (!planned) return undefined;
      const { tables, events = [] } = planned;
      const tableCount = new Set<TableName>([...tables, ...(events.length > 0 ? (['events'] as const) : [])]).size;
      // Each node whose item or allocations the write changes has its beat's mark moved with it (`beat-marks.ts`), in
      // the room the transaction has left (its index, table indexes, events and items taken).
      const room = maxTransactionWrites - 1 - tableCount - (events.length > 0 ? 1 : 0) - planned.items.length;
      const items = [...planned.items, ...(await beatMarks(this.store, planned.items, index, room))];
      const nowSeconds = Math.floor(this.clock.now() / 1000);
      const head: Write[] = [
        {
          update: { pk: META_PK, sk: INDEX_SK },
          change: { set: { value: index } },
          when: { any: [{ absent: true }, { equals: { value: current } }] },
        },
        ...[...new Set<TableName>([...tables, ...(events.length > 0 ? (['events'] as const) : [])])].map((table) => ({
          put: { pk: META_PK, sk: tableIndexSk(table), value: index },
        })),
      ];
      if (events.length > 0) {
        head.push({
          put: {
            pk: EVENT_PK,
            sk: eventKey(index),
            index,
            events: events.map((event) => ({ ...event, Index: index })),
            createdAt: this.clock.now(),
            expiresAt: nowSeconds + this.eventTtlSeconds,
          },
        });
      }
      try {
        await this.store.transact([...head, ...items]);
      } catch (error) {
        // Store reports a failed condition with the reasons (and retries a cancellation for conflicts alone itself).
        if (!(error instanceof ConditionFailed)) throw error;
        const reasons = error.reasons ?? [];
        // Another writer took the index: plan again on what it wrote.
        const raced = reasons[0]?.Code === 'ConditionalCheckFailed';
        if (raced) {
          if (attempt >= maxAttempts) throw writeContention();
          await new Promise((resolve) => setTimeout(resolve, Math.random() * 5 * Math.min(attempt + 1, 20)));
          continue;
        }
        const failed = reasons
          .map((reason, position) => (reason.Code === 'ConditionalCheckFailed' ? position - head.length : -1))
          .filter((position) => position >= 0);
        if (failed.length > 0) throw new WriteConditionFailed((error as Error).message, failed);
        throw error;
      }
      this.notify();
      return index;
    }
  }

  /** Publishes events that have no write of their own (other scheduler components: Job, Node, Allocation, …). */
  publish(events: PendingEvent[]): Promise<number> {
    return this.commit(() => ({ items: [], tables: [], events }));
  }

  /** Buffered events after `afterIndex`, oldest first, skipping expired ones. */
  async eventsAfter(
    afterIndex: number,
  ): Promise<Array<{ index: number; events: SchedulerEvent[]; expiresAt: number }>> {
    const nowSeconds = Math.floor(this.clock.now() / 1000);
    const items = await this.store.list(EVENT_PK, { range: { after: eventKey(afterIndex) } });
    return items
      .filter((item) => (item.expiresAt as number) > nowSeconds)
      .map((item) => ({
        index: item.index as number,
        events: item.events as SchedulerEvent[],
        expiresAt: item.expiresAt as number,
      }));
  }

  /**
   * Deletes events past their expiry (DynamoDB's TTL is the backstop). Events expire in index order, so it reads
   * from the oldest a page at a time and stops at the first live one, not reading the whole buffer each sweep.
   */
  async sweepEvents(page = 100): Promise<number> {
    const nowSeconds = Math.floor(this.clock.now() / 1000);
    let removed = 0;
    for (;;) {
      const oldest = await this.store.list(EVENT_PK, { limit: page });
      const live = oldest.findIndex((item) => (item.expiresAt as number) > nowSeconds);
      const expired = live === -1 ? oldest : oldest.slice(0, live);
      for (const item of expired) await this.store.delete({ pk: item.pk, sk: item.sk });
      removed += expired.length;
      if (live !== -1 || oldest.length < page) return removed;
    }
  }

  /** Wakes in-process waiters (blocking queries, streams) after a write of this process. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  notify(): void {
    for (const listener of [...this.listeners]) listener();
  }
}
