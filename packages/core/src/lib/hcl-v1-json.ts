/**
 * hashicorp/hcl v1's JSON parser, whose leniency Vault inherits: members after a missing comma end the object,
 * a trailing comma is accepted, an unclosed document is accepted, `true`/`false` and `[` inside lists are
 * skipped (so `"denied_parameters": {"flag": [true]}` denies every value of `flag`), `null` is an empty string
 * except inside a list (an error), strings take Go's escapes (no `\/`). Nested objects are then flattened as hcl
 * does: `{"path": {"a": {…}}}` becomes one item with keys `path`, `a`.
 */
import type { ListType, Literal, Node, ObjectItem, ObjectList, ObjectType, Token } from './hcl-v1-ast.ts';
import { HclSyntaxError } from './hcl-v1-error.ts';

type JsonTokenType =
  | 'STRING'
  | 'NUMBER'
  | 'FLOAT'
  | 'BOOL'
  | 'NULL'
  | 'LBRACE'
  | 'RBRACE'
  | 'LBRACK'
  | 'RBRACK'
  | 'COMMA'
  | 'COLON'
  | 'PERIOD'
  | 'EOF'
  | 'ILLEGAL';

interface JsonToken {
  type: JsonTokenType;
  text: string;
  line: number;
  column: number;
}

const isLetter = (char: string) => /[A-Za-z_]/.test(char) || (char >= '\u0080' && /\p{L}/u.test(char));
const isDigit = (char: string) => /[0-9]/.test(char) || (char >= '\u0080' && /\p{Nd}/u.test(char));

class JsonScanner {
  private pos = 0;
  failure: HclSyntaxError | undefined;

  constructor(private readonly src: string) {}

  private fail(message: string): void {
    this.failure ??= new HclSyntaxError(message, ...this.position(this.pos));
  }

  position(offset: number): [number, number] {
    const before = this.src.slice(0, offset);
    return [before.split('\n').length, offset - before.lastIndexOf('\n')];
  }

  private char(offset = this.pos): string {
    const code = this.src.codePointAt(offset);
    return code === undefined ? '' : String.fromCodePoint(code);
  }

  private advance(): string {
    const char = this.char();
    this.pos += char.length;
    if (char === '\0') this.fail('unexpected null character (0x00)');
    return char;
  }

  scan(): JsonToken {
    while (/^[ \t\n\r]$/.test(this.char())) this.pos++;
    const start = this.pos;
    const [line, column] = this.position(start);
    const char = this.advance();
    let type: JsonTokenType;
    if (char === '' || char === '\0') {
      type = 'EOF';
    } else if (isLetter(char)) {
      while (isLetter(this.char()) || isDigit(this.char()) || this.char() === '-') this.advance();
      const word = this.src.slice(start, this.pos);
      type = word === 'true' || word === 'false' ? 'BOOL' : word === 'null' ? 'NULL' : 'ILLEGAL';
      if (type === 'ILLEGAL') this.fail('illegal char');
    } else if (/[0-9]/.test(char)) {
      type = this.scanNumber(char);
    } else if (char === '"') {
      type = 'STRING';
      this.scanString();
    } else if (char === '.') {
      type = 'PERIOD';
      if (/[0-9]/.test(this.char())) {
        type = 'FLOAT';
        this.digits();
        // hcl's scanner consumes only the `e` here: `.5e3` is the float `.5e` then the number `3`.
        if (this.char() === 'e' || this.char() === 'E') this.pos++;
      }
    } else if (char === '-' && /[0-9]/.test(this.char())) {
      type = this.scanNumber(this.advance());
    } else {
      const punctuation: Record<string, JsonTokenType> = {
        '[': 'LBRACK',
        ']': 'RBRACK',
        '{': 'LBRACE',
        '}': 'RBRACE',
        ',': 'COMMA',
        ':': 'COLON',
      };
      type = punctuation[char] ?? 'ILLEGAL';
      if (type === 'ILLEGAL') this.fail(`illegal char: ${char}`);
    }
    return { type, text: this.src.slice(start, this.pos), line, column };
  }

  private digits(): void {
    while (/[0-9]/.test(this.char())) this.pos++;
  }

