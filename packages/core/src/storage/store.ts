import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  DeleteCommand,
  type DeleteCommandInput,
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  type PutCommandInput,
  QueryCommand,
  type QueryCommandInput,
  TransactWriteCommand,
  type TransactWriteCommandInput,
  UpdateCommand,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { unavailable } from '../lib/errors.ts';
import type { Logger } from '../lib/log.ts';
import { type ItemKind, ItemMac } from './item-mac.ts';
import type { Keyring } from './keyring.ts';

export type Item = Record<string, unknown> & { pk: string; sk: string };
type Omitted<T> = Omit<T, 'TableName'>;
type TransactEntry = NonNullable<TransactWriteCommandInput['TransactItems']>[number];
/** One write of a transaction; the table name is added by `transact`. */
export type TransactItem = { [K in keyof TransactEntry]?: Omit<NonNullable<TransactEntry[K]>, 'TableName'> };

/** How `batchGet` names an item. */
export const itemKey = (pk: string, sk: string) => `${pk}|${sk}`;

/** A write whose condition did not hold: the invariant the caller relied on was protected by DynamoDB. */
export class ConditionFailed extends Error {
  constructor(
    message: string,
    /** A cancelled transaction's reasons, one per item in order (`Code` is `None` for an item that passed). */
    readonly reasons?: Array<{ Code?: string; Message?: string }>,
  ) {
    super(message);
  }
}

/** Tries of a transaction cancelled only by conflicts with other transactions, and the base of the wait between them. */
const conflictAttempts = 6;
const conflictWaitMs = 5;

/** A transaction cancelled because other transactions held its items, not because a condition failed. */
const isConflictOnly = (error: unknown) =>
  error instanceof TransactionCanceledException &&
  (error.CancellationReasons ?? []).some((reason) => reason.Code === 'TransactionConflict') &&
  !(error.CancellationReasons ?? []).some((reason) => reason.Code === 'ConditionalCheckFailed');

/** The one table. Thin on purpose: callers write DynamoDB expressions; this adds the table name, paging and errors. */
export class Store {
  readonly doc: DynamoDBDocumentClient;
  #itemMac: ItemMac | undefined;
  constructor(
    client: DynamoDBClient,
    readonly tableName: string,
  ) {
    this.doc = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  }

  /**
   * Turns on tamper evidence (`item-mac.ts`) once the keyring is loaded (the wrapped data key is itself in the
   * table, so the store exists first). Until then `signed` and `verified` throw: no security item is written or
   * trusted without it.
   */
  authenticateWith(keyring: Keyring, log: Logger): void {
    this.#itemMac = new ItemMac(keyring, log);
  }

