/**
 * go-bexpr v0.1.13 (the version Nomad pins), the selector language of Nomad's binding rules: the grammar is
 * bexpr.peggy, rule for rule as go-bexpr's; evaluation follows its evaluate.go over the datum Nomad passes, a
 * struct `{ value: map[string]string, list: map[string][]string }` (ACLAuthClaims), reached through
 * pointerstructure v1.2.1. Values compare as the literal's text (`value.n == 42` compares "42"); a key missing
 * from a map gives each operator a fixed answer; every other failure (a missing key mid-selector, an index past
 * the end, an operator that does not apply) is an evaluation error, and Nomad's binder counts an error as no match.
 * `matches` is RE2 (re2js), compiled at write so a pattern RE2 refuses is refused there. re2js is a sixth of a
 * scheduler bundle and few selectors use `matches`, so it loads on first need: callers in the service
 * `await bexprReady(selector)` before parsing (the bundle keeps re2js in a chunk of its own).
 */
import { createRequire } from 'node:module';
import type { RE2JS } from 're2js';
import { SyntaxError as ParserSyntaxError, parse } from './bexpr-parser.js';
import { goParseBool } from './go-strings.ts';

export type Operator =
  | 'equal'
  | 'not equal'
  | 'in'
  | 'not in'
  | 'matches'
  | 'not matches'
  | 'is empty'
  | 'is not empty';

/** A bexpr selector (`a.b["c"].0`) or a JSON pointer (`"/a/b"`), as the list of its parts. */
export interface Selector {
  kind: 'bexpr' | 'pointer';
  path: string[];
}

export type Expression =
  | { type: 'or' | 'and'; left: Expression; right: Expression }
  | { type: 'not'; expr: Expression }
  | { type: 'match'; selector: Selector; operator: Operator; value?: string; pattern?: RE2JS }
  | {
      type: 'collection';
      op: 'any' | 'all';
      selector: Selector;
      binding: { name?: string; index?: string; value?: string };
      expr: Expression;
    };

/** A selector go-bexpr's parser refuses; the message is go-bexpr's (`line:column (offset): …`, byte offsets). */
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

interface PeggyExpectation {
  type: 'literal' | 'class' | 'any' | 'end' | 'other';
  text?: string;
  parts?: (string | [string, string])[];
  inverted?: boolean;
  description?: string;
}

const classEscapes: Record<string, string> = {
  '\t': '\\t',
  '\r': '\\r',
  '\n': '\\n',
  '\\': '\\\\',
  ']': '\\]',
  '-': '-',
};

/** An expectation as pigeon (go-bexpr's parser generator) prints it: literals Go-quoted, classes as written. */
function describeExpectation(expectation: PeggyExpectation): string {
  switch (expectation.type) {
    case 'literal':
      return JSON.stringify(expectation.text);
    case 'class': {
      const parts = (expectation.parts ?? []).map((part) =>
        Array.isArray(part)
          ? `${part[0]}-${part[1]}`
          : part.startsWith('\\p{')
            ? `\\p${part.slice(3, -1)}`
            : (classEscapes[part] ?? part),
      );
      return `[${expectation.inverted ? '^' : ''}${parts.join('')}]`;
    }
    case 'any':
      return '.';
    case 'end':
      return 'EOF';
    default:
      return expectation.description ?? '';
  }
}

/** Go's listJoin: "a, b or c". */
function listJoin(items: string[]): string {
  if (items.length <= 1) return items.join('');
  return `${items.slice(0, -1).join(', ')} or ${items.at(-1)}`;
}

/** pigeon's position: line, column in characters (1-based), offset in UTF-8 bytes. */
function goPosition(text: string, offset: number): { line: number; column: number; offset: number } {
  const before = text.slice(0, offset);
  const lines = before.split('\n');
  const last = lines.at(-1) ?? '';
  return { line: lines.length, column: [...last].length + 1, offset: Buffer.byteLength(before, 'utf8') };
}

function wholeExpression(text: string): boolean {
  try {
    parse(text);
    return true;
  } catch {
    return false;
  }
}

