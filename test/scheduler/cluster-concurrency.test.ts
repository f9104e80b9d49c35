import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NAMESPACE_PK, NODE_POOL_PK } from '../../packages/core/src/scheduler/keys.ts';
import { type SchedulerCallResult, type SchedulerHarness, startScheduler } from '../support/scheduler-harness.ts';

/** How many writers race for one pool or namespace (kept small: every scheduler write takes the next index in turn). */
const writers = 6;

/**
 * Node pools and namespaces on DynamoDB Local under concurrent writers: identical creates make one change and one
 * event, concurrent deletes delete once (one 200, the rest 404), a registration's implicit pool racing an operator's
 * create of the same pool leaves one pool and one event, and nothing answers 5xx.
 */
describe('concurrent writers of node pools and namespaces (DynamoDB Local)', () => {
  let h: SchedulerHarness;
  let root: string;
  const mgmt = (method: string, path: string, body?: unknown) =>
    h.call(method, path, { token: root, ...(body === undefined ? {} : { body }) });
  const race = (request: () => Promise<SchedulerCallResult>) =>
    Promise.all(Array.from({ length: writers }, () => request()));
  const statuses = (results: SchedulerCallResult[]) => results.map((result) => result.status).sort();
  const poolEvents = async (after: number, type: string, key: string) =>
    (await h.scheduler.state.eventsAfter(after))
      .flatMap((batch) => batch.events)
      .filter((event) => event.Type === type && event.Key === key);

  beforeAll(async () => {
    h = await startScheduler();
    root = await h.bootstrap();
  });
  afterAll(() => h.close());

  it('identical pool creates: one change, one NodePoolUpserted; concurrent deletes: one 200, the rest 404', async () => {
    const before = await h.scheduler.state.currentIndex();
    const created = await race(() => mgmt('PUT', '/v1/node/pools', { Name: 'raced', Description: 'same' }));
    expect(statuses(created)).toEqual(Array(writers).fill(200));
    expect(new Set(created.map((out) => out.headers.get('X-Nomad-Index'))).size).toBe(1);
    expect(await poolEvents(before, 'NodePoolUpserted', 'raced')).toHaveLength(1);

    const deleted = await race(() => mgmt('DELETE', '/v1/node/pool/raced'));
    expect(statuses(deleted)).toEqual([200, ...Array(writers - 1).fill(404)]);
    expect(await poolEvents(before, 'NodePoolDeleted', 'raced')).toHaveLength(1);
    expect(await h.core.store.get(NODE_POOL_PK, 'raced')).toBeUndefined();
  });

  it('a registration creating a missing pool and an operator creating it at once leave one pool', async () => {
    const before = await h.scheduler.state.currentIndex();
    const implicit = h.scheduler.state.commit(async (index) => {
      const { creation } = await h.scheduler.nodePools.ensureWrite('shared', index);
      return creation ? { items: creation.items, tables: creation.tables, events: creation.events } : undefined;
    });
    const explicit = mgmt('PUT', '/v1/node/pools', { Name: 'shared', Description: 'the operator’s' });
    const [, out] = await Promise.all([implicit, explicit]);
    expect(out.status).toBe(200);
    const pool = (await mgmt('GET', '/v1/node/pool/shared')).body;
    expect(pool.Name).toBe('shared');
    // Whichever came second saw the first: the operator's description is there, once created or as an update.
    expect(pool.Description).toBe('the operator’s');
    const events = await poolEvents(before, 'NodePoolUpserted', 'shared');
    expect(events.length).toBeGreaterThanOrEqual(1);
    expect(events.length).toBeLessThanOrEqual(2);
    expect(new Set(events.map((event) => event.Index)).size).toBe(events.length);
  });

  it('identical namespace writes change it once; concurrent deletes delete it once', async () => {
    const created = await race(() => mgmt('PUT', '/v1/namespace', { Name: 'raced-ns', Description: 'same' }));
    expect(statuses(created)).toEqual(Array(writers).fill(200));
    expect(new Set(created.map((out) => out.headers.get('X-Nomad-Index'))).size).toBe(1);
    const deleted = await race(() => mgmt('DELETE', '/v1/namespace/raced-ns'));
    expect(statuses(deleted)).toEqual([200, ...Array(writers - 1).fill(404)]);
    expect(await h.core.store.get(NAMESPACE_PK, 'raced-ns')).toBeUndefined();
  });
});
