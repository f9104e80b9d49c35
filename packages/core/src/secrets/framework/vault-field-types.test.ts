import { describe, expect, it } from 'vitest';
import type * as z from 'zod';
import {
  typeBool,
  typeCommaStringSlice,
  typeInt,
  typeKvPairs,
  typeLowerCaseString,
  typeMap,
  typeNameString,
  typeSlice,
  typeString,
  typeStringSlice,
} from './vault-field-types.ts';

/**
 * Each helper against the rule Vault applies (`sdk/framework/field_data.go`'s `getPrimitive`, and mapstructure's
 * weakly typed decoding it calls): input, what Vault's handler gets, and the rule that says so. `refused` means Vault
 * answers an error for the field (here a 400 naming it).
 */
const refused = Symbol('refused');
type Case = [input: unknown, expected: unknown, rule: string];

const table: Array<[name: string, schema: z.ZodType, cases: Case[]]> = [
  [
    'TypeString',
    typeString,
    [
      ['text', 'text', 'a string is itself'],
      ['', '', 'the empty string is itself'],
      [true, '1', 'weak: a bool becomes "1"'],
      [false, '0', 'weak: a bool becomes "0"'],
      [42, '42', "weak: a json.Number's kind is string: its text"],
      [-1.5, '-1.5', "a json.Number's text"],
      [2 ** 60, refused, 'digits JSON.parse lost cannot be given back (Vault would keep the literal)'],
      [['a'], refused, 'a list is not decoded into a string'],
      [{ a: 'b' }, refused, 'a map is not decoded into a string'],
    ],
  ],
  [
    'TypeLowerCaseString',
    typeLowerCaseString,
    [
      ['MiXeD', 'mixed', 'strings.ToLower after the weak decode'],
      ['İD', 'id', "Go's simple case mapping takes U+0130 to i"],
      [true, '1', 'weak: a bool becomes "1"'],
    ],
  ],
  [
    'TypeNameString',
    typeNameString,
    [
      ['my-role.v2_x', 'my-role.v2_x', '^\\w(([\\w-.]+)?\\w)?$'],
      ['a', 'a', 'one word character'],
      [7, '7', 'weak: a number becomes its text, which matches'],
      ['-a', refused, 'must start with a word character'],
      ['a-', refused, 'must end with a word character'],
      ['ä', refused, "Go's \\w is ASCII only"],
      ['', refused, 'the empty string does not match'],
    ],
  ],
  [
    'TypeBool',
    typeBool,
    [
      [true, true, 'a bool is itself'],
      ['true', true, 'strconv.ParseBool'],
      ['T', true, 'strconv.ParseBool'],
      ['TRUE', true, 'strconv.ParseBool'],
      ['1', true, 'strconv.ParseBool'],
      ['f', false, 'strconv.ParseBool'],
      ['False', false, 'strconv.ParseBool'],
      ['', false, 'weak: the empty string is false'],
      [1, true, "a json.Number's text through strconv.ParseBool"],
      [0, false, "a json.Number's text through strconv.ParseBool"],
      [2, refused, '"2" is no boolean to strconv.ParseBool'],
      ['yes', refused, 'strconv.ParseBool refuses it'],
      ['tRUE', refused, 'strconv.ParseBool is case-sensitive beyond its list'],
      [' true', refused, 'no trimming'],
      [['true'], refused, 'a list is not decoded into a bool'],
    ],
  ],
  [
    'TypeInt',
    typeInt,
    [
      [42, 42, 'an integer is itself'],
      [-7, -7, 'negative integers'],
      ['42', 42, 'weak: strconv.ParseInt(s, 0, 64)'],
      ['-0x1f', -31, 'base 0: a 0x prefix is hex'],
      ['0o17', 15, 'base 0: a 0o prefix is octal'],
      ['010', 8, 'base 0: a leading 0 is octal'],
      ['0b101', 5, 'base 0: a 0b prefix is binary'],
      ['1_000', 1000, 'base 0: underscores between digits'],
      ['', 0, 'weak: the empty string is 0'],
      [true, 1, 'weak: a bool is 1 or 0'],
      [false, 0, 'weak: a bool is 1 or 0'],
      [1.5, refused, 'json.Number\'s text "1.5" is no integer to strconv.ParseInt'],
      ['1.0', refused, 'strconv.ParseInt refuses a fraction'],
      ['1e3', refused, 'strconv.ParseInt refuses an exponent'],
      [' 42', refused, 'no trimming'],
      ['08', refused, 'a leading 0 is octal, and 8 is no octal digit'],
      ['1__0', refused, 'underscores only between digits'],
      ['_1', refused, 'underscores only between digits'],
      ['9223372036854775808', refused, 'beyond int64'],
      ['9007199254740993', refused, 'beyond what a JavaScript number holds exactly'],
      [[1], refused, 'a list is not decoded into an int'],
    ],
  ],
  [
    'TypeMap',
    typeMap,
    [
      [{ a: 1, b: { c: true } }, { a: 1, b: { c: true } }, 'a map is itself'],
      [[], {}, 'weak: an empty list is an empty map'],
      [[{ a: 1 }, { a: 2, b: 3 }], { a: 2, b: 3 }, 'weak: a list of maps is merged, later keys winning'],
      ['a=b', refused, 'a string is no map'],
      [[{ a: 1 }, 'x'], refused, 'a list holding something else than maps'],
    ],
  ],
  [
    'TypeSlice',
    typeSlice,
    [
      [[1, 'a', true], [1, 'a', true], 'a list is itself'],
      ['a,b', ['a,b'], 'weak: a single value becomes a list of itself (no comma split)'],
      [5, [5], 'weak: a single value becomes a list of itself'],
      [{}, [], 'weak: an empty map is an empty list'],
      [{ a: 1 }, [{ a: 1 }], 'weak: a map becomes a list of itself'],
    ],
  ],
  [
    'TypeStringSlice',
    typeStringSlice,
    [
      [['a', ' b '], ['a', 'b'], 'strutil.TrimStrings'],
      [['a', '', 'a'], ['a', '', 'a'], 'no de-duplication and no dropping of blanks'],
      [[true, 2], ['1', '2'], 'weak: each element decoded into a string'],
      ['a,b', ['a,b'], 'weak: one string is a list of itself, not split'],
      ['', [], 'the empty string is an empty list'],
      ['\u00a0x\u0085', ['x'], 'strings.TrimSpace trims U+00A0 and U+0085'],
      ['\ufeffx', ['\ufeffx'], 'strings.TrimSpace keeps U+FEFF'],
      [{}, [], 'weak: an empty map is an empty list'],
      [['a', null], ['a', ''], 'a null element decodes to the zero string'],
      [[['a']], refused, 'a nested list is no string'],
      [{ a: 'b' }, refused, 'a map is no list of strings'],
    ],
  ],
  [
    'TypeCommaStringSlice',
    typeCommaStringSlice,
    [
      ['a, b ,c', ['a', 'b', 'c'], 'split on commas, each trimmed'],
      ['a,,b', ['a', '', 'b'], 'no dropping of blanks'],
      [['a,b', 'c'], ['a,b', 'c'], "a list's elements are not split"],
      [7, ['7'], 'a json.Number is its text, then split'],
      [true, ['1'], 'weak: a bool is "1"'],
      ['', [], 'the empty string is an empty list'],
      [[1, false], ['1', '0'], 'weak: each element decoded into a string'],
      [{ a: 1 }, refused, 'a map is no list of strings'],
    ],
  ],
  [
    'TypeKVPairs',
    typeKvPairs,
    [
      [{ a: 'b' }, { a: 'b' }, 'a map of strings is itself'],
      [{ log_raw: true, n: 5 }, { log_raw: '1', n: '5' }, 'weak: each value decoded into a string'],
      [{ a: null }, { a: '' }, 'a null value decodes to the zero string'],
      [['a=b', 'c=d=e'], { a: 'b', c: 'd=e' }, 'a list of "k=v" strings, split at the first ='],
      ['a=b', { a: 'b' }, 'weak: one string is a list of itself'],
      [[], {}, 'weak: an empty list is an empty map'],
      [[{ a: 1 }, { b: 'x' }], { a: '1', b: 'x' }, 'weak: a list of maps is merged'],
      [['a'], refused, 'a pair needs an ='],
      [['=b'], refused, 'a pair needs a key'],
      [{ a: { b: 'c' } }, refused, 'a nested map is no string'],
      [5, refused, '"5" is no key pair'],
    ],
  ],
];

