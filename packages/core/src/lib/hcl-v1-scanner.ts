/**
 * The tokens of HCL v1's native syntax, scanned as hashicorp/hcl's scanner does: identifiers may hold letters of
 * any script, digits, `-` and `.`; numbers may be hex (`0x1F`), octal (`017`) or floats; strings take Go's escapes
 * and may span lines inside `${ … }`; comments are `#`, `//` and `/* … *\/`; heredocs end at a line holding only
 * their marker, followed by a newline. Any scanning error fails the whole parse, as it does in hcl.
 */
import { HclSyntaxError } from './hcl-v1-error.ts';

export type ScanType =
  | 'IDENT'
  | 'STRING'
  | 'NUMBER'
  | 'FLOAT'
  | 'BOOL'
  | 'HEREDOC'
  | 'COMMENT'
  | 'EOF'
  | 'LBRACK'
  | 'RBRACK'
  | 'LBRACE'
  | 'RBRACE'
  | 'COMMA'
  | 'ASSIGN'
  | 'PERIOD'
  | 'ADD'
  | 'SUB'
  | 'ILLEGAL';

export interface ScanToken {
  type: ScanType;
  text: string;
  line: number;
  column: number;
}

const EOF = -1;
const isLetter = (ch: number) =>
  (ch >= 0x61 && ch <= 0x7a) ||
  (ch >= 0x41 && ch <= 0x5a) ||
  ch === 0x5f ||
  (ch >= 0x80 && /\p{L}/u.test(String.fromCodePoint(ch)));
const isDigit = (ch: number) => (ch >= 0x30 && ch <= 0x39) || (ch >= 0x80 && /\p{Nd}/u.test(String.fromCodePoint(ch)));
const isDecimal = (ch: number) => ch >= 0x30 && ch <= 0x39;
const isHex = (ch: number) => isDecimal(ch) || (ch >= 0x61 && ch <= 0x66) || (ch >= 0x41 && ch <= 0x46);
const isWhitespace = (ch: number) => ch === 0x20 || ch === 0x09 || ch === 0x0a || ch === 0x0d;
const digitValue = (ch: number) => (isDecimal(ch) ? ch - 0x30 : isHex(ch) ? (ch | 0x20) - 0x61 + 10 : 16);
const c = (char: string) => char.charCodeAt(0);

export class HclScanner {
  private pos = 0;
  private line = 1;
  private column = 0;
  private history: Array<{ pos: number; line: number; column: number }> = [];
  private failure: HclSyntaxError | undefined;

  constructor(private readonly src: string) {}

  /** The first scanning error, which hcl reports in place of any parse result. */
  get error(): HclSyntaxError | undefined {
    return this.failure;
  }

  private fail(message: string): void {
    this.failure ??= new HclSyntaxError(message, this.line, Math.max(this.column, 1));
  }

  private next(): number {
    this.history.push({ pos: this.pos, line: this.line, column: this.column });
    if (this.history.length > 4) this.history.shift();
    if (this.pos >= this.src.length) {
      this.column++;
      return EOF;
    }
    const ch = this.src.codePointAt(this.pos) as number;
    this.pos += ch > 0xffff ? 2 : 1;
    this.column++;
    if (ch === 0x0a) {
      this.line++;
      this.column = 0;
    }
    if (ch === 0) {
      this.fail('unexpected null character (0x00)');
      return EOF;
    }
    if (ch === 0xe123) {
      this.fail('unicode code point U+E123 reserved for internal use');
      return 0xfffd;
    }
    if (ch >= 0xd800 && ch <= 0xdfff) this.fail('illegal UTF-8 encoding');
    return ch;
  }

  private unread(): void {
    const previous = this.history.pop();
    if (previous) ({ pos: this.pos, line: this.line, column: this.column } = previous);
  }

  private peek(): number {
    return this.pos >= this.src.length ? EOF : (this.src.codePointAt(this.pos) as number);
  }

