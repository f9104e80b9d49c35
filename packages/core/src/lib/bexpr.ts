/**
 * A go-bexpr compatible boolean expression language (the selector language of Nomad's binding rules):
 * `==`, `!=`, `in`, `not in`, `contains`, `not contains`, `matches`, `not matches`, `is empty`,
 * `is not empty`, `and`, `or`, `not`, parentheses, quoted selector segments (`value."project-id"`),
 * JSON-pointer selectors (`"/list/my-groups"`), and go-bexpr's missing-key semantics: a key missing from a
 * map is "not present" and each operator has a fixed answer for it; a path that cannot exist is an error.
 */
import { SyntaxError as ParserSyntaxError, parse } from './bexpr-parser.js';

export type Operator =
  | 'equal'
  | 'not equal'
  | 'in'
  | 'not in'
  | 'contains'
  | 'not contains'
  | 'matches'
  | 'not matches'
  | 'is empty'
  | 'is not empty';

export type Expression =
  | { type: 'or' | 'and'; left: Expression; right: Expression }
  | { type: 'not'; expr: Expression }
  | { type: 'match'; selector: string[]; operator: Operator; value?: string; pattern?: RegExp };

export class BexprSyntaxError extends Error {
  constructor(
    message: string,
    readonly line: number,
    readonly column: number,
    readonly offset: number,
  ) {
    super(`${line}:${column} (${offset}): ${message}`);
    this.name = 'BexprSyntaxError';
  }
}

/** An expression that cannot be evaluated against this datum (go-bexpr returns an error: the rule does not match). */
export class BexprEvaluationError extends Error {}

/** Parses and checks an expression; regular expressions are compiled here so a bad one is refused at write. */
export function parseBexpr(text: string): Expression {
  let expression: Expression;
  try {
    expression = parse(text) as Expression;
  } catch (error) {
    if (error instanceof ParserSyntaxError) {
      const start = error.location.start;
      throw new BexprSyntaxError(error.message, start.line, start.column, start.offset);
    }
    throw error;
  }
  compilePatterns(expression);
  return expression;
}

function compilePatterns(expression: Expression): void {
  if (expression.type === 'match') {
    if (expression.operator === 'matches' || expression.operator === 'not matches') {
      try {
        expression.pattern = new RegExp(expression.value ?? '', 'u');
      } catch (error) {
        throw new BexprSyntaxError(`invalid regular expression: ${(error as Error).message}`, 1, 1, 0);
      }
    }
  } else if (expression.type === 'not') {
    compilePatterns(expression.expr);
  } else {
    compilePatterns(expression.left);
    compilePatterns(expression.right);
  }
}

/** The answer of each operator when the selected key is missing from its map (go-bexpr's NotPresentDisposition). */
const notPresent: Record<Operator, boolean> = {
  equal: false,
  'not equal': true,
  in: false,
  'not in': true,
  contains: false,
  'not contains': true,
  matches: false,
  'not matches': true,
  'is empty': true,
  'is not empty': false,
};

const missing = Symbol('missing');

/**
 * Selects `path` in `datum`. The top level is a struct (an unknown field is an error); below it, a key missing
 * from a map is `missing`; indexing into a scalar is an error.
 */
function select(datum: Record<string, unknown>, path: string[]): unknown {
  const [head, ...rest] = path;
  if (head === undefined || !Object.hasOwn(datum, head)) {
    throw new BexprEvaluationError(`selector ${JSON.stringify(path.join('.'))} is not valid: no field ${JSON.stringify(head)}`);
  }
  let current: unknown = datum[head];
  for (const part of rest) {
    if (Array.isArray(current)) {
      const index = Number(part);
      if (!/^\d+$/.test(part)) throw new BexprEvaluationError(`cannot index a list with ${JSON.stringify(part)}`);
      if (index >= current.length) return missing;
      current = current[index];
    } else if (current !== null && typeof current === 'object') {
      if (!Object.hasOwn(current, part)) return missing;
      current = (current as Record<string, unknown>)[part];
    } else {
      throw new BexprEvaluationError(`cannot select ${JSON.stringify(part)} from a ${typeof current}`);
    }
  }
  return current;
}

const asText = (value: unknown): string => (typeof value === 'string' ? value : JSON.stringify(value));

function collectionHas(collection: unknown, value: string): boolean {
  if (Array.isArray(collection)) return collection.some((item) => asText(item) === value);
  if (typeof collection === 'string') return collection.includes(value);
  if (collection !== null && typeof collection === 'object') return Object.hasOwn(collection, value);
  throw new BexprEvaluationError(`cannot test membership in a ${typeof collection}`);
}

function isEmpty(value: unknown): boolean {
  if (Array.isArray(value) || typeof value === 'string') return value.length === 0;
  if (value !== null && typeof value === 'object') return Object.keys(value).length === 0;
  throw new BexprEvaluationError(`cannot test emptiness of a ${typeof value}`);
}

function matchOne(expression: Extract<Expression, { type: 'match' }>, datum: Record<string, unknown>): boolean {
  const selected = select(datum, expression.selector);
  if (selected === missing) return notPresent[expression.operator];
  const value = expression.value ?? '';
  switch (expression.operator) {
    case 'equal':
    case 'not equal': {
      if (selected !== null && typeof selected === 'object') throw new BexprEvaluationError('cannot compare a collection with ==');
      return (asText(selected) === value) === (expression.operator === 'equal');
    }
    case 'in':
    case 'contains':
      return collectionHas(selected, value);
    case 'not in':
    case 'not contains':
      return !collectionHas(selected, value);
    case 'matches':
    case 'not matches': {
      if (typeof selected !== 'string') throw new BexprEvaluationError('matches needs a string');
      return (expression.pattern as RegExp).test(selected) === (expression.operator === 'matches');
    }
    case 'is empty':
      return isEmpty(selected);
    case 'is not empty':
      return !isEmpty(selected);
  }
}

/** Evaluates; throws BexprEvaluationError where go-bexpr returns an error. */
export function evaluateBexpr(expression: Expression, datum: Record<string, unknown>): boolean {
  switch (expression.type) {
    case 'match':
      return matchOne(expression, datum);
    case 'not':
      return !evaluateBexpr(expression.expr, datum);
    case 'and':
      return evaluateBexpr(expression.left, datum) && evaluateBexpr(expression.right, datum);
    case 'or':
      return evaluateBexpr(expression.left, datum) || evaluateBexpr(expression.right, datum);
  }
}

/** True when the expression holds; an evaluation error counts as no match (as Nomad's binder treats it). */
export function bexprMatches(expression: Expression, datum: Record<string, unknown>): boolean {
  try {
    return evaluateBexpr(expression, datum);
  } catch (error) {
    if (error instanceof BexprEvaluationError) return false;
    throw error;
  }
}
