import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type HclValue, HclSyntaxError, parseHcl } from './hcl.ts';

const attrs = (text: string) => parseHcl(text).attributes;

function syntaxError(text: string): HclSyntaxError {
  try {
    parseHcl(text);
  } catch (error) {
    if (error instanceof HclSyntaxError) return error;
    throw error;
  }
  throw new Error(`expected ${JSON.stringify(text)} to fail`);
}

describe('parseHcl', () => {
  it('parses the empty document', () => {
    expect(parseHcl('')).toEqual({ attributes: {}, blocks: [] });
    expect(parseHcl('  \n\t\r\n')).toEqual({ attributes: {}, blocks: [] });
  });

  it('skips all three comment styles', () => {
    const text = '# hash\n// slashes\n/* block\n   comment */ a = 1 # trailing\nb = /* inline */ 2 // end';
    expect(attrs(text)).toEqual({ a: 1, b: 2 });
  });

  it('accepts newline, comma and whitespace attribute separators', () => {
    expect(attrs('a = 1\nb = 2, c = 3 d = "x" e="y"')).toEqual({ a: 1, b: 2, c: 3, d: 'x', e: 'y' });
  });

  it('accepts identifier keys with dashes, dots and digits, and quoted keys', () => {
    expect(attrs('min-chars = 1\nfoo.bar_2 = 2\n"quoted key" = 3')).toEqual({
      'min-chars': 1,
      'foo.bar_2': 2,
      'quoted key': 3,
    });
  });

  it('keeps the last of repeated attribute keys', () => {
    expect(attrs('a = 1\nb = 2\na = "again"')).toEqual({ a: 'again', b: 2 });
  });

  it('stores a "__proto__" key as an own property', () => {
    const parsed = attrs('__proto__ = 1\nobj = { "__proto__" = 2 }');
    expect(Object.hasOwn(parsed, '__proto__')).toBe(true);
    expect(Object.getPrototypeOf(parsed)).toBe(Object.prototype);
    expect(Object.hasOwn(parsed.obj as object, '__proto__')).toBe(true);
  });

  it('decodes string escapes', () => {
    expect(attrs(String.raw`s = "q\" b\\ n\n t\t u\u00e9\u2603 r\r"`)).toEqual({ s: 'q" b\\ n\n t\t u\u00e9\u2603 r\r' });
    expect(attrs(`s = "{{identity.entity.id}} \${x}"`)).toEqual({ s: `{{identity.entity.id}} \${x}` });
  });

  it('parses numbers, booleans and null', () => {
    expect(attrs('a = 42\nb = -7\nc = 3.25\nd = -0.5\ne = 1e3\nf = true\ng = false\nh = null')).toEqual({
      a: 42,
      b: -7,
      c: 3.25,
      d: -0.5,
      e: 1000,
      f: true,
      g: false,
      h: null,
    });
  });

  it('parses lists, including nested, multi-line and trailing-comma lists', () => {
    expect(attrs('a = []\nb = [1, "two", true,]\nc = [\n  [1],\n  [],\n  "x"\n]')).toEqual({
      a: [],
      b: [1, 'two', true],
      c: [[1], [], 'x'],
    });
  });

  it('parses object attribute values with bare and quoted keys', () => {
    const text = 'allowed_parameters = {\n  "foo" = []\n  bar = ["x", "y"], "*" = { deep = 1 }\n}';
    expect(attrs(text)).toEqual({ allowed_parameters: { foo: [], bar: ['x', 'y'], '*': { deep: 1 } } });
  });

  it('parses heredocs verbatim', () => {
    expect(attrs('doc = <<EOF\n  line one\n\tline "two"\nEOF\nafter = 1')).toEqual({
      doc: '  line one\n\tline "two"\n',
      after: 1,
    });
    expect(attrs('empty = <<END\nEND')).toEqual({ empty: '' });
  });

  it('strips common indentation from <<- heredocs', () => {
    const text = 'block {\n  doc = <<-EOT\n    first\n\n      indented\n    last\n    EOT\n}';
    expect(parseHcl(text).blocks[0]?.body.attributes).toEqual({ doc: 'first\n\n  indented\nlast\n' });
  });

  it('handles CRLF line endings', () => {
    expect(attrs('a = 1\r\nb = <<EOF\r\nx\r\nEOF\r\n')).toEqual({ a: 1, b: 'x\n' });
  });

  it('parses blocks with zero, one and several labels, quoted or bare', () => {
    expect(parseHcl('plain { a = 1 }\none "l1" {}\ntwo "l1" bare {\n}').blocks).toEqual([
      { type: 'plain', labels: [], body: { attributes: { a: 1 }, blocks: [] } },
      { type: 'one', labels: ['l1'], body: { attributes: {}, blocks: [] } },
      { type: 'two', labels: ['l1', 'bare'], body: { attributes: {}, blocks: [] } },
    ]);
  });

  it('nests blocks and keeps repeated blocks in order', () => {
    const parsed = parseHcl('outer "o" {\n  x = 1\n  inner { y = 2 }\n  inner { y = 3 }\n}');
    expect(parsed).toEqual({
      attributes: {},
      blocks: [
        {
          type: 'outer',
          labels: ['o'],
          body: {
            attributes: { x: 1 },
            blocks: [
              { type: 'inner', labels: [], body: { attributes: { y: 2 }, blocks: [] } },
              { type: 'inner', labels: [], body: { attributes: { y: 3 }, blocks: [] } },
            ],
          },
        },
      ],
    });
  });

  it('distinguishes "key = { ... }" attributes from "key { ... }" blocks', () => {
    expect(parseHcl('key = { a = 1 }\nkey { a = 2 }')).toEqual({
      attributes: { key: { a: 1 } },
      blocks: [{ type: 'key', labels: [], body: { attributes: { a: 2 }, blocks: [] } }],
    });
  });

  it('parses the Vault policy example', () => {
    const text = [
      'path "secret/*" {',
      '  capabilities = ["read", "list"]',
      '}',
      'path "auth/token/lookup-self" { capabilities = ["read"] }',
    ].join('\n');
    expect(parseHcl(text)).toEqual({
      attributes: {},
      blocks: [
        { type: 'path', labels: ['secret/*'], body: { attributes: { capabilities: ['read', 'list'] }, blocks: [] } },
        {
          type: 'path',
          labels: ['auth/token/lookup-self'],
          body: { attributes: { capabilities: ['read'] }, blocks: [] },
        },
      ],
    });
  });

  it('parses a full Vault policy with parameter constraints', () => {
    const text = `
# Allow tokens to manage their own secrets
path "secret/data/{{identity.entity.id}}/*" {
  capabilities = ["create", "update", "read", "delete"]
  min_wrapping_ttl = "1s"
  max_wrapping_ttl = "90s"
}

path "secret/foo" {
  capabilities = ["create"]
  allowed_parameters = {
    "bar" = ["zip", "zap"]
    "*"   = []
  }
  denied_parameters = { "salary" = [] }
  required_parameters = ["bar", "baz"]
}

path "sys/*" { capabilities = ["deny"] }
`;
    const { attributes, blocks } = parseHcl(text);
    expect(attributes).toEqual({});
    expect(blocks.map((block) => block.labels[0])).toEqual(['secret/data/{{identity.entity.id}}/*', 'secret/foo', 'sys/*']);
    expect(blocks[0]?.body.attributes).toEqual({
      capabilities: ['create', 'update', 'read', 'delete'],
      min_wrapping_ttl: '1s',
      max_wrapping_ttl: '90s',
    });
    expect(blocks[1]?.body.attributes).toEqual({
      capabilities: ['create'],
      allowed_parameters: { bar: ['zip', 'zap'], '*': [] },
      denied_parameters: { salary: [] },
      required_parameters: ['bar', 'baz'],
    });
    expect(blocks[2]?.body).toEqual({ attributes: { capabilities: ['deny'] }, blocks: [] });
  });

  it('parses a password policy with several charset rules', () => {
    const text = `
length = 20

rule "charset" {
  charset = "abcdefghijklmnopqrstuvwxyz"
  min-chars = 1
}
rule "charset" {
  charset = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
  min-chars = 1
}
rule "charset" { charset = "0123456789" min-chars = 1 }
rule "charset" { charset = "!@#$%^&*" min-chars = 2 }
`;
    const { attributes, blocks } = parseHcl(text);
    expect(attributes).toEqual({ length: 20 });
    expect(blocks.map((block) => [block.type, block.labels, block.body.attributes])).toEqual([
      ['rule', ['charset'], { charset: 'abcdefghijklmnopqrstuvwxyz', 'min-chars': 1 }],
      ['rule', ['charset'], { charset: 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'min-chars': 1 }],
      ['rule', ['charset'], { charset: '0123456789', 'min-chars': 1 }],
      ['rule', ['charset'], { charset: '!@#$%^&*', 'min-chars': 2 }],
    ]);
  });

  it('accepts exactly 100 levels of nesting', () => {
    const list = `a = ${'['.repeat(100)}${']'.repeat(100)}`;
    let expected: HclValue = [];
    for (let i = 1; i < 100; i++) expected = [expected];
    expect(attrs(list)).toEqual({ a: expected });
  });
});

