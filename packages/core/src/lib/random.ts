import { randomFillSync, randomUUID } from 'node:crypto';

const base62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

const pool = Buffer.alloc(4096);
let poolAt = pool.length;

/**
 * `length` bytes from the CSPRNG, taken from a pool refilled 4 KiB at a time: a call to the CSPRNG costs about 4 µs
 * however few bytes it returns, and a login takes several small draws (IVs, accessors, ids). Node's `randomUUID`
 * buffers the same way. The bytes are copied out, so a caller may keep them.
 */
export function randomBytes(length: number): Buffer {
  if (length > pool.length) return randomFillSync(Buffer.alloc(length));
  if (poolAt + length > pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  const out = Buffer.from(pool.subarray(poolAt, poolAt + length));
  pool.fill(0, poolAt, poolAt + length);
  poolAt += length;
  return out;
}

/** Uniform base62 string from the CSPRNG (rejection sampling, no modulo bias). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248 && out.length < length) out += base62[byte % 62];
    }
  }
  return out;
}

export const uuid = (): string => randomUUID();
