/**
 * Parser for HCL v1 as used by Vault policy and password-policy documents.
 *
 * A body is a sequence of attributes (`key = value`) and blocks
 * (`type "label" ... { body }`), separated by newlines, commas or whitespace.
 * Values are strings, heredocs, numbers, booleans, null, lists and objects.
 */

export type HclValue = string | number | boolean | null | HclValue[] | { [key: string]: HclValue };

export interface HclBlock {
  type: string;
  labels: string[];
  body: HclBody;
}

export interface HclBody {
  attributes: Record<string, HclValue>;
  blocks: HclBlock[];
}

export class HclSyntaxError extends Error {
  line: number;
  column: number;

  constructor(message: string, line: number, column: number) {
    super(`line ${line}, column ${column}: ${message}`);
    this.name = 'HclSyntaxError';
    this.line = line;
    this.column = column;
  }
}

export function parseHcl(text: string): HclBody {
  return new Parser(text).parseBody(false);
}

const MAX_DEPTH = 100;
const IDENT = /[A-Za-z_][\w.-]*/y;
const NUMBER = /-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const HEREDOC_START = /<<(-?)([A-Za-z_][\w-]*)\r?\n/y;
const ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', n: '\n', t: '\t', r: '\r', b: '\b', f: '\f' };

interface Token {
  kind: 'ident' | 'string' | 'number' | 'punct' | 'eof';
  /** Source text, except for strings, where it is the decoded contents. */
  text: string;
  offset: number;
}

function describe(token: Token): string {
  if (token.kind === 'eof') return 'end of input';
  const text = token.text.length > 40 ? `${token.text.slice(0, 40)}…` : token.text;
  return token.kind === 'string' ? `string ${JSON.stringify(text)}` : JSON.stringify(text);
}

const isPunct = (token: Token, char: string) => token.kind === 'punct' && token.text === char;
const isKey = (token: Token) => token.kind === 'ident' || token.kind === 'string';

class Parser {
  private readonly src: string;
  private pos = 0;
  private depth = 0;
  private peeked: Token | undefined;

  constructor(src: string) {
    this.src = src;
  }

  parseBody(inBlock: boolean): HclBody {
    const attributes = new Map<string, HclValue>();
    const blocks: HclBlock[] = [];
    for (;;) {
      const key = this.next();
      if (inBlock ? isPunct(key, '}') : key.kind === 'eof') break;
      if (!isKey(key)) {
        throw this.unexpected(key, `attribute name or block type${inBlock ? ' or "}"' : ''}`);
      }
      if (this.eat('=')) {
        attributes.set(key.text, this.parseValue());
        this.eat(',');
        continue;
      }
      const labels: string[] = [];
      let last = key;
      while (isKey(this.peek())) {
        last = this.next();
        labels.push(last.text);
      }
      const open = this.next();
      if (!isPunct(open, '{')) {
        throw this.unexpected(open, `${labels.length ? '"{"' : '"=" or "{"'} after ${describe(last)}`);
      }
      blocks.push({ type: key.text, labels, body: this.nested(open, () => this.parseBody(true)) });
    }
    return { attributes: Object.fromEntries(attributes), blocks };
  }

  private parseValue(): HclValue {
    const token = this.next();
    if (token.kind === 'string') return token.text;
    if (token.kind === 'number') return Number(token.text);
    if (token.kind === 'ident' && (token.text === 'true' || token.text === 'false')) return token.text === 'true';
    if (token.kind === 'ident' && token.text === 'null') return null;
    if (isPunct(token, '[')) return this.nested(token, () => this.parseList());
    if (isPunct(token, '{')) return this.nested(token, () => this.parseObject());
    throw this.unexpected(token, 'a value');
  }

  private parseList(): HclValue[] {
    const items: HclValue[] = [];
    while (!this.eat(']')) {
      items.push(this.parseValue());
      if (!this.eat(',') && !isPunct(this.peek(), ']')) throw this.unexpected(this.peek(), '"," or "]"');
    }
    return items;
  }

  private parseObject(): { [key: string]: HclValue } {
    const entries = new Map<string, HclValue>();
    while (!this.eat('}')) {
      const key = this.next();
      if (!isKey(key)) throw this.unexpected(key, 'object key or "}"');
      const equals = this.next();
      if (!isPunct(equals, '=')) throw this.unexpected(equals, `"=" after ${describe(key)}`);
      entries.set(key.text, this.parseValue());
      this.eat(',');
    }
    return Object.fromEntries(entries);
  }

  private nested<T>(open: Token, parse: () => T): T {
    if (++this.depth > MAX_DEPTH) throw this.error(open.offset, `expected at most ${MAX_DEPTH} levels of nesting`);
    const result = parse();
    this.depth--;
    return result;
  }

