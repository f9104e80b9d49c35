import { createHash, randomInt, randomUUID } from 'node:crypto';

/**
 * A Go `text/template` compatible engine for the templates Vault users write (username and LDIF
 * templates): text with `{{ }}` actions, trim markers `{{-`/`-}}`, comments, fields `.A.B`, pipelines
 * `a | f x`, parenthesised pipelines, `if`/`else if`/`else`/`with`/`range`/`end`, Go's builtins (`printf`,
 * `print`, `println`, `len`, `index`, `eq`, `ne`, `lt`, `le`, `gt`, `ge`, `and`, `or`, `not`) and Vault's
 * template helpers with their exact semantics. Hand-written: no maintained JS port of text/template fits.
 */

export class TemplateError extends Error {}

export type TemplateValue = unknown;
export type TemplateFunction = (...args: TemplateValue[]) => TemplateValue;

export interface TemplateOptions {
  /** Extra functions (e.g. `utf16le` for LDIF templates). */
  functions?: Record<string, TemplateFunction>;
  /** Milliseconds since the epoch for `unix_time`, `timestamp`… (tests move a clock). */
  now?: () => number;
}

// ---------------------------------------------------------------------------------------------- parsing

type Node =
  | { kind: 'text'; text: string }
  | { kind: 'action'; pipeline: Pipeline }
  | { kind: 'if' | 'with'; pipeline: Pipeline; whenTrue: Node[]; otherwise: Node[] }
  | { kind: 'range'; pipeline: Pipeline; body: Node[]; otherwise: Node[] };

type Pipeline = Command[];
type Command = Operand[];
type Operand =
  | { kind: 'field'; path: string[] }
  | { kind: 'literal'; value: TemplateValue }
  | { kind: 'ident'; name: string }
  | { kind: 'pipeline'; pipeline: Pipeline; path: string[] };

interface Segment {
  text?: string;
  action?: string;
}

/** Splits into text and action bodies, applying trim markers. */
function segments(source: string): Segment[] {
  const out: Segment[] = [];
  let pos = 0;
  while (pos < source.length) {
    const open = source.indexOf('{{', pos);
    if (open === -1) {
      out.push({ text: source.slice(pos) });
      break;
    }
    let text = source.slice(pos, open);
    let bodyStart = open + 2;
    if (source.startsWith('- ', bodyStart) || source.startsWith('-\t', bodyStart) || source.startsWith('-\n', bodyStart)) {
      text = text.replace(/\s+$/, '');
      bodyStart += 1;
    }
    out.push({ text });
    let close = -1;
    let scan = bodyStart;
    // Find the closing braces outside string literals and comments.
    while (scan < source.length) {
      const char = source[scan];
      if (char === '"' || char === '`') {
        const end = char === '"' ? closingQuote(source, scan) : source.indexOf('`', scan + 1);
        if (end === -1) throw new TemplateError('unterminated quoted string in action');
        scan = end + 1;
        continue;
      }
      if (source.startsWith('/*', scan)) {
        const end = source.indexOf('*/', scan + 2);
        if (end === -1) throw new TemplateError('unclosed comment');
        scan = end + 2;
        continue;
      }
      if (source.startsWith('}}', scan)) {
        close = scan;
        break;
      }
      scan++;
    }
    if (close === -1) throw new TemplateError('unclosed action: missing "}}"');
    let body = source.slice(bodyStart, close);
    pos = close + 2;
    if (/\s-$/.test(body)) {
      body = body.slice(0, -1);
      const rest = /^\s*/.exec(source.slice(pos));
      pos += rest ? rest[0].length : 0;
    }
    out.push({ action: body });
  }
  return out;
}

function closingQuote(source: string, start: number): number {
  for (let index = start + 1; index < source.length; index++) {
    if (source[index] === '\\') index++;
    else if (source[index] === '"') return index;
    else if (source[index] === '\n') return -1;
  }
  return -1;
}

type Token = { kind: 'field'; path: string[] } | { kind: 'string' | 'number' | 'ident' | 'punct'; value: string };

