import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createCoreBase } from '../../packages/core/src/composition/shared-core.ts';
import { ManualClock } from '../../packages/core/src/lib/clock.ts';
import { silentLogger } from '../../packages/core/src/lib/log.ts';
import { schedulerFor } from '../../packages/core/src/scheduler/composition/scheduler-core.ts';
import { EvaluationWorker } from '../../packages/core/src/scheduler/worker/evaluation-worker.ts';
import { DynamoStore } from '../../packages/core/src/storage/dynamodb-store.ts';
import { fileKeySource } from '../../packages/core/src/storage/keyring.ts';
import { localClientConfig } from '../../packages/local/src/dynamodb-local.ts';

/**
 * The evaluation worker (`scheduler/worker/evaluation-worker.ts`) in a process of its own, for
 * test/scheduler/cluster-worker-kill.test.ts, which has it killed mid-apply: on the table `WORKER_TABLE` of DynamoDB
 * Local at `WORKER_ENDPOINT`, with the keyring of `WORKER_KEY_FILE` and the clock at `WORKER_CLOCK_MS`. With
 * `WORKER_KILL_AFTER=N` it sends SIGKILL to itself right after the Nth transaction has been handed to the SDK, before
 * its answer: that transaction may or may not land.
 */
const env = process.env;
const killAfter = Number(env.WORKER_KILL_AFTER ?? 0);
let transactions = 0;
const original = DynamoStore.prototype.transact;
DynamoStore.prototype.transact = function (this: DynamoStore, writes) {
  const sent = original.call(this, writes);
  transactions++;
  if (killAfter > 0 && transactions === killAfter) setImmediate(() => process.kill(process.pid, 'SIGKILL'));
  return sent;
};

const core = await createCoreBase({
  dynamodb: new DynamoDBClient(localClientConfig(env.WORKER_ENDPOINT as string)),
  tableName: env.WORKER_TABLE as string,
  keySource: fileKeySource(env.WORKER_KEY_FILE as string),
  clock: new ManualClock(Number(env.WORKER_CLOCK_MS)),
  log: silentLogger,
});
const outcomes = await new EvaluationWorker(schedulerFor(core)).runDue();
process.stdout.write(`ran ${outcomes.size} evaluations in ${transactions} transactions\n`);
process.exit(0);
