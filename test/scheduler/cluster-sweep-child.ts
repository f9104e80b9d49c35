import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createCoreBase } from '../../packages/core/src/composition/shared-core.ts';
import { ManualClock } from '../../packages/core/src/lib/clock.ts';
import { silentLogger } from '../../packages/core/src/lib/log.ts';
import { sweepScheduler } from '../../packages/core/src/scheduler/sweep.ts';
import { DynamoStore } from '../../packages/core/src/storage/dynamodb-store.ts';
import { fileKeySource } from '../../packages/core/src/storage/keyring.ts';
import { localClientConfig } from '../../packages/local/src/dynamodb-local.ts';

/**
 * The scheduler's sweep job (`scheduler/sweep.ts`) in a process of its own, for test/scheduler/cluster-sweep.test.ts,
 * which has it killed mid-way: on the table `SWEEP_TABLE` of DynamoDB Local at `SWEEP_ENDPOINT`, with the keyring of
 * `SWEEP_KEY_FILE` and the clock at `SWEEP_CLOCK_MS`. With `SWEEP_KILL_AFTER=N` it sends SIGKILL to itself right
 * after the Nth transaction has been handed to the SDK, before its answer: that transaction may or may not land.
 */
const env = process.env;
const killAfter = Number(env.SWEEP_KILL_AFTER ?? 0);
let transactions = 0;
const original = DynamoStore.prototype.transact;
DynamoStore.prototype.transact = function (this: DynamoStore, writes) {
  const sent = original.call(this, writes);
  transactions++;
  if (killAfter > 0 && transactions === killAfter) setImmediate(() => process.kill(process.pid, 'SIGKILL'));
  return sent;
};

const core = await createCoreBase({
  dynamodb: new DynamoDBClient(localClientConfig(env.SWEEP_ENDPOINT as string)),
  tableName: env.SWEEP_TABLE as string,
  keySource: fileKeySource(env.SWEEP_KEY_FILE as string),
  clock: new ManualClock(Number(env.SWEEP_CLOCK_MS)),
  log: silentLogger,
});
await sweepScheduler(core);
process.stdout.write(`swept after ${transactions} transactions\n`);
process.exit(0);