describe('parseHcl errors', () => {
  const cases: [name: string, text: string, line: number, column: number, message: string][] = [
    ['missing "=" or "{"', 'a = 1\n\npath ]', 3, 6, 'expected "=" or "{" after "path" but found "]"'],
    ['label without block', 'rule "charset" = 1', 1, 16, 'expected "{" after string "charset" but found "="'],
    ['missing value', 'a =\n', 2, 1, 'expected a value but found end of input'],
    ['bare identifier value', 'a = foo', 1, 5, 'expected a value but found "foo"'],
    ['unclosed block', 'path "x" {\n  a = 1\n', 3, 1, 'expected attribute name or block type or "}" but found end of input'],
    ['stray closing brace', 'a = 1\n}', 2, 1, 'expected attribute name or block type but found "}"'],
    ['missing list separator', 'a = [1 2]', 1, 8, 'expected "," or "]" but found "2"'],
    ['unclosed list', 'a = [1,\n', 2, 1, 'expected a value but found end of input'],
    ['object entry without "="', 'a = { b 1 }', 1, 9, 'expected "=" after "b" but found "1"'],
    ['object number key', 'a = { 1 = 2 }', 1, 7, 'expected object key or "}" but found "1"'],
    ['unterminated string', 'a = "abc', 1, 5, 'expected closing quote but found end of input'],
    ['string across lines', 'a = "abc\n"', 1, 5, 'expected closing quote but found end of line'],
    ['bad escape', 'a = "x\\q"', 1, 7, 'expected an escape sequence but found "\\q"'],
    ['bad unicode escape', 'a = "\\u12g4"', 1, 6, 'expected 4 hex digits after "\\u" but found "12g4"'],
    ['unterminated heredoc', 'x = 1\na = <<EOF\nbody\n', 2, 5, 'expected heredoc terminator "EOF" but found end of input'],
    ['heredoc without marker', 'a = << EOF\n', 1, 5, 'expected a heredoc marker such as "<<EOF" followed by a newline'],
    ['unterminated comment', 'a = 1 /* never\nclosed', 1, 7, 'expected "*/" to close comment but found end of input'],
    ['malformed number', 'a = 12abc', 1, 5, 'expected a number but found "12a"'],
    ['unexpected character', 'a = 1\n  @', 2, 3, 'expected a token but found unexpected character "@"'],
  ];

  it.each(cases)('%s', (_name, text, line, column, message) => {
    const error = syntaxError(text);
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('HclSyntaxError');
    expect({ line: error.line, column: error.column }).toEqual({ line, column });
    expect(error.message).toBe(`line ${line}, column ${column}: ${message}`);
  });

  it('rejects nesting deeper than 100 levels without overflowing the stack', () => {
    expect(syntaxError(`a = ${'['.repeat(101)}`).message).toBe('line 1, column 105: expected at most 100 levels of nesting');
    expect(syntaxError('b {'.repeat(100_000)).column).toBe(303);
    expect(syntaxError(`a = ${'{ b = '.repeat(100_000)}`).message).toMatch(/expected at most 100 levels/);
  });
});

