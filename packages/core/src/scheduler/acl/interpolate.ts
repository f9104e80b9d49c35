/**
 * `${…}` interpolation of binding rule BindNames and auth method TokenNameFormats, as Nomad does it
 * (lib/auth/binder.go InterpolateHIL): a template without `${` is used as written; otherwise it is HIL
 * (hashicorp/hil at the version Nomad pins, 27a72121fd40), scanned and parsed here rule for rule, with the
 * claims as string variables `value.<name>`. Bind names see the values lowercased, token names as they are.
 * Every HIL error (syntax, an unknown variable, a function – Nomad defines none) fails the login.
 *
 * HIL's literals, arithmetic, comparisons, `&&`/`||`/`!` and `?:` work as there, with its implicit conversions
 * (check_types.go, builtins.go). Keyhaven keeps one difference, listed in test/differential/hil-interpolation.test.ts:
 * `${list.<name>}` (Nomad knows no list variables and fails the login) binds one name per element.
 */
import { parseGoInt } from '../../lib/bexpr.ts';
import { badRequest } from '../../lib/errors.ts';
import { goToLower } from '../../lib/go-strings.ts';

export interface ClaimVariables {
  value: Record<string, string>;
  list: Record<string, string[]>;
}

/** A template HIL cannot parse or evaluate; the message is HIL's (`parse error at 1:3: …`). */
export class HilError extends Error {}

// ---- Scanner (hil/scanner/scanner.go) ----

type TokenType =
  | 'LITERAL'
  | 'STRING'
  | 'INTEGER'
  | 'FLOAT'
  | 'BOOL'
  | 'BEGIN'
  | 'END'
  | 'OQUOTE'
  | 'CQUOTE'
  | 'IDENTIFIER'
  | 'EOF'
  | 'INVALID'
  | 'AND'
  | 'OR'
  | 'BANG'
  | 'EQUAL'
  | 'NOTEQUAL'
  | 'GT'
  | 'LT'
  | 'GTE'
  | 'LTE'
  | '('
  | ')'
  | '['
  | ']'
  | ','
  | '.'
  | '+'
  | '-'
  | '*'
  | '/'
  | '%'
  | '?'
  | ':';

interface Pos {
  line: number;
  column: number;
}

interface Token {
  type: TokenType;
  content: string;
  pos: Pos;
}

const utf8Length = (text: string) => Buffer.byteLength(text, 'utf8');
const goQuote = (text: string) => JSON.stringify(text);

/** The token as HIL names it in an error message. */
function describe(token: Token): string {
  switch (token.type) {
    case 'EOF':
      return 'end of string';
    case 'INVALID':
      return `invalid sequence ${goQuote(token.content)}`;
    case 'INTEGER':
      return `integer ${token.content}`;
    case 'FLOAT':
      return `float ${token.content}`;
    case 'STRING':
      return `string ${goQuote(token.content)}`;
    case 'LITERAL':
      return `literal ${goQuote(token.content)}`;
    case 'OQUOTE':
      return 'opening quote';
    case 'CQUOTE':
      return 'closing quote';
    case 'AND':
      return '&&';
    case 'OR':
      return '||';
    case 'NOTEQUAL':
      return '!=';
    case 'GTE':
      return '>=';
    case 'LTE':
      return '<=';
    default:
      return goQuote(token.content);
  }
}

const isSpace = (char: string | undefined) => char === ' ' || char === '\t' || char === '\r' || char === '\n';
const isLetter = (char: string) => /^\p{L}$/u.test(char);
const isIdentifierChar = (char: string) => /^[_\-.*\p{N}\p{L}\p{M}]$/u.test(char);

