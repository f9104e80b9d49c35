import {
  type AttributeValue,
  BatchGetItemCommand,
  ConditionalCheckFailedException,
  DeleteItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  type QueryCommandInput,
  ScanCommand,
  TransactionCanceledException,
  TransactWriteItemsCommand,
  type TransactWriteItem,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { unavailable } from '../lib/errors.ts';
import { sharedUntilRejected } from '../lib/shared-until-rejected.ts';
import { ConditionFailed, itemKey } from './condition-failed.ts';
import { Expressions, outsideRange } from './dynamodb-expressions.ts';
import {
  type Change,
  type Condition,
  indexKeys,
  type Item,
  type Key,
  type ListOptions,
  maxTransactionWrites,
  type Store,
  type Write,
} from './intent.ts';
import { StoreBase } from './store-base.ts';

type Omitted<T> = Omit<T, 'TableName'>;
type Attributes = Record<string, AttributeValue>;
/** DynamoDB's shape of a transaction write, without the table name. */
type TransactItem = { [K in keyof TransactWriteItem]?: Omit<NonNullable<TransactWriteItem[K]>, 'TableName'> };

/**
 * Items and values to and from DynamoDB's attribute values, with `@aws-sdk/util-dynamodb` called directly (what
 * `@aws-sdk/lib-dynamodb`'s document client calls too, behind a middleware that walks every command's whole input
 * and output to find them: about a tenth of a login's CPU, issue 28). Undefined values are left out, as before.
 * A number past Number.MAX_SAFE_INTEGER is stored as JavaScript holds it and read back as that same number (not a
 * BigInt), as the memory store keeps it: Nomad's nanosecond times (a job's SubmitTime, an evaluation's CreateTime)
 * are such numbers, and the precision they lack was lost when JavaScript made them, not here. Values a user sends that must be exact are refused where
 * they are validated (`cluster/jobs/model.ts`, `cluster/node-pools/model.ts`).
 */
const toAttributes = (item: Record<string, unknown>): Attributes =>
  marshall(item, { removeUndefinedValues: true, allowImpreciseNumbers: true });
const fromAttributes = <T>(attributes: Attributes | undefined): T | undefined =>
  attributes === undefined ? undefined : (unmarshall(ownAttributes(attributes), { wrapNumbers: Number }) as T);

/**
 * An attribute named `__proto__`, which anyone who can write the table may add, reaches us from the SDK as the attribute
 * map's prototype or as an own key with no value, and `unmarshall` would assign it as a prototype: in no key list, yet
 * answering for every attribute the item lacks, unseen by an item MAC (or failing the read). It is read as a plain text
 * attribute of another name instead, so a MAC over the item fails like for any added attribute and nothing inherits
 * from it (`test/attacks/table-writer.test.ts`).
 */
function ownAttributes(attributes: Attributes): Attributes {
  const prototype = Object.getPrototypeOf(attributes);
  if ((prototype === Object.prototype || prototype === null) && !Object.hasOwn(attributes, '__proto__'))
    return attributes;
  const own: Attributes = { '(an attribute named __proto__)': { S: 'present' } };
  for (const [name, value] of Object.entries(attributes)) if (name !== '__proto__') own[name] = value;
  return own;
}

/** Tries of a transaction cancelled only by conflicts with other transactions, and the base of the wait between them. */
const conflictAttempts = 6;
const conflictWaitMs = 5;

/** A transaction cancelled because other transactions held its items, not because a condition failed. */
const isConflictOnly = (error: unknown) =>
  error instanceof TransactionCanceledException &&
  (error.CancellationReasons ?? []).some((reason) => reason.Code === 'TransactionConflict') &&
  !(error.CancellationReasons ?? []).some((reason) => reason.Code === 'ConditionalCheckFailed');

/** The condition of a write as a command's `ConditionExpression` and its placeholders (nothing when there is none). */
function conditioned(when: Condition | undefined, expressions = new Expressions()) {
  const ConditionExpression = when === undefined ? undefined : expressions.condition(when);
  return { ...(ConditionExpression !== undefined ? { ConditionExpression } : {}), ...placeholders(expressions) };
}

/** An expression's placeholders, its values as attribute values. */
function placeholders(expressions: Expressions) {
  const { ExpressionAttributeNames, ExpressionAttributeValues } = expressions.attributes();
  return {
    ...(ExpressionAttributeNames ? { ExpressionAttributeNames } : {}),
    ...(ExpressionAttributeValues ? { ExpressionAttributeValues: toAttributes(ExpressionAttributeValues) } : {}),
  };
}

/**
 * One SigV4 signer for all of a client's calls. The SDK builds a new one for every call, from a copy of its whole
 * configuration: about 7 µs of a call's CPU (issue 28). A signer holds nothing of a call: it reads the credentials
 * through the client's own provider (which refreshes them) when it signs, and is handed each call's date, region and
 * service, so the shared one signs every call as a new one would (`test/storage/sdk-hash.test.ts` checks the signatures
 * of a store's calls against the SDK's signer). If making it fails, the next call tries again.
 */
function shareOneSigner(client: DynamoDBClient): void {
  const perCall = client.config.signer;
  let scheme: Parameters<typeof perCall>[0];
  const shared = sharedUntilRejected(() => perCall(scheme));
  client.config.signer = (authScheme) => {
    scheme ??= authScheme;
    return shared();
  };
}

const keyOf = (key: Key): Attributes => ({ pk: { S: key.pk }, sk: { S: key.sk } });

/**
 * The one table on DynamoDB: `intent.ts`'s operations as DynamoDB commands. This file and
 * `dynamodb-expressions.ts` are the only places that write DynamoDB expressions.
 */
export class DynamoStore extends StoreBase implements Store {
  constructor(
    readonly client: DynamoDBClient,
    readonly tableName: string,
  ) {
    super();
    // The store logs through its callers, never through the SDK: with no logger configured, the SDK's logger
    // middleware still builds a redacted copy of every command's input and output and hands it to a no-op logger
    // (about 40-80 µs of a login's CPU, issue 28).
    client.middlewareStack.remove('loggerMiddleware');
    // Nor is the SDK's telemetry header worth its cost: building the User-Agent of every call took about 20 µs of a
    // GetItem's ~220 µs of CPU (issue 28). AWS serves a request the same without it.
    client.middlewareStack.remove('getUserAgentMiddleware');
    shareOneSigner(client);
  }

  async get<T extends Item = Item>(pk: string, sk: string): Promise<T | undefined> {
    const out = await this.client.send(
      new GetItemCommand({ TableName: this.tableName, Key: keyOf({ pk, sk }), ConsistentRead: true }),
    );
    return fromAttributes<T>(out.Item);
  }

  /**
   * Several items in one round trip (strongly consistent), keyed `pk|sk`; an absent item is absent from the map.
   * Keys DynamoDB leaves unprocessed under load are asked for again; more than 100 keys go in several requests.
   */
  async batchGet(keys: Key[]): Promise<Map<string, Item>> {
    const found = new Map<string, Item>();
    const unique = [...new Map(keys.map((key) => [itemKey(key.pk, key.sk), keyOf(key)])).values()];
    for (let start = 0; start < unique.length; start += 100) {
      let pending: Attributes[] = unique.slice(start, start + 100);
      while (pending.length > 0) {
        const out = await this.client.send(
          new BatchGetItemCommand({ RequestItems: { [this.tableName]: { Keys: pending, ConsistentRead: true } } }),
        );
        for (const attributes of out.Responses?.[this.tableName] ?? []) {
          const item = fromAttributes<Item>(attributes) as Item;
          found.set(itemKey(item.pk, item.sk), item);
        }
        pending = out.UnprocessedKeys?.[this.tableName]?.Keys ?? [];
      }
    }
    return found;
  }

  async put(item: Item, options: { when?: Condition } = {}): Promise<void> {
    await this.guard(() =>
      this.client.send(
        new PutItemCommand({ TableName: this.tableName, Item: toAttributes(item), ...conditioned(options.when) }),
      ),
    );
  }

  async update<T extends Item = Item>(key: Key, change: Change, options: { when?: Condition } = {}): Promise<T> {
    const expressions = new Expressions();
    const UpdateExpression = expressions.change(change);
    const ConditionExpression = options.when === undefined ? undefined : expressions.condition(options.when);
    const input = {
      Key: keyOf(key),
      ...(UpdateExpression !== undefined ? { UpdateExpression } : {}),
      ...(ConditionExpression !== undefined ? { ConditionExpression } : {}),
      ...placeholders(expressions),
    };
    const out = await this.guard(() =>
      this.client.send(new UpdateItemCommand({ TableName: this.tableName, ReturnValues: 'ALL_NEW', ...input })),
    );
    return fromAttributes<T>(out.Attributes) as T;
  }

  async delete<T extends Item = Item>(key: Key, options: { when?: Condition } = {}): Promise<T | undefined> {
    const input = { Key: keyOf(key), ...conditioned(options.when) };
    const out = await this.guard(() =>
      this.client.send(new DeleteItemCommand({ TableName: this.tableName, ReturnValues: 'ALL_OLD', ...input })),
    );
    return fromAttributes<T>(out.Attributes);
  }

  async list<T extends Item = Item>(partition: string, options: ListOptions = {}): Promise<T[]> {
    const keys = options.index ? indexKeys[options.index] : { pk: 'pk', sk: 'sk' };
    const expressions = new Expressions();
    const KeyConditionExpression = expressions.keyCondition(keys.pk, keys.sk, partition, options.prefix, options.range);
    const FilterExpression = options.where === undefined ? undefined : expressions.condition(options.where);
    const ProjectionExpression =
      options.attributes === undefined
        ? undefined
        : [...new Set(['pk', 'sk', keys.pk, keys.sk, ...options.attributes])]
            .map((name) => expressions.path(name))
            .join(', ');
    const items = await this.pages<T>(
      {
        ...(options.index ? { IndexName: options.index } : { ConsistentRead: !options.eventual }),
        KeyConditionExpression,
        ...(FilterExpression !== undefined ? { FilterExpression } : {}),
        ...(ProjectionExpression !== undefined ? { ProjectionExpression } : {}),
        ...placeholders(expressions),
        ...(options.reverse ? { ScanIndexForward: false } : {}),
        ...(options.limit !== undefined ? { Limit: options.limit } : {}),
      },
      (item) => !outsideRange(String(item[keys.sk]), options.range),
      options.limit,
    );
    return items;
  }

  async scan(): Promise<Item[]> {
    const items: Item[] = [];
    let start: Attributes | undefined;
    do {
      const page = await this.client.send(
        new ScanCommand({
          TableName: this.tableName,
          ConsistentRead: true,
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      );
      for (const attributes of page.Items ?? []) items.push(fromAttributes<Item>(attributes) as Item);
      start = page.LastEvaluatedKey;
    } while (start);
    return items;
  }

  async transact(writes: Write[]): Promise<void> {
    if (writes.length > maxTransactionWrites)
      throw new RangeError(`a transaction holds at most ${maxTransactionWrites} writes, not ${writes.length}`);
    const named = writes.map((write) => {
      const entry = tableWrite(write) as Record<string, Record<string, unknown>>;
      for (const key of Object.keys(entry)) entry[key] = { TableName: this.tableName, ...entry[key] };
      return entry as TransactWriteItem;
    });
    // DynamoDB cancels a transaction that meets another in progress on one of its items (TransactionConflict) and
    // writes nothing; the SDK does not retry that, so it is tried again here, after a short random wait.
    for (let attempt = 1; ; attempt++) {
      try {
        await this.guard(() => this.client.send(new TransactWriteItemsCommand({ TransactItems: named })));
        return;
      } catch (error) {
        if (!isConflictOnly(error)) throw error;
        if (attempt >= conflictAttempts)
          throw unavailable(
            `the write met concurrent writes to the same items ${conflictAttempts} times; nothing was written, try again`,
          );
        await new Promise((resolve) => setTimeout(resolve, Math.random() * conflictWaitMs * 2 ** attempt));
      }
    }
  }

  /** Every page of a query (each page reads up to `limit` items), until `limit` items are kept. */
  private async pages<T extends Item>(
    input: Omitted<QueryCommandInput>,
    keep: (item: T) => boolean,
    limit: number | undefined,
  ): Promise<T[]> {
    const items: T[] = [];
    let start: Attributes | undefined;
    do {
      const out = await this.client.send(
        new QueryCommand({ TableName: this.tableName, ...input, ExclusiveStartKey: start }),
      );
      for (const attributes of out.Items ?? []) {
        const item = fromAttributes<T>(attributes) as T;
        if (keep(item)) items.push(item);
      }
      start = out.LastEvaluatedKey;
    } while (start && (limit === undefined || items.length < limit));
    return limit === undefined ? items : items.slice(0, limit);
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

/** A transaction write as DynamoDB's (without the table name). */
function tableWrite(write: Write): TransactItem {
  if ('put' in write) return { Put: { Item: toAttributes(write.put), ...conditioned(write.when) } };
  if ('update' in write) {
    const expressions = new Expressions();
    const UpdateExpression = expressions.change(write.change);
    if (UpdateExpression === undefined) throw new RangeError('a transaction update changes nothing');
    const ConditionExpression = write.when === undefined ? undefined : expressions.condition(write.when);
    return {
      Update: {
        Key: keyOf(write.update),
        UpdateExpression,
        ...(ConditionExpression !== undefined ? { ConditionExpression } : {}),
        ...placeholders(expressions),
      },
    };
  }
  if ('delete' in write) return { Delete: { Key: keyOf(write.delete), ...conditioned(write.when) } };
  const { ConditionExpression, ...rest } = conditioned(write.when);
  if (ConditionExpression === undefined) throw new RangeError('a transaction check needs a condition that can fail');
  return { ConditionCheck: { Key: keyOf(write.check), ConditionExpression, ...rest } };
}
