/**
 * Go's string semantics where Vault and Nomad depend on them, so that we compare strings as they do:
 * - `goToLower`/`goToUpper`: `strings.ToLower`/`strings.ToUpper`, i.e. `unicode.ToLower`/`ToUpper` applied to
 *   each code point on its own (Unicode's simple one-to-one mapping: `"İ"` → `"i"`, `"Σ"` → `"σ"` wherever it
 *   stands, `"ß"` stays `"ß"`), never JavaScript's full, context-sensitive mapping (`"İ".toLowerCase()` is two
 *   code points, a word-final `"Σ"` becomes `"ς"`);
 * - `goIsSpace`/`goTrimSpace`: `unicode.IsSpace` and `strings.TrimSpace` (U+0085 and U+00A0 are spaces, U+FEFF
 *   and U+200B are not);
 * - `goUnquote`: `strconv.Unquote` (a `\u`/`\U` escape must be a valid rune: surrogate halves are refused).
 *
 * The case table is Go's `unicode.CaseRanges` (Unicode 13.0.0 as Go 1.19 ships it), without its title-case
 * column: `[first, last, delta to upper, delta to lower]`, `UL` marking Go's alternating Upper/Lower runs, plus the
 * pairs Unicode 14.0 added (Go 1.21+, which builds Vault and Nomad today). test/differential/go-strings.test.ts
 * checks every code point against Go itself.
 */

/** A string Go's `strconv.Unquote` refuses (Go's `strconv.ErrSyntax`). */
export class GoSyntaxError extends Error {
  constructor(readonly quoted: string) {
    super(`invalid Go string literal ${quoted.length > 40 ? `${quoted.slice(0, 40)}…` : quoted}`);
    this.name = 'GoSyntaxError';
  }
}

const UL = 0x110000;

