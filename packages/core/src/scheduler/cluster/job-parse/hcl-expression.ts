/**
 * A parser for HCL2's expression and template grammar (hashicorp/hcl's `hclsyntax` spec: operators and their
 * precedence, conditionals, index/attribute/splat traversals, function calls with `...`, tuple and object
 * constructors, `for` expressions, quoted templates with `${…}` interpolations and `%{if}`/`%{for}` directives and
 * their `~` strip markers). Hand-written: no maintained JavaScript package evaluates HCL2 expressions (the parser
 * used for the file, `@cdktf/hcl2json`, answers each expression's source unevaluated).
 *
 * The input is what that parser answers for an attribute: a template whose literal text is already unescaped
 * (only `$${` and `%%{` remain escapes), with each `${…}` holding raw expression source.
 */
import type { BinaryOperator, HclExpression, Part } from './hcl-syntax.ts';

/** A syntax error in an expression, before evaluation. */
export class HclExpressionError extends Error {}

/** Parentheses, brackets, calls and operators nest at most this deep in one expression. */
export const maxExpressionDepth = 100;
/** Operators of one precedence in a row (`1 + 1 + …`): the tree they make is as deep as they are many. */
export const maxOperatorChain = 1000;

const identifierStart = /[A-Za-z_]/;
const identifierChar = /[A-Za-z0-9_-]/;
const levels: BinaryOperator[][] = [['||'], ['&&'], ['==', '!='], ['<', '<=', '>', '>='], ['+', '-'], ['*', '/', '%']];

class Parser {
  position = 0;
  depth = 0;
  /** Whether the template's literal text is tokenized per line, as a heredoc's is (strip markers stop at a line). */
  lineTokens = false;
  constructor(readonly text: string) {}

  fail(message: string): never {
    throw new HclExpressionError(`${message} at character ${this.position + 1} of ${JSON.stringify(this.text)}`);
  }

  nest<T>(parse: () => T): T {
    if (++this.depth > maxExpressionDepth) this.fail(`the expression nests more than ${maxExpressionDepth} levels`);
    try {
      return parse();
    } finally {
      this.depth--;
    }
  }

  skipSpace(): void {
    const text = this.text;
    while (this.position < text.length) {
      const char = text[this.position] as string;
      if (char === ' ' || char === '\t' || char === '\n' || char === '\r') this.position++;
      else if (char === '#' || text.startsWith('//', this.position)) {
        while (this.position < text.length && text[this.position] !== '\n') this.position++;
      } else if (text.startsWith('/*', this.position)) {
        const end = text.indexOf('*/', this.position + 2);
        if (end < 0) this.fail('unterminated comment');
        this.position = end + 2;
      } else break;
    }
  }

  peek(token: string): boolean {
    this.skipSpace();
    return this.text.startsWith(token, this.position);
  }

  accept(token: string): boolean {
    if (!this.peek(token)) return false;
    this.position += token.length;
    return true;
  }

  expect(token: string): void {
    if (!this.accept(token)) this.fail(`expected "${token}"`);
  }

  identifier(): string | undefined {
    this.skipSpace();
    if (!identifierStart.test(this.text[this.position] ?? '')) return undefined;
    const start = this.position;
    while (identifierChar.test(this.text[this.position] ?? '')) this.position++;
    return this.text.slice(start, this.position);
  }

  /** The keyword `word` next, as a whole identifier. */
  keyword(word: string): boolean {
    const start = this.position;
    if (this.identifier() === word) return true;
    this.position = start;
    return false;
  }

  expression(): HclExpression {
    return this.nest(() => {
      const condition = this.binary(0);
      if (!this.accept('?')) return condition;
      const whenTrue = this.expression();
      this.expect(':');
      const whenFalse = this.expression();
      return { kind: 'conditional', condition, whenTrue, whenFalse };
    });
  }

  binary(level: number): HclExpression {
    if (level >= levels.length) return this.unary();
    let left = this.binary(level + 1);
    for (let chained = 1; ; chained++) {
      const operator = this.operatorAt(levels[level] as BinaryOperator[]);
      if (!operator) return left;
      if (chained > maxOperatorChain) this.fail(`the expression chains more than ${maxOperatorChain} operators`);
      const right = this.nest(() => this.binary(level + 1));
      left = { kind: 'binary', operator, left, right };
    }
  }

  operatorAt(operators: BinaryOperator[]): BinaryOperator | undefined {
    this.skipSpace();
    const here = this.text.slice(this.position, this.position + 2);
    const found = [...operators].sort((a, b) => b.length - a.length).find((operator) => here.startsWith(operator));
    if (!found) return undefined;
    this.position += found.length;
    return found;
  }

