/**
 * packages/core/src/lib/glob.ts against go-glob itself (test/differential/go-glob/go-glob-oracle.go, built with
 * Debian's Go and golang-github-ryanuber-go-glob-dev, v1.0.0: the matcher Vault and Nomad use): go-glob's own test
 * table, the corner cases of its algorithm (a repeated prefix, parts that overlap, empty parts, an empty subject),
 * Unicode and lone surrogates, and generated patterns and subjects over a small alphabet so that stars, repeats and
 * overlaps meet often.
 */
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { Glob, globMatches } from '../../packages/core/src/lib/glob.ts';
import { buildGoHarness, runGoHarness } from '../support/go-harness.ts';

const oracleSource = fileURLToPath(new URL('./go-glob/go-glob-oracle.go', import.meta.url));

interface Case {
  pattern: string;
  subject: string;
}

const sentence = 'this is a ϗѾ test';
// go-glob's glob_test.go, and what its history fixed (a panic on an empty subject, a repeated prefix).
const table: Case[] = [
  { pattern: '', subject: '' },
  { pattern: '', subject: 'test' },
  { pattern: 'test', subject: '' },
  { pattern: '*', subject: '' },
  { pattern: '**', subject: '' },
  { pattern: '***', subject: '' },
  { pattern: '*'.repeat(1000), subject: '' },
  { pattern: `${'*'.repeat(1000)}x`, subject: '' },
  { pattern: `x${'*'.repeat(1000)}`, subject: '' },
  { pattern: `x${'*'.repeat(1000)}x`, subject: '' },
  { pattern: 'test', subject: 'test' },
  ...[
    '*test',
    'this*',
    'this*test',
    '*is *',
    '*is*a*',
    '**test**',
    '**is**a***test*',
    '* *',
    '*',
    '**********',
    '*Ѿ*',
    '*is a ϗѾ *',
    'test*',
    '*is',
    '*no*',
    ' ',
    '* ',
    ' *',
    '*ʤ*',
    'this*this is a test',
  ].map((pattern) => ({ pattern, subject: sentence })),
  { pattern: 'this*this is a test', subject: 'this is a test' },
  { pattern: 'a*b', subject: 'a' },
  { pattern: 'a*bc', subject: 'a' },
  { pattern: 'ab*ba', subject: 'aba' },
  { pattern: 'ab*ba', subject: 'abba' },
  { pattern: 'a*a', subject: 'a' },
  { pattern: 'a*a', subject: 'aa' },
  { pattern: '*aab*', subject: 'aaab' },
  { pattern: '*abab*c', subject: 'ababababc' },
  { pattern: '*-*-*-prod', subject: 'us-east-1-prod' },
  { pattern: '*-*-*-prod', subject: 'us-east-prod' },
  { pattern: '*-*-*-prod', subject: `${'-'.repeat(200)}prod` },
  { pattern: 'team-*', subject: 'team-\nadmin' },
  { pattern: '*\n*', subject: 'a\nb' },
  { pattern: '.*', subject: 'x' },
  { pattern: '[a]*', subject: '[a]b' },
  { pattern: '^a$', subject: '^a$' },
  { pattern: '*🔑', subject: 'key🔑' },
  { pattern: '*\ud83d', subject: 'key🔑' },
  { pattern: '*\udd11', subject: 'key🔑' },
  { pattern: '\ud800*', subject: '\ufffdx' },
  { pattern: '\ufffd*', subject: '\ud800x' },
  { pattern: '*\udc00', subject: 'a\udc00' },
];

const piece = fc.constantFrom('a', 'b', 'ab', 'aa', '-', '*', '**', 'Ѿ', '🔑', '\n', '\ud83d', '\udd11');
const small = fc.array(piece, { minLength: 0, maxLength: 8 }).map((pieces) => pieces.join(''));
// Half the subjects are their pattern with each star filled in (mostly matches), half are drawn on their own.
const generated: Case[] = fc
  .sample(fc.tuple(small, small, fc.boolean(), fc.constantFrom('', 'a', 'ba', 'Ѿ\n', '🔑b')), {
    numRuns: 3000,
    seed: 39,
  })
  .map(([pattern, other, filled, fill]) => ({
    pattern,
    subject: filled ? pattern.split('*').join(fill) : other.replaceAll('*', 'a'),
  }));

describe("go-glob's matching (lib/glob.ts) against go-glob", () => {
  let oracle: string;
  beforeAll(() => {
    oracle = buildGoHarness(oracleSource);
  }, 600_000);

  it('answers every case of the table and thousands of generated ones as go-glob does', async () => {
    const cases = [...table, ...generated];
    const verdicts = await runGoHarness<Case, { match: boolean }>(oracle, cases);
    const wrong = cases
      .map((c, i) => ({ ...c, go: verdicts[i]?.match, ours: globMatches(c.pattern, c.subject) }))
      .filter(({ go, ours }) => go !== ours);
    expect(wrong.slice(0, 10)).toEqual([]);
    // The generated cases are not all trivial: both answers occur often, and the table's do too.
    const matched = verdicts.filter((verdict) => verdict.match).length;
    expect(matched).toBeGreaterThan(cases.length / 10);
    expect(cases.length - matched).toBeGreaterThan(cases.length / 10);
  });

  it('a Glob made once answers as the function does, subject after subject', async () => {
    const patterns = ['*-*-*-prod', 'a*b*a', '*', '', 'exact'];
    const subjects = ['us-east-1-prod', 'aba', 'abba', '', 'exact', 'a-b-c-prod\n'];
    for (const pattern of patterns) {
      const glob = new Glob(pattern);
      for (const subject of subjects) expect(glob.matches(subject)).toBe(globMatches(pattern, subject));
    }
    const cases = patterns.flatMap((pattern) => subjects.map((subject) => ({ pattern, subject })));
    const verdicts = await runGoHarness<Case, { match: boolean }>(oracle, cases);
    expect(cases.map((c) => globMatches(c.pattern, c.subject))).toEqual(verdicts.map((verdict) => verdict.match));
  });
});
