/**
 * Issue 39 §4: revoking a wide token tree outran the function. `revoke-self` of a token with 1,500 children walked
 * them one by one, some four table calls each (~20 ms on DynamoDB): 29–35 s, past the functions' 29 s timeout, while
 * the children not yet reached kept working. Vault's semantics: once the parent's revocation is acknowledged, no token
 * of its tree is usable, however wide the tree.
 *
 * The revocation now marks the whole tree revoking first (breadth-first, 32 tokens at a time) and then removes it in
 * parallel too. What bounds its time is the number of table round trips on its longest path, which this test counts
 * (never timing anything): the service runs on a store that holds every call until the test releases all the calls
 * waiting at that moment together, one round at a time.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../packages/core/src/storage/memory-store.ts';
import type { Store } from '../../packages/core/src/storage/store.ts';
import { type SecretsService, startSecretsInMemory } from '../support/secrets-harness.ts';

/** The store's calls that reach the table (each one round trip on DynamoDB). */
const tableCalls = new Set(['get', 'getVerified', 'batchGet', 'put', 'update', 'delete', 'list', 'scan', 'transact']);

/**
 * Counts round trips: while `measure` runs, every table call waits until the test releases, together, all calls
 * waiting at that moment (one round); the number of rounds is the length of the longest chain of calls, each of
 * which had to wait for the one before.
 */
class RoundCounter {
  rounds = 0;
  calls = 0;
  private counting = false;
  private held: Array<() => void> = [];

  wrap(store: Store): Store {
    return new Proxy(store, {
      get: (target, name, receiver) => {
        const value = Reflect.get(target, name, receiver);
        if (typeof value !== 'function') return value;
        if (!tableCalls.has(String(name))) return value.bind(target);
        return async (...args: unknown[]) => {
          if (this.counting) {
            this.calls++;
            await new Promise<void>((release) => this.held.push(release));
          }
          return value.apply(target, args);
        };
      },
    });
  }

  async measure<T>(work: () => Promise<T>): Promise<T> {
    this.counting = true;
    this.rounds = 0;
    this.calls = 0;
    let done = false;
    const result = work().finally(() => {
      done = true;
    });
    try {
      while (!done) {
        await new Promise((resolve) => setImmediate(resolve));
        if (this.held.length === 0) continue;
        this.rounds++;
        for (const release of this.held.splice(0)) release();
      }
    } finally {
      this.counting = false;
    }
    return result;
  }
}

const children = 1_500;

describe('revoking a token with 1,500 children (revoke-self)', () => {
  const counter = new RoundCounter();
  let h: SecretsService;
  let parent: string;
  const kids: string[] = [];
  const grandchildren: string[] = [];

  const create = async (token: string) => {
    const reply = await h.call('POST', '/v1/auth/token/create', { token, body: { policies: ['tree'] } });
    expect(reply.status).toBe(200);
    return reply.body.auth.client_token as string;
  };

  beforeAll(async () => {
    h = await startSecretsInMemory({ store: counter.wrap(new MemoryStore()), audit: false });
    const policy = 'path "auth/token/create" { capabilities = ["update"] }';
    expect((await h.call('PUT', '/v1/sys/policies/acl/tree', { token: h.rootToken, body: { policy } })).status).toBe(
      204,
    );
    parent = await create(h.rootToken);
    for (let made = 0; made < children; made += 50) {
      kids.push(...(await Promise.all(Array.from({ length: 50 }, () => create(parent)))));
    }
    // Depth too: the first children have children of their own.
    for (const kid of kids.slice(0, 5)) grandchildren.push(await create(kid), await create(kid));
  }, 120_000);
  afterAll(() => h.close());

  it('is acknowledged within a few hundred round trips, after which no token of the tree works', async () => {
    const reply = await counter.measure(() => h.call('POST', '/v1/auth/token/revoke-self', { token: parent }));
    expect(reply.status).toBe(204);
    // Before: about four calls per child one after another (6,045 rounds here, 29–35 s on DynamoDB in the issue).
    // Now: the marks and the removals each 1,500 / 32 batches deep, two rounds a batch (195 rounds here).
    expect(counter.calls).toBeGreaterThan(4 * children);
    expect(counter.rounds).toBeLessThanOrEqual(400);

    for (const token of [parent, ...kids, ...grandchildren]) expect(await h.core.tokens.lookup(token)).toBeUndefined();
    const sample = [kids[0], kids[children - 1], grandchildren[0]] as string[];
    for (const token of sample) {
      const lookup = await h.call('GET', '/v1/auth/token/lookup-self', { token });
      expect(lookup.status).toBe(403);
    }
    // Nothing of the tree is left in the table: no token item, no child reference, no accessor; the root's remain.
    const root = await h.core.tokens.lookup(h.rootToken);
    const left = (await h.core.store.scan()).filter((item) => /^(token|accessor)#/.test(item.pk));
    expect(left.map((item) => `${item.pk} ${item.sk}`).sort()).toEqual(
      [`token#${root?.hash} token`, `accessor#${root?.accessor} accessor`].sort(),
    );
  });
});
