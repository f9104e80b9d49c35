import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { build } from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * In a Lambda bundle (esbuild, ESM, split into chunks, as stacks/functions.ts builds) re2js sits in a chunk of its
 * own that loads only when a selector uses `matches`. Built outside the project, so no node_modules can stand in for
 * the chunk, and run in a fresh Node process.
 */
const outdir = mkdtempSync(path.join(tmpdir(), 'keyhaven-bexpr-bundle-'));
afterAll(() => rmSync(outdir, { recursive: true, force: true }));

const script = `
import { bexprReady, parseBexpr, selectorMatches } from './bexpr.ts';
const claims = { value: { sub: 'ada', email: 'ada@example.com' }, list: { groups: ['eng'] } };
const attempt = async (selector) => {
  try {
    await bexprReady(selector);
    parseBexpr(selector);
    return selectorMatches(selector, claims);
  } catch (error) {
    return error.message;
  }
};
const answers = { withoutMatches: await attempt('value.sub == "ada" and "eng" in list.groups') };
try {
  parseBexpr('value.sub matches "^a"');
  answers.matchesBeforeReady = 'parsed';
} catch (error) {
  answers.matchesBeforeReady = error.code ?? error.message;
}
answers.matches = await attempt('value.email matches "@example\\\\\\\\.com$"');
answers.notMatches = await attempt('value.sub not matches "(?i)^ADA$"');
answers.refused = await attempt('value.sub matches "(?=a)"');
console.log(JSON.stringify(answers));
`;

describe('bexpr in a split Lambda bundle', () => {
  it('keeps re2js out of what the bundle loads at start, and loads it for a selector that uses matches', async () => {
    const result = await build({
      stdin: { contents: script, resolveDir: import.meta.dirname, sourcefile: 'entry.mjs', loader: 'js' },
      outdir,
      outExtension: { '.js': '.mjs' },
      bundle: true,
      splitting: true,
      platform: 'node',
      format: 'esm',
      target: 'esnext',
      minify: true,
      metafile: true,
      logLevel: 'silent',
    });
    const outputs = result.metafile.outputs;
    const entry = Object.keys(outputs).find((file) => outputs[file]?.entryPoint?.endsWith('entry.mjs')) as string;
    expect(entry).toMatch(/\.mjs$/);
    // The entry and the chunks it imports statically (esbuild's chunks import no further chunks here).
    const started = [
      entry,
      ...(outputs[entry]?.imports ?? []).filter((i) => i.kind === 'import-statement' && !i.external).map((i) => i.path),
    ];
    const inputsAtStart = started.flatMap((file) => Object.keys(outputs[file]?.inputs ?? {}));
    expect(inputsAtStart.some((input) => input.includes('node_modules/re2js/'))).toBe(false);
    expect(
      Object.values(outputs).some((output) =>
        Object.keys(output.inputs).some((input) => input.includes('node_modules/re2js/')),
      ),
    ).toBe(true);

    const printed = execFileSync(process.execPath, [path.resolve(entry)], { encoding: 'utf8' });
    expect(JSON.parse(printed)).toEqual({
      withoutMatches: true,
      // Nothing on disk to fall back to: a caller that skipped bexprReady fails loudly, not as "no match".
      matchesBeforeReady: 'MODULE_NOT_FOUND',
      matches: true,
      notMatches: false,
      refused: expect.stringMatching(/^1:1 \(0\): Failed to compile regular expression "\(\?=a\)": /),
    });
  });
});
