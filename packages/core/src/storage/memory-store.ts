import { ConditionFailed, itemKey } from './condition-failed.ts';
import { alwaysHolds, attributesOf } from './conditions.ts';
import {
  type CancellationReason,
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

/**
 * The one table in memory, with DynamoDB's semantics as `intent.ts` states them (and `store-contract.test.ts`
 * checks against DynamoDB Local): conditions are evaluated on the item as stored, a failed condition writes
 * nothing, a transaction is all or nothing, lists come in sort-key byte order. Items are copied in and out, so a
 * caller never holds the stored object. For handler and domain tests that do not test DynamoDB itself.
 */
export class MemoryStore extends StoreBase implements Store {
  readonly #items = new Map<string, Item>();

  async get<T extends Item = Item>(pk: string, sk: string): Promise<T | undefined> {
    return copy(this.#items.get(itemKey(pk, sk))) as T | undefined;
  }

  async batchGet(keys: Key[]): Promise<Map<string, Item>> {
    const found = new Map<string, Item>();
    for (const key of keys) {
      const item = this.#items.get(itemKey(key.pk, key.sk));
      if (item) found.set(itemKey(key.pk, key.sk), copy(item));
    }
    return found;
  }

  async put(item: Item, options: { when?: Condition } = {}): Promise<void> {
    this.apply([{ put: item, ...options }], false);
  }

  async update<T extends Item = Item>(key: Key, change: Change, options: { when?: Condition } = {}): Promise<T> {
    this.apply([{ update: key, change, ...options }], false);
    return copy(this.#items.get(itemKey(key.pk, key.sk))) as T;
  }

  async delete<T extends Item = Item>(key: Key, options: { when?: Condition } = {}): Promise<T | undefined> {
    const old = this.#items.get(itemKey(key.pk, key.sk));
    this.apply([{ delete: key, ...options }], false);
    return copy(old) as T | undefined;
  }

  async list<T extends Item = Item>(partition: string, options: ListOptions = {}): Promise<T[]> {
    const keys = options.index ? indexKeys[options.index] : { pk: 'pk', sk: 'sk' };
    if (options.prefix !== undefined && options.range !== undefined)
      throw new RangeError('a list takes a prefix or a range, not both');
    const range = options.range ?? {};
    if (range.after !== undefined && range.from !== undefined)
      throw new RangeError('a range takes after or from, not both');
    if (range.before !== undefined && range.to !== undefined)
      throw new RangeError('a range takes before or to, not both');
    if (options.where) {
      holds(options.where, undefined); // a malformed filter fails even on an empty partition
      const keyNames = new Set(['pk', 'sk', keys.pk, keys.sk]);
      const named = [...attributesOf(options.where)].find((name) => keyNames.has(name));
      if (named)
        throw validation(
          `Filter Expression can only contain non-primary key attributes: Primary key attribute: ${named}`,
        );
    }
    const inRange = (sortKey: string) =>
      (options.prefix === undefined || sortKey.startsWith(options.prefix)) &&
      (range.after === undefined || compareBytes(sortKey, range.after) > 0) &&
      (range.from === undefined || compareBytes(sortKey, range.from) >= 0) &&
      (range.before === undefined || compareBytes(sortKey, range.before) < 0) &&
      (range.to === undefined || compareBytes(sortKey, range.to) <= 0);
    const matching = [...this.#items.values()].filter(
      (item) => item[keys.pk] === partition && typeof item[keys.sk] === 'string' && inRange(item[keys.sk] as string),
    );
    matching.sort(
      (a, b) =>
        compareBytes(a[keys.sk] as string, b[keys.sk] as string) ||
        compareBytes(itemKey(a.pk, a.sk), itemKey(b.pk, b.sk)),
    );
    if (options.reverse) matching.reverse();
    const kept = options.where ? matching.filter((item) => holds(options.where as Condition, item)) : matching;
    const listed = options.limit === undefined ? kept : kept.slice(0, options.limit);
    const projected = options.attributes && projection(options.attributes, keys);
    return listed.map((item) => copy(projected ? projected(item) : item) as T);
  }

  async scan(): Promise<Item[]> {
    return [...this.#items.values()].map((item) => copy(item));
  }

  async transact(writes: Write[]): Promise<void> {
    if (writes.length > maxTransactionWrites)
      throw new RangeError(`a transaction holds at most ${maxTransactionWrites} writes, not ${writes.length}`);
    this.apply(writes, true);
  }

  /** Checks every write's condition on the items as they are, then (all holding) makes every write: all or nothing. */
  private apply(writes: Write[], transaction: boolean): void {
    const seen = new Set<string>();
    const next = new Map<string, Item | undefined>();
    const reasons: CancellationReason[] = [];
    for (const write of writes) {
      const key = keyOfWrite(write);
      requireKey(key);
      const id = itemKey(key.pk, key.sk);
      if (seen.has(id)) throw validation('Transaction request cannot include multiple operations on one item');
      seen.add(id);
      const current = this.#items.get(id);
      if ('check' in write && (write.when === undefined || alwaysHolds(write.when)))
        throw new RangeError('a transaction check needs a condition that can fail');
      const passed = write.when === undefined || holds(write.when, current);
      reasons.push(
        passed ? { Code: 'None' } : { Code: 'ConditionalCheckFailed', Message: 'The conditional request failed' },
      );
      if ('put' in write) next.set(id, stored(write.put));
      else if ('update' in write) {
        if (transaction && isEmptyChange(write.change)) throw new RangeError('a transaction update changes nothing');
        next.set(id, changed(current, key, write.change));
      } else if ('delete' in write) next.set(id, undefined);
    }
    if (reasons.some((reason) => reason.Code === 'ConditionalCheckFailed')) {
      if (!transaction) throw new ConditionFailed('The conditional request failed');
      throw new ConditionFailed(
        `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons.map((reason) => reason.Code).join(', ')}]`,
        reasons,
      );
    }
    for (const [id, item] of next) {
      if (item === undefined) this.#items.delete(id);
      else this.#items.set(id, item);
    }
  }
}

const keyOfWrite = (write: Write): Key =>
  'put' in write ? write.put : 'update' in write ? write.update : 'delete' in write ? write.delete : write.check;

function requireKey(key: Key): void {
  for (const name of ['pk', 'sk'] as const) {
    if (typeof key[name] !== 'string' || key[name] === '')
      throw validation(
        `One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty string value. Key: ${name}`,
      );
  }
}

/** An error like DynamoDB's for a request it refuses (not a failed condition). */
function validation(message: string): Error {
  const error = new Error(message);
  error.name = 'ValidationException';
  return error;
}

/** A copy, as DynamoDB stores it: undefined attributes (at any depth) left out. */
function stored<T>(value: T): T {
  return strip(structuredClone(value)) as T;
}

function strip(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(strip);
  if (isMap(value)) {
    for (const [name, inner] of Object.entries(value)) {
      if (inner === undefined) delete value[name];
      else value[name] = strip(inner);
    }
  }
  return value;
}

const copy = <T>(value: T): T => (value === undefined ? value : structuredClone(value));

const isMap = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' &&
  value !== null &&
  !Array.isArray(value) &&
  !(value instanceof Uint8Array) &&
  !(value instanceof Set);

/** UTF-8 byte order, as DynamoDB sorts and compares strings. */
function compareBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

function read(item: Record<string, unknown> | undefined, path: string): unknown {
  let at: unknown = item;
  for (const name of path.split('.')) {
    if (name === '') throw new RangeError(`the attribute path "${path}" has an empty name`);
    if (!isMap(at)) return undefined;
    at = at[name];
  }
  return at;
}

/** Whether the condition holds for the item (undefined: no item). Malformed conditions throw, as DynamoDB refuses them. */
function holds(condition: Condition, item: Item | undefined): boolean {
  const results: boolean[] = [];
  const each = <V>(
    entries: Record<string, V> | undefined,
    what: string,
    test: (value: unknown, expected: V) => boolean,
  ) => {
    if (entries === undefined) return;
    const list = Object.entries(entries);
    if (list.length === 0) throw new RangeError(`a condition's ${what} names no attribute`);
    for (const [path, expected] of list) results.push(test(read(item, path), expected));
  };
  const listed = (paths: string[] | undefined, what: string) => {
    if (paths !== undefined && paths.length === 0) throw new RangeError(`a condition's ${what} names no attribute`);
    return paths === undefined ? undefined : Object.fromEntries(paths.map((path) => [path, true]));
  };
  if (condition.exists) results.push(item !== undefined);
  if (condition.absent) results.push(item === undefined);
  each(condition.equals, 'equals', (value, expected) => value !== undefined && same(value, expected));
  each(listed(condition.missing, 'missing'), 'missing', (value) => value === undefined);
  each(listed(condition.present, 'present'), 'present', (value) => value !== undefined);
  each(condition.below, 'below', (value, bound) => ordered(value, bound, (order) => order < 0));
  each(condition.atMost, 'atMost', (value, bound) => ordered(value, bound, (order) => order <= 0));
  each(condition.above, 'above', (value, bound) => ordered(value, bound, (order) => order > 0));
  each(condition.atLeast, 'atLeast', (value, bound) => ordered(value, bound, (order) => order >= 0));
  each(condition.beginsWith, 'beginsWith', (value, start) => typeof value === 'string' && value.startsWith(start));
  if (condition.all !== undefined) {
    if (condition.all.length === 0) throw new RangeError("a condition's all holds no condition");
    const members = condition.all.map((member) => holds(member, item));
    results.push(members.every(Boolean));
  }
  if (condition.any !== undefined) {
    if (condition.any.length === 0) throw new RangeError("a condition's any holds no condition");
    const members = condition.any.map((member) => alwaysHolds(member) || holds(member, item));
    results.push(members.some(Boolean));
  }
  if (condition.not !== undefined) {
    if (alwaysHolds(condition.not))
      throw new RangeError('a condition that can never hold (not of a condition that always holds)');
    results.push(!holds(condition.not, item));
  }
  return results.every(Boolean);
}

/** Compares two numbers, or two strings by bytes; values of other or different types never compare. */
function ordered(value: unknown, bound: number | string, test: (order: number) => boolean): boolean {
  if (typeof value === 'number' && typeof bound === 'number') return test(value - bound);
  if (typeof value === 'string' && typeof bound === 'string') return test(compareBytes(value, bound));
  return false;
}

/** DynamoDB's equality: maps by their entries, lists in order, sets as sets, binary by bytes. */
function same(a: unknown, b: unknown): boolean {
  if (a instanceof Uint8Array && b instanceof Uint8Array) return Buffer.compare(Buffer.from(a), Buffer.from(b)) === 0;
  if (a instanceof Set && b instanceof Set)
    return a.size === b.size && [...a].every((member) => [...b].some((other) => same(member, other)));
  if (Array.isArray(a) && Array.isArray(b))
    return a.length === b.length && a.every((member, index) => same(member, b[index]));
  if (isMap(a) && isMap(b)) {
    const aKeys = Object.keys(a).filter((key) => a[key] !== undefined);
    const bKeys = Object.keys(b).filter((key) => b[key] !== undefined);
    return aKeys.length === bKeys.length && aKeys.every((key) => same(a[key], b[key]));
  }
  return a === b;
}

const isEmptyChange = (change: Change) =>
  Object.values(change).every(
    (part) => part === undefined || (Array.isArray(part) ? part.length === 0 : Object.keys(part).length === 0),
  );

/**
 * The item after `change` (created from its key when absent). Refuses what DynamoDB refuses: key attributes,
 * overlapping paths, missing parents. Also what an authenticated mount item will be after an update, to sign it
 * (`secrets/mounts/mount-storage.ts`).
 */
export function changed(current: Item | undefined, key: Key, change: Change): Item {
  const paths: string[] = [
    ...Object.keys(change.set ?? {}),
    ...(change.remove ?? []),
    ...Object.keys(change.add ?? {}),
    ...Object.keys(change.setIfMissing ?? {}),
    ...Object.keys(change.append ?? {}),
    ...Object.keys(change.copy ?? {}),
  ];
  for (const path of paths) {
    const top = path.split('.')[0];
    if (top === 'pk' || top === 'sk')
      throw validation(
        `One or more parameter values were invalid: Cannot update attribute ${top}. This attribute is part of the key`,
      );
  }
  for (const [index, path] of paths.entries()) {
    for (const other of paths.slice(index + 1)) {
      if (path === other || other.startsWith(`${path}.`) || path.startsWith(`${other}.`)) {
        throw validation(
          `Invalid UpdateExpression: Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [${path}], path two: [${other}]`,
        );
      }
    }
  }
  const before: Item = current ? structuredClone(current) : { pk: key.pk, sk: key.sk };
  const after: Item = structuredClone(before);
  // Every right-hand side reads the item as it was before the update, as DynamoDB's do.
  const write = (path: string, value: unknown) => {
    const names = path.split('.');
    let at: Record<string, unknown> = after;
    for (const name of names.slice(0, -1)) {
      const inner = at[name];
      if (!isMap(inner)) throw validation('The document path provided in the update expression is invalid for update');
      at = inner;
    }
    const last = names[names.length - 1] as string;
    if (value === undefined) delete at[last];
    else at[last] = stored(value);
  };
  for (const [path, value] of Object.entries(change.set ?? {})) write(path, value);
  for (const path of change.remove ?? []) write(path, undefined);
  for (const [path, amount] of Object.entries(change.add ?? {})) {
    const value = read(before, path) ?? 0;
    if (typeof value !== 'number') throw validation('An operand in the update expression has an incorrect data type');
    write(path, value + amount);
  }
  for (const [path, value] of Object.entries(change.setIfMissing ?? {})) write(path, read(before, path) ?? value);
  for (const [path, value] of Object.entries(change.append ?? {})) {
    const list = read(before, path) ?? [];
    if (!Array.isArray(list)) throw validation('An operand in the update expression has an incorrect data type');
    write(path, [...list, ...value]);
  }
  for (const [path, from] of Object.entries(change.copy ?? {})) {
    const value = read(before, from);
    if (value === undefined)
      throw validation('The provided expression refers to an attribute that does not exist in the item');
    write(path, value);
  }
  return after;
}

/** A projection (`ListOptions.attributes`): the item's keys (and the index's) and the attributes named, if present. */
function projection(attributes: readonly string[], keys: { pk: string; sk: string }): (item: Item) => Item {
  const names = new Set(['pk', 'sk', keys.pk, keys.sk, ...attributes]);
  return (item) => Object.fromEntries(Object.entries(item).filter(([name]) => names.has(name))) as Item;
}