  private peek(): Token {
    this.peeked ??= this.lex();
    return this.peeked;
  }

  private next(): Token {
    const token = this.peek();
    this.peeked = undefined;
    return token;
  }

  private eat(char: string): boolean {
    if (!isPunct(this.peek(), char)) return false;
    this.next();
    return true;
  }

  private lex(): Token {
    this.skipTrivia();
    const offset = this.pos;
    const char = this.src[offset];
    if (char === undefined) return { kind: 'eof', text: '', offset };
    if ('={}[],'.includes(char)) {
      this.pos++;
      return { kind: 'punct', text: char, offset };
    }
    if (char === '"') return this.lexString();
    if (this.src.startsWith('<<', offset)) return this.lexHeredoc();
    const ident = this.match(IDENT);
    if (ident) return { kind: 'ident', text: ident, offset };
    const number = this.match(NUMBER);
    if (number) {
      if (/[\w.-]/.test(this.src[this.pos] ?? '')) {
        throw this.error(offset, `expected a number but found ${JSON.stringify(this.src.slice(offset, this.pos + 1))}`);
      }
      return { kind: 'number', text: number, offset };
    }
    throw this.error(offset, `expected a token but found unexpected character ${JSON.stringify(char)}`);
  }

  private lexString(): Token {
    const offset = this.pos;
    let text = '';
    let i = offset + 1;
    for (;;) {
      const char = this.src[i];
      if (char === undefined || char === '\n') {
        throw this.error(offset, `expected closing quote but found end of ${char ? 'line' : 'input'}`);
      }
      if (char === '"') break;
      if (char !== '\\') {
        text += char;
        i++;
      } else if (this.src[i + 1] === 'u') {
        const hex = this.src.slice(i + 2, i + 6);
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) throw this.error(i, `expected 4 hex digits after "\\u" but found "${hex}"`);
        text += String.fromCharCode(Number.parseInt(hex, 16));
        i += 6;
      } else {
        const escaped = this.src[i + 1] ?? '';
        const decoded = ESCAPES[escaped];
        if (decoded === undefined) throw this.error(i, `expected an escape sequence but found "\\${escaped}"`);
        text += decoded;
        i += 2;
      }
    }
    this.pos = i + 1;
    return { kind: 'string', text, offset };
  }

  /** `<<EOF` keeps lines verbatim; `<<-EOF` strips their common leading whitespace. */
  private lexHeredoc(): Token {
    const offset = this.pos;
    HEREDOC_START.lastIndex = offset;
    const start = HEREDOC_START.exec(this.src);
    if (!start) throw this.error(offset, 'expected a heredoc marker such as "<<EOF" followed by a newline');
    const marker = start[2]!;
    const lines: string[] = [];
    let lineStart = offset + start[0].length;
    for (;;) {
      const newline = this.src.indexOf('\n', lineStart);
      const lineEnd = newline < 0 ? this.src.length : newline;
      const line = this.src.slice(lineStart, lineEnd).replace(/\r$/, '');
      if (line.trim() === marker) {
        this.pos = lineEnd;
        break;
      }
      if (newline < 0) throw this.error(offset, `expected heredoc terminator "${marker}" but found end of input`);
      lines.push(line);
      lineStart = newline + 1;
    }
    const indent = start[1]
      ? lines.reduce((min, line) => (line.trim() ? Math.min(min, line.length - line.trimStart().length) : min), Infinity)
      : 0;
    const text = lines.map((line) => `${line.slice(indent)}\n`).join('');
    return { kind: 'string', text, offset };
  }

  private skipTrivia(): void {
    for (;;) {
      const char = this.src[this.pos];
      if (char !== undefined && /\s/.test(char)) {
        this.pos++;
      } else if (char === '#' || this.src.startsWith('//', this.pos)) {
        const newline = this.src.indexOf('\n', this.pos);
        this.pos = newline < 0 ? this.src.length : newline;
      } else if (this.src.startsWith('/*', this.pos)) {
        const end = this.src.indexOf('*/', this.pos + 2);
        if (end < 0) throw this.error(this.pos, 'expected "*/" to close comment but found end of input');
        this.pos = end + 2;
      } else {
        return;
      }
    }
  }

  private match(pattern: RegExp): string | undefined {
    pattern.lastIndex = this.pos;
    const found = pattern.exec(this.src)?.[0];
    if (found) this.pos += found.length;
    return found;
  }

  private unexpected(token: Token, expected: string): HclSyntaxError {
    return this.error(token.offset, `expected ${expected} but found ${describe(token)}`);
  }

  private error(offset: number, message: string): HclSyntaxError {
    const before = this.src.slice(0, offset);
    const lineStart = before.lastIndexOf('\n') + 1;
    return new HclSyntaxError(message, before.split('\n').length, offset - lineStart + 1);
  }
}
