import { describe, expect, it } from 'vitest';
import { count, integer, jsonValue, maxCount } from './fields.ts';

describe('bounded numeric fields', () => {
  it('takes integers in range as numbers or numeric strings', () => {
    expect(count.parse(0)).toBe(0);
    expect(count.parse('42')).toBe(42);
    expect(count.parse('0x2a')).toBe(42);
    expect(count.parse(maxCount)).toBe(maxCount);
    expect(count.parse(String(maxCount))).toBe(maxCount);
    expect(integer({ min: -5, max: 5 }).parse('-5')).toBe(-5);
  });

  it('refuses everything else, saying the range', () => {
    for (const value of [Number.NaN, Number.POSITIVE_INFINITY, null, [1]])
      expect(count.safeParse(value).success, String(value)).toBe(false);
    // Vault's weak decoding: "" is 0 and a bool is 1 or 0.
    expect(count.parse('')).toBe(0);
    expect(count.parse(true)).toBe(1);
    for (const value of [maxCount + 1, String(maxCount + 1)]) {
      const result = count.safeParse(value);
      expect(result.success, String(value)).toBe(false);
      expect(result.error?.issues[0]?.message).toContain(`must be at most ${maxCount}`);
    }
    for (const value of ['9007199254740993', 2 ** 53, 1e300]) {
      const result = count.safeParse(value);
      expect(result.success, String(value)).toBe(false);
      expect(result.error?.issues[0]?.message).toContain('beyond');
    }
    for (const value of [-1, '-1'])
      expect(count.safeParse(value).error?.issues[0]?.message).toBe('must be at least 0, got -1');
    for (const value of [1.5, '1.5', '1e3', ' 42', 'x']) {
      const result = count.safeParse(value);
      expect(result.success, String(value)).toBe(false);
      expect(result.error?.issues[0]?.message).toMatch(/^cannot parse .* as an integer$/);
    }
    expect(integer({ min: -5, max: 5 }).safeParse(-6).error?.issues[0]?.message).toBe('must be at least -5, got -6');
    expect(integer({ max: 100 }).safeParse(101).success).toBe(false);
  });

  it('accepts free-form JSON whose numbers are exact, and points at the first that is not', () => {
    expect(jsonValue.parse({ a: [1, 2.5, -9007199254740991], b: 'x', c: null })).toEqual({
      a: [1, 2.5, -9007199254740991],
      b: 'x',
      c: null,
    });
    const result = jsonValue.safeParse({ a: { b: [0, 2 ** 60] } });
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.path).toEqual(['a', 'b', 1]);
  });
});