/** scanLiteral: text up to `${` (with `$$` kept), or inside quotes up to `"` (with `\"` and `\\` kept). */
function scanLiteral(s: string, start: Pos, nested: boolean): { literal: string; terminator: Token } {
  let i = 0;
  const pos = { ...start };
  for (;;) {
    if (i >= s.length) {
      if (nested) return { literal: '', terminator: { type: 'INVALID', content: s, pos: start } };
      return { literal: s, terminator: { type: 'EOF', content: '', pos } };
    }
    const next = s[i];
    if (next === '$' && i + 1 < s.length) {
      if (s[i + 1] === '{') return { literal: s.slice(0, i), terminator: { type: 'BEGIN', content: '${', pos } };
      if (s[i + 1] === '$') {
        pos.column += 2;
        i += 2;
        continue;
      }
    }
    if (nested) {
      if (next === '"') return { literal: s.slice(0, i), terminator: { type: 'CQUOTE', content: '"', pos } };
      if (next === '\\' && (s[i + 1] === '"' || s[i + 1] === '\\')) {
        pos.column += 2;
        i += 2;
        continue;
      }
    }
    if (next === '\n') {
      pos.column = 1;
      pos.line++;
      i++;
    } else {
      pos.column++;
      i += String.fromCodePoint(s.codePointAt(i) as number).length;
    }
  }
}

function scanNumber(s: string): { content: string; type: 'INTEGER' | 'FLOAT' } {
  let period = -1;
  let length = 0;
  let type: 'INTEGER' | 'FLOAT' = 'INTEGER';
  while (length < s.length) {
    const next = s[length] as string;
    if (next !== '.' && (next < '0' || next > '9')) {
      if (period === length - 1) {
        length--;
        type = 'INTEGER';
      }
      break;
    }
    if (next === '.') {
      if (period >= 0) break;
      period = length;
      type = 'FLOAT';
    }
    length++;
  }
  return { content: s.slice(0, length), type };
}

function scanIdentifier(s: string): string {
  let length = 0;
  for (const char of s) {
    if (!isIdentifierChar(char)) break;
    if (char === '*' && s[length - 1] !== '.') break;
    if (length > 0 && s[length - 1] === '*' && char !== '.') {
      length--;
      if (s[length - 1] === '.') length--;
      break;
    }
    length += char.length;
  }
  return s.slice(0, length);
}

const singleCharacterTokens = new Set(['(', ')', '[', ']', ',', '.', '+', '-', '*', '/', '%', '?', ':']);
const twoCharacterTokens: Record<string, [TokenType, TokenType | 'INVALID']> = {
  '!': ['NOTEQUAL', 'BANG'],
  '<': ['LTE', 'LT'],
  '>': ['GTE', 'GT'],
  '=': ['EQUAL', 'INVALID'],
  '&': ['AND', 'INVALID'],
  '|': ['OR', 'INVALID'],
};

function scanInterpolationToken(s: string, start: Pos): { token: Token; size: number; pos: Pos } {
  const pos = { ...start };
  let size = 0;
  while (size < s.length && isSpace(s[size])) {
    if (s[size] === '\n') {
      pos.column = 1;
      pos.line++;
    } else pos.column++;
    size++;
  }
  const rest = s.slice(size);
  if (rest === '') return { token: { type: 'EOF', content: '', pos }, size, pos };
  const next = rest[0] as string;
  let token: Token;
  if (singleCharacterTokens.has(next)) token = { type: next as TokenType, content: next, pos: { ...pos } };
  else if (next === '}') token = { type: 'END', content: '}', pos: { ...pos } };
  else if (next === '"') token = { type: 'OQUOTE', content: '"', pos: { ...pos } };
  else if (next in twoCharacterTokens) {
    const [pair, single] = twoCharacterTokens[next] as [TokenType, TokenType];
    const second = next === '!' || next === '<' || next === '>' || next === '=' ? '=' : next;
    token =
      rest[1] === second
        ? { type: pair, content: rest.slice(0, 2), pos: { ...pos } }
        : { type: single, content: next, pos: { ...pos } };
  } else if (next >= '0' && next <= '9') {
    const number = scanNumber(rest);
    token = { type: number.type, content: number.content, pos: { ...pos } };
  } else if (/^[a-zA-Z_]/.test(next) || isLetter(String.fromCodePoint(rest.codePointAt(0) as number))) {
    const identifier = scanIdentifier(rest);
    token = {
      type: identifier === 'true' || identifier === 'false' ? 'BOOL' : 'IDENTIFIER',
      content: identifier,
      pos: { ...pos },
    };
    return {
      token,
      size: size + identifier.length,
      pos: { line: pos.line, column: pos.column + [...identifier].length },
    };
  } else {
    const char = String.fromCodePoint(rest.codePointAt(0) as number);
    token = { type: 'INVALID', content: char, pos: { ...pos } };
    return { token, size: size + char.length, pos: { line: pos.line, column: pos.column + 1 } };
  }
  return {
    token,
    size: size + token.content.length,
    pos: { line: pos.line, column: pos.column + utf8Length(token.content) },
  };
}

