/**
 * What a service's DynamoDB calls cost, as DynamoDB itself reports it: a middleware on the service's client asks every
 * call for `ReturnConsumedCapacity: 'INDEXES'` and adds up the answer (table and index units, reads and writes apart),
 * charged to the operation in progress (`meter.during(name, task)`: an `AsyncLocalStorage` scope, so a request's calls
 * are charged to its route however many requests overlap). It also counts every item write by partition key (a
 * transaction's writes count twice, as DynamoDB charges them, and a write that sets the `due` index's key counts on
 * that index's partition too) and the transactions cancelled, which DynamoDB charges without writing anything.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';

export interface Usage {
  /** Calls made. */
  calls: number;
  readUnits: number;
  writeUnits: number;
  /** Transactions DynamoDB cancelled (a condition or a conflict): charged, nothing written. */
  cancelled: number;
}

const readCommands = new Set([
  'GetItemCommand',
  'BatchGetItemCommand',
  'QueryCommand',
  'ScanCommand',
  'TransactGetItemsCommand',
]);
const writeCommands = new Set([
  'PutItemCommand',
  'UpdateItemCommand',
  'DeleteItemCommand',
  'BatchWriteItemCommand',
  'TransactWriteItemsCommand',
]);

type Capacity = { CapacityUnits?: number; ReadCapacityUnits?: number; WriteCapacityUnits?: number };

const empty = (): Usage => ({ calls: 0, readUnits: 0, writeUnits: 0, cancelled: 0 });

// biome-ignore lint/suspicious/noExplicitAny: command inputs of every shape
type Input = Record<string, any>;

/**
 * The partition keys a write command writes (base table, and the `due` index where the item sets its key), each with
 * its write units before a transaction's doubling: a put's from the item's size (1 KB each), an update's or delete's
 * at least 1 (DynamoDB charges the whole item's size, which the input does not show).
 */
function writtenKeys(command: string, input: Input): Array<[string, number]> {
  const keys: Array<[string, number]> = [];
  const ofItem = (item: Input | undefined, key: Input | undefined) => {
    const pk = (item?.pk ?? key?.pk)?.S as string | undefined;
    const units = item ? Math.max(1, Math.ceil(JSON.stringify(item).length / 1024)) : 1;
    if (pk) keys.push([`table ${pk}`, units]);
    const duePk = item?.duePk?.S as string | undefined;
    if (duePk) keys.push([`due ${duePk}`, units]);
  };
  if (command === 'PutItemCommand') ofItem(input.Item, undefined);
  else if (command === 'UpdateItemCommand' || command === 'DeleteItemCommand') ofItem(undefined, input.Key);
  else if (command === 'TransactWriteItemsCommand')
    for (const entry of input.TransactItems ?? []) {
      if (entry.Put) ofItem(entry.Put.Item, undefined);
      if (entry.Update) ofItem(undefined, entry.Update.Key);
      if (entry.Delete) ofItem(undefined, entry.Delete.Key);
    }
  return keys;
}

export class CapacityMeter {
  private readonly scope = new AsyncLocalStorage<string>();
  readonly usage = new Map<string, Usage>();
  /** Item writes by partition key (`table <pk>` or `due <duePk>`), by operation. */
  readonly keyWrites = new Map<string, Map<string, number>>();
  /** Write units by partition key (an estimate from the inputs: see `writtenKeys`), by operation. */
  readonly keyUnits = new Map<string, Map<string, number>>();

  /** Instruments `client`: every call from now on is metered. */
  attach(client: DynamoDBClient): void {
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const command = context.commandName ?? '';
        const operation = this.scope.getStore() ?? 'other';
        const usage = this.usageOf(operation);
        const input = args.input as Input;
        const metered = readCommands.has(command) || writeCommands.has(command);
        if (metered) input.ReturnConsumedCapacity = 'INDEXES';
        usage.calls++;
        if (writeCommands.has(command)) {
          const weight = command === 'TransactWriteItemsCommand' ? 2 : 1;
          const byKey = this.keyWrites.get(operation) ?? new Map<string, number>();
          const unitsByKey = this.keyUnits.get(operation) ?? new Map<string, number>();
          this.keyWrites.set(operation, byKey);
          this.keyUnits.set(operation, unitsByKey);
          for (const [key, units] of writtenKeys(command, input)) {
            byKey.set(key, (byKey.get(key) ?? 0) + weight);
            unitsByKey.set(key, (unitsByKey.get(key) ?? 0) + units * weight);
          }
        }
        try {
          const result = await next(args);
          const consumed = (result.output as { ConsumedCapacity?: Capacity | Capacity[] }).ConsumedCapacity;
          for (const each of consumed === undefined ? [] : Array.isArray(consumed) ? consumed : [consumed]) {
            const units = each.CapacityUnits ?? (each.ReadCapacityUnits ?? 0) + (each.WriteCapacityUnits ?? 0);
            if (writeCommands.has(command)) usage.writeUnits += units;
            else usage.readUnits += units;
          }
          return result;
        } catch (error) {
          if ((error as Error).name === 'TransactionCanceledException') usage.cancelled++;
          throw error;
        }
      },
      { step: 'initialize', name: 'capacityMeter' },
    );
  }

  /** Runs `task` with its DynamoDB calls charged to `operation`. */
  during<T>(operation: string, task: () => T): T {
    return this.scope.run(operation, task);
  }

  usageOf(operation: string): Usage {
    let usage = this.usage.get(operation);
    if (!usage) {
      usage = empty();
      this.usage.set(operation, usage);
    }
    return usage;
  }

  /** Forgets what was metered (between phases). */
  reset(): void {
    this.usage.clear();
    this.keyWrites.clear();
    this.keyUnits.clear();
  }

  /** The partition key written most (counting transactional writes twice) over `operations`, and its share of all. */
  busiestKey(operations: string[]): { key: string; writes: number; share: number; total: number } {
    const byKey = new Map<string, number>();
    for (const operation of operations)
      for (const [each, count] of this.keyWrites.get(operation) ?? new Map<string, number>())
        byKey.set(each, (byKey.get(each) ?? 0) + count);
    let key = '';
    let writes = 0;
    let total = 0;
    for (const [each, count] of byKey) {
      total += count;
      if (count > writes) [key, writes] = [each, count];
    }
    return { key, writes, share: total === 0 ? 0 : writes / total, total };
  }

  /** The partition key taking the most write units over `operations`, and those units. */
  heaviestKey(operations: string[]): { key: string; units: number } {
    const merged = new Map<string, number>();
    for (const operation of operations)
      for (const [each, count] of this.keyUnits.get(operation) ?? new Map<string, number>())
        merged.set(each, (merged.get(each) ?? 0) + count);
    let key = '';
    let units = 0;
    for (const [each, count] of merged) if (count > units) [key, units] = [each, count];
    return { key, units };
  }
}
