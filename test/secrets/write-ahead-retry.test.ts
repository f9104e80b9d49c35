import { afterEach, describe, expect, it } from 'vitest';
import { epochSeconds } from '../../packages/core/src/lib/clock.ts';
import { rollBackDue, walRecord, writeAhead } from '../../packages/core/src/secrets/framework/write-ahead.ts';
import { storageFor } from '../../packages/core/src/secrets/framework/system.ts';
import { type SecretsHarness, startSecrets } from '../support/secrets-harness.ts';

/**
 * The engines' write-ahead job (`rollBackDue`, framework/write-ahead.ts): a rollback that fails is retried later; a
 * record its change's owner dropped while the rollback ran (a request settling the change) stays dropped.
 */
let h: SecretsHarness;
afterEach(() => h?.close());

async function dueRecord() {
  h = await startSecrets();
  const mount = await h.core.mounts.find('secret', 'secret');
  if (!mount) throw new Error('no secret/ mount');
  const storage = storageFor(h.core, mount);
  const record = walRecord(h.core.clock, 'test-change', { key: 'account' }, 'now');
  await writeAhead({ storage }, [record]);
  return { storage, record, type: mount.type };
}

describe('write-ahead records the job cannot settle yet', () => {
  it('a failed rollback leaves its record, due again after the backoff, with the attempt counted', async () => {
    const { storage, record, type } = await dueRecord();
    const result = await rollBackDue(h.core, type, () => async () => {
      throw new Error('the directory is unreachable');
    });
    expect(result).toEqual({ settled: 0, failed: 1 });
    expect(await storage.getItem(record.sk)).toMatchObject({
      kind: 'test-change',
      attempts: 1,
      dueAt: epochSeconds(h.core.clock) + 30,
    });
  });

  it('a record dropped while its rollback ran (its change settled by a request) is not written back', async () => {
    const { storage, record, type } = await dueRecord();
    const result = await rollBackDue(h.core, type, () => async (due) => {
      await storage.delete(due.sk);
      throw new Error('still within its window');
    });
    expect(result).toEqual({ settled: 0, failed: 1 });
    expect(await storage.getItem(record.sk)).toBeUndefined();
  });
});
