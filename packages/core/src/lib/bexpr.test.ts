import { describe, expect, it } from 'vitest';
import { BexprSyntaxError, bexprMatches, parseBexpr } from './bexpr.ts';

const claims = {
  value: { email: 'ada@example.com', 'project-id': 'p1', sub: 'ada', empty: '' },
  list: { groups: ['eng', 'ops'], 'my-roles': ['admin'], none: [] },
};
const holds = (text: string) => bexprMatches(parseBexpr(text), claims);

describe('bexpr', () => {
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
  });

  it('combines with and, or, not and parentheses, and precedence is not > and > or', () => {
    expect(holds('value.sub == "ada" and "eng" in list.groups')).toBe(true);
    expect(holds('value.sub == "bob" or "eng" in list.groups')).toBe(true);
    expect(holds('not value.sub == "bob"')).toBe(true);
    expect(holds('value.sub == "bob" and "eng" in list.groups or "ops" in list.groups')).toBe(true);
    expect(holds('value.sub == "bob" and ("eng" in list.groups or "ops" in list.groups)')).toBe(false);
    expect(holds('( value.sub == "ada" )')).toBe(true);
  });

  it('selects names with dashes through quoted segments, JSON pointers and index expressions', () => {
    expect(holds('value."project-id" == "p1"')).toBe(true);
    expect(holds('"admin" in list."my-roles"')).toBe(true);
    expect(holds('"/list/my-roles" contains "admin"')).toBe(true);
    expect(holds('value["project-id"] == "p1"')).toBe(true);
    expect(holds('list.groups.0 == "eng"')).toBe(true);
  });

  it('applies the missing-key semantics: a missing map key has a fixed answer per operator, an unknown field is no match', () => {
    expect(holds('value.missing == "x"')).toBe(false);
    expect(holds('value.missing != "x"')).toBe(true);
    expect(holds('"x" in list.missing')).toBe(false);
    expect(holds('"x" not in list.missing')).toBe(true);
    expect(holds('list.missing is empty')).toBe(true);
    expect(holds('list.missing is not empty')).toBe(false);
    expect(holds('nope.sub == "ada"')).toBe(false);
    expect(holds('not nope.sub == "ada"')).toBe(false);
  });

  it('reports the position of a syntax error', () => {
    expect(() => parseBexpr('value.sub == ')).toThrow(BexprSyntaxError);
    try {
      parseBexpr('value.sub === "x"');
    } catch (error) {
      expect(error).toBeInstanceOf(BexprSyntaxError);
      expect((error as BexprSyntaxError).column).toBeGreaterThan(1);
      expect((error as Error).message).toMatch(/^1:\d+ \(\d+\): /);
    }
    expect(() => parseBexpr('(value.sub == "x"')).toThrow(BexprSyntaxError);
    expect(() => parseBexpr('value.sub matches "("')).toThrow(/regular expression/);
    expect(() => parseBexpr('value.sub == "x" and')).toThrow(BexprSyntaxError);
  });
});
