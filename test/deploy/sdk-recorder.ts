import { AsyncLocalStorage } from 'node:async_hooks';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';

/** One AWS API call a function made, as the SDK sent it (the low-level operation, its marshalled input). */
export interface SentCall {
  /** The deployed function's id in the stacks (`Secrets-kv`, `Job-table-stream`, …). */
  fn: string;
  /** `DynamoDB`, `KMS`, `Lambda`, `SecretsManager`: the SDK client's name without `Client`. */
  service: string;
  /** The API operation: `BatchGetItem`, `Decrypt`, `Invoke`. */
  operation: string;
  // biome-ignore lint/suspicious/noExplicitAny: the operation's input, as sent
  input: any;
}

const running = new AsyncLocalStorage<string>();
const calls: SentCall[] = [];
let installed = false;

/**
 * Records every call any AWS SDK v3 client makes while a function runs under {@link asFunction}. All v3 clients
 * (the document client included, which shares its base client's middleware stack) send through the one Smithy
 * `Client.prototype.send`; the first send of a client adds a middleware to its stack that reads the operation from
 * the handler context (`BatchGetItemCommand` for a document client's `BatchGetCommand`) and the input as sent.
 * Calls outside a function (a test's own setup) are not recorded.
 */
export function installSdkRecorder(): SentCall[] {
  if (installed) return calls;
  installed = true;
  const smithyClient = Object.getPrototypeOf(DynamoDBClient.prototype) as {
    send: (this: { middlewareStack: MiddlewareStack }, ...args: unknown[]) => unknown;
  };
  const original = smithyClient.send;
  const instrumented = new WeakSet<object>();
  smithyClient.send = function (this: { middlewareStack: MiddlewareStack }, ...args: unknown[]) {
    if (!instrumented.has(this.middlewareStack)) {
      instrumented.add(this.middlewareStack);
      this.middlewareStack.add(
        (next, context) => async (request) => {
          const fn = running.getStore();
          if (fn) {
            calls.push({
              fn,
              service: String(context.clientName).replace(/Client$/, ''),
              operation: String(context.commandName).replace(/Command$/, ''),
              input: request.input,
            });
          }
          return next(request);
        },
        { step: 'initialize', name: 'keyhavenSdkRecorder', priority: 'low' },
      );
    }
    return original.apply(this, args);
  };
  return calls;
}

interface MiddlewareStack {
  add(
    middleware: (
      next: (args: { input: unknown }) => Promise<unknown>,
      context: { clientName?: string; commandName?: string },
    ) => (args: { input: unknown }) => Promise<unknown>,
    options: { step: 'initialize'; name: string; priority: 'low' },
  ): void;
}

/** Runs `body` as function `fn`: every SDK call made on its behalf (awaited or not) is recorded under that name. */
export const asFunction = <T>(fn: string, body: () => T): T => running.run(fn, body);

/** Wraps a handler so each invocation of it runs as function `fn`. */
export const recordedAs = <H extends (...args: never[]) => unknown>(fn: string, handler: H): H =>
  ((...args: Parameters<H>) => asFunction(fn, () => handler(...args))) as H;

/**
 * The IAM actions a call needs. A DynamoDB transaction is authorised item by item (`TransactWriteItems` needs
 * `PutItem`/`UpdateItem`/`DeleteItem`/`ConditionCheckItem` for the items it holds, `TransactGetItems` `GetItem`);
 * every other operation needs the action of its own name (`BatchGetItem` for `BatchGetCommand`).
 * See https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/api-permissions-reference.html.
 */
export function iamActionsOf(call: SentCall): string[] {
  if (call.service === 'DynamoDB' && call.operation === 'TransactWriteItems') {
    const kinds = {
      Put: 'PutItem',
      Update: 'UpdateItem',
      Delete: 'DeleteItem',
      ConditionCheck: 'ConditionCheckItem',
    } as const;
    return (call.input.TransactItems as Array<Record<string, unknown>>).flatMap((item) =>
      Object.entries(kinds)
        .filter(([kind]) => item[kind])
        .map(([, action]) => `dynamodb:${action}`),
    );
  }
  if (call.service === 'DynamoDB' && call.operation === 'TransactGetItems') return ['dynamodb:GetItem'];
  if (call.service === 'Lambda' && call.operation === 'Invoke') return ['lambda:InvokeFunction'];
  const prefix = { DynamoDB: 'dynamodb', KMS: 'kms', SecretsManager: 'secretsmanager' }[call.service];
  if (!prefix) throw new Error(`no IAM mapping for ${call.service}.${call.operation}`);
  return [`${prefix}:${call.operation}`];
}