function scan(text: string): Token[] {
  const tokens: Token[] = [];
  let remain = text;
  let pos: Pos = { line: 1, column: 1 };
  let nesting = 0;
  for (;;) {
    const start = { ...pos };
    const { literal, terminator } = scanLiteral(remain, pos, nesting > 0);
    if (literal.length > 0) {
      tokens.push({ type: nesting > 0 ? 'STRING' : 'LITERAL', content: literal, pos: start });
      remain = remain.slice(literal.length);
    }
    tokens.push(terminator);
    remain = remain.slice(terminator.content.length);
    pos = { line: terminator.pos.line, column: terminator.pos.column + utf8Length(terminator.content) };
    if (terminator.type === 'INVALID') {
      tokens.push({ type: 'EOF', content: '', pos });
      return tokens;
    }
    if (terminator.type === 'EOF') return tokens;
    if (terminator.type === 'BEGIN') nesting++;
    for (;;) {
      const { token, size, pos: after } = scanInterpolationToken(remain, pos);
      tokens.push(token);
      remain = remain.slice(size);
      pos = after;
      if (token.type === 'INVALID') {
        tokens.push({ type: 'EOF', content: '', pos });
        return tokens;
      }
      if (token.type === 'EOF') return tokens;
      if (token.type === 'END') {
        nesting = Math.max(0, nesting - 1);
        break;
      }
      if (token.type === 'OQUOTE') break;
    }
  }
}

// ---- Parser (hil/parser/parser.go) ----

type Node =
  | { type: 'literal'; value: string | bigint | number | boolean }
  | { type: 'output'; parts: Node[] }
  | { type: 'variable'; name: string; pos: Pos }
  | { type: 'call'; name: string; args: Node[]; pos: Pos }
  | { type: 'index'; target: Extract<Node, { type: 'variable' }>; key: Node; pos: Pos }
  | { type: 'operator'; operator: string; operands: Node[]; pos: Pos }
  | { type: 'conditional'; condition: Node; then: Node; otherwise: Node; pos: Pos };

const parseError = (pos: Pos, message: string) => new HilError(`parse error at ${pos.line}:${pos.column}: ${message}`);
const expectation = (wanted: string, got: Token) =>
  parseError(got.pos, `expected ${wanted} but found ${describe(got)}`);

/** HIL's binary operators, loosest first. */
const binaryLevels: Partial<Record<TokenType, string>>[] = [
  { OR: '||' },
  { AND: '&&' },
  { EQUAL: '==', NOTEQUAL: '!=' },
  { GT: '>', GTE: '>=', LT: '<', LTE: '<=' },
  { '+': '+', '-': '-' },
  { '*': '*', '/': '/', '%': '%' },
];

class Parser {
  private index = 0;
  constructor(private readonly tokens: Token[]) {}

  private peek(): Token {
    return this.tokens[Math.min(this.index, this.tokens.length - 1)] as Token;
  }

  private read(): Token {
    const token = this.peek();
    if (token.type !== 'EOF') this.index++;
    return token;
  }

  private require(type: TokenType, name: string): void {
    const token = this.read();
    if (token.type !== type) throw expectation(name, token);
  }

