import { describe, expect, it } from 'vitest';
import { BexprSyntaxError, bexprMatches, evaluateBexpr, parseBexpr, selectorMatches } from './bexpr.ts';

// Shaped like Nomad's ACLAuthClaims: every value is a string, every list a list of strings.
const claims = {
  value: {
    email: 'ada@example.com',
    'project-id': 'p1',
    sub: 'ada',
    empty: '',
    num: '42',
    'co:lon': 'co:lon',
    'a/b': 'slash',
    'ti~lde': 't',
  },
  list: { groups: ['eng', 'ops'], 'my-roles': ['admin'], none: [] },
};
const holds = (text: string) => bexprMatches(parseBexpr(text), claims);
/** The evaluation error go-bexpr would return, or the boolean. */
const outcome = (text: string) => {
  try {
    return evaluateBexpr(parseBexpr(text), claims);
  } catch (error) {
    return (error as Error).message;
  }
};
const syntaxError = (text: string) => {
  try {
    parseBexpr(text);
  } catch (error) {
    expect(error).toBeInstanceOf(BexprSyntaxError);
    return (error as Error).message;
  }
  throw new Error(`${text} parsed`);
};

describe('bexpr (go-bexpr v0.1.13)', () => {
  it('evaluates every operator', () => {
    expect(holds('value.sub == "ada"')).toBe(true);
    expect(holds('value.sub == ada')).toBe(true);
    expect(holds('value.sub != "ada"')).toBe(false);
    expect(holds('"eng" in list.groups')).toBe(true);
    expect(holds('"dev" not in list.groups')).toBe(true);
    expect(holds('list.groups contains "ops"')).toBe(true);
    expect(holds('list.groups not contains "ops"')).toBe(false);
    expect(holds('value.email matches "@example\\\\.com$"')).toBe(true);
    expect(holds('value.email not matches "^bob"')).toBe(true);
    expect(holds('list.none is empty')).toBe(true);
    expect(holds('list.groups is not empty')).toBe(true);
    expect(holds('value.empty is empty')).toBe(true);
    expect(holds('"example" in value.email')).toBe(true);
    expect(holds('"sub" in value')).toBe(true);
  });

  it('compares numbers as the text of the literal (the values are strings)', () => {
    expect(holds('value.num == 42')).toBe(true);
    expect(holds('value.num != 42')).toBe(false);
    expect(holds('value.num == 42.0')).toBe(false);
    expect(holds('value.num != 43')).toBe(true);
    expect(selectorMatches('"42" == value.num', claims)).toBe(false); // `"42"` is no selector: a syntax error, no match
  });

  it('compares a boolean field as go-bexpr does, parsing the literal with strconv.ParseBool', () => {
    const stub = { Drain: false, Status: 'ready' };
    const on = (text: string) => evaluateBexpr(parseBexpr(text), stub);
    expect(on('Drain == false')).toBe(true);
    expect(on('Drain == "F"')).toBe(true);
    expect(on('Drain == 1')).toBe(false);
    expect(on('Drain != true and Status == "ready"')).toBe(true);
    expect(() => on('Drain == "maybe"')).toThrow('strconv.ParseBool: parsing "maybe": invalid syntax');
  });

  it('combines with and, or, not and parentheses, and precedence is not > and > or', () => {
    expect(holds('value.sub == "ada" and "eng" in list.groups')).toBe(true);
    expect(holds('value.sub == "bob" or "eng" in list.groups')).toBe(true);
    expect(holds('not value.sub == "bob"')).toBe(true);
    expect(holds('not not value.sub == "ada"')).toBe(true);
    expect(holds('value.sub == "bob" and "eng" in list.groups or "ops" in list.groups')).toBe(true);
    expect(holds('value.sub == "bob" and ("eng" in list.groups or "ops" in list.groups)')).toBe(false);
    expect(holds('( value.sub == "ada" )')).toBe(true);
  });

  // evaluate_test.go (v0.1.13): JSON pointers, index segments, `/` in identifiers, punctuation in pointers.
  it('selects through JSON pointers, index expressions and numeric segments', () => {
    expect(holds('"/list/my-roles" contains "admin"')).toBe(true);
    expect(holds('"/value/co:lon" == "co:lon"')).toBe(true);
    expect(holds('"/value/a~1b" == slash')).toBe(true);
    expect(holds('"/value/ti~0lde" == t')).toBe(true);
    expect(holds('value["project-id"] == "p1"')).toBe(true);
    expect(holds('value[`a/b`] == "slash"')).toBe(true);
    expect(holds('list.groups.0 == "eng"')).toBe(true);
    expect(holds('list.groups["1"] == "ops"')).toBe(true);
    expect(holds('value.a/b == "slash"')).toBe(true);
    // A string that is a well-formed JSON pointer is read as one even as a value, and loses its slashes.
    expect(holds('value.sub == "/ada"')).toBe(true);
  });

  it('applies the missing-key semantics: a key missing from a map has a fixed answer per operator', () => {
    expect(holds('value.missing == "x"')).toBe(false);
    expect(holds('value.missing != "x"')).toBe(true);
    expect(holds('"x" in list.missing')).toBe(false);
    expect(holds('"x" not in list.missing')).toBe(true);
    expect(holds('list.missing is empty')).toBe(true);
    expect(holds('list.missing is not empty')).toBe(false);
    expect(holds('value.missing matches ".*"')).toBe(false);
    expect(holds('value.missing not matches ".*"')).toBe(true);
  });

  it('makes every other failure an evaluation error, which Nomad counts as no match', () => {
    expect(outcome('list.groups.5 != "eng"')).toBe(
      'error finding value in datum: /list/groups/5 at part 2: index 5 is out of range (length = 2)',
    );
    expect(holds('list.groups.5 != "eng"')).toBe(false);
    expect(outcome('value.missing.x != "a"')).toBe(
      'error finding value in datum: /value/missing/x at part 1: couldn\'t find key "missing"',
    );
    expect(outcome('value.sub.x != "a"')).toBe(
      'error finding value in datum: /value/sub/x: at part 2, invalid value kind: string',
    );
    expect(outcome('nope.sub != "ada"')).toBe(
      'error finding value in datum: /nope/sub at part 0: couldn\'t find key: struct field with name "nope"',
    );
    expect(outcome('Value.sub == "ada"')).toMatch(/struct field with name "Value"/);
    expect(outcome('list.groups == "eng"')).toBe('unable to find suitable primitive comparison function for matching');
    expect(outcome('list.groups matches "eng"')).toMatch(/not convertible to \[\]byte/);
    expect(outcome('list.groups.x == "eng"')).toMatch(/couldn't convert value "x" to type int/);
    expect(holds('not (list.groups.5 == "eng")')).toBe(false);
    // and/or stop early, so an error after a decided left side is never reached.
    expect(holds('value.sub == "bob" and list.groups.5 == "x"')).toBe(false);
    expect(holds('value.sub == "ada" or list.groups.5 == "x"')).toBe(true);
    // Index segments are strconv.ParseInt(…, 0, 64) after mapstructure's weak decoding ("" is 0).
    expect(holds('list.groups["0x1"] == "ops"')).toBe(true);
    expect(holds('list.groups[""] == "eng"')).toBe(true);
    expect(holds('list.groups.01 == "ops"')).toBe(true); // a leading 0 is octal
    expect(outcome('list.groups.08 == "ops"')).toMatch(/couldn't convert value "08" to type int/);
    expect(outcome('list.groups["-1"] == "ops"')).toMatch(/index -1 is out of range/);
    // A collection's index is an int: the value is read with strconv.ParseInt(…, 0, 64).
    expect(holds('any list.groups as i, _ { i == "0x1" }')).toBe(true);
    expect(outcome('any list.groups as i, _ { i == "x" }')).toMatch(/error getting match value in expression/);
  });

  // evaluate_test.go (v0.1.13): any/all with default, key/index and value bindings.
  it('evaluates any and all over lists and maps', () => {
    expect(holds('any list.groups as g { g == "ops" }')).toBe(true);
    expect(holds('all list.groups as g { g == "ops" }')).toBe(false);
    expect(holds('all list.groups as g { g != "hr" }')).toBe(true);
    expect(holds('all list.groups as i, _ { i != 5 }')).toBe(true);
    expect(holds('any list.groups as i, g { i == 1 and g == "ops" }')).toBe(true);
    expect(holds('any list.groups as _, g { g == "eng" }')).toBe(true);
    expect(holds('any value as k { k == "sub" }')).toBe(true);
    expect(holds('any value as k, v { k == "sub" and v == "ada" }')).toBe(true);
    expect(holds('all list.missing as g { g == "x" }')).toBe(true);
    expect(holds('any list.missing as g { g == "x" }')).toBe(false);
    expect(holds('any list as name, members { "eng" in members }')).toBe(true);
    expect(holds('any list.groups as g { "/g" == "eng" }')).toBe(true);
    expect(outcome('any value as k { k.Color == "red" }')).toBe('/k references a string so /k/Color is invalid');
    expect(outcome('any value.sub as k { k == "a" }')).toBe('value.sub is not a list or a map');
    expect(outcome('any list.groups as g, g { g == "a" }')).toBe(
      '"g" cannot be used as a placeholder for both the index and the value',
    );
    expect(holds('(any list.groups as g { g == "ops" })')).toBe(true);
    expect(holds('value.sub == "x" or any list.groups as g { g == "ops" }')).toBe(true);
  });

  it('reads Go string literals: escapes, raw strings', () => {
    expect(holds('value.sub == "\\x61\\u0064\\141"')).toBe(true);
    expect(holds('value.sub == `ada`')).toBe(true);
    expect(holds('value.email matches `^ada@`')).toBe(true);
    expect(holds('"\\U0001F600" in value.sub')).toBe(false);
    expect(syntaxError('value.sub == "\\q"')).toBe('1:14 (13): rule "string": invalid syntax');
    expect(syntaxError('value.sub == "\\\'"')).toBe('1:14 (13): rule "string": invalid syntax');
    expect(syntaxError('value.sub == "\\ud800"')).toBe('1:14 (13): rule "string": invalid syntax');
  });

  // grammar_test.go (v0.1.13), error for error.
  it('refuses what go-bexpr refuses, with its messages and positions', () => {
    expect(syntaxError('"/hy-phen/under_score/pi|pe/do.t/ti~lde/" == 3')).toBe(
      '1:43 (42): no match found, expected: "in", "not" or [ \\t\\r\\n]',
    );
    expect(syntaxError('foo == "12x')).toBe('1:12 (11): rule "string": Unterminated string literal');
    expect(syntaxError('foo == `12x')).toBe('1:12 (11): rule "string": Unterminated string literal');
    expect(syntaxError('foo == 3x')).toBe('1:9 (8): rule "number": Invalid number literal');
    expect(syntaxError('foo[3] == abc')).toBe('1:5 (4): rule "index": Invalid index');
    expect(syntaxError('x in foo["abc"')).toBe('1:15 (14): rule "index": Unclosed index expression');
    expect(syntaxError('foo["abc" == 3')).toBe('1:11 (10): rule "index": Unclosed index expression');
    expect(syntaxError('x in 32')).toBe('1:6 (5): rule "match": Invalid selector');
    expect(syntaxError('x in foo and ')).toBe(
      '1:14 (13): no match found, expected: "(", "-", "0", "\\"", "`", "not", [ \\t\\r\\n], [1-9] or [a-zA-Z]',
    );
    expect(syntaxError('x in foo or ')).toBe(
      '1:13 (12): no match found, expected: "(", "-", "0", "\\"", "`", "all", "any", "not", [ \\t\\r\\n], [1-9] or [a-zA-Z]',
    );
    expect(syntaxError('x in foo or not ')).toBe(
      '1:17 (16): no match found, expected: "!=", "(", "-", "0", "==", "\\"", "`", "contains", "in", "is", "matches", "not", [ \\t\\r\\n], [1-9] or [a-zA-Z]',
    );
    expect(syntaxError('(foo == 4')).toBe('1:10 (9): rule "grouping": Unmatched parentheses');
    expect(syntaxError('all group.tasks as { t.name == "hello" }')).toBe(
      '1:20 (19): no match found, expected: "_", [ \\t\\r\\n] or [a-zA-Z]',
    );
    expect(syntaxError('all as t { t.name == "hello" }')).toBe(
      '1:8 (7): no match found, expected: "as" or [ \\t\\r\\n]',
    );
  });

  it('refuses what the issue lists: dashes in bare words, quoted segments, \\" in strings, 042, 1e3, 0x2A, 3x', () => {
    expect(syntaxError('group-name in list.groups')).toMatch(/^1:6 \(5\): no match found/);
    expect(syntaxError('value."first-name" == "x"')).toMatch(/^1:7 \(6\): no match found/);
    expect(syntaxError('value.sub == "a\\"b"')).toBe('1:14 (13): rule "string": invalid syntax');
    expect(syntaxError('value.num == 042')).toBe('1:15 (14): rule "number": Invalid number literal');
    expect(syntaxError('value.num == 1e3')).toBe('1:15 (14): rule "number": Invalid number literal');
    expect(syntaxError('value.num == 0x2A')).toBe('1:15 (14): rule "number": Invalid number literal');
    expect(syntaxError('value.num == 3x')).toBe('1:15 (14): rule "number": Invalid number literal');
    expect(syntaxError('any list.groups as g { g == 1}')).toBe('1:30 (29): rule "number": Invalid number literal');
    expect(syntaxError('any list.groups as g { g == "a" } and value.sub == "ada"')).toMatch(/no match found/);
    expect(syntaxError('not any list.groups as g { g == "a" }')).toMatch(/no match found/);
    expect(syntaxError('_x == "a"')).toMatch(/no match found/);
    expect(syntaxError('value.sub=="ada"or value.sub=="bob"')).toMatch(/no match found/);
  });

  it('counts positions as go-bexpr does: columns in characters, offsets in UTF-8 bytes', () => {
    expect(syntaxError('value.sub == "Å" and')).toBe('1:21 (21): no match found, expected: [ \\t\\r\\n]');
  });

  it('compiles matches patterns as RE2: RE2 syntax works, JavaScript-only syntax is refused', () => {
    expect(holds('value.sub matches "(?i)ADA"')).toBe(true);
    expect(holds('value.sub matches `^\\pL+$`')).toBe(true);
    expect(holds('value.sub matches `^[[:alpha:]]+$`')).toBe(true);
    expect(holds('value.sub matches `\\Aada\\z`')).toBe(true);
    expect(holds('value.sub matches `(?P<x>a)da`')).toBe(true);
    expect(holds('value.email matches `\\Q@example.com\\E`')).toBe(true);
    expect(holds('value.sub matches `^a$`')).toBe(false);
    for (const pattern of ['(?=a)', '(?!a)', '(?<=a)b', '(a)\\1', 'a{2,1001}', '\\cA', '(']) {
      expect(() => parseBexpr(`value.sub matches \`${pattern}\``), pattern).toThrow(
        /Failed to compile regular expression/,
      );
    }
  });

  it('answers as Nomad binder does for a whole selector: empty matches, unparsable never does', () => {
    expect(selectorMatches('', claims)).toBe(true);
    expect(selectorMatches('value.sub == "ada"', claims)).toBe(true);
    expect(selectorMatches('value.sub ==', claims)).toBe(false);
    expect(selectorMatches('value.sub matches "(?=a)"', claims)).toBe(false);
  });

  it('stays linear in the depth of parentheses', () => {
    const deep = `${'('.repeat(40)}value.sub == "ada"${')'.repeat(40)}`;
    expect(holds(deep)).toBe(true);
    expect(() => parseBexpr(`${'('.repeat(40)}value.sub == "ada"${')'.repeat(39)}`)).toThrow(/Unmatched parentheses/);
    expect(() => parseBexpr(`${'('.repeat(40)}value.sub ==`)).toThrow(BexprSyntaxError);
    // Past the stack's end: a syntax error, not a crash (go-bexpr would never answer).
    expect(() => parseBexpr(`${'('.repeat(5000)}value.sub == "ada"${')'.repeat(5000)}`)).toThrow(
      '1:1 (0): expression is nested too deeply',
    );
    expect(holds(Array(2000).fill('value.sub == "ada"').join(' and '))).toBe(true);
  });
});
