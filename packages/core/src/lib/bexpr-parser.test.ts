import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const here = path.dirname(new URL(import.meta.url).pathname);
const peggy = path.resolve(here, '../../../../node_modules/.bin/peggy');

describe('the committed bexpr parser', () => {
  it('is what `npm run generate` makes from bexpr.peggy today', () => {
    const out = mkdtempSync(path.join(tmpdir(), 'bexpr-'));
    try {
      // The same flags as the `generate` script in package.json.
      execFileSync(peggy, ['--format', 'es', '--dts', '-o', path.join(out, 'bexpr-parser.js'), path.join(here, 'bexpr.peggy')]);
      for (const file of ['bexpr-parser.js', 'bexpr-parser.d.ts']) {
        expect(readFileSync(path.join(here, file), 'utf8'), `${file} is stale: run npm run generate`).toBe(
          readFileSync(path.join(out, file), 'utf8'),
        );
      }
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});
