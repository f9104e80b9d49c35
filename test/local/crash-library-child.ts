import { readFileSync } from 'node:fs';
import path from 'node:path';
import { DynamoStore as Store } from '../../packages/core/src/storage/dynamodb-store.ts';
import { startLocal } from '../../packages/local/src/start-local.ts';

/**
 * What `npm start` runs (`startLocal`, the same runtime as packages/local/src/main.ts), with two test-only hooks for
 * test/local/crash-library.test.ts, which kills it between two writes:
 *  - SIGUSR2 arms it: it reads the number N from `CRASH_CONTROL_FILE` and, counting from then, kills itself with
 *    SIGKILL right after the Nth write to the table has landed (before the code that made it goes on);
 *  - `CRASH_CLOCK_OFFSET_SECONDS` moves its clock ahead, so a restart can stand for "later" (past a claim's deadline).
 * Every counted write is printed as `write <n>: <kind> <keys>`, so the test can tell what each step was.
 */

const env = process.env;
const controlFile = env.CRASH_CONTROL_FILE as string;
const offsetMs = Number(env.CRASH_CLOCK_OFFSET_SECONDS ?? 0) * 1000;
let killAfter = 0;
let writes = 0;

type Write = 'put' | 'update' | 'delete' | 'transact';
const keyText = (key: unknown) => {
  const { pk, sk } = (key ?? {}) as { pk?: string; sk?: string };
  return `${pk}|${sk}`;
};
/** The item a call writes: its key (or item) first, or DynamoDB's input (`Key`/`Item`) from code not yet moved to intent. */
const keyOf = (first: unknown) => {
  const body = first as { Key?: unknown; Item?: unknown };
  return keyText(body.Key ?? body.Item ?? first);
};
/** One transaction write: `{ put: item }`, `{ update: key, change }`, `{ delete: key }`, `{ check: key }` (or `Put`/`Update`/… bodies). */
const writeText = (entry: Record<string, unknown>) => {
  const op = (['put', 'update', 'delete', 'check', 'Put', 'Update', 'Delete', 'ConditionCheck'] as const).find(
    (name) => name in entry,
  ) as string;
  return `${op}(${keyOf(entry[op])})`;
};
const keysOf = (kind: Write, first: unknown): string =>
  kind === 'transact' ? (first as Array<Record<string, unknown>>).map(writeText).join(' ') : keyOf(first);

for (const kind of ['put', 'update', 'delete', 'transact'] as const) {
  const original = Store.prototype[kind] as (this: Store, ...args: unknown[]) => Promise<unknown>;
  (Store.prototype as unknown as Record<Write, (this: Store, ...args: unknown[]) => Promise<unknown>>)[kind] =
    async function (this: Store, ...args: unknown[]) {
      const result = await original.apply(this, args);
      if (killAfter > 0) {
        writes++;
        process.stdout.write(`write ${writes}: ${kind} ${keysOf(kind, args[0])}\n`);
        if (writes === killAfter) process.kill(process.pid, 'SIGKILL');
      }
      return result;
    };
}

process.on('SIGUSR2', () => {
  killAfter = Number(readFileSync(controlFile, 'utf8').trim());
  writes = 0;
  process.stdout.write(`armed: kill after write ${killAfter}\n`);
});

const runtime = await startLocal({
  dataDir: path.resolve(env.KEYHAVEN_DATA_DIR as string),
  dynamoDbEndpoint: env.KEYHAVEN_DYNAMODB_ENDPOINT as string,
  tableName: env.KEYHAVEN_TABLE as string,
  secretsPort: Number(env.KEYHAVEN_SECRETS_PORT),
  schedulerPort: Number(env.KEYHAVEN_SCHEDULER_PORT),
  devRootToken: env.KEYHAVEN_DEV_ROOT_TOKEN as string,
  // The jobs (lease sweep, rotations and claims) every 300 ms instead of every few seconds, to settle quickly.
  sweepIntervalMs: 300,
  clock: { now: () => Date.now() + offsetMs },
});
process.stdout.write(`ready ${runtime.secretsUrl}\n`);