function tokenize(action: string): Token[] {
  const tokens: Token[] = [];
  let pos = 0;
  while (pos < action.length) {
    const rest = action.slice(pos);
    const space = /^\s+/.exec(rest);
    if (space) {
      pos += space[0].length;
      continue;
    }
    const char = rest[0] as string;
    if (char === '"') {
      const end = closingQuote(action, pos);
      if (end === -1) throw new TemplateError('unterminated quoted string');
      tokens.push({ kind: 'string', value: unquote(action.slice(pos, end + 1)) });
      pos = end + 1;
    } else if (char === '`') {
      const end = action.indexOf('`', pos + 1);
      if (end === -1) throw new TemplateError('unterminated raw string');
      tokens.push({ kind: 'string', value: action.slice(pos + 1, end) });
      pos = end + 1;
    } else if (char === '(' || char === ')' || char === '|') {
      tokens.push({ kind: 'punct', value: char });
      pos++;
    } else if (char === '.') {
      const field = /^(\.[A-Za-z_][A-Za-z0-9_]*)+|^\./.exec(rest) as RegExpExecArray;
      const path = field[0] === '.' ? [] : field[0].slice(1).split('.');
      tokens.push({ kind: 'field', path });
      pos += field[0].length;
    } else {
      const number = /^[-+]?(0x[0-9a-fA-F]+|\d+(\.\d+)?([eE][-+]?\d+)?)/.exec(rest);
      const ident = /^[A-Za-z_][A-Za-z0-9_]*/.exec(rest);
      const chained = ident && /^\.[A-Za-z_]/.test(rest.slice(ident[0].length));
      if (number) {
        tokens.push({ kind: 'number', value: number[0] });
        pos += number[0].length;
      } else if (ident && !chained) {
        tokens.push({ kind: 'ident', value: ident[0] });
        pos += ident[0].length;
      } else {
        throw new TemplateError(`unexpected "${rest.slice(0, 10)}" in action`);
      }
    }
  }
  return tokens;
}