  private get itemMac(): ItemMac {
    if (!this.#itemMac) throw new Error('the store has no keyring yet: security items can be neither written nor trusted');
    return this.#itemMac;
  }

  /** The item with the MAC of its kind set, for a put (see `item-mac.ts`). */
  signed<T extends Item>(kind: ItemKind, item: T): T {
    return this.itemMac.sign(kind, item);
  }

  /** The MAC an item of `kind` with these attributes carries, for an update that rewrites covered attributes. */
  macOf(kind: ItemKind, item: Item): string {
    return this.itemMac.tag(kind, item);
  }

  /** The item if its MAC verifies, else undefined (logged as an error naming its key): what every read of security state goes through. */
  verified<T extends Item>(kind: ItemKind, item: T | undefined): T | undefined {
    return this.itemMac.verify(kind, item);
  }

  /** `get` of an authenticated item: a forged, moved or MAC-less item reads as absent. */
  async getVerified<T extends Item = Item>(kind: ItemKind, pk: string, sk: string): Promise<T | undefined> {
    return this.verified(kind, await this.get<T>(pk, sk));
  }

  async get<T extends Item = Item>(pk: string, sk: string): Promise<T | undefined> {
    const out = await this.doc.send(new GetCommand({ TableName: this.tableName, Key: { pk, sk }, ConsistentRead: true }));
    return out.Item as T | undefined;
  }

  /**
   * Several items in one round trip (strongly consistent), keyed `pk|sk`; an absent item is absent from the map.
   * Keys DynamoDB leaves unprocessed under load are asked for again.
   */
  async batchGet(keys: Array<{ pk: string; sk: string }>): Promise<Map<string, Item>> {
    const found = new Map<string, Item>();
    let pending: Array<Record<string, unknown>> = keys;
    while (pending.length > 0) {
      const out = await this.doc.send(new BatchGetCommand({ RequestItems: { [this.tableName]: { Keys: pending, ConsistentRead: true } } }));
      for (const item of (out.Responses?.[this.tableName] ?? []) as Item[]) found.set(itemKey(item.pk, item.sk), item);
      pending = out.UnprocessedKeys?.[this.tableName]?.Keys ?? [];
    }
    return found;
  }

  async put(input: Omitted<PutCommandInput>): Promise<void> {
    await this.guard(() => this.doc.send(new PutCommand({ TableName: this.tableName, ...input })));
  }

  async update<T extends Item = Item>(input: Omitted<UpdateCommandInput>): Promise<T | undefined> {
    const out = await this.guard(() =>
      this.doc.send(new UpdateCommand({ TableName: this.tableName, ReturnValues: 'ALL_NEW', ...input })),
    );
    return out.Attributes as T | undefined;
  }

  async delete<T extends Item = Item>(input: Omitted<DeleteCommandInput>): Promise<T | undefined> {
    const out = await this.guard(() =>
      this.doc.send(new DeleteCommand({ TableName: this.tableName, ReturnValues: 'ALL_OLD', ...input })),
    );
    return out.Attributes as T | undefined;
  }

  /** Every page of a query. */
  async query<T extends Item = Item>(input: Omitted<QueryCommandInput>): Promise<T[]> {
    const items: T[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const out = await this.doc.send(
        new QueryCommand({ TableName: this.tableName, ...input, ExclusiveStartKey: start }),
      );
      items.push(...((out.Items ?? []) as T[]));
      start = out.LastEvaluatedKey;
    } while (start && (input.Limit === undefined || items.length < input.Limit));
    return items;
  }

  /** Items of one partition whose sort key starts with `prefix`. */
  prefix<T extends Item = Item>(pk: string, prefix: string): Promise<T[]> {
    return this.query<T>({
      KeyConditionExpression: prefix ? 'pk = :pk AND begins_with(sk, :prefix)' : 'pk = :pk',
      ExpressionAttributeValues: prefix ? { ':pk': pk, ':prefix': prefix } : { ':pk': pk },
      ConsistentRead: true,
    });
  }

  async transact(items: TransactItem[]): Promise<void> {
    const named = items.map((item) => {
      const entry = { ...item } as Record<string, Record<string, unknown>>;
      for (const key of Object.keys(entry)) entry[key] = { TableName: this.tableName, ...entry[key] };
      return entry as TransactEntry;
    });
    // DynamoDB cancels a transaction that meets another in progress on one of its items (TransactionConflict) and
    // writes nothing; the SDK does not retry that, so it is tried again here, after a short random wait.
    for (let attempt = 1; ; attempt++) {
      try {
        await this.guard(() => this.doc.send(new TransactWriteCommand({ TransactItems: named })));
        return;
      } catch (error) {
        if (!isConflictOnly(error)) throw error;
        if (attempt >= conflictAttempts) throw unavailable(`the write met concurrent writes to the same items ${conflictAttempts} times; nothing was written, try again`);
        await new Promise((resolve) => setTimeout(resolve, Math.random() * conflictWaitMs * 2 ** attempt));
      }
    }
  }

  private async guard<T>(send: () => Promise<T>): Promise<T> {
    try {
      return await send();
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) throw new ConditionFailed(error.message);
      if (
        error instanceof TransactionCanceledException &&
        error.CancellationReasons?.some((reason) => reason.Code === 'ConditionalCheckFailed')
      ) {
        throw new ConditionFailed(error.message, error.CancellationReasons);
      }
      throw error;
    }
  }
}