  unary(): HclExpression {
    this.skipSpace();
    const char = this.text[this.position];
    if (char === '-' || char === '!') {
      this.position++;
      const operand = this.nest(() => this.unary());
      if (char === '-' && operand.kind === 'literal' && typeof operand.value === 'number')
        return { kind: 'literal', value: -operand.value };
      return { kind: 'unary', operator: char, operand };
    }
    return this.postfix(this.primary());
  }

  primary(): HclExpression {
    this.skipSpace();
    const start = this.position;
    const char = this.text[this.position] ?? '';
    if (/[0-9]/.test(char)) {
      const match = /^[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/.exec(this.text.slice(this.position)) as RegExpExecArray;
      this.position += match[0].length;
      return { kind: 'literal', value: Number(match[0]) };
    }
    if (char === '"') {
      this.position++;
      const { parts } = this.template('"', []);
      if (parts.every((part) => part.kind === 'text'))
        return { kind: 'literal', value: parts.map((part) => (part.kind === 'text' ? part.text : '')).join('') };
      return { kind: 'template', parts };
    }
    if (this.text.startsWith('<<', this.position)) return this.heredoc();
    if (char === '(') {
      this.position++;
      const inner = this.expression();
      this.expect(')');
      return { kind: 'parenthesis', inner };
    }
    if (char === '[') {
      this.position++;
      return this.nest(() => this.tupleOrFor());
    }
    if (char === '{') {
      this.position++;
      return this.nest(() => this.objectOrFor());
    }
    const name = this.identifier();
    if (name === undefined) this.fail('expected an expression');
    if (name === 'true' || name === 'false') return { kind: 'literal', value: name === 'true' };
    if (name === 'null') return { kind: 'literal', value: null };
    if (this.text.startsWith('::', this.position)) this.fail('namespaced functions are not supported');
    const afterName = this.position;
    if (this.accept('(')) return this.nest(() => this.call(name));
    this.position = afterName;
    return { kind: 'variable', name, source: this.text.slice(start, this.position) };
  }

  /** `<<EOT` … `EOT`, or `<<-EOT` with the lines' common indentation removed: a template without escapes. */
  heredoc(): HclExpression {
    const header = /^<<(-?)([A-Za-z_][A-Za-z0-9_-]*)\r?\n/.exec(this.text.slice(this.position));
    if (!header) this.fail('invalid heredoc: expected <<MARKER and a newline');
    const [whole, strip, marker] = header as unknown as [string, string, string];
    const start = this.position + whole.length;
    const lines: string[] = [];
    let cursor = start;
    for (;;) {
      if (cursor >= this.text.length) this.fail(`unterminated heredoc: no closing ${marker}`);
      const newline = this.text.indexOf('\n', cursor);
      const end = newline < 0 ? this.text.length : newline;
      const line = this.text.slice(cursor, end).replace(/\r$/, '');
      cursor = newline < 0 ? this.text.length : newline + 1;
      if (line.trim() === marker) {
        this.position = cursor - (newline < 0 ? 0 : 1);
        break;
      }
      lines.push(line);
    }
    let body = lines;
    if (strip === '-') {
      const indents = lines.filter((line) => line.trim() !== '').map((line) => /^[ \t]*/.exec(line)?.[0].length ?? 0);
      const indent = indents.length > 0 ? Math.min(...indents) : 0;
      body = lines.map((line) => line.slice(Math.min(indent, /^[ \t]*/.exec(line)?.[0].length ?? 0)));
    }
    const inner = new Parser(body.map((line) => `${line}\n`).join(''));
    inner.depth = this.depth;
    inner.lineTokens = true;
    return { kind: 'template', parts: inner.template('', []).parts };
  }

  call(name: string): HclExpression {
    const args: HclExpression[] = [];
    let expandLast = false;
    while (!this.accept(')')) {
      if (expandLast) this.fail('"..." may only follow the last argument');
      args.push(this.expression());
      if (this.accept('...')) expandLast = true;
      if (!this.accept(',') && !this.peek(')')) this.fail(`expected "," or ")" in the call to ${name}`);
    }
    return { kind: 'call', name, args, expandLast };
  }

  /** Attribute, index and splat steps after a primary expression. */
  postfix(target: HclExpression, start = this.sourceStart(target)): HclExpression {
    let result = target;
    for (;;) {
      const before = this.position;
      if (this.accept('[')) {
        if (this.accept('*')) {
          this.expect(']');
          return { kind: 'splat', target: result, each: this.postfix({ kind: 'splatItem' }, -1) };
        }
        const key = this.expression();
        this.expect(']');
        result = {
          kind: 'index',
          target: result,
          key,
          literalKey: key.kind === 'literal',
          source: this.text.slice(start, this.position),
        };
        continue;
      }
      this.skipSpace();
      if (this.text[this.position] === '.' && this.text[this.position + 1] !== '.') {
        this.position++;
        if (this.accept('*')) {
          return { kind: 'splat', target: result, each: this.attributeSteps({ kind: 'splatItem' }) };
        }
        this.skipSpace();
        const number = /^[0-9]+/.exec(this.text.slice(this.position));
        if (number) {
          this.position += number[0].length;
          result = {
            kind: 'index',
            target: result,
            key: { kind: 'literal', value: Number(number[0]) },
            literalKey: true,
            source: this.text.slice(start, this.position),
          };
          continue;
        }
        const name = this.identifier();
        if (name === undefined) this.fail('expected an attribute name after "."');
        result = { kind: 'attribute', target: result, name, source: this.text.slice(start, this.position) };
        continue;
      }
      this.position = before;
      return result;
    }
  }

  /** The attribute-only steps after a legacy `.*` splat. */
  attributeSteps(target: HclExpression): HclExpression {
    let result = target;
    for (;;) {
      const before = this.position;
      this.skipSpace();
      if (this.text[this.position] !== '.' || this.text[this.position + 1] === '.') {
        this.position = before;
        return result;
      }
      this.position++;
      const name = this.identifier();
      if (name === undefined) this.fail('expected an attribute name after "."');
      result = { kind: 'attribute', target: result, name, source: '' };
    }
  }

  sourceStart(target: HclExpression): number {
    if (target.kind !== 'variable') return -1;
    return this.position - target.source.length;
  }

  tupleOrFor(): HclExpression {
    const start = this.position;
    if (this.keyword('for') && this.peekIdentifier()) return this.forExpression(']');
    this.position = start;
    const items: HclExpression[] = [];
    while (!this.accept(']')) {
      items.push(this.expression());
      if (!this.accept(',') && !this.peek(']')) this.fail('expected "," or "]" in a tuple');
    }
    return { kind: 'tuple', items };
  }

  peekIdentifier(): boolean {
    this.skipSpace();
    return identifierStart.test(this.text[this.position] ?? '');
  }

  objectOrFor(): HclExpression {
    const start = this.position;
    if (this.keyword('for') && this.peekIdentifier()) return this.forExpression('}');
    this.position = start;
    const items: Array<{ key: HclExpression; value: HclExpression }> = [];
    while (!this.accept('}')) {
      let key = this.expression();
      if (key.kind === 'variable') key = { kind: 'literal', value: key.name };
      if (!this.accept('=') && !this.accept(':')) this.fail('expected "=" after an object key');
      items.push({ key, value: this.expression() });
      this.accept(',');
    }
    return { kind: 'object', items };
  }

  forExpression(close: ']' | '}'): HclExpression {
    const first = this.identifier();
    if (first === undefined) this.fail('expected a variable name after "for"');
    let keyName: string | undefined;
    let valueName = first;
    if (this.accept(',')) {
      keyName = first;
      const second = this.identifier();
      if (second === undefined) this.fail('expected a second variable name in "for"');
      valueName = second;
    }
    if (!this.keyword('in')) this.fail('expected "in" in a for expression');
    const collection = this.expression();
    this.expect(':');
    let keyResult: HclExpression | undefined;
    if (close === '}') {
      keyResult = this.expression();
      this.expect('=>');
    }
    const valueResult = this.expression();
    const group = close === '}' && this.accept('...');
    let condition: HclExpression | undefined;
    if (this.keyword('if')) condition = this.expression();
    this.expect(close);
    return { kind: 'for', keyName, valueName, collection, keyResult, valueResult, condition, group };
  }

  /**
   * Template parts up to `end` (`"` for a quoted template, `''` for the end of the text) or one of `stops`
   * (directive keywords closing an enclosing `%{if}`/`%{for}`); answers which stop ended it.
   */
  template(end: '"' | '', stops: string[]): { parts: Part[]; stop?: string; stripAfter?: boolean } {
    const parts: Part[] = [];
    let text = '';
    const flush = (stripBefore: boolean) => {
      let out = text;
      if (stripBefore) {
        // A strip marker trims the literal token before it: in a heredoc each line is a token of its own.
        const boundary = this.lineTokens ? out.lastIndexOf('\n', out.length - 2) + 1 : 0;
        out = out.slice(0, boundary) + out.slice(boundary).replace(/[ \t\r\n]+$/, '');
      }
      if (out !== '') parts.push({ kind: 'text', text: out });
      text = '';
    };
    const addText = (chunk: string) => {
      text += chunk;
    };
    const source = this.text;
    for (;;) {
      if (this.position >= source.length) {
        if (end === '"') this.fail('unterminated string');
        if (stops.length > 0) this.fail(`missing %{${stops[stops.length - 1]}}`);
        flush(false);
        return { parts };
      }
      const char = source[this.position] as string;
      if (end === '"' && char === '"') {
        if (stops.length > 0) this.fail(`missing %{${stops[stops.length - 1]}}`);
        this.position++;
        flush(false);
        return { parts };
      }
      if (source.startsWith('$${', this.position) || source.startsWith('%%{', this.position)) {
        addText(source.slice(this.position + 1, this.position + 3));
        this.position += 3;
        continue;
      }
      if (source.startsWith('${', this.position) || source.startsWith('%{', this.position)) {
        const directive = char === '%';
        this.position += 2;
        const stripBefore = source[this.position] === '~';
        if (stripBefore) this.position++;
        flush(stripBefore);
        if (!directive) {
          const expression = this.expression();
          this.parseStrip(this.closeTag());
          parts.push({ kind: 'interpolation', expression });
          continue;
        }
        const word = this.identifier();
        if (word !== undefined && stops.includes(word)) {
          const stripAfter = this.closeTag();
          return { parts, stop: word, stripAfter };
        }
        if (word === 'if') {
          const condition = this.expression();
          this.parseStrip(this.closeTag());
          const branch = this.template(end, ['else', 'endif']);
          let whenFalse: Part[] = [];
          let after = branch.stripAfter ?? false;
          if (branch.stop === 'else') {
            this.parseStrip(after);
            const rest = this.template(end, ['endif']);
            whenFalse = rest.parts;
            after = rest.stripAfter ?? false;
          }
          parts.push({ kind: 'if', condition, whenTrue: branch.parts, whenFalse });
          this.parseStrip(after);
          continue;
        }
        if (word === 'for') {
          const first = this.identifier();
          if (first === undefined) this.fail('expected a variable name after %{for');
          let keyName: string | undefined;
          let valueName = first;
          if (this.accept(',')) {
            keyName = first;
            valueName = this.identifier() ?? this.fail('expected a second variable name in %{for');
          }
          if (!this.keyword('in')) this.fail('expected "in" in %{for}');
          const collection = this.expression();
          this.parseStrip(this.closeTag());
          const body = this.template(end, ['endfor']);
          parts.push({ kind: 'for', keyName, valueName, collection, body: body.parts });
          this.parseStrip(body.stripAfter ?? false);
          continue;
        }
        this.fail(`unexpected template directive %{${word ?? ''}`);
      }
      if (end === '"' && char === '\\') {
        addText(this.escape());
        continue;
      }
      if (end === '"' && char === '\n') this.fail('a quoted string may not span lines');
      addText(char);
      this.position++;
    }
  }

  /** A directive's closing `~}` strips the whitespace that follows it. */
  parseStrip(strip: boolean): void {
    if (!strip) return;
    this.skipLeadingSpace();
  }

  skipLeadingSpace(): void {
    while (/[ \t\r]/.test(this.text[this.position] ?? '')) this.position++;
    if (this.lineTokens) {
      if (this.text[this.position] === '\n') this.position++;
      return;
    }
    while (/[ \t\r\n]/.test(this.text[this.position] ?? '')) this.position++;
  }

  /** The `}` (or `~}`) closing an interpolation or directive; answers whether it strips what follows. */
  closeTag(): boolean {
    this.skipSpace();
    const strip = this.text[this.position] === '~';
    if (strip) this.position++;
    if (this.text[this.position] !== '}') this.fail('expected "}"');
    this.position++;
    return strip;
  }

  escape(): string {
    const next = this.text[this.position + 1];
    const simple: Record<string, string> = { n: '\n', r: '\r', t: '\t', '"': '"', '\\': '\\' };
    if (next !== undefined && next in simple) {
      this.position += 2;
      return simple[next] as string;
    }
    const width = next === 'u' ? 4 : next === 'U' ? 8 : 0;
    const hex = this.text.slice(this.position + 2, this.position + 2 + width);
    if (width === 0 || !new RegExp(`^[0-9A-Fa-f]{${width}}$`).test(hex)) this.fail('invalid escape sequence');
    const code = Number.parseInt(hex, 16);
    if (code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) this.fail('invalid unicode escape');
    this.position += 2 + width;
    return String.fromCodePoint(code);
  }
}

/** The template an attribute's string is, as the file parser answered it. */
export function parseTemplate(text: string): Part[] {
  const parser = new Parser(text);
  parser.lineTokens = true;
  return parser.template('', []).parts;
}

/** One expression's source (as inside `${…}`). */
export function parseExpression(text: string): HclExpression {
  const parser = new Parser(text);
  const expression = parser.expression();
  parser.skipSpace();
  if (parser.position < text.length) parser.fail('extra characters after the expression');
  return expression;
}
