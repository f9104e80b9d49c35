import { existsSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { type Core, createCore } from '@keyhaven/core/composition/secrets-core.ts';
import { silentLogger } from '@keyhaven/core/lib/log.ts';
import { coreFromEnvironment } from '@keyhaven/core/entry-points/secrets-core-from-environment.ts';
import { dynamoDbClient } from '@keyhaven/core/entry-points/shared-core-from-environment.ts';
import { itemKindOf, itemKindRows } from '@keyhaven/core/item-kinds.ts';
import { mountKind } from '@keyhaven/core/secrets/mounts/mount-table.ts';
import { initMarkerPk, initMarkerSk } from '@keyhaven/core/secrets/sys/init.ts';
import { type ItemKind, macAttribute } from '@keyhaven/core/storage/item-mac.ts';
import { fileKeySource } from '@keyhaven/core/storage/keyring.ts';
import { bootstrapMarkerKind, bootstrapMarkerPk, bootstrapMarkerSk } from '@keyhaven/core/storage/bootstrap-marker.ts';
import { keyringKind, keyringPk, keyringSk } from '@keyhaven/core/storage/keyring-item.ts';
import { ConditionFailed, type Item, type Store } from '@keyhaven/core/storage/store.ts';
import { localClientConfig, startDynamoDbLocal } from '@keyhaven/local';

const usage = `usage: node --import tsx functions/deploy/sign-items.ts [--dry-run] <table>
       node --import tsx functions/deploy/sign-items.ts [--dry-run] --data-dir <npm start's data directory, e.g. .keyhaven>

Signs the security items (every kind the item-kind table of docs/security.md marks MAC: tokens, policies, mounts,
login configuration and roles, token roles, audit devices, password policies, the keyring's item, the init and
bootstrap markers, the scheduler's ACL and cluster items) that were written before item MACs and so carry none: the service
refuses them as forged until they are signed. By running it you vouch for what the table holds now: whatever a
MAC-less item says (a token's policies, a role's grants) is trusted from then on, so run it only on a table nobody
but the service could have written. An item whose MAC is wrong (forged or corrupted) is never signed: it is left as
it is and listed. Each item is signed with a conditional write (still without a MAC, every signed attribute as read).

<table>: loads the keyring as the deployed functions do: KEYHAVEN_KMS_KEY_ID (AWS) or KEYHAVEN_KEY_FILE (a local key
file), KEYHAVEN_DYNAMODB_ENDPOINT and KEYHAVEN_KMS_ENDPOINT for local stand-ins; AWS credentials that may scan and
update the table and decrypt with the key.
--data-dir <dir>: a directory npm start made; stop npm start first. DynamoDB Local is started on <dir>/dynamodb under
the directory's own access key, the keyring is <dir>/keyring.key, the table KEYHAVEN_TABLE (default keyhaven).
--dry-run: writes nothing; prints what would be signed.
`;

/** The builtin mounts' storage partitions, which no mount item names (`mount#token` holds the token roles). */
const builtinMountTypes: ReadonlyArray<[string, string]> = [
  ['system', 'system'],
  ['identity', 'identity'],
  ['token', 'token'],
];

/**
 * The MAC kind of an item at this key (`packages/core/src/item-kinds.ts`), or undefined if its kind carries none or is
 * short-lived state. `mountTypes`: the type of each mount's storage partition, by uuid.
 */
function kindOf(item: Item, mountTypes: ReadonlyMap<string, string>): ItemKind | undefined {
  const row = itemKindOf(item.pk, item.sk, (uuid) => mountTypes.get(uuid));
  return row?.shortLived ? undefined : row?.mac;
}

export interface KindCounts {
  /** Had no MAC and now has one (with `--dry-run`: would be signed). */
  signed: number;
  /** Already carried the MAC its content gives. */
  alreadySigned: number;
  /** Carry a MAC that does not match: forged or corrupted, left as they are (the service keeps refusing them). */
  refused: number;
  /** Changed between the scan and the write (the condition failed): not signed; run the command again. */
  changed: number;
}

export interface SignReport {
  dryRun: boolean;
  /** Per kind name (`token`, `acl-policy`, `mount`, `mount-value`, `scheduler-acl-…`). */
  kinds: Record<string, KindCounts>;
  /** The keys of the items with a wrong MAC. */
  refused: Array<{ kind: string; pk: string; sk: string }>;
  changed: Array<{ kind: string; pk: string; sk: string }>;
}

/**
 * Signs every MAC-less item of an authenticated kind in the store's table (see the usage text above). A mount's
 * config and roles are recognised by the mount's type, taken only from mount items that verify or carry no MAC. A
 * MAC-less keyring item is signed with the init marker's time as its initialisation stamp when the table has one.
 */
export async function signItems(store: Store, options: { dryRun?: boolean } = {}): Promise<SignReport> {
  const dryRun = options.dryRun ?? false;
  // The keyring's item first: it carries the initialisation's epoch, which the other kinds' MACs bind (`ItemKind.epoch`),
  // so the epochs are read again once it (and the bootstrap marker) are signed, before anything else is checked.
  const items = (await store.scan()).sort(
    (a, b) => Number(b.pk === keyringPk && b.sk === keyringSk) - Number(a.pk === keyringPk && a.sk === keyringSk),
  );
  const macOk = (kind: ItemKind, item: Item) => item[macAttribute] === store.macOf(kind, item);
  const keyringItem = items.find((item) => item.pk === keyringPk && item.sk === keyringSk);
  const bootstrapMarker = items.find((item) => item.pk === bootstrapMarkerPk && item.sk === bootstrapMarkerSk);
  const report = emptyReport(dryRun);
  if (keyringItem) await signOrReport(store, report, keyringKind, keyringItem, items, dryRun);
  // The bootstrap marker likewise carries the scheduler's ACL epoch.
  if (bootstrapMarker) await signOrReport(store, report, bootstrapMarkerKind, bootstrapMarker, items, dryRun);
  await store.readEpoch();
  const mountTypes = new Map(builtinMountTypes);
  for (const item of items) {
    if (item.pk !== 'mounts') continue;
    if (item[macAttribute] !== undefined && !macOk(mountKind, item)) continue;
    const entry = item.entry as { type?: unknown; uuid?: unknown } | undefined;
    if (typeof entry?.type === 'string' && typeof entry.uuid === 'string') mountTypes.set(entry.uuid, entry.type);
  }
  for (const item of items) {
    if (item === keyringItem || item === bootstrapMarker) continue;
    const kind = kindOf(item, mountTypes);
    if (kind) await signOrReport(store, report, kind, item, items, dryRun);
  }
  return report;
}

function emptyReport(dryRun: boolean): SignReport {
  return {
    dryRun,
    kinds: Object.fromEntries(
      [...new Set(itemKindRows.flatMap((row) => (row.mac ? [row.mac.name] : [])))].map((name) => [
        name,
        { signed: 0, alreadySigned: 0, refused: 0, changed: 0 },
      ]),
    ),
    refused: [],
    changed: [],
  };
}

/** Signs one MAC-less item of `kind` (counting it), or counts it as already signed or refused. */
async function signOrReport(
  store: Store,
  report: SignReport,
  kind: ItemKind,
  item: Item,
  items: Item[],
  dryRun: boolean,
): Promise<void> {
  const counts = report.kinds[kind.name] as KindCounts;
  if (item[macAttribute] !== undefined) {
    if (item[macAttribute] === store.macOf(kind, item)) counts.alreadySigned++;
    else {
      counts.refused++;
      report.refused.push({ kind: kind.name, pk: item.pk, sk: item.sk });
    }
    return;
  }
  const stamp = kind === keyringKind ? initialisationStamp(items, item) : {};
  if (!dryRun && !(await signOne(store, kind, item, stamp))) {
    counts.changed++;
    report.changed.push({ kind: kind.name, pk: item.pk, sk: item.sk });
    return;
  }
  counts.signed++;
}

/** What a MAC-less keyring item is signed with besides its attributes: the init marker's time, if there is one. */
function initialisationStamp(items: Item[], keyringItem: Item): Record<string, unknown> {
  const marker = items.find((item) => item.pk === initMarkerPk && item.sk === initMarkerSk);
  if (!marker || keyringItem.initializedAt !== undefined) return {};
  return { initializedAt: marker.initializedAt };
}

/**
 * Sets the item's MAC (and the attributes of `added`, covered by it) if it still has none and every attribute the MAC
 * covers is as scanned; false if not.
 */
async function signOne(
  store: Store,
  kind: ItemKind,
  item: Item,
  added: Record<string, unknown> = {},
): Promise<boolean> {
  const unchanged: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(item)) {
    if (name === 'pk' || name === 'sk' || name === macAttribute || kind.unauthenticated.has(name)) continue;
    unchanged[name] = value;
  }
  try {
    await store.update(
      { pk: item.pk, sk: item.sk },
      { set: { ...added, [macAttribute]: store.macOf(kind, { ...item, ...added }) } },
      {
        when: {
          exists: true,
          missing: [macAttribute, ...Object.keys(added)],
          ...(Object.keys(unchanged).length > 0 ? { equals: unchanged } : {}),
        },
      },
    );
    return true;
  } catch (error) {
    if (error instanceof ConditionFailed) return false;
    throw error;
  }
}