// biome-ignore format: a generated table
const caseRanges: readonly (readonly [number, number, number, number])[] = [
  [0x41,0x5a,0,32], [0x61,0x7a,-32,0], [0xb5,0xb5,743,0], [0xc0,0xd6,0,32], [0xd8,0xde,0,32], [0xe0,0xf6,-32,0],
  [0xf8,0xfe,-32,0], [0xff,0xff,121,0], [0x100,0x12f,UL,UL], [0x130,0x130,0,-199], [0x131,0x131,-232,0],
  [0x132,0x137,UL,UL], [0x139,0x148,UL,UL], [0x14a,0x177,UL,UL], [0x178,0x178,0,-121], [0x179,0x17e,UL,UL],
  [0x17f,0x17f,-300,0], [0x180,0x180,195,0], [0x181,0x181,0,210], [0x182,0x185,UL,UL], [0x186,0x186,0,206],
  [0x187,0x188,UL,UL], [0x189,0x18a,0,205], [0x18b,0x18c,UL,UL], [0x18e,0x18e,0,79], [0x18f,0x18f,0,202],
  [0x190,0x190,0,203], [0x191,0x192,UL,UL], [0x193,0x193,0,205], [0x194,0x194,0,207], [0x195,0x195,97,0],
  [0x196,0x196,0,211], [0x197,0x197,0,209], [0x198,0x199,UL,UL], [0x19a,0x19a,163,0], [0x19c,0x19c,0,211],
  [0x19d,0x19d,0,213], [0x19e,0x19e,130,0], [0x19f,0x19f,0,214], [0x1a0,0x1a5,UL,UL], [0x1a6,0x1a6,0,218],
  [0x1a7,0x1a8,UL,UL], [0x1a9,0x1a9,0,218], [0x1ac,0x1ad,UL,UL], [0x1ae,0x1ae,0,218], [0x1af,0x1b0,UL,UL],
  [0x1b1,0x1b2,0,217], [0x1b3,0x1b6,UL,UL], [0x1b7,0x1b7,0,219], [0x1b8,0x1b9,UL,UL], [0x1bc,0x1bd,UL,UL],
  [0x1bf,0x1bf,56,0], [0x1c4,0x1c4,0,2], [0x1c5,0x1c5,-1,1], [0x1c6,0x1c6,-2,0], [0x1c7,0x1c7,0,2],
  [0x1c8,0x1c8,-1,1], [0x1c9,0x1c9,-2,0], [0x1ca,0x1ca,0,2], [0x1cb,0x1cb,-1,1], [0x1cc,0x1cc,-2,0],
  [0x1cd,0x1dc,UL,UL], [0x1dd,0x1dd,-79,0], [0x1de,0x1ef,UL,UL], [0x1f1,0x1f1,0,2], [0x1f2,0x1f2,-1,1],
  [0x1f3,0x1f3,-2,0], [0x1f4,0x1f5,UL,UL], [0x1f6,0x1f6,0,-97], [0x1f7,0x1f7,0,-56], [0x1f8,0x21f,UL,UL],
  [0x220,0x220,0,-130], [0x222,0x233,UL,UL], [0x23a,0x23a,0,10795], [0x23b,0x23c,UL,UL], [0x23d,0x23d,0,-163],
  [0x23e,0x23e,0,10792], [0x23f,0x240,10815,0], [0x241,0x242,UL,UL], [0x243,0x243,0,-195], [0x244,0x244,0,69],
  [0x245,0x245,0,71], [0x246,0x24f,UL,UL], [0x250,0x250,10783,0], [0x251,0x251,10780,0], [0x252,0x252,10782,0],
  [0x253,0x253,-210,0], [0x254,0x254,-206,0], [0x256,0x257,-205,0], [0x259,0x259,-202,0], [0x25b,0x25b,-203,0],
  [0x25c,0x25c,42319,0], [0x260,0x260,-205,0], [0x261,0x261,42315,0], [0x263,0x263,-207,0], [0x265,0x265,42280,0],
  [0x266,0x266,42308,0], [0x268,0x268,-209,0], [0x269,0x269,-211,0], [0x26a,0x26a,42308,0], [0x26b,0x26b,10743,0],
  [0x26c,0x26c,42305,0], [0x26f,0x26f,-211,0], [0x271,0x271,10749,0], [0x272,0x272,-213,0], [0x275,0x275,-214,0],
  [0x27d,0x27d,10727,0], [0x280,0x280,-218,0], [0x282,0x282,42307,0], [0x283,0x283,-218,0], [0x287,0x287,42282,0],
  [0x288,0x288,-218,0], [0x289,0x289,-69,0], [0x28a,0x28b,-217,0], [0x28c,0x28c,-71,0], [0x292,0x292,-219,0],
  [0x29d,0x29d,42261,0], [0x29e,0x29e,42258,0], [0x345,0x345,84,0], [0x370,0x373,UL,UL], [0x376,0x377,UL,UL],
  [0x37b,0x37d,130,0], [0x37f,0x37f,0,116], [0x386,0x386,0,38], [0x388,0x38a,0,37], [0x38c,0x38c,0,64],
  [0x38e,0x38f,0,63], [0x391,0x3a1,0,32], [0x3a3,0x3ab,0,32], [0x3ac,0x3ac,-38,0], [0x3ad,0x3af,-37,0],
  [0x3b1,0x3c1,-32,0], [0x3c2,0x3c2,-31,0], [0x3c3,0x3cb,-32,0], [0x3cc,0x3cc,-64,0], [0x3cd,0x3ce,-63,0],
  [0x3cf,0x3cf,0,8], [0x3d0,0x3d0,-62,0], [0x3d1,0x3d1,-57,0], [0x3d5,0x3d5,-47,0], [0x3d6,0x3d6,-54,0],
  [0x3d7,0x3d7,-8,0], [0x3d8,0x3ef,UL,UL], [0x3f0,0x3f0,-86,0], [0x3f1,0x3f1,-80,0], [0x3f2,0x3f2,7,0],
  [0x3f3,0x3f3,-116,0], [0x3f4,0x3f4,0,-60], [0x3f5,0x3f5,-96,0], [0x3f7,0x3f8,UL,UL], [0x3f9,0x3f9,0,-7],
  [0x3fa,0x3fb,UL,UL], [0x3fd,0x3ff,0,-130], [0x400,0x40f,0,80], [0x410,0x42f,0,32], [0x430,0x44f,-32,0],
  [0x450,0x45f,-80,0], [0x460,0x481,UL,UL], [0x48a,0x4bf,UL,UL], [0x4c0,0x4c0,0,15], [0x4c1,0x4ce,UL,UL],
  [0x4cf,0x4cf,-15,0], [0x4d0,0x52f,UL,UL], [0x531,0x556,0,48], [0x561,0x586,-48,0], [0x10a0,0x10c5,0,7264],
  [0x10c7,0x10c7,0,7264], [0x10cd,0x10cd,0,7264], [0x10d0,0x10fa,3008,0], [0x10fd,0x10ff,3008,0],
  [0x13a0,0x13ef,0,38864], [0x13f0,0x13f5,0,8], [0x13f8,0x13fd,-8,0], [0x1c80,0x1c80,-6254,0],
  [0x1c81,0x1c81,-6253,0], [0x1c82,0x1c82,-6244,0], [0x1c83,0x1c84,-6242,0], [0x1c85,0x1c85,-6243,0],
  [0x1c86,0x1c86,-6236,0], [0x1c87,0x1c87,-6181,0], [0x1c88,0x1c88,35266,0], [0x1c90,0x1cba,0,-3008],
  [0x1cbd,0x1cbf,0,-3008], [0x1d79,0x1d79,35332,0], [0x1d7d,0x1d7d,3814,0], [0x1d8e,0x1d8e,35384,0],
  [0x1e00,0x1e95,UL,UL], [0x1e9b,0x1e9b,-59,0], [0x1e9e,0x1e9e,0,-7615], [0x1ea0,0x1eff,UL,UL], [0x1f00,0x1f07,8,0],
  [0x1f08,0x1f0f,0,-8], [0x1f10,0x1f15,8,0], [0x1f18,0x1f1d,0,-8], [0x1f20,0x1f27,8,0], [0x1f28,0x1f2f,0,-8],
  [0x1f30,0x1f37,8,0], [0x1f38,0x1f3f,0,-8], [0x1f40,0x1f45,8,0], [0x1f48,0x1f4d,0,-8], [0x1f51,0x1f51,8,0],
  [0x1f53,0x1f53,8,0], [0x1f55,0x1f55,8,0], [0x1f57,0x1f57,8,0], [0x1f59,0x1f59,0,-8], [0x1f5b,0x1f5b,0,-8],
  [0x1f5d,0x1f5d,0,-8], [0x1f5f,0x1f5f,0,-8], [0x1f60,0x1f67,8,0], [0x1f68,0x1f6f,0,-8], [0x1f70,0x1f71,74,0],
  [0x1f72,0x1f75,86,0], [0x1f76,0x1f77,100,0], [0x1f78,0x1f79,128,0], [0x1f7a,0x1f7b,112,0], [0x1f7c,0x1f7d,126,0],
  [0x1f80,0x1f87,8,0], [0x1f88,0x1f8f,0,-8], [0x1f90,0x1f97,8,0], [0x1f98,0x1f9f,0,-8], [0x1fa0,0x1fa7,8,0],
  [0x1fa8,0x1faf,0,-8], [0x1fb0,0x1fb1,8,0], [0x1fb3,0x1fb3,9,0], [0x1fb8,0x1fb9,0,-8], [0x1fba,0x1fbb,0,-74],
  [0x1fbc,0x1fbc,0,-9], [0x1fbe,0x1fbe,-7205,0], [0x1fc3,0x1fc3,9,0], [0x1fc8,0x1fcb,0,-86], [0x1fcc,0x1fcc,0,-9],
  [0x1fd0,0x1fd1,8,0], [0x1fd8,0x1fd9,0,-8], [0x1fda,0x1fdb,0,-100], [0x1fe0,0x1fe1,8,0], [0x1fe5,0x1fe5,7,0],
  [0x1fe8,0x1fe9,0,-8], [0x1fea,0x1feb,0,-112], [0x1fec,0x1fec,0,-7], [0x1ff3,0x1ff3,9,0], [0x1ff8,0x1ff9,0,-128],
  [0x1ffa,0x1ffb,0,-126], [0x1ffc,0x1ffc,0,-9], [0x2126,0x2126,0,-7517], [0x212a,0x212a,0,-8383],
  [0x212b,0x212b,0,-8262], [0x2132,0x2132,0,28], [0x214e,0x214e,-28,0], [0x2160,0x216f,0,16], [0x2170,0x217f,-16,0],
  [0x2183,0x2184,UL,UL], [0x24b6,0x24cf,0,26], [0x24d0,0x24e9,-26,0], [0x2c00,0x2c2e,0,48], [0x2c30,0x2c5e,-48,0],
  [0x2c60,0x2c61,UL,UL], [0x2c62,0x2c62,0,-10743], [0x2c63,0x2c63,0,-3814], [0x2c64,0x2c64,0,-10727],
  [0x2c65,0x2c65,-10795,0], [0x2c66,0x2c66,-10792,0], [0x2c67,0x2c6c,UL,UL], [0x2c6d,0x2c6d,0,-10780],
  [0x2c6e,0x2c6e,0,-10749], [0x2c6f,0x2c6f,0,-10783], [0x2c70,0x2c70,0,-10782], [0x2c72,0x2c73,UL,UL],
  [0x2c75,0x2c76,UL,UL], [0x2c7e,0x2c7f,0,-10815], [0x2c80,0x2ce3,UL,UL], [0x2ceb,0x2cee,UL,UL],
  [0x2cf2,0x2cf3,UL,UL], [0x2d00,0x2d25,-7264,0], [0x2d27,0x2d27,-7264,0], [0x2d2d,0x2d2d,-7264,0],
  [0xa640,0xa66d,UL,UL], [0xa680,0xa69b,UL,UL], [0xa722,0xa72f,UL,UL], [0xa732,0xa76f,UL,UL], [0xa779,0xa77c,UL,UL],
  [0xa77d,0xa77d,0,-35332], [0xa77e,0xa787,UL,UL], [0xa78b,0xa78c,UL,UL], [0xa78d,0xa78d,0,-42280],
  [0xa790,0xa793,UL,UL], [0xa794,0xa794,48,0], [0xa796,0xa7a9,UL,UL], [0xa7aa,0xa7aa,0,-42308],
  [0xa7ab,0xa7ab,0,-42319], [0xa7ac,0xa7ac,0,-42315], [0xa7ad,0xa7ad,0,-42305], [0xa7ae,0xa7ae,0,-42308],
  [0xa7b0,0xa7b0,0,-42258], [0xa7b1,0xa7b1,0,-42282], [0xa7b2,0xa7b2,0,-42261], [0xa7b3,0xa7b3,0,928],
  [0xa7b4,0xa7bf,UL,UL], [0xa7c2,0xa7c3,UL,UL], [0xa7c4,0xa7c4,0,-48], [0xa7c5,0xa7c5,0,-42307],
  [0xa7c6,0xa7c6,0,-35384], [0xa7c7,0xa7ca,UL,UL], [0xa7f5,0xa7f6,UL,UL], [0xab53,0xab53,-928,0],
  [0xab70,0xabbf,-38864,0], [0xff21,0xff3a,0,32], [0xff41,0xff5a,-32,0], [0x10400,0x10427,0,40],
  [0x10428,0x1044f,-40,0], [0x104b0,0x104d3,0,40], [0x104d8,0x104fb,-40,0], [0x10c80,0x10cb2,0,64],
  [0x10cc0,0x10cf2,-64,0], [0x118a0,0x118bf,0,32], [0x118c0,0x118df,-32,0], [0x16e40,0x16e5f,0,32],
  [0x16e60,0x16e7f,-32,0], [0x1e900,0x1e921,0,34], [0x1e922,0x1e943,-34,0],
];

