/**
 * packages/core/src/scheduler/acl/closest-glob.ts (with lib/glob.ts, as the policy rules call it) against Go (test/differential/closest-glob/closest-glob-oracle.go,
 * built with Debian's Go and go-glob): for generated sets of glob rules and names, the rule Nomad's ACL would apply.
 * The sets are built so that several globs tie (Nomad's `<=` comparison makes the winner depend on the sort's steps),
 * with more than 20 matching globs in some (Go's stable sort switches from insertion sort to merging there).
 */
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { globMatches } from '../../packages/core/src/lib/glob.ts';
import { closestGlob } from '../../packages/core/src/scheduler/acl/closest-glob.ts';
import { buildGoHarness, runGoHarness } from '../support/go-harness.ts';

const oracleSource = fileURLToPath(new URL('./closest-glob/closest-glob-oracle.go', import.meta.url));

interface Case {
  globs: string[];
  name: string;
}
interface Verdict {
  winner: string;
  found: boolean;
}

const ours = ({ globs, name }: Case): Verdict => {
  const winner = closestGlob(new Map(globs.map((glob) => [glob, glob])), name, globMatches);
  return winner === undefined ? { winner: '', found: false } : { winner, found: true };
};

const alphabet = fc.constantFrom('a', 'b', '-', '*');
const globText = fc.array(alphabet, { minLength: 1, maxLength: 6 }).map((chars) => chars.join(''));
const nameText = fc
  .array(fc.constantFrom('a', 'b', '-'), { minLength: 0, maxLength: 8 })
  .map((chars) => chars.join(''));

describe("the closest glob (closest-glob.ts) against Nomad's rule in Go", () => {
  let oracle: string;
  beforeAll(() => {
    oracle = buildGoHarness(oracleSource);
  }, 600_000);

  it('picks the rule Nomad picks, ties and long lists included', async () => {
    const cases: Case[] = fc.sample(
      fc.record({ globs: fc.uniqueArray(globText, { minLength: 1, maxLength: 40 }), name: nameText }),
      { numRuns: 3000, seed: 40 },
    );
    // Many globs that all match one name with the same score (20+ ties: Go's merge steps decide).
    for (const size of [2, 3, 5, 19, 20, 21, 33, 41, 64]) {
      const globs = Array.from(
        { length: size },
        (_, i) => `${'x'.repeat(i % 4)}*${String.fromCharCode(97 + (i % 26))}${i}`,
      );
      cases.push({ globs: globs.map((glob) => glob.replace(/\d+$/, '')), name: 'xxxq' });
      cases.push({ globs: Array.from({ length: size }, (_, i) => `*${'-'.repeat(i % 3)}*${i}*`), name: '--1--2--3' });
    }
    const unique = cases.map((c) => ({ globs: [...new Set(c.globs)], name: c.name }));
    const verdicts = await runGoHarness<Case, Verdict>(oracle, unique);
    const mismatches = unique
      .map((c, i) => ({ c, go: verdicts[i], mine: ours(c) }))
      .filter(({ go, mine }) => go?.winner !== mine.winner || go?.found !== mine.found);
    expect(mismatches.slice(0, 5)).toEqual([]);
    expect(verdicts.filter((v) => v.found).length).toBeGreaterThan(500);
  }, 120_000);
});