/**
 * The value a query's key condition gives the partition key `attribute`: `attribute = :v`, or `#n = :v` with `#n`
 * naming it (the intent store names every attribute); undefined when the condition starts otherwise.
 */
// biome-ignore lint/suspicious/noExplicitAny: SDK inputs are untyped here
function partitionValueOf(input: Record<string, any>, attribute: string): string | undefined {
  const [, name, placeholder] = /^\s*(#?\w+)\s*=\s*(:\w+)/.exec(String(input.KeyConditionExpression)) ?? [];
  const names = (input.ExpressionAttributeNames ?? {}) as Record<string, string>;
  if (!placeholder || !name || (name.startsWith('#') ? names[name] : name) !== attribute) return undefined;
  const value = (input.ExpressionAttributeValues as Record<string, string | { S?: string }>)[placeholder];
  return typeof value === 'string' ? value : value?.S;
}

/** The partition keys a DynamoDB call touches (what `dynamodb:LeadingKeys` is evaluated on), and whether it reads an index. */
export function partitionKeysOf(call: SentCall): { keys: string[]; index: boolean } {
  // The document client's input (plain values) or a low-level client's (attribute values).
  const pkOf = (value: unknown) => {
    const pk = (value as { pk?: string | { S?: string } } | undefined)?.pk;
    return typeof pk === 'string' ? pk : pk?.S;
  };
  const input = call.input;
  const found: Array<string | undefined> = [];
  if (call.operation === 'Query') {
    if (input.IndexName) return { keys: [], index: true };
    const value = partitionValueOf(input, 'pk');
    if (value === undefined) throw new Error(`a table query without pk = :value: ${input.KeyConditionExpression}`);
    found.push(value);
  }
  if (input.Key) found.push(pkOf(input.Key));
  if (input.Item) found.push(pkOf(input.Item));
  for (const table of Object.values((input.RequestItems ?? {}) as Record<string, { Keys?: unknown[] }>))
    found.push(...(table.Keys ?? []).map(pkOf));
  for (const item of (input.TransactItems ?? []) as Array<Record<string, { Key?: unknown; Item?: unknown }>>) {
    for (const entry of Object.values(item)) found.push(pkOf(entry.Key) ?? pkOf(entry.Item));
  }
  return { keys: found.filter((key): key is string => key !== undefined), index: false };
}

/** One request as IAM authorises it: an action on the table or its `due` index, with its `dynamodb:LeadingKeys`. */
export interface AuthorisedRequest {
  action: string;
  resource: 'table' | 'due';
  leadingKeys: string[];
}

/**
 * What IAM evaluates for a DynamoDB call: a transaction item by item (each with its own partition key), a batch read
 * as one `BatchGetItem` over every key it names, an index query as `Query` on the index whose leading key is the
 * index's partition key (`duePk`), any other call as its own action on the table with the partition key it names.
 */
export function authorisedRequestsOf(call: SentCall): AuthorisedRequest[] {
  if (call.service !== 'DynamoDB') return [];
  const input = call.input;
  if (call.operation === 'TransactWriteItems' || call.operation === 'TransactGetItems') {
    return (input.TransactItems as Array<Record<string, unknown>>).map((item) => {
      const one = { ...call, input: { TransactItems: [item] } };
      return { action: iamActionsOf(one)[0] as string, resource: 'table', leadingKeys: partitionKeysOf(one).keys };
    });
  }
  if (call.operation === 'Query' && input.IndexName) {
    const value = partitionValueOf(input, 'duePk');
    if (value === undefined) throw new Error(`an index query without duePk = :value: ${input.KeyConditionExpression}`);
    return [{ action: 'dynamodb:Query', resource: 'due', leadingKeys: [value] }];
  }
  if (!['GetItem', 'BatchGetItem', 'PutItem', 'UpdateItem', 'DeleteItem', 'Query'].includes(call.operation)) {
    throw new Error(`no authorisation mapping for DynamoDB ${call.operation}`);
  }
  return [{ action: `dynamodb:${call.operation}`, resource: 'table', leadingKeys: partitionKeysOf(call).keys }];
}