describe('parseHcl properties', () => {
  const fragments = fc.constantFrom(
    'path',
    '"x"',
    '"a\\"b"',
    '=',
    '{',
    '}',
    '[',
    ']',
    ',',
    '-1.5',
    'true',
    'null',
    '<<EOF\n',
    '<<-EOF\n',
    'EOF',
    '\n',
    ' ',
    '#',
    '//',
    '/*',
    '*/',
    '"',
    '\\',
    '\\u',
  );
  const parsesOrThrowsSyntaxError = (text: string) => {
    try {
      const body = parseHcl(text);
      expect(body).toEqual({ attributes: expect.any(Object), blocks: expect.any(Array) });
    } catch (error) {
      expect(error).toBeInstanceOf(HclSyntaxError);
      const { line, column } = error as HclSyntaxError;
      expect(line).toBeGreaterThanOrEqual(1);
      expect(column).toBeGreaterThanOrEqual(1);
    }
  };

  it('either parses or throws HclSyntaxError for arbitrary strings', () => {
    fc.assert(fc.property(fc.string({ unit: 'grapheme', maxLength: 200 }), parsesOrThrowsSyntaxError));
  });

  it('either parses or throws HclSyntaxError for strings made of HCL fragments', () => {
    fc.assert(
      fc.property(
        fc.array(fragments, { maxLength: 60 }).map((parts) => parts.join('')),
        parsesOrThrowsSyntaxError,
      ),
      { numRuns: 500 },
    );
  });

  it('round-trips serialised JSON values', () => {
    const serialise = (value: HclValue): string => {
      if (Array.isArray(value)) return `[${value.map((item) => `${serialise(item)},`).join(' ')}]`;
      if (value !== null && typeof value === 'object') {
        const entries = Object.entries(value).map(([key, item]) => `${JSON.stringify(key)} = ${serialise(item)}`);
        return `{\n${entries.join('\n')}\n}`;
      }
      return JSON.stringify(value);
    };
    fc.assert(
      // fast-check's JSON values include -0, which JSON (and HCL) write as 0: compare with what JSON keeps.
      fc.property(fc.jsonValue({ maxDepth: 4 }), (value) => {
        expect(attrs(`value = ${serialise(value as HclValue)}`)).toEqual({ value: JSON.parse(JSON.stringify(value)) });
      }),
    );
  });
});