/**
 * The case pairs Unicode 14.0 added, which Go has mapped since Go 1.21 (Unicode 15.0.0, the tables of the Go that
 * builds current Vault and Nomad) but Debian's Go 1.19 (Unicode 13.0.0, the oracle here) lacks: Glagolitic caudate
 * chrivi, Old Polish O, closed insular G, Middle Scots S, sigmoid S, Vithkuqi. Unicode 15.0 added no case pairs.
 */
// biome-ignore format: a table
export const unicode14CaseRanges: readonly (readonly [number, number, number, number])[] = [
  [0x2c2f,0x2c2f,0,48], [0x2c5f,0x2c5f,-48,0], [0xa7c0,0xa7c1,UL,UL], [0xa7d0,0xa7d1,UL,UL], [0xa7d6,0xa7d9,UL,UL],
  [0x10570,0x1057a,0,39], [0x1057c,0x1058a,0,39], [0x1058c,0x10592,0,39], [0x10594,0x10595,0,39],
  [0x10597,0x105a1,-39,0], [0x105a3,0x105b1,-39,0], [0x105b3,0x105b9,-39,0], [0x105bb,0x105bc,-39,0],
];

const allCaseRanges = [...caseRanges, ...unicode14CaseRanges].sort((a, b) => a[0] - b[0]);

