/**
 * HCL v1 as Vault and Nomad parse ACL policies: hashicorp/hcl's parser (as its `v1.0.1-vault-7` fork, which
 * reports an error inside an object even when the parser stands on its `}`). A document whose first non-space
 * character is `{` is JSON (parsed by hcl's lenient JSON parser, hcl-v1-json.ts); anything else is HCL.
 *
 * Stricter than hcl and its forks on one point: a key given twice in one object is refused in both syntaxes
 * (hcl-v1-duplicates.ts), where hcl merges the repeats (and the fork refuses only an HCL attribute whose key is
 * written the same way twice).
 */
import type { ListType, Literal, Node, ObjectItem, ObjectList, ObjectType } from './hcl-v1-ast.ts';
import { duplicateKey, refuseDuplicateKeys } from './hcl-v1-duplicates.ts';
import { HclSyntaxError } from './hcl-v1-error.ts';
import { parseHclJson } from './hcl-v1-json.ts';
import { HclScanner, type ScanToken } from './hcl-v1-scanner.ts';

export * from './hcl-v1-ast.ts';
export { HclSyntaxError } from './hcl-v1-error.ts';

/** Parses a document, HCL or JSON, into hcl's syntax tree; throws HclSyntaxError (a key given twice included). */
export function parseHclV1(text: string): ObjectList {
  if (isJsonDocument(text)) return parseHclJson(text, duplicateKey);
  const list = new Parser(text.replaceAll('\r\n', '\n')).parse();
  refuseDuplicateKeys(list);
  return list;
}

