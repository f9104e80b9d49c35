/**
 * packages/core/src/lib/go-strings.ts against Go itself (test/differential/go-strings/go-strings-oracle.go, built
 * with Debian's Go): unicode.ToLower/ToUpper and unicode.IsSpace over every code point, and strings.ToLower,
 * strings.ToUpper, strings.TrimSpace, strconv.Unquote and strconv.ParseBool over Unicode-heavy generated strings (Turkish dotted and
 * dotless i, final sigma, the Kelvin and Ångström signs, long s, U+0085, U+00A0, U+FEFF, U+2028, combining marks,
 * surrogate escapes).
 */
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  GoSyntaxError,
  goEqualFold,
  goIsSpace,
  goParseBool,
  goSimpleFold,
  goToLower,
  goToLowerRune,
  goToUpper,
  goToUpperRune,
  goTrimSpace,
  goUnquote,
  unicode14CaseRanges,
} from '../../packages/core/src/lib/go-strings.ts';
import { buildGoHarness, runGoHarness } from '../support/go-harness.ts';
import { trickyString, trickyUnquoteInput } from './unicode-arbitraries.ts';

const oracleSource = fileURLToPath(new URL('./go-strings/go-strings-oracle.go', import.meta.url));

interface Table {
  version: string;
  cased: [number, number, number][];
  folds: [number, number][];
  spaces: number[];
}
interface Verdict {
  out: string;
  error?: boolean;
}
type Op = 'lower' | 'upper' | 'trim' | 'unquote' | 'fold' | 'parsebool';

const ours = (op: Op, text: string): Verdict => {
  if (op === 'lower') return { out: goToLower(text) };
  if (op === 'upper') return { out: goToUpper(text) };
  if (op === 'trim') return { out: goTrimSpace(text) };
  if (op === 'parsebool') {
    const parsed = goParseBool(text);
    return parsed === undefined ? { out: 'false', error: true } : { out: String(parsed) };
  }
  if (op === 'fold') {
    const [a, b] = text.split('\0') as [string, string];
    return { out: String(goEqualFold(a, b)) };
  }
  try {
    return { out: goUnquote(text) };
  } catch (error) {
    if (!(error instanceof GoSyntaxError)) throw error;
    return { out: '', error: true };
  }
};

