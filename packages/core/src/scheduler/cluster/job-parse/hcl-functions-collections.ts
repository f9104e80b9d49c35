/** The collection functions of Nomad's job-file table (go-cty stdlib's collection.go, sequence.go, set.go). */
import type { HclFunction } from './hcl-context.ts';
import {
  checkList,
  equal,
  HclEvalError,
  isObject,
  newObject,
  sortedKeys,
  toList,
  toMap,
  toNumber,
  toText,
  typeName,
  type HclValue,
} from './hcl-values.ts';

/** `range()` makes at most this many numbers, as go-cty's does. */
export const maxRangeLength = 1024;

const list = (value: HclValue | undefined, what = 'the list') => toList(value as HclValue, what);

function distinct(values: HclValue[]): HclValue[] {
  const out: HclValue[] = [];
  for (const value of values) if (!out.some((seen) => equal(seen, value))) out.push(value);
  return out;
}

/** A set's elements in cty's order: strings lexically, numbers ascending, others as given. */
function asSet(values: HclValue[]): HclValue[] {
  const unique = distinct(values);
  if (unique.every((value) => typeof value === 'string'))
    return (unique as string[]).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  if (unique.every((value) => typeof value === 'number')) return (unique as number[]).sort((a, b) => a - b);
  return unique;
}

function range(args: HclValue[]): HclValue {
  const numbers = args.map((arg, position) => toNumber(arg, `argument ${position + 1}`));
  const start = numbers.length === 1 ? 0 : (numbers[0] as number);
  const end = numbers.length === 1 ? (numbers[0] as number) : (numbers[1] as number);
  const step = numbers[2] ?? (start <= end ? 1 : -1);
  if (step === 0) throw new HclEvalError('Invalid step', 'step must not be zero');
  if (start < end && step < 0)
    throw new HclEvalError('Invalid step', 'step must be positive when start is less than end');
  if (start > end && step > 0)
    throw new HclEvalError('Invalid step', 'step must be negative when start is greater than end');
  const out: number[] = [];
  for (let value = start; step > 0 ? value < end : value > end; value += step) {
    if (out.length >= maxRangeLength)
      throw new HclEvalError(
        'Invalid range',
        `more than ${maxRangeLength} values were generated; either decrease the difference between start and end or use a smaller step`,
      );
    out.push(value);
  }
  return out;
}

function flatten(values: HclValue[], depth = 0): HclValue[] {
  if (depth > 100) throw new HclEvalError('Invalid argument', 'the list nests too deeply');
  return values.flatMap((value) => (Array.isArray(value) ? flatten(value, depth + 1) : [value]));
}

function sortKey(value: HclValue): string {
  if (value === null)
    throw new HclEvalError(
      'Invalid argument',
      'given list element is null; a null value cannot be used as the basis for sorting',
    );
  return toText(value, 'a list element');
}

