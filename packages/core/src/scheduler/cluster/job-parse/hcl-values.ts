/**
 * HCL values as the evaluator handles them (cty's types mapped onto JSON values: strings, numbers, bools, null,
 * tuples/lists/sets as arrays, objects/maps as plain objects), HCL's implicit conversions between them, and the
 * limits that keep one hostile expression from costing the server more than milliseconds.
 */
export type HclValue = string | number | boolean | null | HclValue[] | { [key: string]: HclValue };

/** The values `var.` and `local.` name. */
export interface Scope {
  variables: Map<string, HclValue>;
  locals: Map<string, HclValue>;
  /** Locals declared but not evaluated yet: a reference to one waits (`PendingLocal`) rather than fails. */
  pendingLocals?: Set<string>;
  /** Names a `dynamic` block's iterator binds in its content. */
  bound?: Map<string, HclValue>;
}

/** An expression that fails to evaluate (a type mismatch, a bad argument): a 400 naming it. */
export class HclEvalError extends Error {
  constructor(
    readonly summary: string,
    detail: string,
  ) {
    super(detail);
  }
}

/** A call this server never makes (the filesystem functions): a 400 that `try`/`can` do not turn into a value. */
export class HclRefusedError extends Error {}

/** A local's value not yet evaluated (`locals` may name each other in any order). */
export class PendingLocal extends Error {}

/** An expression that costs more than one evaluation may: a 400 too, but never caught by `try`/`can`. */
export class HclLimitError extends Error {}

/** The longest string an expression may build (the largest job file taken). */
export const maxStringLength = 1 << 20;
/** The most elements a collection an expression builds may hold. */
export const maxCollectionLength = 10_000;
/** The evaluation steps (nodes, elements, characters / 64) one attribute's expressions may take. */
export const maxEvaluationSteps = 200_000;

export class Budget {
  remaining = maxEvaluationSteps;
  spend(steps: number): void {
    this.remaining -= steps;
    if (this.remaining < 0)
      throw new HclLimitError(`the expression takes more than ${maxEvaluationSteps} evaluation steps`);
  }
}

export const isObject = (value: HclValue): value is { [key: string]: HclValue } =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

export function typeName(value: HclValue): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'tuple';
  if (typeof value === 'object') return 'object';
  return typeof value === 'boolean' ? 'bool' : typeof value;
}

export function checkString(text: string): string {
  if (text.length > maxStringLength)
    throw new HclLimitError(`the expression builds a string longer than ${maxStringLength} characters`);
  return text;
}

export function checkList<T>(list: T[]): T[] {
  if (list.length > maxCollectionLength)
    throw new HclLimitError(`the expression builds a collection of more than ${maxCollectionLength} elements`);
  return list;
}

/** A number as cty writes it: no exponent, no trailing zeros. */
export function numberText(value: number): string {
  if (!Number.isFinite(value)) throw new HclEvalError('Invalid number', `${value} is not a finite number`);
  if (Number.isInteger(value) && Math.abs(value) >= 1e21) return BigInt(value).toString();
  const text = String(value);
  if (!/e/.test(text)) return text;
  return value.toFixed(20).replace(/\.?0+$/, '');
}

export function toText(value: HclValue, what: string): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return numberText(value);
  if (typeof value === 'boolean') return String(value);
  if (value === null) throw new HclEvalError('Invalid value', `${what} is null: a string is required`);
  throw new HclEvalError('Incorrect value type', `${what} is a ${typeName(value)}: a string is required`);
}

export function toNumber(value: HclValue, what: string): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'string' && /^-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$/.test(value.trim())) return Number(value);
  if (value === null) throw new HclEvalError('Invalid value', `${what} is null: a number is required`);
  throw new HclEvalError('Incorrect value type', `${what} is a ${typeName(value)}: a number is required`);
}

export function toBool(value: HclValue, what: string): boolean {
  if (typeof value === 'boolean') return value;
  if (value === 'true' || value === 'false') return value === 'true';
  if (value === null) throw new HclEvalError('Invalid value', `${what} is null: a bool is required`);
  throw new HclEvalError('Incorrect value type', `${what} is a ${typeName(value)}: a bool is required`);
}

export function toList(value: HclValue, what: string): HclValue[] {
  if (Array.isArray(value)) return value;
  if (value === null) throw new HclEvalError('Invalid value', `${what} is null: a list is required`);
  throw new HclEvalError('Incorrect value type', `${what} is a ${typeName(value)}: a list is required`);
}

export function toMap(value: HclValue, what: string): { [key: string]: HclValue } {
  if (isObject(value)) return value;
  if (value === null) throw new HclEvalError('Invalid value', `${what} is null: a map is required`);
  throw new HclEvalError('Incorrect value type', `${what} is a ${typeName(value)}: a map is required`);
}

/** cty's equality: values of different types are unequal; collections compare element by element. */
export function equal(left: HclValue, right: HclValue): boolean {
  if (typeof left === 'number' && typeof right === 'number')
    // cty's numbers are arbitrary-precision decimals: 0.1 + 0.2 == 0.3 holds there; a double is off by its last bit.
    return left === right || Math.abs(left - right) <= Number.EPSILON * Math.max(Math.abs(left), Math.abs(right));
  if (left === null || right === null || typeof left !== 'object' || typeof right !== 'object') return left === right;
  if (Array.isArray(left) || Array.isArray(right)) {
    if (!Array.isArray(left) || !Array.isArray(right) || left.length !== right.length) return false;
    return left.every((item, index) => equal(item, right[index] as HclValue));
  }
  const keys = Object.keys(left);
  if (keys.length !== Object.keys(right).length) return false;
  return keys.every((key) => Object.hasOwn(right, key) && equal(left[key] as HclValue, right[key] as HclValue));
}

/** Object keys in cty's order (lexical by code unit). */
export const sortedKeys = (value: { [key: string]: HclValue }): string[] =>
  Object.keys(value).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

/** A new object without a prototype's keys in the way (`__proto__` stays an ordinary key). */
export function newObject(): { [key: string]: HclValue } {
  return Object.create(null) as { [key: string]: HclValue };
}

/** The common type of two results (a conditional's branches): a string and a number or bool meet as strings. */
export function unify(values: HclValue[]): HclValue[] {
  const primitive = values.filter((value) => value !== null && typeof value !== 'object');
  const kinds = new Set(primitive.map((value) => typeof value));
  if (kinds.size <= 1) return values;
  if (kinds.has('string'))
    return values.map((value) => (value !== null && typeof value !== 'object' ? toText(value, 'the value') : value));
  throw new HclEvalError('Inconsistent result types', `the values are of types ${[...kinds].join(' and ')}`);
}
