/**
 * The one source of randomness placement has: a generator seeded from the caller's seed (an evaluation ID, with the
 * index it read at for a retried plan), so that the same snapshot, job, requests and seed give the same plan. Nomad
 * seeds Go's `math/rand` from the evaluation ID the same way (`ShuffleNodes`); the generator here differs (the
 * numbers are not Nomad's), the use is the same: a Fisher–Yates shuffle of the candidate nodes and the picks of
 * dynamic ports.
 */

export interface Random {
  /** A number in [0, 1). */
  next(): number;
  /** An integer in [0, n). */
  below(n: number): number;
}

/** cyrb128: four 32-bit words from a string, well mixed, to seed sfc32. */
function seedWords(seed: string): [number, number, number, number] {
  let h1 = 1779033703;
  let h2 = 3144134277;
  let h3 = 1013904242;
  let h4 = 2773480762;
  for (let i = 0; i < seed.length; i++) {
    const k = seed.charCodeAt(i);
    h1 = h2 ^ Math.imul(h1 ^ k, 597399067);
    h2 = h3 ^ Math.imul(h2 ^ k, 2869860233);
    h3 = h4 ^ Math.imul(h3 ^ k, 951274213);
    h4 = h1 ^ Math.imul(h4 ^ k, 2716044179);
  }
  h1 = Math.imul(h3 ^ (h1 >>> 18), 597399067);
  h2 = Math.imul(h4 ^ (h2 >>> 22), 2869860233);
  h3 = Math.imul(h1 ^ (h3 >>> 17), 951274213);
  h4 = Math.imul(h2 ^ (h4 >>> 19), 2716044179);
  h1 ^= h2 ^ h3 ^ h4;
  h2 ^= h1;
  h3 ^= h1;
  h4 ^= h1;
  return [h1 >>> 0, h2 >>> 0, h3 >>> 0, h4 >>> 0];
}

/** sfc32 (Chris Doty-Humphrey's Small Fast Counting generator) seeded from `seed`: not for secrets. */
export function seededRandom(seed: string): Random {
  let [a, b, c, d] = seedWords(seed);
  const next = () => {
    a >>>= 0;
    b >>>= 0;
    c >>>= 0;
    d >>>= 0;
    let t = (a + b) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    d = (d + 1) | 0;
    t = (t + d) | 0;
    c = (c + t) | 0;
    return (t >>> 0) / 4_294_967_296;
  };
  // The first outputs of a fresh sfc32 state are poorly mixed; discard them as its author advises.
  for (let i = 0; i < 12; i++) next();
  return { next, below: (n) => Math.floor(next() * n) };
}

/** Fisher–Yates in place, from the end as Nomad's `ShuffleNodes`. */
export function shuffle<T>(items: T[], random: Random): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = random.below(i + 1);
    const swap = items[i] as T;
    items[i] = items[j] as T;
    items[j] = swap;
  }
  return items;
}