  scan(): ScanToken {
    let ch = this.next();
    while (isWhitespace(ch)) ch = this.next();
    const start = this.pos - (ch === EOF ? 0 : ch > 0xffff ? 2 : 1);
    const line = this.line;
    const column = this.column;
    let type: ScanType;
    if (ch !== EOF && isLetter(ch)) {
      const ident = this.scanIdentifier(start);
      type = ident === 'true' || ident === 'false' ? 'BOOL' : 'IDENT';
    } else if (isDecimal(ch)) {
      type = this.scanNumber(ch);
    } else {
      switch (ch) {
        case EOF:
          type = 'EOF';
          break;
        case c('"'):
          type = 'STRING';
          this.scanString();
          break;
        case c('#'):
        case c('/'):
          type = 'COMMENT';
          this.scanComment(ch);
          break;
        case c('.'):
          type = 'PERIOD';
          if (isDecimal(this.peek())) {
            type = 'FLOAT';
            this.scanExponent(this.scanMantissa(this.peek()));
          }
          break;
        case c('<'):
          type = 'HEREDOC';
          this.scanHeredoc();
          break;
        case c('['):
          type = 'LBRACK';
          break;
        case c(']'):
          type = 'RBRACK';
          break;
        case c('{'):
          type = 'LBRACE';
          break;
        case c('}'):
          type = 'RBRACE';
          break;
        case c(','):
          type = 'COMMA';
          break;
        case c('='):
          type = 'ASSIGN';
          break;
        case c('+'):
          type = 'ADD';
          break;
        case c('-'):
          if (isDecimal(this.peek())) {
            type = this.scanNumber(this.next());
          } else {
            type = 'SUB';
          }
          break;
        default:
          type = 'ILLEGAL';
          this.fail('illegal char');
      }
    }
    return { type, text: this.src.slice(start, this.pos), line, column };
  }

  private scanComment(first: number): void {
    let ch = first;
    if (ch === c('#') || (ch === c('/') && this.peek() !== c('*'))) {
      if (ch === c('/') && this.peek() !== c('/')) {
        this.fail("expected '/' for comment");
        return;
      }
      ch = this.next();
      while (ch !== c('\n') && ch !== EOF) ch = this.next();
      if (ch !== EOF) this.unread();
      return;
    }
    this.next();
    ch = this.next();
    for (;;) {
      if (ch === EOF) {
        this.fail('comment not terminated');
        return;
      }
      const previous = ch;
      ch = this.next();
      if (previous === c('*') && ch === c('/')) return;
    }
  }

  private scanNumber(first: number): ScanType {
    let ch = first;
    if (ch === c('0')) {
      ch = this.next();
      if (ch === c('x') || ch === c('X')) {
        ch = this.next();
        let found = false;
        while (isHex(ch)) {
          ch = this.next();
          found = true;
        }
        if (!found) this.fail('illegal hexadecimal number');
        if (ch !== EOF) this.unread();
        return 'NUMBER';
      }
      let illegalOctal = false;
      while (isDecimal(ch)) {
        ch = this.next();
        if (ch === c('8') || ch === c('9')) illegalOctal = true;
      }
      if (ch === c('e') || ch === c('E')) {
        this.scanExponent(ch);
        return 'FLOAT';
      }
      if (ch === c('.')) {
        ch = this.scanFraction(ch);
        if (ch === c('e') || ch === c('E')) this.scanExponent(this.next());
        return 'FLOAT';
      }
      if (illegalOctal) this.fail('illegal octal number');
      if (ch !== EOF) this.unread();
      return 'NUMBER';
    }
    this.scanMantissa(ch);
    ch = this.next();
    if (ch === c('e') || ch === c('E')) {
      this.scanExponent(ch);
      return 'FLOAT';
    }
    if (ch === c('.')) {
      ch = this.scanFraction(ch);
      if (ch === c('e') || ch === c('E')) this.scanExponent(this.next());
      return 'FLOAT';
    }
    if (ch !== EOF) this.unread();
    return 'NUMBER';
  }

