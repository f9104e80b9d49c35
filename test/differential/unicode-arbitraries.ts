/**
 * fast-check arbitraries of the code points where Go's string semantics and JavaScript's part ways, for the
 * differential tests: Turkish dotted/dotless i, final sigma, the Kelvin (U+212A) and Ångström (U+212B) signs,
 * long s (U+017F), ß and its capital, a title-case digraph, Greek with ypogegrammeni, U+0085, U+00A0, U+FEFF,
 * U+200B, U+2028, U+3000, combining marks, and JSON/Go escapes of surrogate halves.
 */
import fc from 'fast-check';

// biome-ignore format: one line per family
export const trickyCodePoints = [
  'I', 'i', 'İ', 'ı', 'Σ', 'σ', 'ς', 'K', 'k', 'Å', 'å', 'ſ', 's', 'S', 'ß', 'ẞ', 'ǅ', 'ᾳ', 'ﬀ',
  '\u0085', '\u00a0', '\ufeff', '\u200b', '\u2028', '\u3000', '\u1680', '\u180e', ' ', '\t', '\n', '\v',
  '\u0301', '\u0307', '\u0338', 'a', 'd', 'n', 'é', '🔑', '*', ',',
] as const;

/** One tricky code point (as a string). */
export const trickyChar = fc.constantFrom(...trickyCodePoints);

/** Short strings of tricky code points. */
export const trickyString = fc.array(trickyChar, { minLength: 0, maxLength: 6 }).map((chars) => chars.join(''));

/** An escape as Go or JSON writes it, valid or not: surrogate halves, pairs, big and small runes. */
// biome-ignore format: a list of escapes
export const trickyEscape = fc.constantFrom(
  '\\ud83d', '\\udd11', '\\ud83d\\udd11', '\\uD800', '\\uDFFF', '\\uD7FF', '\\uE000', '\\u0130', '\\u0085',
  '\\ufeff', '\\U0001F511', '\\U0000D800', '\\U00110000', '\\x41', '\\xff', '\\101', '\\777', '\\n', '\\t',
  '\\"', "\\'", '\\\\', '\\/', '\\q', '\\u12', '\\x',
);

/** Strings with escapes, for strconv.Unquote, hcl's unquote and JSON: pieces of text and escapes. */
export const trickyEscaped = fc
  .array(fc.oneof(trickyChar, trickyEscape), { minLength: 0, maxLength: 5 })
  .map((parts) => parts.join(''));

/** Go literals for strconv.Unquote: mostly double-quoted, some single-quoted and raw. */
export const trickyUnquoteInput = fc.oneof(
  { weight: 6, arbitrary: trickyEscaped.map((body) => `"${body}"`) },
  { weight: 2, arbitrary: fc.oneof(trickyChar, trickyEscape).map((body) => `'${body}'`) },
  { weight: 1, arbitrary: trickyString.map((body) => `\`${body}\``) },
);
