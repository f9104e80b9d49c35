import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { HclSyntaxError, keyName, type Node, type ObjectList, parseHclV1, tokenValue } from './hcl-v1.ts';

/** The tree as plain data: each item as [keys, value], values as JavaScript values. */
function shape(node: Node): unknown {
  if (node.kind === 'literal') return tokenValue(node.token);
  if (node.kind === 'list') return node.elements.map(shape);
  const list: ObjectList = node.kind === 'object' ? node.list : node;
  return list.items.map((item) => [item.keys.map(keyName), shape(item.value)]);
}

function syntaxError(text: string): HclSyntaxError {
  try {
    parseHclV1(text);
  } catch (error) {
    if (error instanceof HclSyntaxError) return error;
    throw error;
  }
  throw new Error(`expected ${JSON.stringify(text)} to fail`);
}

describe('parseHclV1', () => {
  it('parses the empty document and comments of all three styles', () => {
    expect(shape(parseHclV1(''))).toEqual([]);
    expect(
      shape(parseHclV1('# hash\n// slashes\n/* block\n comment */ a = 1 # trailing\nb = /* inline */ 2 // end')),
    ).toEqual([
      [['a'], 1],
      [['b'], 2],
    ]);
  });

  it('reads identifier keys with dashes and dots, quoted keys, and CRLF line endings', () => {
    expect(shape(parseHclV1('min-chars = 1\r\nfoo.bar_2 = 2\r\n"quoted key" = 3'))).toEqual([
      [['min-chars'], 1],
      [['foo.bar_2'], 2],
      [['quoted key'], 3],
    ]);
  });

  it('reads blocks with labels, and keeps repeated blocks in order', () => {
    const text = 'length = 8\nrule "charset" { charset = "ab" }\nrule "charset" { charset = "01" }';
    expect(shape(parseHclV1(text))).toEqual([
      [['length'], 8],
      [['rule', 'charset'], [[['charset'], 'ab']]],
      [['rule', 'charset'], [[['charset'], '01']]],
    ]);
  });

  it('reads heredocs, and <<- heredocs without their common indentation', () => {
    expect(shape(parseHclV1('a = <<EOF\n  one\ntwo\nEOF\nb = <<-EOT\n    x\n      y\n    EOT\n'))).toEqual([
      [['a'], '  one\ntwo\n'],
      [['b'], 'x\n  y\n'],
    ]);
  });

  it('reads JSON as hcl does, objects of objects flattened into labelled items', () => {
    expect(shape(parseHclV1('{"rule": {"charset": {"charset": "ab"}}, "length": 8}'))).toEqual([
      [['rule', 'charset'], [[['charset'], 'ab']]],
      [['length'], 8],
    ]);
  });

  it.each([
    ['an attribute given twice', 'a = 1\nb = 2\na = 3', 'At 3:1: key "a" is given twice (first at 1:1)'],
    ['an attribute given bare and quoted', 'a = 1\n"a" = 3', 'At 2:1: key "a" is given twice (first at 1:1)'],
    [
      'an attribute given twice inside a block',
      'rule "x" {\n a = 1\n "\\u0061" = 2\n}',
      'At 3:2: key "a" is given twice (first at 2:2)',
    ],
    ['a member given twice in a JSON object', '{"a": 1,\n "a": 2}', 'At 2:2: key "a" is given twice (first at 1:2)'],
    [
      'a member given twice in a nested JSON object',
      '{"rule": {"x": {"a": 1, "a": 2}}}',
      'At 1:25: key "a" is given twice (first at 1:17)',
    ],
  ])('refuses %s, naming the key and where', (_what, text, message) => {
    expect(syntaxError(text).message).toBe(`${message}; a key may be given only once in an object`);
  });

  it('refuses nesting deeper than 100 levels without overflowing the stack', () => {
    expect(() => parseHclV1(`a = ${'['.repeat(100)}${']'.repeat(100)}`)).not.toThrow();
    expect(syntaxError(`a = ${'['.repeat(101)}`).message).toMatch(/more than 100 levels of nesting/);
    expect(syntaxError('b {'.repeat(100_000)).message).toMatch(/more than 100 levels of nesting/);
    expect(syntaxError(`{${'"b": {'.repeat(100_000)}`).message).toMatch(/more than 100 levels of nesting/);
  });
});

describe('parseHclV1 never fails with anything but HclSyntaxError', () => {
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
    ':',
    '-1.5',
    '0x1F',
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
    '\\x4',
  );
  const parsesOrThrowsSyntaxError = (text: string) => {
    try {
      parseHclV1(text);
    } catch (error) {
      expect(error).toBeInstanceOf(HclSyntaxError);
    }
  };

  it('on arbitrary strings', () => {
    fc.assert(fc.property(fc.string({ unit: 'grapheme', maxLength: 200 }), parsesOrThrowsSyntaxError));
  });

  it('on strings made of HCL and JSON fragments', () => {
    fc.assert(
      fc.property(
        fc.boolean(),
        fc.array(fragments, { maxLength: 60 }).map((parts) => parts.join('')),
        (json, text) => parsesOrThrowsSyntaxError(json ? `{${text}` : text),
      ),
      { numRuns: 500 },
    );
  });
});
