/**
 * What DynamoDB Local keeps of a write it acknowledged when its JVM is killed with SIGKILL right after (issue 43): the
 * embedded store of `npm start`, started exactly as `npm start` starts it (`packages/local/src/dynamodb-local.ts`, a
 * data folder, `-dbPath`). Each round writes one item, either with `TransactWriteItems` (a put of the item and an
 * update of a second, as the directory engine's write-ahead does) or with a plain `PutItem`, SIGKILLs the JVM the
 * moment the acknowledgement arrives, starts it again on the same folder and reads the item back (strongly
 * consistent). Figures only: how many acknowledged writes of each kind were lost. Run:
 * `node_modules/.bin/tsx test/bench/dynamodb-local-kill.bench.ts` (BENCH_KILLS=n per kind; BENCH_SMOKE=1: 1 each).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { DynamoDBClient, GetItemCommand, PutItemCommand, TransactWriteItemsCommand } from '@aws-sdk/client-dynamodb';
import { type DynamoDbLocal, localClientConfig, startDynamoDbLocal } from '../../packages/local/src/dynamodb-local.ts';
import { ensureTable } from '../../packages/local/src/table.ts';
import { figure, sized } from './summary.ts';

const kills = sized('BENCH_KILLS', 25, 1);
const tableName = 'kill-bench';
const dataDir = await mkdtemp(path.join(tmpdir(), 'keyhaven-ddb-kill-'));

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

let current = await started();
await ensureTable(current.client, tableName);
const lost = { transaction: 0, put: 0 };
const acknowledgedMs = { transaction: [] as number[], put: [] as number[] };
try {
  for (let round = 0; round < kills * 2; round++) {
    const kind = round % 2 === 0 ? 'transaction' : 'put';
    const sk = `${kind}-${round}`;
    const begun = performance.now();
    if (kind === 'transaction')
      await current.client.send(
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
    else
      await current.client.send(
        new PutItemCommand({ TableName: tableName, Item: { ...key(sk), value: { S: 'written' } } }),
      );
    acknowledgedMs[kind].push(performance.now() - begun);
    await killHard(current.dynamo);
    current.client.destroy();
    current = await started();
    const back = await current.client.send(
      new GetItemCommand({ TableName: tableName, Key: key(sk), ConsistentRead: true }),
    );
    if (!back.Item) lost[kind]++;
  }
} finally {
  current.client.destroy();
  await current.dynamo.stop();
  await rm(dataDir, { recursive: true, force: true });
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;
console.log(
  `DynamoDB Local (-dbPath), SIGKILL right after the acknowledgement, ${kills} kills per kind:\n` +
    `  TransactWriteItems lost ${lost.transaction} of ${kills} (acknowledged in ${median(acknowledgedMs.transaction).toFixed(1)} ms median)\n` +
    `  PutItem            lost ${lost.put} of ${kills} (acknowledged in ${median(acknowledgedMs.put).toFixed(1)} ms median)`,
);
figure('dynamodb-local', 'acknowledged transactions lost on SIGKILL', lost.transaction, '—', `of ${kills}`);
figure('dynamodb-local', 'acknowledged PutItems lost on SIGKILL', lost.put, '—', `of ${kills}`);