  private scanMantissa(first: number): number {
    let ch = first;
    let scanned = false;
    while (isDecimal(ch)) {
      ch = this.next();
      scanned = true;
    }
    if (scanned && ch !== EOF) this.unread();
    return ch;
  }

  private scanFraction(first: number): number {
    return first === c('.') ? this.scanMantissa(this.peek()) : first;
  }

  private scanExponent(first: number): number {
    let ch = first;
    if (ch === c('e') || ch === c('E')) {
      ch = this.next();
      if (ch === c('-') || ch === c('+')) ch = this.next();
      ch = this.scanMantissa(ch);
    }
    return ch;
  }

  private scanHeredoc(): void {
    if (this.next() !== c('<')) {
      this.fail("heredoc expected second '<', didn't see it");
      return;
    }
    const anchorStart = this.pos;
    let ch = this.next();
    if (ch === c('-')) ch = this.next();
    while (ch !== EOF && (isLetter(ch) || isDigit(ch))) ch = this.next();
    if (ch === EOF) {
      this.fail('heredoc not terminated');
      return;
    }
    if (ch === c('\r') && this.peek() === c('\n')) ch = this.next();
    if (ch !== c('\n')) {
      this.fail('invalid characters in heredoc anchor');
      return;
    }
    const anchor = this.src.slice(anchorStart, this.pos - 1);
    if (anchor === '' || anchor === '-') {
      this.fail('zero-length heredoc anchor');
      return;
    }
    const marker = anchor.startsWith('-') ? anchor.slice(1) : anchor;
    const anchorBytes = Buffer.byteLength(anchor);
    const terminator = new RegExp(`^[\\t\\n\\v\\f\\r ]*${marker.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\r*$`, 'u');
    let lineStart = this.pos;
    for (;;) {
      const next = this.next();
      if (next === c('\n')) {
        const line = this.src.slice(lineStart, this.pos - 1);
        if (Buffer.byteLength(line) >= anchorBytes && terminator.test(line)) return;
        lineStart = this.pos;
      }
      if (next === EOF) {
        this.fail('heredoc not terminated');
        return;
      }
    }
  }

  private scanString(): void {
    let braces = 0;
    for (;;) {
      const ch = this.next();
      if ((ch === c('\n') && braces === 0) || ch === EOF) {
        this.fail('literal not terminated');
        return;
      }
      if (ch === c('"') && braces === 0) return;
      if (braces === 0 && ch === c('$') && this.peek() === c('{')) {
        braces++;
        this.next();
      } else if (braces > 0 && ch === c('{')) {
        braces++;
      }
      if (braces > 0 && ch === c('}')) braces--;
      if (ch === c('\\')) this.scanEscape();
    }
  }

  private scanEscape(): void {
    const ch = this.next();
    if ('abfnrtv\\"'.includes(String.fromCodePoint(Math.max(ch, 0)))) return;
    if (ch >= c('0') && ch <= c('7')) this.scanDigits(ch, 8, 3);
    else if (ch === c('x')) this.scanDigits(this.next(), 16, 2);
    else if (ch === c('u')) this.scanDigits(this.next(), 16, 4);
    else if (ch === c('U')) this.scanDigits(this.next(), 16, 8);
    else this.fail('illegal char escape');
  }

  private scanDigits(first: number, base: number, count: number): void {
    let ch = first;
    let n = count;
    while (n > 0 && ch !== EOF && digitValue(ch) < base) {
      ch = this.next();
      if (ch === EOF) break;
      n--;
    }
    if (n > 0) this.fail('illegal char escape');
    if (n !== count && ch !== EOF) this.unread();
  }

  private scanIdentifier(start: number): string {
    let ch = this.next();
    while (ch !== EOF && (isLetter(ch) || isDigit(ch) || ch === c('-') || ch === c('.'))) ch = this.next();
    if (ch !== EOF) this.unread();
    return this.src.slice(start, this.pos);
  }
}
