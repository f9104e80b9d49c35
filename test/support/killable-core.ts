import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { type CoreBase, createCoreBase } from '../../packages/core/src/composition/shared-core.ts';
import { ManualClock } from '../../packages/core/src/lib/clock.ts';
import { silentLogger } from '../../packages/core/src/lib/log.ts';
import { DynamoStore } from '../../packages/core/src/storage/dynamodb-store.ts';
import { fileKeySource } from '../../packages/core/src/storage/keyring.ts';
import { localClientConfig } from '../../packages/local/src/dynamodb-local.ts';

/**
 * For a child process that a test kills mid-way (test/scheduler/cluster-worker-child.ts, cluster-sweep-child.ts): the
 * scheduler's base on the table `<PREFIX>_TABLE` of DynamoDB Local at `<PREFIX>_ENDPOINT`, with the keyring of
 * `<PREFIX>_KEY_FILE` and the clock at `<PREFIX>_CLOCK_MS`. With `<PREFIX>_KILL_AFTER=N` the process sends SIGKILL to
 * itself right after the Nth transaction has been handed to the SDK, before its answer: that transaction may or may
 * not land. `transactions()` counts those sent so far.
 */
export async function killableCore(prefix: string): Promise<{ core: CoreBase; transactions: () => number }> {
  const env = process.env;
  const killAfter = Number(env[`${prefix}_KILL_AFTER`] ?? 0);
  let transactions = 0;
  const original = DynamoStore.prototype.transact;
  DynamoStore.prototype.transact = function (this: DynamoStore, writes) {
    const sent = original.call(this, writes);
    transactions++;
    if (killAfter > 0 && transactions === killAfter) setImmediate(() => process.kill(process.pid, 'SIGKILL'));
    return sent;
  };
  const core = await createCoreBase({
    dynamodb: new DynamoDBClient(localClientConfig(env[`${prefix}_ENDPOINT`] as string)),
    tableName: env[`${prefix}_TABLE`] as string,
    keySource: fileKeySource(env[`${prefix}_KEY_FILE`] as string),
    clock: new ManualClock(Number(env[`${prefix}_CLOCK_MS`])),
    log: silentLogger,
  });
  return { core, transactions: () => transactions };
}