  sequence(quoted: boolean): Node {
    const literalType = quoted ? 'STRING' : 'LITERAL';
    const endType = quoted ? 'CQUOTE' : 'EOF';
    if (quoted) {
      const open = this.read();
      if (open.type !== 'OQUOTE') throw expectation('open quote', open);
    }
    const parts: Node[] = [];
    for (;;) {
      const token = this.read();
      if (token.type === endType) break;
      if (token.type === literalType) parts.push({ type: 'literal', value: stringTokenValue(token, quoted) });
      else if (token.type === 'BEGIN') {
        parts.push(this.expression());
        this.require('END', '"}"');
      } else throw expectation('"${"', token);
    }
    if (parts.length === 0) parts.push({ type: 'literal', value: '' });
    const only = parts[0] as Node;
    if (parts.length === 1 && only.type === 'literal' && typeof only.value === 'string') return only;
    return { type: 'output', parts };
  }

  private expression(): Node {
    const pos = this.peek().pos;
    const condition = this.binary(0);
    if (this.peek().type !== '?') return condition;
    this.read();
    const then = this.expression();
    const colon = this.read();
    if (colon.type !== ':') throw expectation(':', colon);
    const otherwise = this.expression();
    return { type: 'conditional', condition, then, otherwise, pos };
  }

  private binary(level: number): Node {
    const operators = binaryLevels[level];
    if (!operators) return this.term();
    const pos = this.peek().pos;
    let left = this.binary(level + 1);
    for (;;) {
      const operator = operators[this.peek().type];
      if (!operator) return left;
      this.read();
      const right = this.binary(level + 1);
      left = { type: 'operator', operator, operands: [left, right], pos };
    }
  }

  private term(): Node {
    const next = this.peek();
    switch (next.type) {
      case '(': {
        this.read();
        const inner = this.expression();
        this.require(')', '")"');
        return inner;
      }
      case 'OQUOTE':
        return this.sequence(true);
      case 'INTEGER': {
        const token = this.read();
        const value = BigInt(token.content);
        if (value > 0x7fffffffffffffffn)
          throw parseError(
            token.pos,
            `invalid integer: strconv.Atoi: parsing ${goQuote(token.content)}: value out of range`,
          );
        return { type: 'literal', value };
      }
      case 'FLOAT':
        return { type: 'literal', value: Number.parseFloat(this.read().content) };
      case 'BOOL':
        return { type: 'literal', value: this.read().content === 'true' };
      case '-':
      case 'BANG': {
        const token = this.read();
        const operand = this.term();
        return { type: 'operator', operator: token.type === '-' ? 'negate' : '!', operands: [operand], pos: token.pos };
      }
      case 'IDENTIFIER':
        return this.scopeInteraction();
      default:
        throw expectation('expression', next);
    }
  }

  private scopeInteraction(): Node {
    const first = this.read();
    if (this.peek().type === '(') {
      this.read();
      const args: Node[] = [];
      while (this.peek().type !== ')') {
        args.push(this.expression());
        if (this.peek().type !== ',') break;
        this.read();
      }
      this.require(')', '")"');
      return { type: 'call', name: first.content, args, pos: first.pos };
    }
    const variable = { type: 'variable' as const, name: first.content, pos: first.pos };
    if (this.peek().type === '[') {
      const pos = this.read().pos;
      const key = this.expression();
      this.require(']', '"]"');
      return { type: 'index', target: variable, key, pos };
    }
    return variable;
  }
}

