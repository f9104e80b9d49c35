// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the strings are HIL templates, `${…}` is their syntax
/**
 * BindName and TokenNameFormat interpolation against the real hashicorp/hil: Debian's
 * golang-github-hashicorp-hil-dev, run by test/differential/hil/hil-harness.go the way Nomad's
 * lib/auth/binder.go InterpolateHIL runs it, on a seeded generated corpus plus fixed cases. Nomad pins HIL
 * 27a72121fd40 (2021); Debian ships 1e86c6b (2016), before HIL's hand-written parser: what the old one does
 * differently is listed in `knownDifferences` with the pinned source that says so, and the pinned version's
 * behaviour is fixed from its own parser_test.go and eval_test.go below.
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  bindNames,
  HilError,
  interpolateHil,
  templateNames,
  tokenName,
} from '../../packages/core/src/scheduler/acl/interpolate.ts';
import { buildGoHarness, runGoHarness } from '../support/go-harness.ts';

interface Case {
  template: string;
  vars: Record<string, string>;
  lowercase: boolean;
  /** Keyhaven's list variables, which Nomad does not have (the harness ignores them). */
  lists?: Record<string, string[]>;
}
interface Verdict {
  result?: string;
  error?: string;
}

const ours = (c: Case): Verdict => {
  try {
    return { result: interpolateHil(c.template, c.vars, c.lowercase) };
  } catch (error) {
    if (error instanceof HilError) return { error: error.message };
    throw error;
  }
};

const knownDifferences: { id: string; reason: string; applies: (c: Case, ours: Verdict, go: Verdict) => boolean }[] = [
  {
    id: 'old HIL has no comparisons, logic or conditionals',
    reason:
      'the pinned parser reads ==, !=, <, >, <=, >=, &&, ||, ! and ?: (parser/parser.go, binary_op.go; eval_test.go "foo ${1 == 1}", ' +
      '"foo ${true ? 5 : 7}"), checked by the fixed table below; 1e86c6b answers "parse error: syntax error"',
    applies: (c, _o, go) => /[=!<>&|?]/.test(c.template) && go.error === 'parse error: syntax error',
  },
  {
    id: 'old HIL does int math when the first operand is an int',
    reason:
      'the pinned check_types.go checkNumeric does float math when any operand is a float (eval_test.go "foo ${42+1.0}"); 1e86c6b looks at the first',
    applies: (c, o, go) =>
      /\d\s*[-+*/]\s*\d+\.\d/.test(c.template) && o.result !== undefined && go.result !== undefined,
  },
  {
    id: 'old HIL panics dividing by zero',
    reason:
      'the pinned builtins.go answers "divide by zero"; 1e86c6b panics (the harness reports it): an error in both',
    applies: (_c, o, go) =>
      o.error === 'divide by zero' && /^panic: runtime error: integer divide by zero/.test(go.error ?? ''),
  },
  {
    id: 'old HIL has no true/false',
    reason:
      'the pinned scanner reads `true`/`false` as BOOL tokens (scanner/scanner.go, parser_test.go "föo ${true}"); 1e86c6b has no bool type',
    applies: (c, o, go) =>
      /\$\{\s*(true|false)\s*\}/.test(c.template) &&
      o.result !== undefined &&
      /unknown variable accessed: (true|false)/.test(go.error ?? ''),
  },
  {
    id: 'old HIL keeps unknown backslash escapes',
    reason:
      'the pinned parser refuses a backslash before anything but \\, n or " inside a quoted string ("invalid backslash escape sequence", ' +
      'parser/parser.go parseStringToken); 1e86c6b copies it',
    applies: (_c, o, go) =>
      /invalid backslash escape sequence|unfinished backslash escape sequence/.test(o.error ?? '') &&
      go.result !== undefined,
  },
  {
    id: 'old HIL panics on `$` before a multi-byte character',
    reason:
      "1e86c6b's lexer slices a string out of range there (a panic, which the harness reports); the pinned scanner/scanner.go scanLiteral reads `$` as text",
    applies: (_c, o, go) =>
      /^panic: runtime error: slice bounds out of range/.test(go.error ?? '') && o.result !== undefined,
  },
  {
    id: 'old HIL drops a trailing `$`',
    reason:
      'the pinned scanLiteral keeps a `$` that ends the text (parser_test.go: "$" parses to the literal "$"); 1e86c6b drops it',
    applies: (c, o, go) => c.template.endsWith('$') && o.result !== undefined && o.result === `${go.result}$`,
  },
  {
    id: 'old HIL reads `1.` as a number',
    reason:
      'the pinned scanNumber gives back a trailing period (scanner/scanner.go), so `${1.}` is a parse error; 1e86c6b reads 1',
    applies: (c, o, go) => /\d\.\s*\}/.test(c.template) && o.error !== undefined && go.result !== undefined,
  },
];

