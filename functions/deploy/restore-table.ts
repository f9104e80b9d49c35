import path from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  type AttributeValue,
  BatchWriteItemCommand,
  DescribeTableCommand,
  type DynamoDBClient,
  ScanCommand,
} from '@aws-sdk/client-dynamodb';
import { dynamoDbClient } from '@keyhaven/core/entry-points/shared-core-from-environment.ts';

/**
 * The last step of restoring the table (docs/deployment.md, "Restoring the table"): a point in time or an AWS Backup recovery point
 * is restored by DynamoDB into a new table, which the stack does not own (no stream, no TTL, no alarms, no backups);
 * this copies it back into the stack's table, so the table keeps its name, stream, TTL, alarms and backup plan.
 * Every item of the restored table is written; every item of the stack's table that the restored one lacks is deleted.
 * Except items marked `droppedOnRestore`, which are left out (and deleted): schedules whose absence means "due now",
 * such as the directory engine's account-check cursors, so each mount's check of every managed password falls due at
 * once and a password rotated after the restore point (which the restored table no longer knows) is healed within the
 * first pass (`packages/core/src/secrets/engines/ldap/account-check.ts`).
 * Writes and deletes made this way are not TTL removals, so the stream's TTL backstop ignores them. Run it with the
 * service stopped (docs/deployment.md), with credentials that may scan the restored table and write the stack's:
 *
 *   node --import tsx functions/deploy/restore-table.ts <restored table> <the stack's table>
 */

type RawItem = Record<string, AttributeValue>;

export interface RestoreReport {
  written: number;
  deleted: number;
}

async function scanAll(client: DynamoDBClient, tableName: string): Promise<RawItem[]> {
  const items: RawItem[] = [];
  let start: RawItem | undefined;
  do {
    const page = await client.send(
      new ScanCommand({
        TableName: tableName,
        ConsistentRead: true,
        ...(start ? { ExclusiveStartKey: start } : {}),
      }),
    );
    items.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start);
  return items;
}

async function batchWrite(
  client: DynamoDBClient,
  tableName: string,
  requests: Array<{
    PutRequest?: { Item: RawItem };
    DeleteRequest?: { Key: RawItem };
  }>,
) {
  for (let i = 0; i < requests.length; i += 25) {
    let pending = requests.slice(i, i + 25);
    for (let attempt = 0; pending.length > 0; attempt++) {
      if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(100 * 2 ** attempt, 5_000)));
      const out = await client.send(new BatchWriteItemCommand({ RequestItems: { [tableName]: pending } }));
      pending = (out.UnprocessedItems?.[tableName] ?? []) as typeof pending;
    }
  }
}

const keyOf = (item: RawItem) => `${item.pk?.S ?? ''}\u0000${item.sk?.S ?? ''}`;

/** Makes `target` hold exactly the items of `restored`. */
export async function restoreTable(client: DynamoDBClient, restored: string, target: string): Promise<RestoreReport> {
  if (restored === target)
    throw new Error('the restored table and the stack table must differ: restore into a new table first');
  for (const name of [restored, target]) {
    try {
      await client.send(new DescribeTableCommand({ TableName: name }));
    } catch (error) {
      throw new Error(`table ${name} cannot be read: ${(error as Error).message}`);
    }
  }
  const wanted = (await scanAll(client, restored)).filter((item) => item.droppedOnRestore?.BOOL !== true);
  const keep = new Set(wanted.map(keyOf));
  const extra = (await scanAll(client, target)).filter((item) => !keep.has(keyOf(item)));
  await batchWrite(
    client,
    target,
    extra.map((item) => ({
      DeleteRequest: {
        Key: { pk: item.pk as AttributeValue, sk: item.sk as AttributeValue },
      },
    })),
  );
  await batchWrite(
    client,
    target,
    wanted.map((item) => ({ PutRequest: { Item: item } })),
  );
  return { written: wanted.length, deleted: extra.length };
}

async function main(argv: string[]): Promise<number> {
  const [restored, target] = argv;
  if (!restored || !target || argv.length > 2) {
    process.stderr.write(
      'usage: node --import tsx functions/deploy/restore-table.ts <restored table> <the stack table>\n',
    );
    return 2;
  }
  const client = dynamoDbClient(process.env.KEYHAVEN_DYNAMODB_ENDPOINT);
  try {
    process.stdout.write(`${JSON.stringify(await restoreTable(client, restored, target))}\n`);
    return 0;
  } finally {
    client.destroy();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error) => {
      process.stderr.write(`restore failed: ${(error as Error).message}\n`);
      process.exit(1);
    },
  );
}