describe("Go's string semantics (go-strings.ts) against Go", () => {
  let oracle: string;
  beforeAll(() => {
    oracle = buildGoHarness(oracleSource);
  }, 600_000);

  it('maps, folds and classifies every code point as unicode.ToLower, ToUpper, SimpleFold and IsSpace do', async () => {
    const [table] = await runGoHarness<{ op: string }, Table>(oracle, [{ op: 'table' }]);
    expect(table?.version).toBe('13.0.0');
    const cased = new Map((table as Table).cased.map(([r, lower, upper]) => [r, [lower, upper]]));
    const spaces = new Set((table as Table).spaces);
    const folds = new Map((table as Table).folds);
    const wrong: string[] = [];
    // Unicode 14's case pairs: Go 1.19 has none of them; ours maps them as Go 1.21+ (and JavaScript) do.
    const newer = new Set(
      unicode14CaseRanges.flatMap(([first, last]) => Array.from({ length: last - first + 1 }, (_, i) => first + i)),
    );
    for (const r of newer) {
      const char = String.fromCodePoint(r);
      if (cased.has(r)) wrong.push(`U+${r.toString(16)}: Go 1.19 maps it, expected Unicode 13 to lack it`);
      if (
        String.fromCodePoint(goToLowerRune(r)) !== char.toLowerCase() ||
        String.fromCodePoint(goToUpperRune(r)) !== char.toUpperCase()
      ) {
        wrong.push(
          `U+${r.toString(16)}: ours ${goToLowerRune(r)}/${goToUpperRune(r)}, Unicode ${char.toLowerCase()}/${char.toUpperCase()}`,
        );
      }
    }
    expect(newer.size).toBe(80);
    for (let r = 0; r <= 0x10ffff; r++) {
      if (newer.has(r)) continue;
      const [lower, upper] = cased.get(r) ?? [r, r];
      if (goToLowerRune(r) !== lower || goToUpperRune(r) !== upper || goIsSpace(r) !== spaces.has(r)) {
        wrong.push(
          `U+${r.toString(16)}: ours ${goToLowerRune(r)}/${goToUpperRune(r)}/${goIsSpace(r)}, Go ${lower}/${upper}/${spaces.has(r)}`,
        );
      }
      if (goSimpleFold(r) !== (folds.get(r) ?? r) && !newer.has(goSimpleFold(r)))
        wrong.push(`U+${r.toString(16)}: SimpleFold ours ${goSimpleFold(r)}, Go ${folds.get(r) ?? r}`);
    }
    expect(wrong.slice(0, 20)).toEqual([]);
    expect(cased.size).toBeGreaterThan(2500);
  });

  it('lower-cases, upper-cases, trims and unquotes generated Unicode-heavy strings as Go does', async () => {
    const ops: Op[] = ['lower', 'upper', 'trim'];
    const texts = fc.sample(trickyString, { numRuns: 400, seed: 23 });
    const quoted = fc.sample(trickyUnquoteInput, { numRuns: 600, seed: 23 });
    const fixed = [
      '"\\ud83d\\udd11"',
      '"\\U0001F511"',
      "'\\ud800'",
      '"\\uD7FF"',
      '"\\uE000"',
      '"\\U00110000"',
      "'ab'",
      "'\\''",
      '"\\\'"',
      "'\"'",
      '`a\rb`',
      '"\\x80"',
      '"\\377"',
      '"\\400"',
      '"a\nb"',
      "''",
      '"\\/"',
    ];
    const cases = [
      ...texts.flatMap((text) => ops.map((op) => ({ op, text }))),
      ...[
        'İd',
        'ΑΣ',
        'ΟΔΟΣ ΣΑ',
        'K',
        'ſ',
        'ß',
        'ᾳ',
        'ǅ',
        '\u0085admin\u00a0',
        '\ufeffreader',
        'reader\u200b',
        '\u2028x\u3000',
      ].flatMap((text) => ops.map((op) => ({ op, text }))),
      ...[...quoted, ...fixed].map((text) => ({ op: 'unquote' as Op, text })),
      // strings.EqualFold of pairs: random tricky strings against each other and against their own case mappings.
      ...texts.slice(0, 200).flatMap((text, index) => [
        { op: 'fold' as Op, text: `${text}\0${texts[index + 1] ?? ''}` },
        { op: 'fold' as Op, text: `${text}\0${text.toUpperCase()}` },
        { op: 'fold' as Op, text: `${text}\0${text.toLowerCase()}` },
      ]),
      ...[
        'ß\0SS',
        'İ\0i',
        'İ\0I',
        'K\0k',
        'ſ\0S',
        'ǅ\0ǆ',
        'Σ\0ς',
        'ΐ\0ΐ',
        'capabilitieſ\0capabilities',
        '\u212aey\0KEY',
      ].map((text) => ({ op: 'fold' as Op, text })),
      // strconv.ParseBool (go-bexpr's boolean literals, Vault's weak bool fields): its spellings, near misses, and
      // the names an object lookup would find on Object.prototype.
      ...[
        ...['1', 't', 'T', 'TRUE', 'true', 'True', '0', 'f', 'F', 'FALSE', 'false', 'False'],
        ...[
          '',
          'tRUE',
          'yes',
          ' true',
          'true ',
          '01',
          '\u0130',
          'constructor',
          'toString',
          '__proto__',
          'hasOwnProperty',
        ],
        ...texts.slice(0, 50),
      ].map((text) => ({ op: 'parsebool' as Op, text })),
    ];
    const verdicts = await runGoHarness<{ op: Op; text: string }, Verdict>(oracle, cases);
    const wrong = cases.flatMap((c, index) => {
      const go = verdicts[index] as Verdict;
      const mine = ours(c.op, c.text);
      const same = !!go.error === !!mine.error && (go.error || go.out === mine.out);
      return same ? [] : [`${c.op} ${JSON.stringify(c.text)}: ours ${JSON.stringify(mine)}, Go ${JSON.stringify(go)}`];
    });
    expect(wrong.slice(0, 20)).toEqual([]);
    // The generators reach both sides of strconv.Unquote.
    const refused = verdicts.filter((v) => v.error).length;
    expect(refused).toBeGreaterThan(50);
    expect(verdicts.length - refused).toBeGreaterThan(50);
  });
});