function syntaxError(text: string, error: InstanceType<typeof ParserSyntaxError>): BexprSyntaxError {
  let message = error.message;
  if (error.expected) {
    const expected = [
      ...new Set((error.expected as PeggyExpectation[]).filter((e) => e.type !== 'end').map(describeExpectation)),
    ].sort();
    // pigeon also lists what fails inside its `EOF <- !.` (peggy stays silent inside predicates): the input's
    // closing `_? EOF` is tried here exactly when the text up to here is a whole expression.
    if (
      (error.expected as PeggyExpectation[]).some((e) => e.type === 'end') ||
      wholeExpression(text.slice(0, error.location.start.offset))
    ) {
      expected.push('EOF');
    }
    message = `no match found, expected: ${listJoin(expected)}`;
  }
  const at = goPosition(text, error.location.start.offset);
  return new BexprSyntaxError(message, at.line, at.column, at.offset);
}

/** Parses as go-bexpr's CreateEvaluator does; also compiles every `matches` pattern, so a bad one is refused here. */
export function parseBexpr(text: string): Expression {
  let expression: Expression;
  try {
    expression = parse(text) as Expression;
  } catch (error) {
    if (error instanceof ParserSyntaxError) throw syntaxError(text, error);
    // go-bexpr never answers here (it is exponential in the depth of parentheses); we stop at the stack's end.
    if (error instanceof RangeError) throw new BexprSyntaxError('expression is nested too deeply', 1, 1, 0);
    throw error;
  }
  compilePatterns(expression);
  return expression;
}

/** Whether a selector matches, as Nomad's binder decides: an empty selector matches; any error is no match. */
export function selectorMatches(selector: string, datum: Record<string, unknown>): boolean {
  if (selector === '') return true;
  let expression: Expression;
  try {
    expression = parseBexpr(selector);
  } catch (error) {
    if (error instanceof BexprSyntaxError) return false;
    throw error;
  }
  return bexprMatches(expression, datum);
}

const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** A claim as Go holds it: its JSON decoder turns a lone surrogate into U+FFFD. */
const wellFormed = (text: string): string => text.replace(new RegExp(loneSurrogate.source, 'g'), '\ufffd');

let re2: typeof RE2JS | undefined;

/** Loads RE2 when `text` (a selector) may use it; cheap when it does not, or when RE2 is already loaded. */
export async function bexprReady(text: string): Promise<void> {
  if (re2 || !text.includes('matches')) return;
  re2 = (await import('re2js')).RE2JS;
}

/**
 * RE2, loaded. Outside a bundle (tests, tools that call the parser directly) the package is on disk and loads here
 * synchronously; in a bundle it is not, and the service's callers have awaited `bexprReady` first.
 */
function goRegexpEngine(): typeof RE2JS {
  re2 ??= (createRequire(import.meta.url)('re2js') as typeof import('re2js')).RE2JS;
  return re2;
}

/** RE2 as Go's regexp.Compile; a pattern with bytes that are not UTF-8 is refused as Go refuses it. */
export function compileGoRegexp(pattern: string): RE2JS {
  if (loneSurrogate.test(pattern)) throw new Error('error parsing regexp: invalid UTF-8');
  return goRegexpEngine().compile(pattern);
}