/** parseStringToken: `$$` is `$`; inside quotes `\\`, `\n` and `\"` are escapes and any other backslash an error. */
function stringTokenValue(token: Token, backslashes: boolean): string {
  const raw = token.content;
  let out = '';
  for (let i = 0; i < raw.length; i++) {
    let char = raw[i] as string;
    if (char === '$') {
      if (raw[i + 1] === '$') i++;
    } else if (backslashes && char === '\\') {
      const at = { line: token.pos.line, column: token.pos.column + [...raw.slice(0, i)].length };
      if (i + 1 >= raw.length) throw parseError(at, 'unfinished backslash escape sequence');
      const escaped = raw[i + 1];
      if (escaped === '\\') i++;
      else if (escaped === 'n') {
        char = '\n';
        i++;
      } else if (escaped === '"') {
        char = '"';
        i++;
      } else throw parseError(at, 'invalid backslash escape sequence');
    }
    out += char;
  }
  return out;
}

/** hil.Parse. */
export function parseHil(template: string): Node {
  try {
    return new Parser(scan(template)).sequence(false);
  } catch (error) {
    if (error instanceof RangeError) throw new HilError('parse error: the template is nested too deeply');
    throw error;
  }
}

// ---- Evaluation (the part of hil.Eval a name template can use) ----

/** strconv.FormatFloat(f, 'g', -1, 64), as HIL turns a float into a string. */
function formatGoFloat(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (!Number.isFinite(value)) return value > 0 ? '+Inf' : '-Inf';
  if (value === 0) return Object.is(value, -0) ? '-0' : '0';
  const [mantissa, exponentText] = value.toExponential().split('e') as [string, string];
  const exponent = Number(exponentText);
  // Go switches to an exponent at 1e+06 for the shortest form (ftoa.go: eprec = 6).
  if (exponent < -4 || exponent >= 6) {
    const digits = mantissa;
    return `${digits}e${exponent < 0 ? '-' : '+'}${String(Math.abs(exponent)).padStart(2, '0')}`;
  }
  return value.toFixed(Math.max(0, mantissa.replace('-', '').replace('.', '').length - 1 - exponent));
}

function walk(node: Node, visit: (node: Node) => void): void {
  visit(node);
  switch (node.type) {
    case 'output':
      for (const part of node.parts) walk(part, visit);
      return;
    case 'call':
      for (const arg of node.args) walk(arg, visit);
      return;
    case 'index':
      walk(node.target, visit);
      walk(node.key, visit);
      return;
    case 'operator':
      for (const operand of node.operands) walk(operand, visit);
      return;
    case 'conditional':
      walk(node.condition, visit);
      walk(node.then, visit);
      walk(node.otherwise, visit);
      return;
    default:
      return;
  }
}

/** HIL's identifier check: unknown variables and functions (Nomad defines no functions). Throws HilError. */
function checkIdentifiers(tree: Node, known: (name: string) => boolean): void {
  walk(tree, (node) => {
    if (node.type === 'variable' && !known(node.name))
      throw new HilError(`${node.pos.line}:${node.pos.column}: unknown variable accessed: ${node.name}`);
    if (node.type === 'call')
      throw new HilError(`${node.pos.line}:${node.pos.column}: unknown function called: ${node.name}`);
  });
}

type HilType = 'string' | 'int' | 'float' | 'bool';
type HilValue = string | bigint | number | boolean;

/** A node after HIL's type check: its type, with the implicit conversions HIL inserts. */
type Typed =
  | { kind: 'literal'; type: HilType; value: HilValue }
  | { kind: 'variable'; type: 'string'; name: string }
  | { kind: 'output'; type: 'string'; parts: Typed[] }
  | { kind: 'convert'; type: HilType; from: HilType; inner: Typed }
  | { kind: 'math'; type: 'int' | 'float'; operator: string; operands: Typed[] }
  | { kind: 'compare'; type: 'bool'; as: HilType; operator: string; operands: Typed[] }
  | { kind: 'logical'; type: 'bool'; operator: string; operands: Typed[] }
  | { kind: 'conditional'; type: HilType; condition: Typed; then: Typed; otherwise: Typed };

/** HIL's implicit conversions (eval.go internalEval). */
const implicit: Record<HilType, HilType[]> = {
  float: ['int', 'string'],
  int: ['float', 'string'],
  string: ['int', 'float', 'bool'],
  bool: ['string'],
};