  /** hcl's JSON scanNumber: a leading zero followed by more digits is an error; `1.`, `1e`, `1.e5` are floats. */
  private scanNumber(first: string): JsonTokenType {
    const afterFirst = this.pos;
    this.digits();
    const next = this.char();
    if (next === 'e' || next === 'E') {
      this.pos++;
      this.exponent();
      return 'FLOAT';
    }
    if (next === '.') {
      this.pos++;
      this.digits();
      this.exponentAfterFraction();
      return 'FLOAT';
    }
    if (first === '0' && this.pos !== afterFirst) this.fail('numbers cannot start with 0');
    return 'NUMBER';
  }

  private exponentAfterFraction(): void {
    if (this.char() === 'e' || this.char() === 'E') {
      this.pos++;
      this.exponent();
    }
  }

  /** After `e`: an optional sign, then digits; a character that is neither is swallowed, as hcl's scanner does. */
  private exponent(): void {
    let char = this.advance();
    if (char === '-' || char === '+') char = this.advance();
    if (/[0-9]/.test(char)) this.digits();
  }

  private scanString(): void {
    for (;;) {
      const char = this.advance();
      if (char === '\n' || char === '' || char === '\0') {
        this.fail('literal not terminated');
        return;
      }
      if (char === '"') return;
      if (char === '\\') this.scanEscape();
    }
  }

  private scanEscape(): void {
    const char = this.advance();
    if ('abfnrtv\\"'.includes(char) && char !== '') return;
    const spec = /[0-7]/.test(char)
      ? { base: /[0-7]/, count: 2 }
      : char === 'x'
        ? { base: /[0-9a-fA-F]/, count: 2 }
        : char === 'u'
          ? { base: /[0-9a-fA-F]/, count: 4 }
          : char === 'U'
            ? { base: /[0-9a-fA-F]/, count: 8 }
            : undefined;
    if (!spec) {
      this.fail('illegal char escape');
      return;
    }
    for (let i = 0; i < spec.count; i++) {
      if (!spec.base.test(this.char())) {
        this.fail('illegal char escape');
        return;
      }
      this.pos++;
    }
  }
}

class EndOfInput extends Error {}

const MAX_DEPTH = 100;

class JsonParser {
  private readonly scanner: JsonScanner;
  private tok: JsonToken = { type: 'EOF', text: '', line: 0, column: 0 };
  private depth = 0;
  /** The first failed `check` of an object, reported once the document has parsed. */
  private checkFailure: HclSyntaxError | undefined;

  constructor(
    src: string,
    private readonly check?: (list: ObjectList) => HclSyntaxError | undefined,
  ) {
    this.scanner = new JsonScanner(src);
  }

  parse(): ObjectList {
    let root: ObjectType | undefined;
    let failure: unknown;
    try {
      const tok = this.scan();
      if (tok.type !== 'LBRACE') throw this.error(`Expected object, got unknown token: ${tok.type}`);
      root = this.objectType();
    } catch (error) {
      failure = error instanceof EndOfInput ? new HclSyntaxError('EOF token found') : error;
    }
    if (this.scanner.failure) throw this.scanner.failure;
    if (failure) throw failure;
    const list = (root as ObjectType).list;
    if (this.checkFailure) throw this.checkFailure;
    flatten(list);
    return list;
  }

  /** Runs `check` on an object's members as parsed, before any flattening (or dropping on an error) loses them. */
  private checked(list: ObjectList): ObjectList {
    if (!this.check) return list;
    try {
      this.checkFailure ??= this.check(list);
    } catch (error) {
      // A key `check` cannot read (a string Go's strconv.Unquote refuses) is no parse error here: hcl parses it and
      // fails only when Vault reads the key. Recorded, never dropped along with the object's members.
      if (!(error instanceof HclSyntaxError)) throw error;
      this.checkFailure ??= error;
    }
    return list;
  }

  private scan(): JsonToken {
    this.tok = this.scanner.scan();
    return this.tok;
  }

  private error(message: string): HclSyntaxError {
    return new HclSyntaxError(message, this.tok.line, this.tok.column);
  }

  /** Members separated by commas; any other token after a member ends the object (and is consumed). */
  private objectList(): ObjectList {
    const items: ObjectItem[] = [];
    for (;;) {
      let item: ObjectItem;
      try {
        item = this.objectItem();
      } catch (error) {
        if (error instanceof EndOfInput) break;
        throw Object.assign(error as Error, { partial: items });
      }
      items.push(item);
      if (this.scan().type !== 'COMMA') break;
    }
    return this.checked({ kind: 'items', items });
  }