function caseRange(codePoint: number): readonly [number, number, number, number] | undefined {
  let low = 0;
  let high = allCaseRanges.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    const range = allCaseRanges[middle] as readonly [number, number, number, number];
    if (codePoint < range[0]) high = middle;
    else if (codePoint > range[1]) low = middle + 1;
    else return range;
  }
  return undefined;
}

function mapRune(codePoint: number, toUpper: boolean): number {
  if (codePoint < 0x80) {
    if (toUpper) return codePoint >= 0x61 && codePoint <= 0x7a ? codePoint - 32 : codePoint;
    return codePoint >= 0x41 && codePoint <= 0x5a ? codePoint + 32 : codePoint;
  }
  const range = caseRange(codePoint);
  if (!range) return codePoint;
  const delta = toUpper ? range[2] : range[3];
  if (delta === UL) {
    // Upper at even offsets from the run's start, lower at odd ones.
    const even = range[0] + ((codePoint - range[0]) & ~1);
    return toUpper ? even : even + 1;
  }
  return codePoint + delta;
}

/** Go's `unicode.ToLower` of one code point. */
export function goToLowerRune(codePoint: number): number {
  return mapRune(codePoint, false);
}

/** Go's `unicode.ToUpper` of one code point. */
export function goToUpperRune(codePoint: number): number {
  return mapRune(codePoint, true);
}