const typeName = (type: HilType) => `Type${type[0]?.toUpperCase()}${type.slice(1)}`;

function convert(node: Typed, to: HilType): Typed | undefined {
  if (node.type === to) return node;
  return implicit[node.type].includes(to) ? { kind: 'convert', type: to, from: node.type, inner: node } : undefined;
}

function typeError(pos: Pos, message: string): HilError {
  return new HilError(`At column ${pos.column}, line ${pos.line}: ${message}`);
}

/** HIL's type check (check_types.go). Throws HilError. */
function typeCheck(node: Node): Typed {
  switch (node.type) {
    case 'literal': {
      const value = node.value;
      const type: HilType =
        typeof value === 'string'
          ? 'string'
          : typeof value === 'bigint'
            ? 'int'
            : typeof value === 'number'
              ? 'float'
              : 'bool';
      return { kind: 'literal', type, value };
    }
    case 'variable':
      return { kind: 'variable', type: 'string', name: node.name };
    case 'output':
      // Every part of an output is a string; HIL converts the others.
      return {
        kind: 'output',
        type: 'string',
        parts: node.parts.map((part) => convert(typeCheck(part), 'string') as Typed),
      };
    case 'call':
      throw new HilError(`${node.pos.line}:${node.pos.column}: unknown function called: ${node.name}`);
    case 'index':
      typeCheck(node.key);
      throw typeError(node.pos, 'invalid index operation into non-indexable type: TypeString');
    case 'conditional': {
      const condition = typeCheck(node.condition);
      let then = typeCheck(node.then);
      let otherwise = typeCheck(node.otherwise);
      const asBool = convert(condition, 'bool');
      if (!asBool) throw typeError(node.pos, `condition must be type bool, not ${typeName(condition.type)}`);
      if (then.type !== otherwise.type) {
        const mismatch = `true and false expression types must match; have ${typeName(then.type)} and ${typeName(otherwise.type)}`;
        if (then.type === 'string') {
          then =
            convert(then, otherwise.type) ??
            (() => {
              throw typeError(node.pos, mismatch);
            })();
        } else {
          otherwise =
            convert(otherwise, then.type) ??
            (() => {
              throw typeError(node.pos, mismatch);
            })();
        }
      }
      return { kind: 'conditional', type: then.type, condition: asBool, then, otherwise };
    }
    case 'operator':
      return typeCheckOperator(node);
  }
}

function typeCheckOperator(node: Extract<Node, { type: 'operator' }>): Typed {
  // The parser's unary forms: `-x` is `0 - x`, `!x` is `false == x`.
  const operator = node.operator === 'negate' ? '-' : node.operator === '!' ? '==' : node.operator;
  const sources: Node[] =
    node.operator === 'negate'
      ? [{ type: 'literal', value: 0n }, ...node.operands]
      : node.operator === '!'
        ? [{ type: 'literal', value: false }, ...node.operands]
        : node.operands;
  const operands = sources.map(typeCheck);
  if (operator === '&&' || operator === '||') {
    const converted = operands.map(
      (operand) =>
        convert(operand, 'bool') ??
        (() => {
          throw typeError(node.pos, `logical operators require boolean operands, not ${typeName(operand.type)}`);
        })(),
    );
    return { kind: 'logical', type: 'bool', operator, operands: converted };
  }
  if (['==', '!=', '<', '>', '<=', '>='].includes(operator)) {
    let as: HilType = (operands[0] as Typed).type;
    if (operator !== '==' && operator !== '!=')
      as = operands.some((operand) => operand.type === 'float') ? 'float' : 'int';
    const converted = operands.map(
      (operand, i) =>
        convert(operand, as) ??
        (() => {
          throw typeError(node.pos, `operand ${i + 1} should be ${typeName(as)}, got ${typeName(operand.type)}`);
        })(),
    );
    return { kind: 'compare', type: 'bool', as, operator, operands: converted };
  }
  const mathType = operands.some((operand) => operand.type === 'float') ? 'float' : 'int';
  const converted = operands.map(
    (operand, i) =>
      convert(operand, mathType) ??
      (() => {
        throw typeError(node.pos, `operand ${i + 1} should be ${typeName(mathType)}, got ${typeName(operand.type)}`);
      })(),
  );
  if (mathType === 'float' && operator === '%') throw typeError(node.pos, 'modulo cannot be used with floats');
  return { kind: 'math', type: mathType, operator, operands: converted };
}

