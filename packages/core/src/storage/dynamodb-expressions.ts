import { alwaysHolds } from './conditions.ts';
import type { Change, Condition, SortRange } from './intent.ts';

/**
 * Builds DynamoDB's expression strings from `intent.ts`'s conditions, changes and sort-key bounds: every attribute
 * name is a `#n` placeholder and every value a `:v` one, so no name or value is ever spliced into an expression.
 */
export class Expressions {
  readonly names: Record<string, string> = {};
  readonly values: Record<string, unknown> = {};
  readonly #byName = new Map<string, string>();

  /** A dotted path as placeholders (`entry.disabling` -> `#n0.#n1`). */
  path(path: string): string {
    return path
      .split('.')
      .map((name) => {
        if (name === '') throw new RangeError(`the attribute path "${path}" has an empty name`);
        let placeholder = this.#byName.get(name);
        if (!placeholder) {
          placeholder = `#n${this.#byName.size}`;
          this.#byName.set(name, placeholder);
          this.names[placeholder] = name;
        }
        return placeholder;
      })
      .join('.');
  }

  value(value: unknown): string {
    const placeholder = `:v${Object.keys(this.values).length}`;
    this.values[placeholder] = value;
    return placeholder;
  }

  /** The condition as an expression; undefined for one that always holds (`alwaysHolds`). */
  condition(condition: Condition): string | undefined {
    return this.#condition(condition)?.text;
  }

  /** The expression, and the operator at its top (so it is parenthesized inside another only where needed). */
  #condition(condition: Condition): Built | undefined {
    const parts: Built[] = [];
    const atom = (text: string) => parts.push({ text, op: 'atom' });
    const each = <V>(
      entries: Record<string, V> | undefined,
      what: string,
      build: (path: string, value: V) => string,
    ) => {
      if (entries === undefined) return;
      const list = Object.entries(entries);
      if (list.length === 0) throw new RangeError(`a condition's ${what} names no attribute`);
      for (const [path, value] of list) atom(build(this.path(path), value));
    };
    if (condition.exists) atom(`attribute_exists(${this.path('pk')})`);
    if (condition.absent) atom(`attribute_not_exists(${this.path('pk')})`);
    each(condition.equals, 'equals', (path, value) => `${path} = ${this.value(value)}`);
    each(listed(condition.missing, 'missing'), 'missing', (path) => `attribute_not_exists(${path})`);
    each(listed(condition.present, 'present'), 'present', (path) => `attribute_exists(${path})`);
    each(condition.below, 'below', (path, value) => `${path} < ${this.value(value)}`);
    each(condition.atMost, 'atMost', (path, value) => `${path} <= ${this.value(value)}`);
    each(condition.above, 'above', (path, value) => `${path} > ${this.value(value)}`);
    each(condition.atLeast, 'atLeast', (path, value) => `${path} >= ${this.value(value)}`);
    each(condition.beginsWith, 'beginsWith', (path, value) => `begins_with(${path}, ${this.value(value)})`);
    if (condition.all !== undefined) {
      if (condition.all.length === 0) throw new RangeError("a condition's all holds no condition");
      for (const member of condition.all) {
        const built = this.#condition(member);
        if (built !== undefined) parts.push(built);
      }
    }
    if (condition.any !== undefined) {
      if (condition.any.length === 0) throw new RangeError("a condition's any holds no condition");
      // One member that always holds makes the whole `any` hold: nothing to check (and no placeholder left unused).
      if (!condition.any.some(alwaysHolds)) {
        const members = condition.any.map((member) => this.#condition(member) as Built);
        parts.push(
          members.length === 1
            ? (members[0] as Built)
            : { text: members.map((member) => within('or', member)).join(' OR '), op: 'or' },
        );
      }
    }
    if (condition.not !== undefined) {
      const built = this.#condition(condition.not);
      if (built === undefined)
        throw new RangeError('a condition that can never hold (not of a condition that always holds)');
      atom(`NOT ${within('not', built)}`);
    }
    if (parts.length === 0) return undefined;
    if (parts.length === 1) return parts[0];
    return { text: parts.map((part) => within('and', part)).join(' AND '), op: 'and' };
  }