const names = ['user', 'team', 'empty', 'mixed'];
// With claim values whose Go and JavaScript lower-casings differ (Go's strings.ToLower maps one code point at a time).
const values = [
  'Ada',
  'eng',
  '',
  'MiXeD-Case',
  'x y',
  'Å',
  '$x',
  '${y}',
  'a"b',
  '42',
  'İD',
  'ΟΔΟΣ',
  '\u212aEY',
  'ſS',
  'ß-ǅ',
  '\u0085x',
];
const text = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom('', 'team-', '-', 'a', ' ', 'é', 'x}', '{') },
  fc.constantFrom('$', '$$', '}', '\\', '"', '${', '$${'),
);
const variable = fc.constantFrom(...names, 'nope').map((name) => `value.${name}`);
const interpolation = fc.oneof(
  { weight: 5, arbitrary: variable.map((v) => `\${${v}}`) },
  variable.map((v) => `\${ ${v} }`),
  fc.tuple(text, variable).map(([t, v]) => `\${"${t.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}\${${v}}"}`),
  fc.constantFrom(
    '${42}',
    '${"lit"}',
    '${"a\\"b"}',
    '${"a\\nb"}',
    '${upper(value.user)}',
    '${value.user',
    '${}',
    '${value.user[0]}',
    '${"x"',
    '${1.5}',
    '${-1}',
  ),
  fc
    .tuple(variable, fc.constantFrom('+', '-', '*', '/', '%'), fc.constantFrom('1', '0', '2.5', 'value.user'))
    .map(([v, op, w]) => `\${${v} ${op} ${w}}`),
);
const template = fc.array(fc.oneof(text, interpolation), { minLength: 1, maxLength: 4 }).map((parts) => parts.join(''));
// Every mapped claim is present (Nomad sets a mapped claim that is absent to ""); `value.nope` stays unknown.
const vars = fc
  .tuple(...names.map(() => fc.constantFrom(...values)))
  .map((chosen) => Object.fromEntries(names.map((name, i) => [`value.${name}`, chosen[i] as string])));