const goBools: Record<string, boolean> = {
  1: true,
  t: true,
  T: true,
  TRUE: true,
  true: true,
  True: true,
  0: false,
  f: false,
  F: false,
  FALSE: false,
  false: false,
  False: false,
};

/** strconv.ParseFloat(s, 64) for decimal forms and inf/nan; null where Go answers an error. */
function parseGoFloat(text: string): number | null {
  if (/^[+-]?(inf|infinity)$/i.test(text)) return text.startsWith('-') ? -Infinity : Infinity;
  if (/^nan$/i.test(text)) return Number.NaN;
  if (!/^[+-]?(\d+(_\d+)*(\.(\d+(_\d+)*)?)?|\.\d+(_\d+)*)([eE][+-]?\d+(_\d+)*)?$/.test(text)) return null;
  if (text.includes('_')) return null; // underscores are allowed only with a base prefix
  return Number(text);
}

function convertValue(value: HilValue, from: HilType, to: HilType): HilValue {
  if (to === 'string') {
    if (from === 'float') return formatGoFloat(value as number);
    return String(value);
  }
  if (from === 'float' && to === 'int') return BigInt.asIntN(64, BigInt(Math.trunc(value as number)));
  if (from === 'int' && to === 'float') return Number(value as bigint);
  const text = value as string;
  if (to === 'int') {
    const parsed = parseGoInt(text);
    if (parsed === null) throw new HilError(`strconv.ParseInt: parsing ${goQuote(text)}: invalid syntax`);
    return parsed;
  }
  if (to === 'float') {
    const parsed = parseGoFloat(text);
    if (parsed === null) throw new HilError(`strconv.ParseFloat: parsing ${goQuote(text)}: invalid syntax`);
    return parsed;
  }
  const parsed = goBools[text];
  if (parsed === undefined) throw new HilError(`strconv.ParseBool: parsing ${goQuote(text)}: invalid syntax`);
  return parsed;
}

/** HIL's evaluation: every operand is evaluated (no short cuts, both branches of `?:`), then the builtins apply. */
function evaluate(node: Typed, variables: Record<string, string>): HilValue {
  switch (node.kind) {
    case 'literal':
      return node.value;
    case 'variable':
      return variables[node.name] as string;
    case 'output':
      return node.parts.map((part) => evaluate(part, variables) as string).join('');
    case 'convert':
      return convertValue(evaluate(node.inner, variables), node.from, node.type);
    case 'conditional': {
      const [condition, then, otherwise] = [node.condition, node.then, node.otherwise].map((each) =>
        evaluate(each, variables),
      );
      return condition ? (then as HilValue) : (otherwise as HilValue);
    }
    case 'logical': {
      const values = node.operands.map((operand) => evaluate(operand, variables) as boolean);
      return node.operator === '&&' ? values.every(Boolean) : values.some(Boolean);
    }
    case 'compare': {
      const [left, right] = node.operands.map((operand) => evaluate(operand, variables)) as [HilValue, HilValue];
      switch (node.operator) {
        case '==':
          return left === right;
        case '!=':
          return left !== right;
        case '<':
          return left < right;
        case '>':
          return left > right;
        case '<=':
          return left <= right;
        default:
          return left >= right;
      }
    }
    case 'math': {
      const [first, ...rest] = node.operands.map((operand) => evaluate(operand, variables));
      if (node.type === 'float') {
        return rest.reduce<number>((total, each) => {
          const value = each as number;
          return node.operator === '+'
            ? total + value
            : node.operator === '-'
              ? total - value
              : node.operator === '*'
                ? total * value
                : total / value;
        }, first as number);
      }
      return rest.reduce<bigint>((total, each) => {
        const value = each as bigint;
        if ((node.operator === '/' || node.operator === '%') && value === 0n) throw new HilError('divide by zero');
        const result =
          node.operator === '+'
            ? total + value
            : node.operator === '-'
              ? total - value
              : node.operator === '*'
                ? total * value
                : node.operator === '/'
                  ? total / value
                  : total % value;
        return BigInt.asIntN(64, result);
      }, first as bigint);
    }
  }
}