function mapString(text: string, toUpper: boolean): string {
  let out = '';
  for (const char of text) {
    const codePoint = char.codePointAt(0) as number;
    // A lone surrogate is invalid UTF-8 to Go: strings.Map writes U+FFFD for it.
    out += codePoint >= 0xd800 && codePoint <= 0xdfff ? '\ufffd' : String.fromCodePoint(mapRune(codePoint, toUpper));
  }
  return out;
}

/** Go's `strings.ToLower`: each code point mapped on its own by `unicode.ToLower`. */
export function goToLower(text: string): string {
  return mapString(text, false);
}

/** Go's `strings.ToUpper`: each code point mapped on its own by `unicode.ToUpper`. */
export function goToUpper(text: string): string {
  return mapString(text, true);
}

/**
 * Where Go's `unicode.SimpleFold` departs from "ToLower, else ToUpper" (its caseOrbit table and the classes it
 * closes), as `[code point, next in its fold orbit]`, from Go 1.19 itself.
 */
// biome-ignore format: a generated table
const foldOrbit = new Map<number, number>([
  [0xdf,0x1e9e], [0xe5,0x212b], [0x130,0x130], [0x131,0x131], [0x1c4,0x1c5], [0x1c7,0x1c8], [0x1ca,0x1cb], [0x1f1,0x1f2],
  [0x3a3,0x3c2], [0x3b2,0x3d0], [0x3b5,0x3f5], [0x3b8,0x3d1], [0x3b9,0x1fbe], [0x3ba,0x3f0], [0x3bc,0xb5], [0x3c0,0x3d6],
  [0x3c1,0x3f1], [0x3c2,0x3c3], [0x3c6,0x3d5], [0x3c9,0x2126], [0x3d1,0x3f4], [0x3f4,0x398], [0x432,0x1c80], [0x434,0x1c81],
  [0x43e,0x1c82], [0x441,0x1c83], [0x442,0x1c84], [0x44a,0x1c86], [0x463,0x1c87], [0x1c84,0x1c85], [0x1e61,0x1e9b],
  [0x1fbe,0x345], [0x2126,0x3a9], [0x212a,0x4b], [0x212b,0xc5], [0xa64b,0x1c88],
]);