/** Go's interpreted string literal. */
function unquote(literal: string): string {
  try {
    return JSON.parse(literal.replace(/\\x([0-9a-fA-F]{2})/g, '\\u00$1').replace(/\\([abfv'])/g, (_m, c: string) => ({ a: '\\u0007', b: '\\b', f: '\\f', v: '\\u000b', "'": "'" })[c] as string)) as string;
  } catch {
    throw new TemplateError(`invalid string literal ${literal}`);
  }
}

class PipelineParser {
  private pos = 0;
  constructor(private readonly tokens: Token[]) {}

  parse(): Pipeline {
    const pipeline = this.pipeline();
    if (this.pos < this.tokens.length) throw new TemplateError(`unexpected "${describe(this.tokens[this.pos])}" in pipeline`);
    return pipeline;
  }

  private pipeline(): Pipeline {
    const commands: Command[] = [this.command()];
    while (this.peekPunct('|')) {
      this.pos++;
      commands.push(this.command());
    }
    return commands;
  }

  private command(): Command {
    const operands: Operand[] = [];
    while (this.pos < this.tokens.length && !this.peekPunct('|') && !this.peekPunct(')')) operands.push(this.operand());
    if (operands.length === 0) throw new TemplateError('missing value for command');
    return operands;
  }

  private operand(): Operand {
    const token = this.tokens[this.pos++] as Token;
    switch (token.kind) {
      case 'field':
        return { kind: 'field', path: token.path };
      case 'string':
        return { kind: 'literal', value: token.value };
      case 'number':
        return { kind: 'literal', value: Number(token.value) };
      case 'ident':
        if (token.value === 'true' || token.value === 'false') return { kind: 'literal', value: token.value === 'true' };
        if (token.value === 'nil') return { kind: 'literal', value: null };
        return { kind: 'ident', name: token.value };
      case 'punct': {
        if (token.value !== '(') throw new TemplateError(`unexpected "${token.value}"`);
        const pipeline = this.pipeline();
        if (!this.peekPunct(')')) throw new TemplateError('unclosed left paren');
        this.pos++;
        const next = this.tokens[this.pos];
        let path: string[] = [];
        if (next?.kind === 'field' && next.path.length > 0) {
          path = next.path;
          this.pos++;
        }
        return { kind: 'pipeline', pipeline, path };
      }
    }
  }

  private peekPunct(value: string): boolean {
    const token = this.tokens[this.pos];
    return token?.kind === 'punct' && token.value === value;
  }
}

const describe = (token: Token | undefined) => (!token ? 'end' : token.kind === 'field' ? `.${token.path.join('.')}` : token.value);

function parsePipeline(text: string): Pipeline {
  return new PipelineParser(tokenize(text)).parse();
}

/** Parses the whole template into a tree; throws TemplateError on bad syntax. */
export function parseTemplate(source: string): Node[] {
  const parts = segments(source);
  let index = 0;
  /** `if`/`with`/`range` up to its `{{end}}`; an `else if` chain shares that one `end`. */
  const conditional = (word: 'if' | 'with' | 'range', rest: string): Node => {
    if (rest === '') throw new TemplateError(`missing condition in {{${word}}}`);
    const pipeline = parsePipeline(rest);
    const body = block(['else', 'end']);
    let otherwise: Node[] = [];
    if (body.ended === 'else') {
      const next = parts[index]?.action?.trim() ?? '';
      const chained = elseChain ? /^(if|with)\b\s*/.exec(next) : null;
      if (chained && word !== 'range') {
        index++;
        elseChain = false;
        otherwise = [conditional(chained[1] as 'if' | 'with', next.slice(chained[0].length))];
      } else {
        otherwise = block(['end']).nodes;
      }
    }
    return word === 'range' ? { kind: 'range', pipeline, body: body.nodes, otherwise } : { kind: word, pipeline, whenTrue: body.nodes, otherwise };
  };
  let elseChain = false;
  const block = (terminators: string[]): { nodes: Node[]; ended: string } => {
    const nodes: Node[] = [];
    while (index < parts.length) {
      const part = parts[index++] as Segment;
      if (part.text !== undefined) {
        if (part.text !== '') nodes.push({ kind: 'text', text: part.text });
        continue;
      }
      const action = (part.action as string).trim();
      if (action.startsWith('/*')) {
        if (!action.endsWith('*/')) throw new TemplateError('comment ends before closing delimiter');
        continue;
      }
      const keyword = /^(if|else|end|with|range|define|template|block|break|continue)\b\s*/.exec(action);
      if (!keyword) {
        if (action === '') throw new TemplateError('missing value for command');
        if (/^\$/.test(action)) throw new TemplateError('template variables are not supported');
        nodes.push({ kind: 'action', pipeline: parsePipeline(action) });
        continue;
      }
      const word = keyword[1] as string;
      const rest = action.slice(keyword[0].length);
      if (word === 'end' || word === 'else') {
        if (!terminators.includes(word)) throw new TemplateError(`unexpected {{${word}}}`);
        if (word === 'else' && rest !== '') {
          // `else if …` / `else with …`: an inner conditional that closes with the outer `end`.
          if (!/^(if|with)\b/.test(rest)) throw new TemplateError(`unexpected "${rest}" after {{else}}`);
          index--;
          parts[index] = { action: rest };
          elseChain = true;
        }
        return { nodes, ended: word };
      }
      if (word === 'if' || word === 'with' || word === 'range') {
        nodes.push(conditional(word, rest));
        continue;
      }
      throw new TemplateError(`{{${word}}} is not supported`);
    }
    if (terminators.length > 0) throw new TemplateError('unexpected EOF: missing {{end}}');
    return { nodes, ended: '' };
  };
  return block([]).nodes;
}

// -------------------------------------------------------------------------------------------- execution

/** Renders a template with `data` as dot. */
export function renderTemplate(source: string, data: TemplateValue, options: TemplateOptions = {}): string {
  const nodes = parseTemplate(source);
  const functions = { ...builtins(options.now ?? Date.now), ...options.functions };
  return execute(nodes, data, functions);
}

/** Parses only: the syntax and the names of functions, without running it. */
export function checkTemplate(source: string, functionNames: string[] = []): void {
  const known = new Set([...Object.keys(builtins(Date.now)), ...functionNames]);
  const visit = (nodes: Node[]) => {
    for (const node of nodes) {
      if (node.kind === 'text') continue;
      checkPipeline(node.pipeline, known);
      if (node.kind === 'if' || node.kind === 'with') {
        visit(node.whenTrue);
        visit(node.otherwise);
      } else if (node.kind === 'range') {
        visit(node.body);
        visit(node.otherwise);
      }
    }
  };
  visit(parseTemplate(source));
}

function checkPipeline(pipeline: Pipeline, known: Set<string>): void {
  for (const command of pipeline) {
    for (const operand of command) {
      if (operand.kind === 'ident' && !known.has(operand.name)) throw new TemplateError(`function "${operand.name}" not defined`);
      if (operand.kind === 'pipeline') checkPipeline(operand.pipeline, known);
    }
  }
}

function execute(nodes: Node[], dot: TemplateValue, functions: Record<string, TemplateFunction>): string {
  let out = '';
  for (const node of nodes) {
    switch (node.kind) {
      case 'text':
        out += node.text;
        break;
      case 'action':
        out += printValue(evalPipeline(node.pipeline, dot, functions));
        break;
      case 'if':
      case 'with': {
        const value = evalPipeline(node.pipeline, dot, functions);
        if (truthy(value)) out += execute(node.whenTrue, node.kind === 'with' ? value : dot, functions);
        else out += execute(node.otherwise, dot, functions);
        break;
      }
      case 'range': {
        const value = evalPipeline(node.pipeline, dot, functions);
        const items = Array.isArray(value) ? value : value && typeof value === 'object' ? Object.keys(value).sort().map((key) => (value as Record<string, unknown>)[key]) : [];
        if (items.length === 0) out += execute(node.otherwise, dot, functions);
        for (const item of items) out += execute(node.body, item, functions);
        break;
      }
    }
  }
  return out;
}

function evalPipeline(pipeline: Pipeline, dot: TemplateValue, functions: Record<string, TemplateFunction>): TemplateValue {
  let previous: { value: TemplateValue } | undefined;
  for (const command of pipeline) {
    previous = { value: evalCommand(command, dot, functions, previous) };
  }
  return previous?.value;
}

function evalCommand(command: Command, dot: TemplateValue, functions: Record<string, TemplateFunction>, piped: { value: TemplateValue } | undefined): TemplateValue {
  const [head, ...rest] = command as [Operand, ...Operand[]];
  if (head.kind === 'ident') {
    const fn = functions[head.name];
    if (!fn) throw new TemplateError(`function "${head.name}" not defined`);
    const args = rest.map((operand) => evalOperand(operand, dot, functions));
    if (piped) args.push(piped.value);
    try {
      return fn(...args);
    } catch (error) {
      if (error instanceof TemplateError) throw new TemplateError(`error calling ${head.name}: ${error.message}`);
      throw error;
    }
  }
  if (rest.length > 0 || piped) throw new TemplateError(`can't give arguments to a non-function ${head.kind === 'field' ? `.${head.path.join('.')}` : 'value'}`);
  return evalOperand(head, dot, functions);
}

function evalOperand(operand: Operand, dot: TemplateValue, functions: Record<string, TemplateFunction>): TemplateValue {
  switch (operand.kind) {
    case 'literal':
      return operand.value;
    case 'field':
      return fieldOf(dot, operand.path);
    case 'ident': {
      const fn = functions[operand.name];
      if (!fn) throw new TemplateError(`function "${operand.name}" not defined`);
      return fn();
    }
    case 'pipeline':
      return fieldOf(evalPipeline(operand.pipeline, dot, functions), operand.path);
  }
}

function fieldOf(value: TemplateValue, path: string[]): TemplateValue {
  let current = value;
  for (const name of path) {
    if (current === null || current === undefined || typeof current !== 'object' || Buffer.isBuffer(current)) {
      throw new TemplateError(`can't evaluate field ${name} in type ${typeName(current)}`);
    }
    if (!(name in current)) throw new TemplateError(`can't evaluate field ${name}`);
    current = (current as Record<string, unknown>)[name];
  }
  return current;
}

function truthy(value: TemplateValue): boolean {
  if (value === null || value === undefined || value === false || value === 0 || value === '') return false;
  if (Array.isArray(value)) return value.length > 0;
  if (Buffer.isBuffer(value)) return value.length > 0;
  if (typeof value === 'object') return Object.keys(value).length > 0;
  return true;
}

const typeName = (value: TemplateValue) => (value === null || value === undefined ? 'nil' : Buffer.isBuffer(value) ? '[]byte' : typeof value);

/** How Go prints a value with `{{.}}`: `<no value>` for a missing one, bytes as they are. */
export function printValue(value: TemplateValue): string {
  if (value === undefined || value === null) return '<no value>';
  if (Buffer.isBuffer(value)) return value.toString('latin1');
  if (Array.isArray(value)) return `[${value.map(printValue).join(' ')}]`;
  if (typeof value === 'object') return `map[${Object.keys(value).sort().map((key) => `${key}:${printValue((value as Record<string, unknown>)[key])}`).join(' ')}]`;
  return String(value);
}

// -------------------------------------------------------------------------------------------- functions

const asString = (value: TemplateValue, what: string): string => {
  if (typeof value === 'string') return value;
  if (Buffer.isBuffer(value)) return value.toString('latin1');
  throw new TemplateError(`${what} must be a string, got ${typeName(value)}`);
};
const asInt = (value: TemplateValue, what: string): number => {
  if (typeof value === 'number' && Number.isInteger(value)) return value;
  throw new TemplateError(`${what} must be an integer, got ${typeName(value)}`);
};
const bytesOf = (value: TemplateValue): Buffer => (Buffer.isBuffer(value) ? value : Buffer.from(asString(value, 'value'), 'utf8'));

const alphanumeric = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

function builtins(now: () => number): Record<string, TemplateFunction> {
  const compare = (name: string, test: (a: number | string, b: number | string) => boolean) => (a: TemplateValue, b: TemplateValue) => {
    if ((typeof a !== 'number' && typeof a !== 'string') || typeof a !== typeof b) throw new TemplateError(`incompatible types for comparison in ${name}`);
    return test(a as number | string, b as number | string);
  };
  return {
    // Vault's helpers (sdk/helper/template): argument order as in a pipeline, the piped value last.
    random: (length, charset) => {
      const size = asInt(length, 'random length');
      if (size < 0) throw new TemplateError('random length must be >= 0');
      const chars = [...(charset === undefined ? alphanumeric : asString(charset, 'charset'))];
      if (chars.length === 0) throw new TemplateError('random charset must not be empty');
      return Array.from({ length: size }, () => chars[randomInt(chars.length)]).join('');
    },
    truncate: (maxLength, value) => {
      const max = asInt(maxLength, 'max length');
      if (max <= 0) throw new TemplateError('max length must be > 0');
      const text = asString(value, 'value');
      return text.length <= max ? text : text.slice(0, max);
    },
    truncate_sha256: (maxLength, value) => {
      const max = asInt(maxLength, 'max length');
      if (max <= 8) throw new TemplateError('max length must be > 8');
      const text = asString(value, 'value');
      if (text.length <= max) return text;
      const cut = max - 8;
      return text.slice(0, cut) + sha256Hex(text.slice(cut)).slice(0, 8);
    },
    uppercase: (value) => asString(value, 'value').toUpperCase(),
    lowercase: (value) => asString(value, 'value').toLowerCase(),
    replace: (find, replacement, value) => asString(value, 'value').replaceAll(asString(find, 'find'), asString(replacement, 'replacement')),
    sha256: (value) => sha256Hex(bytesOf(value)),
    base64: (value) => bytesOf(value).toString('base64'),
    unix_time: () => Math.floor(now() / 1000),
    unix_time_millis: () => Math.floor(now()),
    timestamp: (layout) => formatGoTime(new Date(now()), asString(layout, 'layout')),
    uuid: () => randomUUID(),
    // Go's builtins.
    printf: (format, ...args) => sprintf(asString(format, 'format'), args),
    print: (...args) => args.map((arg, index) => (index > 0 && typeof arg !== 'string' && typeof args[index - 1] !== 'string' ? ' ' : '') + printValue(arg)).join(''),
    println: (...args) => `${args.map(printValue).join(' ')}\n`,
    len: (value) => {
      if (typeof value === 'string') return Buffer.byteLength(value);
      if (Buffer.isBuffer(value) || Array.isArray(value)) return value.length;
      if (value && typeof value === 'object') return Object.keys(value).length;
      throw new TemplateError(`len of ${typeName(value)}`);
    },
    index: (collection, ...keys) => {
      let current = collection;
      for (const key of keys) {
        if (Array.isArray(current) && typeof key === 'number') current = current[key];
        else if (current && typeof current === 'object' && typeof key === 'string') current = (current as Record<string, unknown>)[key];
        else throw new TemplateError(`can't index item of type ${typeName(current)}`);
      }
      return current;
    },
    eq: (a, ...others) => others.some((other) => other === a),
    ne: (a, b) => a !== b,
    lt: compare('lt', (a, b) => a < b),
    le: compare('le', (a, b) => a <= b),
    gt: compare('gt', (a, b) => a > b),
    ge: compare('ge', (a, b) => a >= b),
    and: (...args) => args.find((arg) => !truthy(arg)) ?? args[args.length - 1],
    or: (...args) => args.find((arg) => truthy(arg)) ?? args[args.length - 1],
    not: (value) => !truthy(value),
  };
}

/** `utf16le`: the UTF-16 little-endian bytes of a string (LDIF templates only, for AD's `unicodePwd`). */
export const utf16le: TemplateFunction = (value) => Buffer.from(asString(value, 'value'), 'utf16le');

const sha256Hex = (value: string | Buffer) => createHash('sha256').update(value).digest('hex');

/** Go's fmt verbs that templates use: %s %q %v %d %x %X %t %f %%, with widths like %5s and %-5s. */
export function sprintf(format: string, args: TemplateValue[]): string {
  let next = 0;
  return format.replace(/%([-0 +#]*)(\d+)?(?:\.(\d+))?([sqvdxXtf%])/g, (_match, flags: string, width: string | undefined, precision: string | undefined, verb: string) => {
    if (verb === '%') return '%';
    if (next >= args.length) return `%!${verb}(MISSING)`;
    const arg = args[next++];
    let text: string;
    switch (verb) {
      case 's':
      case 'v':
        text = printValue(arg);
        break;
      case 'q':
        text = typeof arg === 'number' ? `'${String.fromCodePoint(arg)}'` : goQuote(printValue(arg));
        break;
      case 'd':
        text = typeof arg === 'number' ? String(Math.trunc(arg)) : `%!d(${typeName(arg)}=${printValue(arg)})`;
        break;
      case 'x':
      case 'X': {
        const hex = typeof arg === 'number' ? arg.toString(16) : bytesOf(arg).toString('hex');
        text = verb === 'X' ? hex.toUpperCase() : hex;
        break;
      }
      case 't':
        text = typeof arg === 'boolean' ? String(arg) : `%!t(${typeName(arg)}=${printValue(arg)})`;
        break;
      default:
        text = typeof arg === 'number' ? arg.toFixed(precision === undefined ? 6 : Number(precision)) : `%!f(${typeName(arg)}=${printValue(arg)})`;
    }
    const size = width === undefined ? 0 : Number(width);
    if (text.length >= size) return text;
    const pad = (flags.includes('0') && !flags.includes('-') && verb !== 's' ? '0' : ' ').repeat(size - text.length);
    return flags.includes('-') ? text + pad : pad + text;
  }) + (next < args.length ? `%!(EXTRA ${args.slice(next).map((arg) => `${typeName(arg)}=${printValue(arg)}`).join(', ')})` : '');
}

/** strconv.Quote: double-quoted with Go escapes; printable Unicode kept. */
function goQuote(text: string): string {
  let out = '"';
  for (const char of text) {
    const code = char.codePointAt(0) as number;
    if (char === '"' || char === '\\') out += `\\${char}`;
    else if (char === '\n') out += '\\n';
    else if (char === '\t') out += '\\t';
    else if (char === '\r') out += '\\r';
    else if (code < 0x20 || code === 0x7f) out += `\\x${code.toString(16).padStart(2, '0')}`;
    else out += char;
  }
  return `${out}"`;
}

const monthNames = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
const dayNames = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];

/** Go's time.Format with a reference-time layout (`2006-01-02T15:04:05Z07:00`), in UTC. */
export function formatGoTime(date: Date, layout: string): string {
  const pad = (value: number, size = 2, char = '0') => String(value).padStart(size, char);
  const hour = date.getUTCHours();
  const dayOfYear = Math.floor((Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate()) - Date.UTC(date.getUTCFullYear(), 0, 1)) / 86_400_000) + 1;
  const nanos = date.getUTCMilliseconds() * 1_000_000;
  const tokens: Array<[string, () => string]> = [
    ['January', () => monthNames[date.getUTCMonth()] as string],
    ['Jan', () => (monthNames[date.getUTCMonth()] as string).slice(0, 3)],
    ['Monday', () => dayNames[date.getUTCDay()] as string],
    ['Mon', () => (dayNames[date.getUTCDay()] as string).slice(0, 3)],
    ['MST', () => 'UTC'],
    ['2006', () => pad(date.getUTCFullYear(), 4)],
    ['Z07:00:00', () => 'Z'],
    ['-07:00:00', () => '+00:00:00'],
    ['Z07:00', () => 'Z'],
    ['-07:00', () => '+00:00'],
    ['Z0700', () => 'Z'],
    ['-0700', () => '+0000'],
    ['Z07', () => 'Z'],
    ['-07', () => '+00'],
    ['002', () => pad(dayOfYear, 3)],
    ['__2', () => pad(dayOfYear, 3, ' ')],
    ['_2', () => pad(date.getUTCDate(), 2, ' ')],
    ['01', () => pad(date.getUTCMonth() + 1)],
    ['02', () => pad(date.getUTCDate())],
    ['03', () => pad(hour % 12 || 12)],
    ['04', () => pad(date.getUTCMinutes())],
    ['05', () => pad(date.getUTCSeconds())],
    ['06', () => pad(date.getUTCFullYear() % 100)],
    ['15', () => pad(hour)],
    ['PM', () => (hour >= 12 ? 'PM' : 'AM')],
    ['pm', () => (hour >= 12 ? 'pm' : 'am')],
    ['1', () => String(date.getUTCMonth() + 1)],
    ['2', () => String(date.getUTCDate())],
    ['3', () => String(hour % 12 || 12)],
    ['4', () => String(date.getUTCMinutes())],
    ['5', () => String(date.getUTCSeconds())],
  ];
  let out = '';
  let pos = 0;
  outer: while (pos < layout.length) {
    const fraction = /^[.,](0+|9+)(?!\d)/.exec(layout.slice(pos));
    if (fraction) {
      const digits = (fraction[1] as string).length;
      const text = String(nanos).padStart(9, '0').slice(0, digits);
      out += (fraction[1] as string)[0] === '9' ? (/^0*$/.test(text) ? '' : `.${text.replace(/0+$/, '')}`) : `${layout[pos]}${text}`;
      pos += fraction[0].length;
      continue;
    }
    for (const [token, render] of tokens) {
      if (layout.startsWith(token, pos)) {
        out += render();
        pos += token.length;
        continue outer;
      }
    }
    out += layout[pos];
    pos++;
  }
  return out;
}