function compilePatterns(expression: Expression): void {
  switch (expression.type) {
    case 'match':
      if (expression.operator === 'matches' || expression.operator === 'not matches') {
        goRegexpEngine(); // outside the try: RE2 not loading is the service's failure, not the pattern's
        try {
          expression.pattern = compileGoRegexp(expression.value ?? '');
        } catch (error) {
          throw new BexprSyntaxError(
            `Failed to compile regular expression ${JSON.stringify(expression.value)}: ${(error as Error).message}`,
            1,
            1,
            0,
          );
        }
      }
      return;
    case 'not':
    case 'collection':
      compilePatterns(expression.expr);
      return;
    default:
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
  'is empty': true,
  'is not empty': false,
  matches: false,
  'not matches': true,
};

/** A collection element's name: its key or index (`value`), or the path it stands for (`path`). */
interface LocalVariable {
  name: string;
  path?: string[];
  value?: string | number;
}

class NotFound extends BexprEvaluationError {}

const isMap = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/**
 * strconv.ParseInt(text, 0, 64): a sign, then 0x/0o/0b/0 (octal) prefixes, underscores between digits; null when
 * Go answers an error.
 */
export function parseGoInt(text: string): bigint | null {
  let s = text;
  let negative = false;
  if (s.startsWith('+') || s.startsWith('-')) {
    negative = s[0] === '-';
    s = s.slice(1);
  }
  let base = 10;
  let digits = s;
  const prefix = s.slice(0, 2).toLowerCase();
  if (prefix === '0x' || prefix === '0o' || prefix === '0b') {
    base = prefix === '0x' ? 16 : prefix === '0o' ? 8 : 2;
    digits = s.slice(2);
  } else if (s.length > 1 && s[0] === '0') {
    base = 8;
    digits = s.slice(1);
  }
  if (s.includes('_') && !underscoresOk(text)) return null;
  digits = digits.replaceAll('_', '');
  if (digits === '') return null;
  const alphabet = '0123456789abcdef'.slice(0, base);
  let value = 0n;
  for (const char of digits.toLowerCase()) {
    const digit = alphabet.indexOf(char);
    if (digit < 0) return null;
    value = value * BigInt(base) + BigInt(digit);
  }
  if (negative) value = -value;
  if (value > 0x7fffffffffffffffn || value < -0x8000000000000000n) return null;
  return value;
}

/** Go's underscoreOK: underscores only between digits (a base prefix counts as a digit). */
function underscoresOk(text: string): boolean {
  let s = text;
  if (s.startsWith('+') || s.startsWith('-')) s = s.slice(1);
  let saw = '^';
  let i = 0;
  let hex = false;
  if (s.length >= 2 && s[0] === '0' && 'box'.includes((s[1] ?? '').toLowerCase())) {
    i = 2;
    saw = '0';
    hex = (s[1] ?? '').toLowerCase() === 'x';
  }
  for (; i < s.length; i++) {
    const c = s[i] as string;
    if ((c >= '0' && c <= '9') || (hex && c.toLowerCase() >= 'a' && c.toLowerCase() <= 'f')) {
      saw = '0';
    } else if (c === '_') {
      if (saw !== '0') return false;
      saw = '_';
    } else {
      if (saw === '_') return false;
      saw = '!';
    }
  }
  return saw !== '_';
}

/** pointerstructure's Get: the datum is a struct (its own keys are its fields), below it maps, slices and strings. */
function pointerGet(datum: Record<string, unknown>, parts: string[]): unknown {
  let current: unknown = datum;
  parts.forEach((part, i) => {
    const where = `/${parts.join('/')} at part ${i}`;
    if (i === 0) {
      if (!Object.hasOwn(datum, part))
        throw new NotFound(`${where}: couldn't find key: struct field with name ${JSON.stringify(part)}`);
      current = datum[part];
    } else if (Array.isArray(current)) {
      // mapstructure's weak decoding: "" is 0, then strconv.ParseInt(part, 0, 64).
      const index = parseGoInt(part === '' ? '0' : part);
      if (index === null)
        throw new BexprEvaluationError(`${where}: couldn't convert value ${JSON.stringify(part)} to type int`);
      if (index < 0n || index >= BigInt(current.length)) {
        throw new BexprEvaluationError(`${where}: index ${index} is out of range (length = ${current.length})`);
      }
      current = current[Number(index)];
    } else if (isMap(current)) {
      if (!Object.hasOwn(current, part)) throw new NotFound(`${where}: couldn't find key ${JSON.stringify(part)}`);
      current = current[part];
    } else {
      throw new BexprEvaluationError(`/${parts.join('/')}: at part ${i}, invalid value kind: ${kindOf(current)}`);
    }
  });
  return current;
}

function kindOf(value: unknown): string {
  if (typeof value === 'string') return 'string';
  if (typeof value === 'boolean') return 'bool';
  if (typeof value === 'number') return 'int';
  if (Array.isArray(value)) return 'slice';
  if (isMap(value)) return 'map';
  return 'invalid';
}

const missing = Symbol('missing');

/** go-bexpr's getValue: local variables first (innermost last), then the datum; `missing` when a map lacks the key. */
function getValue(datum: Record<string, unknown>, selectorPath: string[], locals: LocalVariable[]): unknown {
  let path = selectorPath;
  for (let i = locals.length - 1; i >= 0 && path.length > 0; i--) {
    const local = locals[i] as LocalVariable;
    if (path[0] !== local.name) continue;
    if (!local.path || local.path.length === 0) {
      if (path.length > 1)
        throw new BexprEvaluationError(
          `/${local.name} references a ${typeof local.value} so /${path.join('/')} is invalid`,
        );
      return local.value;
    }
    path = [...local.path, ...path.slice(1)];
  }
  try {
    return pointerGet(datum, path);
  } catch (error) {
    if (!(error instanceof BexprEvaluationError)) throw error;
    if (!(error instanceof NotFound)) throw new BexprEvaluationError(`error finding value in datum: ${error.message}`);
    // evaluateNotPresent: a missing key is "not present" only when its parent is a map.
    if (path.length >= 2) {
      let parent: unknown;
      try {
        parent = pointerGet(datum, path.slice(0, -1));
      } catch {
        parent = undefined;
      }
      if (isMap(parent)) return missing;
    }
    throw new BexprEvaluationError(`error finding value in datum: ${error.message}`);
  }
}

/** UTF-8 bytes of a string; the lone surrogates U+DC80–U+DCFF stand for the raw bytes 0x80–0xFF. */
function goBytes(text: string): Buffer {
  const chunks: Buffer[] = [];
  for (const char of text) {
    const code = char.codePointAt(0) as number;
    chunks.push(code >= 0xdc80 && code <= 0xdcff ? Buffer.from([code - 0xdc00]) : Buffer.from(char, 'utf8'));
  }
  return Buffer.concat(chunks);
}

function matchValueFor(expression: Extract<Expression, { type: 'match' }>, selected: unknown): unknown {
  const raw = expression.value ?? '';
  if (typeof selected === 'number') {
    const parsed = parseGoInt(raw);
    if (parsed === null)
      throw new BexprEvaluationError(
        `error getting match value in expression: strconv.ParseInt: parsing ${JSON.stringify(raw)}: invalid syntax`,
      );
    return parsed;
  }
  return raw;
}

function doEqual(expression: Extract<Expression, { type: 'match' }>, selected: unknown): boolean {
  if (typeof selected === 'number') return matchValueFor(expression, selected) === BigInt(selected);
  if (typeof selected === 'boolean') {
    const raw = expression.value ?? '';
    const parsed = goParseBool(raw);
    if (parsed === undefined)
      throw new BexprEvaluationError(
        `error getting match value in expression: strconv.ParseBool: parsing ${JSON.stringify(raw)}: invalid syntax`,
      );
    return parsed === selected;
  }
  if (typeof selected === 'string') return goBytes(wellFormed(selected)).equals(goBytes(expression.value ?? ''));
  throw new BexprEvaluationError('unable to find suitable primitive comparison function for matching');
}

function doIn(expression: Extract<Expression, { type: 'match' }>, selected: unknown): boolean {
  const raw = expression.value ?? '';
  if (isMap(selected)) return Object.hasOwn(selected, raw);
  if (Array.isArray(selected))
    return selected.some((item) => typeof item === 'string' && goBytes(wellFormed(item)).equals(goBytes(raw)));
  if (typeof selected === 'string') return goBytes(wellFormed(selected)).includes(goBytes(raw));
  throw new BexprEvaluationError(
    `Cannot perform in/contains operations on type ${kindOf(selected)} for selector: ${JSON.stringify(expression.selector.path)}`,
  );
}

function doIsEmpty(selected: unknown): boolean {
  if (typeof selected === 'string' || Array.isArray(selected)) return selected.length === 0;
  if (isMap(selected)) return Object.keys(selected).length === 0;
  throw new BexprEvaluationError(`cannot perform is-empty operations on type ${kindOf(selected)}`);
}

function doMatches(expression: Extract<Expression, { type: 'match' }>, selected: unknown): boolean {
  if (typeof selected !== 'string')
    throw new BexprEvaluationError(`Value of type ${kindOf(selected)} is not convertible to []byte`);
  const pattern = expression.pattern ?? compileGoRegexp(expression.value ?? '');
  return pattern.test(wellFormed(selected));
}

function evaluateMatch(
  expression: Extract<Expression, { type: 'match' }>,
  datum: Record<string, unknown>,
  locals: LocalVariable[],
): boolean {
  const selected = getValue(datum, expression.selector.path, locals);
  if (selected === missing) return notPresent[expression.operator];
  switch (expression.operator) {
    case 'equal':
      return doEqual(expression, selected);
    case 'not equal':
      return !doEqual(expression, selected);
    case 'in':
      return doIn(expression, selected);
    case 'not in':
      return !doIn(expression, selected);
    case 'is empty':
      return doIsEmpty(selected);
    case 'is not empty':
      return !doIsEmpty(selected);
    case 'matches':
      return doMatches(expression, selected);
    case 'not matches':
      return !doMatches(expression, selected);
  }
}

function evaluateCollection(
  expression: Extract<Expression, { type: 'collection' }>,
  datum: Record<string, unknown>,
  locals: LocalVariable[],
): boolean {
  const selected = getValue(datum, expression.selector.path, locals);
  if (selected === missing) return expression.op === 'all';
  const { name, index, value } = expression.binding;
  const selectorText = expression.selector.path.join(expression.selector.kind === 'bexpr' ? '.' : '/');
  let elements: LocalVariable[][];
  if (isMap(selected)) {
    elements = Object.keys(selected).map((key) => [
      ...(name ? [{ name, value: key }] : []),
      ...(index ? [{ name: index, value: key }] : []),
      ...(value ? [{ name: value, path: [...expression.selector.path, key] }] : []),
    ]);
  } else if (Array.isArray(selected)) {
    elements = selected.map((_, i) => [
      ...(index ? [{ name: index, value: i }] : []),
      ...(name ? [{ name, path: [...expression.selector.path, String(i)] }] : []),
      ...(value ? [{ name: value, path: [...expression.selector.path, String(i)] }] : []),
    ]);
  } else {
    throw new BexprEvaluationError(`${selectorText} is not a list or a map`);
  }
  for (const element of elements) {
    if (index && value && index === value)
      throw new BexprEvaluationError(`"${index}" cannot be used as a placeholder for both the index and the value`);
    const result = evaluateWith(expression.expr, datum, [...locals, ...element]);
    if (result === (expression.op === 'any')) return result;
  }
  return expression.op === 'all';
}

function evaluateWith(expression: Expression, datum: Record<string, unknown>, locals: LocalVariable[]): boolean {
  switch (expression.type) {
    case 'match':
      return evaluateMatch(expression, datum, locals);
    case 'collection':
      return evaluateCollection(expression, datum, locals);
    case 'not':
      return !evaluateWith(expression.expr, datum, locals);
    case 'and':
      return evaluateWith(expression.left, datum, locals) && evaluateWith(expression.right, datum, locals);
    case 'or':
      return evaluateWith(expression.left, datum, locals) || evaluateWith(expression.right, datum, locals);
  }
}

/** Evaluates; throws BexprEvaluationError where go-bexpr returns an error. */
export function evaluateBexpr(expression: Expression, datum: Record<string, unknown>): boolean {
  try {
    return evaluateWith(expression, datum, []);
  } catch (error) {
    if (error instanceof RangeError) throw new BexprEvaluationError('expression is nested too deeply');
    throw error;
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