describe("Vault's weakly decoded field types, case by case", () => {
  for (const [name, schema, cases] of table) {
    it(`${name}: ${cases.length} cases`, () => {
      for (const [input, expected, rule] of cases) {
        const result = schema.safeParse(input);
        const label = `${name} ${JSON.stringify(input)} (${rule})`;
        if (expected === refused) {
          expect(result.success, label).toBe(false);
          expect(result.error?.issues[0]?.message, label).toBeTruthy();
        } else {
          expect(result.error?.issues[0]?.message, label).toBeUndefined();
          expect(result.data, label).toEqual(expected);
        }
      }
    });
  }

  it('keeps a key named __proto__ as a key, in every map it builds', () => {
    const hostile = JSON.parse('{"__proto__": "x", "a": "b"}');
    const pairs = typeKvPairs.parse(hostile) as Record<string, string>;
    expect(Object.getPrototypeOf(pairs)).toBe(Object.prototype);
    expect(Object.hasOwn(pairs, '__proto__')).toBe(true);
    const listed = typeKvPairs.parse(['__proto__=x']) as Record<string, string>;
    expect(Object.getPrototypeOf(listed)).toBe(Object.prototype);
    expect(Object.hasOwn(listed, '__proto__')).toBe(true);
    const merged = typeMap.parse([JSON.parse('{"__proto__": {"polluted": true}}')]) as Record<string, unknown>;
    expect(Object.getPrototypeOf(merged)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