describe('name interpolation against hashicorp/hil (Debian 1e86c6b, Nomad pins 27a72121fd40)', () => {
  let binary: string;
  beforeAll(() => {
    binary = buildGoHarness(new URL('./hil/hil-harness.go', import.meta.url).pathname);
  });

  it('agrees on generated and fixed templates, every difference explained', async () => {
    const generated = fc.sample(fc.tuple(template, vars, fc.boolean()), { seed: 20261123, numRuns: 600 });
    const fixedVars = { 'value.user': 'Ada', 'value.team': 'Eng', auth_method_name: 'corp', auth_method_type: 'JWT' };
    const fixed = [
      'team-${value.user}',
      '${value.user}',
      '$${value.user}',
      'a$$b',
      '${value.nope}',
      '${value.user',
      '${"lit"}',
      '${"a\\"b"}',
      '${1}',
      '${true}',
      '${value.user}-${value.team}',
      '${upper(value.user)}',
      '${value.user[0]}',
      '${1+2}',
      '${ value.user }',
      '${}',
      'a${"${value.user}"}b',
      '${"\\q"}',
      '${value-user}',
      '${value.user.x}',
      '${1.}',
      '${"x\\"}',
      '${auth_method_type}-${auth_method_name}',
      '${"foo\\\\bar"}',
      '${"foo\\\\"}',
      "foo ${func('baz')}",
      'foo ${123abcd}',
    ];
    const cases: Case[] = [
      ...generated.map(([t, v, lowercase]) => ({ template: t, vars: v, lowercase })),
      ...fixed.flatMap((t) => [true, false].map((lowercase) => ({ template: t, vars: fixedVars, lowercase }))),
      ...['team-${list.groups}', '${list.groups}-${value.user}', '${list.none}'].map((t) => ({
        template: t,
        vars: fixedVars,
        lowercase: true,
      })),
    ];
    const verdicts = await runGoHarness<Case, Verdict>(binary, cases);
    const counts: Record<string, number> = {};
    const unexplained: { template: string; vars: Record<string, string>; ours: Verdict; go: Verdict }[] = [];
    cases.forEach((c, i) => {
      const go = verdicts[i] as Verdict;
      const mine = ours(c);
      if (mine.result !== undefined ? mine.result === go.result : go.result === undefined) {
        const key = mine.result !== undefined ? 'agree: result' : 'agree: error';
        counts[key] = (counts[key] ?? 0) + 1;
        return;
      }
      const known = knownDifferences.find((d) => d.applies(c, mine, go));
      if (known) counts[known.id] = (counts[known.id] ?? 0) + 1;
      else unexplained.push({ template: c.template, vars: c.vars, ours: mine, go });
    });
    console.log(
      `hil differential: ${cases.length} templates (${generated.length} generated); by class: ${JSON.stringify({ ...counts, unexplained: unexplained.length })}`,
    );
    for (const { id, reason } of knownDifferences) console.log(`  ${id} (${counts[id] ?? 0}): ${reason}`);
    expect(unexplained).toEqual([]);
  });

  // parser_test.go at 27a72121fd40: the second column is whether HIL refuses the input.
  it('parses and refuses as the pinned HIL parser does', () => {
    const parses = (input: string) => {
      try {
        templateNames(input);
        return true;
      } catch (error) {
        if (!(error instanceof HilError)) throw error;
        return !/^parse error/.test(error.message);
      }
    };
    const table: [string, boolean][] = [
      ['', true],
      ['$', true],
      ['foo', true],
      ['$${var.foo}', true],
      ['foo ${123abcd}', false],
      ['foo ${*abcd}', false],
      ['foo ${var.bar}', true],
      ['foo ${var.bar.*.baz}', true],
      ['foo ${var.bar} baz', true],
      ['foo ${var.bar.0}', true],
      ['foo ${foo.foo-bar.baz.0.attr}', true],
      ['foo ${"bar"}', true],
      ['foo ${"bar\\nbaz"}', true],
      ['foo ${"bar \\"baz\\""}', true],
      ["foo ${func('baz')}", false],
      ['foo ${42}', true],
      ['foo ${3.14159}', true],
      ['föo ${true}', true],
      ['foo ${42+1}', true],
      ['foo ${-1}', true],
      ['${a < 5 ? a + 5 : a + 10}', true],
      ['${a||b&&c}', true],
      ['${föo()}', true],
      ['${foo(bar(baz))}', true],
      ['foo ${"bar ${baz}"}', true],
      ['${foo[1]} - ${bar[0]}', true],
      ['${(42+2)*2}', true],
      ['${foo=baz}', false],
      ['${foo&baz}', false],
      ['${foo|baz}', false],
      ['${foo[1][2]}', false],
      ['foo ${bar ${baz}}', false],
      ['foo ${${baz}}', false],
      ['${var', false],
      ['${"unclosed', false],
      ['${"bar\nbaz}', false],
      ['${ö(o("")', false],
      ['${"${"${"', false],
      ['${("$"', false],
    ];
    for (const [input, ok] of table) expect(parses(input), input).toBe(ok);
  });

  // eval_test.go at 27a72121fd40 (TestEvalInternal, the cases without variables): input, whether HIL fails, result.
  it('computes literals, arithmetic, comparisons, logic and conditionals as the pinned HIL does', () => {
    const table: [string, boolean, string][] = [
      ['foo ${-29}', false, 'foo -29'],
      ['foo ${42+1}', false, 'foo 43'],
      ['foo ${42-1}', false, 'foo 41'],
      ['foo ${42*2}', false, 'foo 84'],
      ['foo ${42/2}', false, 'foo 21'],
      ['foo ${42/0}', true, 'foo '],
      ['foo ${42%4}', false, 'foo 2'],
      ['foo ${42%0}', true, 'foo '],
      ['foo ${42.0+1.0}', false, 'foo 43'],
      ['foo ${42.0+1}', false, 'foo 43'],
      ['foo ${42+1.0}', false, 'foo 43'],
      ['foo ${0.5 * 75}', false, 'foo 37.5'],
      ['foo ${75 * 0.5}', false, 'foo 37.5'],
      ['foo ${42+2*2}', false, 'foo 46'],
      ['foo ${42+(2*2)}', false, 'foo 46'],
      ['foo ${true && false}', false, 'foo false'],
      ['foo ${false || true}', false, 'foo true'],
      ['foo ${"true" || true}', false, 'foo true'],
      ['foo ${true || "true"}', false, 'foo true'],
      ['foo ${"true" || "true"}', false, 'foo true'],
      ['foo ${1 == 2}', false, 'foo false'],
      ['foo ${1 == 1}', false, 'foo true'],
      ['foo ${1 > 2}', false, 'foo false'],
      ['foo ${2 > 1}', false, 'foo true'],
      ['foo ${"hello" == "hello"}', false, 'foo true'],
      ['foo ${"hello" == "goodbye"}', false, 'foo false'],
      ['foo ${1 == "2"}', false, 'foo false'],
      ['foo ${1 == "1"}', false, 'foo true'],
      ['foo ${"1" == 1}', false, 'foo true'],
      ['foo ${1.2 == 1}', false, 'foo false'],
      ['foo ${1 == 1.2}', false, 'foo true'],
      ['foo ${true == false}', false, 'foo false'],
      ['foo ${false == false}', false, 'foo true'],
      ['foo ${"true" == true}', false, 'foo true'],
      ['foo ${true == "true"}', false, 'foo true'],
      ['foo ${! true}', false, 'foo false'],
      ['foo ${! false}', false, 'foo true'],
      ['foo ${true ? 5 : 7}', false, 'foo 5'],
      ['foo ${false ? 5 : 7}', false, 'foo 7'],
      ['foo ${"true" ? 5 : 7}', false, 'foo 5'],
      ['foo ${false ? 5 : 6.5}', false, 'foo 6'],
      ['foo ${false ? "12" : 16}', false, 'foo 16'],
      ['foo ${3 > 2 ? 5 : 7}', false, 'foo 5'],
    ];
    for (const [input, fails, result] of table) {
      if (fails) expect(() => interpolateHil(input, {}, false), input).toThrow(HilError);
      else expect(interpolateHil(input, {}, false), input).toEqual(result);
    }
    // Implicit conversions of claim values, and every operand evaluated (both branches of ?:).
    const vars = { 'value.n': '42', 'value.hex': '0x10', 'value.b': 'true', 'value.user': 'Ada' };
    expect(interpolateHil('${value.n + 1}-${value.hex * 2}', vars, false)).toEqual('43-32');
    expect(interpolateHil('${value.b ? "admin" : "user"}', vars, false)).toEqual('admin');
    expect(interpolateHil('${value.user == "Ada" ? "a" : "b"}', vars, false)).toEqual('a');
    expect(() => interpolateHil('${true ? "1" : value.user + 1}', vars, false)).toThrow(/parsing "Ada"/);
    expect(() => interpolateHil('${1.5 % 2}', {}, false)).toThrow(
      'At column 3, line 1: modulo cannot be used with floats',
    );
    expect(interpolateHil('${1000000.0} ${0.00001} ${123456.7} ${9223372036854775807 + 1}', {}, false)).toEqual(
      '1e+06 1e-05 123456.7 -9223372036854775808',
    );
  });

  // eval_test.go at 27a72121fd40, and Nomad's binder: lowercased values, the default token name, its errors.
  it('evaluates as the pinned HIL and Nomad binder do', () => {
    const claims = { value: { user: 'Ada', team: 'Eng-Ops' }, list: { groups: ['Eng', 'ops'] } };
    expect(interpolateHil('Hello World', {}, false)).toEqual('Hello World');
    expect(interpolateHil('${"foo\\\\bar"}', {}, false)).toEqual('foo\\bar');
    expect(interpolateHil('${"foo\\\\\\\\bar"}', {}, false)).toEqual('foo\\\\bar');
    expect(interpolateHil('${"foo\\\\"}', {}, false)).toEqual('foo\\');
    expect(interpolateHil('${true} ${42} ${3.5}', {}, false)).toEqual('true 42 3.5');
    expect(interpolateHil('a$$b', {}, false)).toEqual('a$$b'); // no "${": used as written
    expect(interpolateHil('a$$b${"c"}', {}, false)).toEqual('a$bc');
    expect(bindNames('role', 'team-${value.team}', claims)).toEqual(['team-eng-ops']);
    expect(bindNames('policy', '${value.user}', claims)).toEqual(['ada']);
    // List claims are for selectors only: in a bind name they are unknown variables, and the login fails.
    expect(() => bindNames('role', 'team-${list.groups}', claims)).toThrow(
      'cannot compute "role" bind name for bind target: 1:8: unknown variable accessed: list.groups',
    );
    // A mapped claim the token lacks is "" (Nomad's NewIdentity), an unmapped one unknown.
    expect(bindNames('policy', 'team-${value.email}', claims, ['user', 'team', 'email'])).toEqual(['team-']);
    expect(bindNames('policy', '${value.email == "" ? "guest" : "user"}', claims, ['email'])).toEqual(['guest']);
    expect(() => bindNames('role', '${value.nope}', claims)).toThrow(
      'cannot compute "role" bind name for bind target: 1:3: unknown variable accessed: value.nope',
    );
    expect(() => bindNames('role', 'a ${value.user}', claims)).toThrow(
      'computed "role" bind name for bind target is invalid: "a ada"',
    );
    expect(() => bindNames('role', '${value.user', claims)).toThrow(
      /parse error at 1:13: expected "}" but found end of string/,
    );
    expect(tokenName('', claims, { Name: 'corp', Type: 'JWT' })).toBe('JWT-corp');
    expect(tokenName('${auth_method_name}-${value.user}', claims, { Name: 'corp', Type: 'JWT' })).toBe('corp-Ada');
    expect(() => tokenName('${value.nope}', claims, { Name: 'corp', Type: 'JWT' })).toThrow(
      /failed to generate ACL token name: 1:3: unknown variable accessed: value.nope/,
    );
    expect(templateNames('team-${value.team}-${list.groups}')).toEqual(['value.team', 'list.groups']);
    expect(templateNames('${value.a == "x" ? "a" : "b"}')).toEqual(['value.a']);
    expect(() => templateNames(`\${${'('.repeat(5000)}1${')'.repeat(5000)}}`)).toThrow(
      'parse error: the template is nested too deeply',
    );
    expect(() => templateNames('${1.5 % value.a}')).toThrow(/modulo cannot be used with floats/);
  });
});