  private objectItem(): ObjectItem {
    const keys: Token[] = [];
    for (;;) {
      const tok = this.scan();
      if (tok.type === 'EOF') throw new EndOfInput();
      if (tok.type === 'STRING') {
        keys.push({ type: 'STRING', text: tok.text, json: true, line: tok.line, column: tok.column });
      } else if (tok.type === 'COLON') {
        if (keys.length === 0) throw this.error('expected: STRING got: COLON');
        break;
      } else {
        throw this.error(`expected: STRING got: ${tok.type}`);
      }
    }
    return { keys, assign: true, value: this.objectValue() };
  }

  private objectValue(): Node {
    const tok = this.scan();
    switch (tok.type) {
      case 'NUMBER':
      case 'FLOAT':
      case 'BOOL':
      case 'NULL':
      case 'STRING':
        return this.literal();
      case 'LBRACE':
        return this.objectType();
      case 'LBRACK':
        return this.listType();
      case 'EOF':
        throw new EndOfInput();
      default:
        throw this.error(`Expected object value, got unknown token: ${tok.type}`);
    }
  }

  private literal(): Literal {
    const { type, text, line, column } = this.tok;
    if (type === 'NULL') return { kind: 'literal', token: { type: 'STRING', text: '', line, column } };
    const token: Token = {
      type: type as Token['type'],
      text,
      line,
      column,
      ...(type === 'STRING' ? { json: true } : {}),
    };
    return { kind: 'literal', token };
  }

  /** An object; an error inside it is dropped when the parser stands on its `}`, as hcl's is. */
  private objectType(): ObjectType {
    if (++this.depth > MAX_DEPTH) throw this.error(`more than ${MAX_DEPTH} levels of nesting`);
    let list: ObjectList;
    try {
      list = this.objectList();
    } catch (error) {
      if (this.tok.type !== 'RBRACE') throw error;
      list = this.checked({ kind: 'items', items: (error as { partial?: ObjectItem[] }).partial ?? [] });
    }
    this.depth--;
    return { kind: 'object', list };
  }

  private listType(): ListType {
    if (++this.depth > MAX_DEPTH) throw this.error(`more than ${MAX_DEPTH} levels of nesting`);
    const elements: Node[] = [];
    for (;;) {
      const tok = this.scan();
      switch (tok.type) {
        case 'NUMBER':
        case 'FLOAT':
        case 'STRING':
          elements.push(this.literal());
          break;
        case 'LBRACE':
          elements.push(this.objectType());
          break;
        case 'COMMA':
        case 'BOOL':
        case 'LBRACK':
          break;
        case 'RBRACK':
          this.depth--;
          return { kind: 'list', elements };
        default:
          throw this.error(`unexpected token while parsing list: ${tok.type}`);
      }
    }
  }
}

/**
 * Parses a JSON document. `check` sees each object's members as the parser reads them, before hcl flattens the
 * tree (or drops an object's members on an error); its first error is thrown once the document has parsed.
 */
export function parseHclJson(text: string, check?: (list: ObjectList) => HclSyntaxError | undefined): ObjectList {
  return new JsonParser(text, check).parse();
}

/**
 * hcl's flattenObjects: an item whose value is an object made only of objects (or a list made only of objects)
 * is replaced by one item per member, with the member's key appended to its keys, repeatedly; then every nested
 * list is flattened the same way.
 */
function flatten(list: ObjectList): void {
  const items: ObjectItem[] = [];
  const frontier = [...list.items];
  while (frontier.length > 0) {
    const item = frontier.pop() as ObjectItem;
    const value = item.value;
    if (
      value.kind === 'object' &&
      value.list.items.length > 0 &&
      value.list.items.every((sub) => sub.value.kind === 'object')
    ) {
      for (const sub of value.list.items)
        frontier.push({ keys: [...item.keys, ...sub.keys], assign: item.assign, value: sub.value });
    } else if (
      value.kind === 'list' &&
      value.elements.length > 0 &&
      value.elements.every((element) => element.kind === 'object')
    ) {
      for (const element of value.elements) frontier.push({ keys: item.keys, assign: item.assign, value: element });
    } else {
      items.push(item);
    }
  }
  list.items = items.reverse();
  for (const item of list.items) flattenNode(item.value);
}

function flattenNode(node: Node): void {
  if (node.kind === 'object') flatten(node.list);
  else if (node.kind === 'items') flatten(node);
  else if (node.kind === 'list') for (const element of node.elements) flattenNode(element);
}
