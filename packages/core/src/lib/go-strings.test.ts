import { describe, expect, it } from 'vitest';
import { GoSyntaxError, goIsSpace, goToLower, goToUpper, goTrimSpace, goUnquote } from './go-strings.ts';

// Expectations from Go 1.19 itself (test/differential/go-strings.test.ts checks every code point against Go).
describe('go-strings', () => {
  it("lower-cases one code point at a time with Go's simple mapping", () => {
    expect(goToLower('İd')).toBe('id');
    expect('İd'.toLowerCase()).not.toBe('id');
    expect(goToLower('ΟΔΟΣ')).toBe('οδοσ');
    expect(goToLower('\u212a')).toBe('k');
    expect(goToLower('ſ')).toBe('ſ');
    expect(goToLower('ǅ')).toBe('ǆ');
    expect(goToLower('\ud83d')).toBe('\ufffd');
  });

  it("upper-cases with Go's simple mapping: no SS for ß, one code point for ᾳ", () => {
    expect(goToUpper('ſ')).toBe('S');
    expect(goToUpper('ß')).toBe('ß');
    expect(goToUpper('ᾳ')).toBe('ᾼ');
    expect(goToUpper('ı')).toBe('I');
    expect(goToUpper('ǆ')).toBe('Ǆ');
  });

  it("trims Go's space set: U+0085 and U+00A0 yes, U+FEFF and U+200B no", () => {
    expect(goTrimSpace('\u0085 admin\u00a0\u3000')).toBe('admin');
    expect(goTrimSpace('\ufeffreader')).toBe('\ufeffreader');
    expect(goTrimSpace('reader\u200b')).toBe('reader\u200b');
    expect(goTrimSpace('\u2028\u2029')).toBe('');
    expect(goIsSpace(0x180e)).toBe(false);
    expect(goIsSpace(0x0b)).toBe(true);
  });

  it('unquotes as strconv.Unquote does, refusing surrogate escapes', () => {
    expect(goUnquote('"\\U0001F511 \\u00e9\\x41\\101"')).toBe('🔑 éAA');
    expect(goUnquote('"\\ufeffx"')).toBe('\ufeffx');
    expect(goUnquote("'\\''")).toBe("'");
    expect(goUnquote('`a\r\\n`')).toBe('a\\n');
    for (const bad of [
      '"\\ud83d\\udd11"',
      '"\\U0000D800"',
      '"\\U00110000"',
      '"\\/"',
      '"\\\'"',
      "'ab'",
      '"a\nb"',
      '"\\400"',
      '"x',
      'x',
    ]) {
      expect(() => goUnquote(bad), bad).toThrow(GoSyntaxError);
    }
  });
});