/** hcl's lexMode: JSON when the first character that is not Unicode white space is `{`. */
export function isJsonDocument(text: string): boolean {
  return /^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*\{/.test(text);
}

class EndOfInput extends Error {}

const MAX_DEPTH = 100;

class Parser {
  private readonly scanner: HclScanner;
  private tok: ScanToken = { type: 'EOF', text: '', line: 0, column: 0 };
  private buffered = false;
  private depth = 0;

  constructor(src: string) {
    this.scanner = new HclScanner(src);
  }

  parse(): ObjectList {
    let list: ObjectList | undefined;
    let failure: unknown;
    try {
      list = this.objectList(false);
    } catch (error) {
      failure = error;
    }
    if (this.scanner.error) throw this.scanner.error;
    if (failure instanceof EndOfInput) throw new HclSyntaxError('unexpected end of input');
    if (failure) throw failure;
    return list as ObjectList;
  }

  private scan(): ScanToken {
    if (this.buffered) {
      this.buffered = false;
      return this.tok;
    }
    do {
      this.tok = this.scanner.scan();
    } while (this.tok.type === 'COMMENT');
    return this.tok;
  }

  private unscan(): void {
    this.buffered = true;
  }

  private error(message: string, at: ScanToken = this.tok): HclSyntaxError {
    return new HclSyntaxError(message, at.line, at.column);
  }

  private objectList(inObject: boolean): ObjectList {
    const items: ObjectItem[] = [];
    for (;;) {
      if (inObject) {
        const tok = this.scan();
        this.unscan();
        if (tok.type === 'RBRACE') break;
      }
      let item: ObjectItem;
      try {
        item = this.objectItem();
      } catch (error) {
        if (error instanceof EndOfInput) break;
        throw error;
      }
      items.push(item);
      if (this.scan().type !== 'COMMA') this.unscan();
    }
    return { kind: 'items', items };
  }

  private objectItem(): ObjectItem {
    let keys: ScanToken[];
    try {
      keys = this.objectKey();
    } catch (error) {
      const partial = (error as { keys?: ScanToken[] }).keys ?? [];
      if (partial.length === 0) throw error;
      // Keys with no value: hcl goes on to report the missing `=` or `{`.
      keys = partial;
      this.tok = { ...this.tok, type: 'EOF' };
    }
    const tokens = keys.map((key) => ({
      type: key.type as 'IDENT' | 'STRING',
      text: key.text,
      line: key.line,
      column: key.column,
    }));
    if (this.tok.type === 'ASSIGN') return { keys: tokens, assign: true, value: this.object() };
    if (this.tok.type === 'LBRACE') return { keys: tokens, assign: false, value: this.objectType() };
    throw this.error(
      `key '${keys.map((key) => key.text).join(' ')}' expected start of object ('{') or assignment ('=')`,
    );
  }

  private objectKey(): ScanToken[] {
    const keys: ScanToken[] = [];
    for (;;) {
      const tok = this.scan();
      switch (tok.type) {
        case 'EOF':
          throw Object.assign(new EndOfInput(), { keys });
        case 'ASSIGN':
          if (keys.length > 1)
            throw Object.assign(this.error('nested object expected: LBRACE got: ASSIGN'), { keys: [] });
          if (keys.length === 0) throw this.error('no object keys found!');
          return keys;
        case 'LBRACE':
          if (keys.length === 0) throw this.error('expected: IDENT | STRING got: LBRACE');
          return keys;
        case 'IDENT':
        case 'STRING':
          keys.push(tok);
          break;
        default:
          throw Object.assign(this.error(`expected: IDENT | STRING | ASSIGN | LBRACE got: ${tok.type}`), {
            keys: tok.type === 'RBRACE' ? keys : [],
          });
      }
    }
  }

  private object(): Node {
    const tok = this.scan();
    switch (tok.type) {
      case 'NUMBER':
      case 'FLOAT':
      case 'BOOL':
      case 'STRING':
      case 'HEREDOC':
        return this.literal();
      case 'LBRACE':
        return this.objectType();
      case 'LBRACK':
        return this.listType();
      case 'EOF':
        throw new EndOfInput();
      default:
        throw this.error(`Unknown token: ${tok.type} ${tok.text}`);
    }
  }

  private literal(): Literal {
    const { type, text, line, column } = this.tok;
    return { kind: 'literal', token: { type: type as Literal['token']['type'], text, line, column } };
  }

  private nested<T>(parse: () => T): T {
    if (++this.depth > MAX_DEPTH) throw this.error(`more than ${MAX_DEPTH} levels of nesting`);
    const result = parse();
    this.depth--;
    return result;
  }

  private objectType(): ObjectType {
    return this.nested(() => {
      let list: ObjectList;
      try {
        list = this.objectList(true);
      } catch (error) {
        if (error instanceof EndOfInput) throw this.error('object expected closing RBRACE got: EOF');
        throw error;
      }
      const tok = this.scan();
      if (tok.type !== 'RBRACE') throw this.error(`object expected closing RBRACE got: ${tok.type}`);
      return { kind: 'object', list };
    });
  }

  private listType(): ListType {
    return this.nested(() => {
      const elements: Node[] = [];
      let needComma = false;
      for (;;) {
        const tok = this.scan();
        if (needComma && tok.type !== 'COMMA' && tok.type !== 'RBRACK') {
          throw this.error(`error parsing list, expected comma or list end, got: ${tok.type}`);
        }
        switch (tok.type) {
          case 'BOOL':
          case 'NUMBER':
          case 'FLOAT':
          case 'STRING':
          case 'HEREDOC':
            elements.push(this.literal());
            needComma = true;
            break;
          case 'COMMA':
            needComma = false;
            break;
          case 'LBRACE':
            elements.push(this.objectTypeInList());
            needComma = true;
            break;
          case 'LBRACK':
            elements.push(this.listType());
            break;
          case 'RBRACK':
            return { kind: 'list', elements };
          default:
            throw this.error(`unexpected token while parsing list: ${tok.type}`);
        }
      }
    });
  }

  private objectTypeInList(): ObjectType {
    try {
      return this.objectType();
    } catch (error) {
      if (error instanceof EndOfInput) throw this.error('error while trying to parse object within list');
      throw error;
    }
  }
}