  /** The change as an update expression; undefined for one that changes nothing. */
  change(change: Change): string | undefined {
    const set: string[] = [];
    const remove: string[] = [];
    const add: string[] = [];
    for (const [path, value] of Object.entries(change.set ?? {})) {
      if (value === undefined) remove.push(this.path(path));
      else set.push(`${this.path(path)} = ${this.value(value)}`);
    }
    for (const path of change.remove ?? []) remove.push(this.path(path));
    for (const [path, value] of Object.entries(change.add ?? {})) add.push(`${this.path(path)} ${this.value(value)}`);
    for (const [path, value] of Object.entries(change.setIfMissing ?? {})) {
      const placeholder = this.path(path);
      set.push(`${placeholder} = if_not_exists(${placeholder}, ${this.value(value)})`);
    }
    for (const [path, value] of Object.entries(change.append ?? {})) {
      const placeholder = this.path(path);
      set.push(`${placeholder} = list_append(if_not_exists(${placeholder}, ${this.value([])}), ${this.value(value)})`);
    }
    for (const [path, from] of Object.entries(change.copy ?? {})) set.push(`${this.path(path)} = ${this.path(from)}`);
    const clauses = [
      set.length > 0 ? `SET ${set.join(', ')}` : '',
      remove.length > 0 ? `REMOVE ${remove.join(', ')}` : '',
      add.length > 0 ? `ADD ${add.join(', ')}` : '',
    ].filter(Boolean);
    return clauses.length > 0 ? clauses.join(' ') : undefined;
  }

  /** A key condition: the partition key equals `partition`, and the sort key is within `prefix` or `range`. */
  keyCondition(
    partitionKey: string,
    sortKey: string,
    partition: string,
    prefix: string | undefined,
    range: SortRange | undefined,
  ): string {
    if (prefix !== undefined && range !== undefined) throw new RangeError('a list takes a prefix or a range, not both');
    const pk = `${this.path(partitionKey)} = ${this.value(partition)}`;
    if (!prefix && !range) return pk;
    const sk = this.path(sortKey);
    if (prefix) return `${pk} AND begins_with(${sk}, ${this.value(prefix)})`;
    if (!range) return pk;
    if (range.after !== undefined && range.from !== undefined)
      throw new RangeError('a range takes after or from, not both');
    if (range.before !== undefined && range.to !== undefined)
      throw new RangeError('a range takes before or to, not both');
    const lower = range.after ?? range.from;
    const upper = range.before ?? range.to;
    // DynamoDB's BETWEEN is inclusive at both ends: exclusive ends are dropped from what it returns (`outsideRange`).
    if (lower !== undefined && upper !== undefined)
      return `${pk} AND ${sk} BETWEEN ${this.value(lower)} AND ${this.value(upper)}`;
    if (range.after !== undefined) return `${pk} AND ${sk} > ${this.value(range.after)}`;
    if (range.from !== undefined) return `${pk} AND ${sk} >= ${this.value(range.from)}`;
    if (range.before !== undefined) return `${pk} AND ${sk} < ${this.value(range.before)}`;
    if (range.to !== undefined) return `${pk} AND ${sk} <= ${this.value(range.to)}`;
    return pk;
  }

  /** The placeholders the expressions used, as a command's `ExpressionAttributeNames`/`Values` (absent when empty). */
  attributes(): {
    ExpressionAttributeNames?: Record<string, string>;
    ExpressionAttributeValues?: Record<string, unknown>;
  } {
    return {
      ...(Object.keys(this.names).length > 0 ? { ExpressionAttributeNames: this.names } : {}),
      ...(Object.keys(this.values).length > 0 ? { ExpressionAttributeValues: this.values } : {}),
    };
  }
}

/** A built condition and the operator at its top. */
interface Built {
  text: string;
  op: 'atom' | 'and' | 'or';
}

/** A part as written inside an `and`, `or` or `not`: parenthesized only where the operators differ. */
const within = (outer: 'and' | 'or' | 'not', part: Built) =>
  part.op === 'atom' || part.op === outer ? part.text : `(${part.text})`;

function listed(paths: string[] | undefined, what: string): Record<string, true> | undefined {
  if (paths === undefined) return undefined;
  if (paths.length === 0) throw new RangeError(`a condition's ${what} names no attribute`);
  return Object.fromEntries(paths.map((path) => [path, true as const]));
}

/** Whether a sort key BETWEEN returned lies on an exclusive end of the range (and so is not in it). */
export const outsideRange = (sortKey: string, range: SortRange | undefined) =>
  range !== undefined &&
  ((range.after !== undefined && sortKey === range.after) || (range.before !== undefined && sortKey === range.before));