/** Go's `unicode.SimpleFold`: the next code point, upwards and round, that folds to the same letter. */
export function goSimpleFold(codePoint: number): number {
  if (codePoint < 0x80) {
    // Go's asciiFold: K and S fold on to the Kelvin sign and long s.
    if (codePoint === 0x6b) return 0x212a;
    if (codePoint === 0x73) return 0x17f;
    if (codePoint >= 0x41 && codePoint <= 0x5a) return codePoint + 32;
    if (codePoint >= 0x61 && codePoint <= 0x7a) return codePoint - 32;
    return codePoint;
  }
  const orbit = foldOrbit.get(codePoint);
  if (orbit !== undefined) return orbit;
  const lower = mapRune(codePoint, false);
  return lower !== codePoint ? lower : mapRune(codePoint, true);
}

/**
 * Go's `strings.EqualFold`: equal under simple Unicode case folding, code point by code point (`"K"` and the Kelvin
 * sign fold together, `"ß"` and `"SS"` do not, `"İ"` folds with nothing). hcl v1 matches keys to fields this way.
 */
export function goEqualFold(a: string, b: string): boolean {
  const left = [...a];
  const right = [...b];
  if (left.length !== right.length) return false;
  return left.every((char, index) => {
    let s = char.codePointAt(0) as number;
    let t = (right[index] as string).codePointAt(0) as number;
    // Lone surrogates are invalid UTF-8 to Go: each reads as U+FFFD.
    if (s >= 0xd800 && s <= 0xdfff) s = 0xfffd;
    if (t >= 0xd800 && t <= 0xdfff) t = 0xfffd;
    if (s === t) return true;
    if (t < s) [s, t] = [t, s];
    if (t < 0x80) return s >= 0x41 && s <= 0x5a && t === s + 32;
    let r = goSimpleFold(s);
    while (r !== s && r < t) r = goSimpleFold(r);
    return r === t;
  });
}

/** Whether two strings are equal once each is lower-cased by `goToLower` (Vault's `strings.ToLower(a) == strings.ToLower(b)`). */
export function goEqualLower(a: string, b: string): boolean {
  return goToLower(a) === goToLower(b);
}

/**
 * Go's `unicode.IsSpace`: `\t \n \v \f \r`, space, U+0085 and U+00A0 in Latin-1, else Unicode's White_Space
 * (U+1680, U+2000–U+200A, U+2028, U+2029, U+202F, U+205F, U+3000). Not U+FEFF, U+200B or U+180E.
 */
export function goIsSpace(codePoint: number): boolean {
  if (codePoint <= 0xff) {
    return (codePoint >= 0x09 && codePoint <= 0x0d) || codePoint === 0x20 || codePoint === 0x85 || codePoint === 0xa0;
  }
  return (
    codePoint === 0x1680 ||
    (codePoint >= 0x2000 && codePoint <= 0x200a) ||
    codePoint === 0x2028 ||
    codePoint === 0x2029 ||
    codePoint === 0x202f ||
    codePoint === 0x205f ||
    codePoint === 0x3000
  );
}

/** Go's `strings.TrimSpace`: leading and trailing code points for which `unicode.IsSpace` holds removed. */
export function goTrimSpace(text: string): string {
  let start = 0;
  let end = text.length;
  while (start < end) {
    const codePoint = text.codePointAt(start) as number;
    if (!goIsSpace(codePoint)) break;
    start += codePoint > 0xffff ? 2 : 1;
  }
  while (end > start) {
    // Every Go space is in the BMP: one UTF-16 unit.
    if (!goIsSpace(text.charCodeAt(end - 1))) break;
    end--;
  }
  return text.slice(start, end);
}

/** Vault's `strutil.ParseDedupAndSortStrings`-style split of a comma-separated value: each part `goTrimSpace`d. */
export function goSplitTrim(text: string, separator = ','): string[] {
  return text.split(separator).map(goTrimSpace);
}

const escapes: Record<string, number> = {
  a: 7,
  b: 8,
  f: 12,
  n: 10,
  r: 13,
  t: 9,
  v: 11,
  '\\': 92,
};
const utf8 = new TextEncoder();
// ignoreBOM: a leading U+FEFF is part of the string, as in Go.
const utf8Decoder = new TextDecoder('utf-8', { ignoreBOM: true });
const hexDigits = /^[0-9a-fA-F]+$/;

/**
 * Go's `strconv.Unquote`: a `"…"` literal with Go's escapes, a `'…'` literal of one character, or a `` `…` `` raw
 * literal (carriage returns removed). A `\u`/`\U` escape must name a valid rune (not a surrogate half, not past
 * U+10FFFF); `\x` and octal escapes are bytes. Go's result may be invalid UTF-8: here such bytes read as U+FFFD,
 * as Go's encoding/json writes them. Throws `GoSyntaxError` where Go answers `strconv.ErrSyntax`.
 */