/** The report as the operator reads it: one line per kind, then every item left alone. */
export function formatReport(report: SignReport, table: string): string {
  const lines = [
    `table ${table}${report.dryRun ? ' (dry run: nothing written)' : ''}`,
    `${'kind'.padEnd(28)}${(report.dryRun ? 'would sign' : 'signed').padStart(12)}${'already signed'.padStart(16)}${'refused'.padStart(9)}${'changed'.padStart(9)}`,
  ];
  for (const [name, counts] of Object.entries(report.kinds)) {
    lines.push(
      `${name.padEnd(28)}${String(counts.signed).padStart(12)}${String(counts.alreadySigned).padStart(16)}${String(counts.refused).padStart(9)}${String(counts.changed).padStart(9)}`,
    );
  }
  for (const item of report.refused) {
    lines.push(
      `refused: ${item.kind} ${item.pk} ${item.sk}: its MAC does not match (forged or corrupted); left as it is, the service keeps refusing it`,
    );
  }
  for (const item of report.changed)
    lines.push(
      `changed: ${item.kind} ${item.pk} ${item.sk}: written by someone else during the run; not signed, run again`,
    );
  return `${lines.join('\n')}\n`;
}

/** The keyring's wrapped data key must already be in the table: signing never makes a new one. */
async function requireDataKey(client: DynamoDBClient, table: string): Promise<void> {
  const { Item } = await client.send(
    new GetItemCommand({ TableName: table, Key: { pk: { S: 'sys' }, sk: { S: 'keyring' } }, ConsistentRead: true }),
  );
  if (!Item)
    throw new Error(
      `table ${table} holds no data key (sys/keyring): it was never used by the service, so there is nothing to sign`,
    );
}