export const collectionFunctions: Record<string, HclFunction> = {
  length: {
    min: 1,
    max: 1,
    run: ([value]) => {
      if (Array.isArray(value)) return value.length;
      if (value !== undefined && isObject(value)) return Object.keys(value).length;
      throw new HclEvalError('Invalid argument', `a ${typeName(value ?? null)} has no length`);
    },
  },
  range: { min: 1, max: 3, run: range },
  chunklist: {
    min: 2,
    max: 2,
    run: ([value, size]) => {
      const items = list(value);
      const count = toNumber(size as HclValue, 'the chunk size');
      if (count < 0) throw new HclEvalError('Invalid argument', 'the size argument must be positive');
      if (count === 0) return [items];
      const out: HclValue[] = [];
      for (let start = 0; start < items.length; start += count) out.push(items.slice(start, start + count));
      return out;
    },
  },
  coalesce: {
    min: 1,
    run: (args) => {
      for (const arg of args) if (arg !== null) return arg;
      throw new HclEvalError('Invalid arguments', 'no non-null arguments');
    },
  },
  coalescelist: {
    min: 1,
    run: (args) => {
      for (const arg of args) if (list(arg, 'an argument').length > 0) return arg;
      throw new HclEvalError('Invalid arguments', 'no non-null arguments');
    },
  },
  compact: {
    min: 1,
    max: 1,
    run: ([value]) =>
      list(value)
        .filter((item) => item !== null && item !== '')
        .map((item) => toText(item, 'an element')),
  },
  concat: { min: 1, run: (args) => checkList(args.flatMap((arg) => list(arg, 'an argument'))) },
  contains: { min: 2, max: 2, run: ([value, item]) => list(value).some((element) => equal(element, item as HclValue)) },
  distinct: { min: 1, max: 1, run: ([value]) => distinct(list(value)) },
  element: {
    min: 2,
    max: 2,
    run: ([value, position]) => {
      const items = list(value);
      if (items.length === 0)
        throw new HclEvalError('Invalid argument', 'cannot use element function with an empty list');
      const index = Math.floor(toNumber(position as HclValue, 'the index'));
      if (index < 0) throw new HclEvalError('Invalid argument', 'cannot use element function with a negative index');
      return items[index % items.length] as HclValue;
    },
  },
  flatten: { min: 1, max: 1, run: ([value]) => checkList(flatten(list(value))) },
  index: {
    min: 2,
    max: 2,
    run: ([value, item]) => {
      const found = list(value).findIndex((element) => equal(element, item as HclValue));
      if (found < 0) throw new HclEvalError('Invalid argument', 'item not found');
      return found;
    },
  },
  keys: { min: 1, max: 1, run: ([value]) => sortedKeys(toMap(value as HclValue, 'the map')) },
  values: {
    min: 1,
    max: 1,
    run: ([value]) => {
      const map = toMap(value as HclValue, 'the map');
      return sortedKeys(map).map((key) => map[key] as HclValue);
    },
  },
  lookup: {
    min: 3,
    max: 3,
    run: ([value, key, fallback]) => {
      const map = toMap(value as HclValue, 'the map');
      const name = toText(key as HclValue, 'the key');
      if (Object.hasOwn(map, name)) return map[name] as HclValue;
      if (fallback !== undefined) return fallback;
      throw new HclEvalError(
        'Invalid argument',
        `the given key ${JSON.stringify(name)} is not in the map and no default was given`,
      );
    },
  },
  merge: {
    min: 0,
    run: (args) => {
      const out = newObject();
      for (const arg of args) {
        if (arg === null) continue;
        const map = toMap(arg, 'an argument');
        for (const key of Object.keys(map)) out[key] = map[key] as HclValue;
      }
      return out;
    },
  },
  slice: {
    min: 3,
    max: 3,
    run: ([value, from, to]) => {
      const items = list(value);
      const start = toNumber(from as HclValue, 'the start index');
      const end = toNumber(to as HclValue, 'the end index');
      if (start < 0) throw new HclEvalError('Invalid argument', 'from index must be greater than or equal to 0');
      if (end > items.length)
        throw new HclEvalError('Invalid argument', 'to index must be less than or equal to the length of the list');
      if (start > end) throw new HclEvalError('Invalid argument', 'from index must be less than or equal to index');
      return items.slice(start, end);
    },
  },
  sort: {
    min: 1,
    max: 1,
    run: ([value]) =>
      list(value)
        .map(sortKey)
        .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)),
  },
  zipmap: {
    min: 2,
    max: 2,
    run: ([keys, values]) => {
      const names = list(keys, 'the keys');
      const items = list(values, 'the values');
      if (names.length !== items.length)
        throw new HclEvalError(
          'Invalid argument',
          `number of keys (${names.length}) does not match number of values (${items.length})`,
        );
      const out = newObject();
      names.forEach((name, position) => {
        out[toText(name, 'a key')] = items[position] as HclValue;
      });
      return out;
    },
  },
  setunion: { min: 1, run: (args) => asSet(args.flatMap((arg) => list(arg, 'a set'))) },
  setintersection: {
    min: 1,
    run: ([first, ...rest]) =>
      asSet(
        list(first, 'a set').filter((item) =>
          rest.every((other) => list(other, 'a set').some((element) => equal(element, item))),
        ),
      ),
  },
  setproduct: {
    min: 1,
    run: (args) => {
      const lists = args.map((arg) => list(arg, 'a set'));
      checkList({ length: lists.reduce((count, items) => count * items.length, 1) } as unknown[]);
      let product: HclValue[][] = [[]];
      for (const arg of lists) {
        product = product.flatMap((prefix) => arg.map((item) => [...prefix, item]));
      }
      return product;
    },
  },
};