/** The variables a template reads; throws HilError (with HIL's message) when it is not valid HIL or not supported. */
export function templateNames(template: string): string[] {
  if (!template.includes('${')) return [];
  const tree = parseHil(template);
  const names: string[] = [];
  walk(tree, (node) => {
    if (node.type === 'variable' && !names.includes(node.name)) names.push(node.name);
  });
  checkIdentifiers(tree, () => true);
  typeCheck(tree);
  return names;
}

/**
 * Nomad's InterpolateHIL over string variables (claim values lowercased for bind names, not for token names), with
 * Go's strings.ToLower: one code point at a time, so a claim `İ` gives `i`, never JavaScript's `i̇`.
 */
export function interpolateHil(template: string, variables: Record<string, string>, lowercase: boolean): string {
  if (!template.includes('${')) return template;
  const tree = parseHil(template);
  const scope = Object.fromEntries(
    Object.entries(variables).map(([name, value]) => [name, lowercase ? goToLower(value) : value]),
  );
  checkIdentifiers(tree, (name) => Object.hasOwn(scope, name));
  return evaluate(typeCheck(tree), scope) as string;
}

const validName = /^[a-zA-Z0-9-]{1,128}$/;

/**
 * The role or policy names a binding rule's BindName yields (Nomad's computeBindName): claim values lowercased;
 * a template that does not evaluate, or a name Nomad would not accept (`^[a-zA-Z0-9-]{1,128}$`), fails the login.
 * `mapped` are the auth method's ClaimMappings targets: a mapped claim the token lacks reads as "".
 */
export function bindNames(
  bindType: 'role' | 'policy' | undefined,
  template: string,
  variables: ClaimVariables,
  mapped: string[] = [],
): string[] {
  const what = bindType === undefined ? '' : `"${bindType}" `;
  // Nomad's NewIdentity: every claim the method maps is a variable, "" when the token lacks the claim.
  const scope = Object.fromEntries(
    [...mapped.map((name) => [name, '']), ...Object.entries(variables.value)].map(([name, value]) => [
      `value.${name}`,
      value as string,
    ]),
  );
  let name: string;
  try {
    // List claims are for selectors only: Nomad's binder gives HIL the value claims, so `${list.x}` is an unknown variable.
    name = interpolateHil(template, scope, true);
  } catch (error) {
    if (error instanceof HilError)
      throw badRequest(`cannot compute ${what}bind name for bind target: ${error.message}`);
    throw error;
  }
  if (!validName.test(name)) throw badRequest(`computed ${what}bind name for bind target is invalid: ${goQuote(name)}`);
  return [name];
}

/** The token's name from the auth method's TokenNameFormat (Nomad's formatTokenName): values as they are. */
export function tokenName(format: string, variables: ClaimVariables, method: { Name: string; Type: string }): string {
  const scope = {
    auth_method_type: method.Type,
    auth_method_name: method.Name,
    ...Object.fromEntries(Object.entries(variables.value).map(([name, value]) => [`value.${name}`, value])),
  };
  try {
    // biome-ignore lint/suspicious/noTemplateCurlyInString: Nomad's default TokenNameFormat, a HIL template
    return interpolateHil(format || '${auth_method_type}-${auth_method_name}', scope, false);
  } catch (error) {
    if (error instanceof HilError) throw badRequest(`failed to generate ACL token name: ${error.message}`);
    throw error;
  }
}