async function run(table: string, dryRun: boolean, dataDir: string | undefined): Promise<SignReport> {
  if (dataDir === undefined) {
    const env: NodeJS.ProcessEnv = { ...process.env, KEYHAVEN_TABLE: table };
    if (!env.KEYHAVEN_KMS_KEY_ID && env.KEYHAVEN_KEY_FILE && !existsSync(env.KEYHAVEN_KEY_FILE)) {
      throw new Error(`key file ${env.KEYHAVEN_KEY_FILE} does not exist`);
    }
    const client = dynamoDbClient(env.KEYHAVEN_DYNAMODB_ENDPOINT);
    try {
      await requireDataKey(client, table);
    } finally {
      client.destroy();
    }
    const core: Core = await coreFromEnvironment([], env)();
    return signItems(core.store, { dryRun });
  }
  const keyFile = path.join(dataDir, 'keyring.key');
  for (const needed of [keyFile, path.join(dataDir, 'dynamodb', 'access-key')]) {
    if (!existsSync(needed))
      throw new Error(`${needed} does not exist: ${dataDir} is not a data directory npm start made`);
  }
  const dynamo = await startDynamoDbLocal({ dataDir: path.join(dataDir, 'dynamodb') });
  const client = new DynamoDBClient(localClientConfig(dynamo.endpoint, dynamo.credentials));
  try {
    await requireDataKey(client, table);
    const core = await createCore({
      dynamodb: client,
      tableName: table,
      keySource: fileKeySource(keyFile),
      backends: [],
      log: silentLogger,
    });
    return await signItems(core.store, { dryRun });
  } finally {
    client.destroy();
    await dynamo.stop();
  }
}

async function main(argv: string[]): Promise<number> {
  const dryRun = argv.includes('--dry-run');
  const rest = argv.filter((arg) => arg !== '--dry-run');
  let table: string | undefined;
  let dataDir: string | undefined;
  if (rest[0] === '--data-dir' && rest.length === 2 && rest[1]) {
    dataDir = path.resolve(rest[1]);
    table = process.env.KEYHAVEN_TABLE || 'keyhaven';
  } else if (rest.length === 1 && rest[0] && !rest[0].startsWith('-')) {
    table = rest[0];
  } else {
    process.stderr.write(usage);
    return 2;
  }
  const report = await run(table, dryRun, dataDir);
  process.stdout.write(formatReport(report, table));
  return 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error) => {
      process.stderr.write(`sign-items failed: ${(error as Error).message}\n`);
      process.exit(1);
    },
  );
}