export function goUnquote(quoted: string): string {
  const fail = () => new GoSyntaxError(quoted);
  if (quoted.length < 2) throw fail();
  const quote = quoted[0] as string;
  if (quote !== quoted[quoted.length - 1]) throw fail();
  const body = quoted.slice(1, -1);
  if (quote === '`') {
    if (body.includes('`')) throw fail();
    return body.replaceAll('\r', '');
  }
  if (quote !== '"' && quote !== "'") throw fail();
  const { text, characters } = decodeGoQuoted(body, quote, fail, false);
  // Go 1.19+ answers `''` with the empty string.
  if (quote === "'" && characters > 1) throw fail();
  return text;
}

/**
 * The body of a `"…"` or `'…'` literal with Go's escapes decoded, and how many characters it had; throws `fail()`
 * where Go's strconv refuses it. hcl's own unquote (`hcl-v1-strings.ts`) shares it with `hcl` set: `${ … }`
 * sections are copied as written, and a `\u`/`\U` escape of a surrogate half is written as U+FFFD, not refused.
 */
export function decodeGoQuoted(
  body: string,
  quote: string,
  fail: () => Error,
  hcl: boolean,
): { text: string; characters: number } {
  const bytes: number[] = [];
  let characters = 0;
  let i = 0;
  while (i < body.length) {
    if (hcl && body.startsWith('${', i)) {
      let braces = 1;
      let j = i + 2;
      while (j < body.length && braces > 0) {
        if (body[j] === '{') braces++;
        else if (body[j] === '}') braces--;
        j++;
      }
      if (braces !== 0) throw fail();
      bytes.push(...utf8.encode(body.slice(i, j)));
      i = j;
      continue;
    }
    const char = body[i] as string;
    characters++;
    if (char === quote || char === '\n') throw fail();
    if (char !== '\\') {
      const codePoint = body.codePointAt(i) as number;
      const width = codePoint > 0xffff ? 2 : 1;
      bytes.push(...utf8.encode(body.slice(i, i + width)));
      i += width;
      continue;
    }
    const letter = body[i + 1];
    if (letter === undefined) throw fail();
    i += 2;
    if (letter in escapes) {
      bytes.push(escapes[letter] as number);
    } else if (letter === '"' || letter === "'") {
      if (letter !== quote) throw fail();
      bytes.push(letter.charCodeAt(0));
    } else if (letter === 'x' || letter === 'u' || letter === 'U') {
      const length = letter === 'x' ? 2 : letter === 'u' ? 4 : 8;
      const hex = body.slice(i, i + length);
      if (hex.length !== length || !hexDigits.test(hex)) throw fail();
      i += length;
      const value = Number.parseInt(hex, 16);
      const surrogate = value >= 0xd800 && value <= 0xdfff;
      if (letter === 'x') bytes.push(value);
      else if (value > 0x10ffff || (surrogate && !hcl)) throw fail();
      else bytes.push(...utf8.encode(surrogate ? '\ufffd' : String.fromCodePoint(value)));
    } else if (letter >= '0' && letter <= '7') {
      const octal = body.slice(i - 1, i + 2);
      if (!/^[0-7]{3}$/.test(octal)) throw fail();
      const value = Number.parseInt(octal, 8);
      if (value > 255) throw fail();
      bytes.push(value);
      i += 2;
    } else {
      throw fail();
    }
  }
  return { text: utf8Decoder.decode(new Uint8Array(bytes)), characters };
}

const goBools = new Map<string, boolean>([
  ['1', true],
  ['t', true],
  ['T', true],
  ['TRUE', true],
  ['true', true],
  ['True', true],
  ['0', false],
  ['f', false],
  ['F', false],
  ['FALSE', false],
  ['false', false],
  ['False', false],
]);

/**
 * Go's `strconv.ParseBool`: the twelve spellings it takes, `undefined` for anything else (a Map, so a name of
 * `Object.prototype` such as `constructor` is not taken for a spelling).
 */
export function goParseBool(text: string): boolean | undefined {
  return goBools.get(text);
}
