import { describe, expect, it } from 'vitest';
import { sharedUntilRejected } from './shared-until-rejected.ts';

describe('sharedUntilRejected: what a function builds once per process', () => {
  it('makes it once for every caller, concurrent or later', async () => {
    let made = 0;
    const get = sharedUntilRejected(async () => ({ build: ++made }));
    const [first, second] = await Promise.all([get(), get()]);
    expect(first).toBe(second);
    expect(await get()).toBe(first);
    expect(made).toBe(1);
  });

  it('makes it anew after a rejection (the table was not reachable yet), then keeps the one that worked', async () => {
    let attempts = 0;
    const get = sharedUntilRejected(async () => {
      attempts++;
      if (attempts === 1) throw new Error('table not reachable');
      return { attempt: attempts };
    });
    await expect(get()).rejects.toThrow('table not reachable');
    const built = await get();
    expect(built).toEqual({ attempt: 2 });
    expect(await get()).toBe(built);
    expect(attempts).toBe(2);
  });
});
