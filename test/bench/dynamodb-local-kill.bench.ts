/**
 * What DynamoDB Local keeps of writes it acknowledged when its JVM is killed with SIGKILL right after (issue 43): the
 * embedded store of `npm start`, started exactly as `npm start` starts it (`packages/local/src/dynamodb-local.ts`, a
 * data folder, `-dbPath`). Each round writes a few items one after another, alternating `TransactWriteItems` (a put of
 * the item and an update of a second, as the directory engine's write-ahead does) and a plain `PutItem`, SIGKILLs the
 * JVM the moment the last acknowledgement arrives, starts it again on the same folder and reads every item back
 * (strongly consistent). Figures only: how many acknowledged writes of each kind were lost, and how long before the
 * kill the oldest lost one had been acknowledged. Run: `node_modules/.bin/tsx test/bench/dynamodb-local-kill.bench.ts`
 * (BENCH_KILLS=n rounds, BENCH_WRITES=n per round; BENCH_SMOKE=1: 1 round of 2).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { DynamoDBClient, GetItemCommand, PutItemCommand, TransactWriteItemsCommand } from '@aws-sdk/client-dynamodb';
import { type DynamoDbLocal, localClientConfig, startDynamoDbLocal } from '../../packages/local/src/dynamodb-local.ts';
import { ensureTable } from '../../packages/local/src/table.ts';
import { figure, sized } from './summary.ts';

const kills = sized('BENCH_KILLS', 10, 1);
/** Writes per round, alternating a transaction and a put, one after another: the kill follows the last one's acknowledgement. */
const writesPerRound = sized('BENCH_WRITES', 6, 2);
const tableName = 'kill-bench';
const dataDir = await mkdtemp(path.join(tmpdir(), 'keyhaven-ddb-kill-'));
// Each start registers an exit hook that a SIGKILLed JVM never removes.
process.setMaxListeners(0);

async function started(): Promise<{ dynamo: DynamoDbLocal; client: DynamoDBClient }> {
  const dynamo = await startDynamoDbLocal({ dataDir });
  const client = new DynamoDBClient(localClientConfig(dynamo.endpoint, dynamo.credentials));
  return { dynamo, client };
}

/** SIGKILL of the JVM (what `kill -9` of npm start's process group does to it), and its exit awaited. */
async function killHard(dynamo: DynamoDbLocal): Promise<void> {
  if (!dynamo.pid) throw new Error('DynamoDB Local has no pid');
  process.kill(dynamo.pid, 'SIGKILL');
  for (let waited = 0; waited < 10_000; waited += 20) {
    try {
      process.kill(dynamo.pid, 0);
    } catch {
      return;
    }
    await sleep(20);
  }
  throw new Error('DynamoDB Local outlived SIGKILL');
}

const key = (sk: string) => ({ pk: { S: 'kill' }, sk: { S: sk } });
type Kind = 'transaction' | 'put';

async function write(client: DynamoDBClient, kind: Kind, sk: string): Promise<void> {
  if (kind === 'transaction')
    await client.send(
      new TransactWriteItemsCommand({
        TransactItems: [
          {
            Put: {
              TableName: tableName,
              Item: { ...key(sk), value: { S: 'written' } },
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
          {
            Update: {
              TableName: tableName,
              Key: key('counter'),
              UpdateExpression: 'ADD writes :one',
              ExpressionAttributeValues: { ':one': { N: '1' } },
            },
          },
        ],
      }),
    );
  else await client.send(new PutItemCommand({ TableName: tableName, Item: { ...key(sk), value: { S: 'written' } } }));
}

let current = await started();
await ensureTable(current.client, tableName);
const acknowledged = { transaction: 0, put: 0 };
const lost = { transaction: 0, put: 0 };
/** How long before the kill each lost write had been acknowledged (ms). */
const lostAges: Record<Kind, number[]> = { transaction: [], put: [] };
let roundsWithLoss = 0;
try {
  for (let round = 0; round < kills; round++) {
    // Alternating transactions and puts, one after another (a put last, so both kinds stand next to the kill by turns).
    const written: Array<{ kind: Kind; sk: string; at: number }> = [];
    for (let index = round % 2; index < writesPerRound + (round % 2); index++) {
      const kind: Kind = index % 2 === 0 ? 'transaction' : 'put';
      const sk = `${round}-${index}-${kind}`;
      await write(current.client, kind, sk);
      written.push({ kind, sk, at: performance.now() });
    }
    await killHard(current.dynamo);
    const killedAt = performance.now();
    current.client.destroy();
    current = await started();
    let roundLost = false;
    for (const { kind, sk, at } of written) {
      acknowledged[kind]++;
      const back = await current.client.send(
        new GetItemCommand({ TableName: tableName, Key: key(sk), ConsistentRead: true }),
      );
      if (back.Item) continue;
      lost[kind]++;
      lostAges[kind].push(killedAt - at);
      roundLost = true;
    }
    if (roundLost) roundsWithLoss++;
  }
} finally {
  current.client.destroy();
  await current.dynamo.stop();
  await rm(dataDir, { recursive: true, force: true });
}

const oldest = (ages: number[]) => (ages.length === 0 ? '-' : `${Math.max(...ages).toFixed(0)} ms`);
console.log(
  `DynamoDB Local (-dbPath), SIGKILL right after the last of ${writesPerRound} acknowledged writes, ${kills} kills (${roundsWithLoss} lost something):\n` +
    `  TransactWriteItems lost ${lost.transaction} of ${acknowledged.transaction} (oldest lost acknowledged ${oldest(lostAges.transaction)} before the kill)\n` +
    `  PutItem            lost ${lost.put} of ${acknowledged.put} (oldest lost acknowledged ${oldest(lostAges.put)} before the kill)`,
);
figure(
  'dynamodb-local',
  'acknowledged transactions lost on SIGKILL',
  lost.transaction,
  '—',
  `of ${acknowledged.transaction}, ${roundsWithLoss} of ${kills} kills lost something`,
);
figure('dynamodb-local', 'acknowledged PutItems lost on SIGKILL', lost.put, '—', `of ${acknowledged.put}`);
