import { describe, expect, it } from 'vitest';
import { DurationError, formatDuration, parseDuration, parseGoDuration } from './duration.ts';

describe('parseDuration', () => {
  it.each([
    ['90s', 90],
    ['45m', 2700],
    ['1h30m', 5400],
    ['1h30m15s', 5415],
    ['1.5h', 5400],
    ['2d', 172_800],
    ['1d12h', 129_600],
    ['1500ms', 1],
    ['0s', 0],
    ['768h', 2_764_800],
    [' 10m ', 600],
  ])('reads the Go-style string %j as %i seconds', (text, seconds) => {
    expect(parseDuration(text)).toBe(seconds);
  });

  it('takes integers and numeric strings as seconds', () => {
    expect(parseDuration(0)).toBe(0);
    expect(parseDuration(90)).toBe(90);
    expect(parseDuration(3600)).toBe(3600);
    expect(parseDuration('90')).toBe(90);
    expect(parseDuration('0')).toBe(0);
    expect(parseDuration(90.9)).toBe(90);
  });

  it('reads an empty string as zero, as Vault does', () => {
    expect(parseDuration('')).toBe(0);
  });

  it.each([-1, -0.5, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY])(
    'rejects the number %s',
    (value) => {
      expect(() => parseDuration(value)).toThrow(DurationError);
    },
  );

  it.each(['-1', '-5s', '-1h30m', '1h-30m'])('rejects the negative %j', (text) => {
    expect(() => parseDuration(text)).toThrow(DurationError);
  });

  it.each(['soon', 'h', '1x', '1hh', '1h 30m', '1.5', '1,5h', 's10', '10s!', '1e3s', '0x10'])(
    'rejects the garbage %j',
    (text) => {
      expect(() => parseDuration(text)).toThrow(DurationError);
    },
  );

  it.each([null, undefined, true, {}, [], ['1h']])('rejects %j, which is not a duration at all', (value) => {
    expect(() => parseDuration(value)).toThrow(DurationError);
  });

  it('names the bad input in its message', () => {
    expect(() => parseDuration('soon')).toThrow('is not a valid duration: "soon"');
    expect(() => parseDuration(-3)).toThrow('must be a non-negative duration, got -3');
    expect(() => parseDuration('-3s')).toThrow('must be a non-negative duration, got "-3s"');
  });
});

describe('formatDuration', () => {
  it.each([
    [0, '0s'],
    [45, '45s'],
    [60, '1m0s'],
    [90, '1m30s'],
    [3600, '1h0m0s'],
    [5415, '1h30m15s'],
    [172_800, '48h0m0s'],
    [2_764_800, '768h0m0s'],
  ])('writes %i seconds as Go does: %s', (seconds, text) => {
    expect(formatDuration(seconds)).toBe(text);
  });

  it('round-trips through parseDuration', () => {
    for (const seconds of [0, 1, 59, 61, 3599, 3601, 86_399, 2_764_800]) {
      expect(parseDuration(formatDuration(seconds))).toBe(seconds);
    }
  });
});

describe('parseGoDuration (Go time.ParseDuration, as Nomad reads durations)', () => {
  it.each([
    ['0', 0],
    ['0s', 0],
    ['90s', 90],
    ['1h30m', 5400],
    ['1500ms', 1.5],
    ['1.5s', 1.5],
    ['.5s', 0.5],
    ['1.s', 1],
    ['2h45m10.5s', 9910.5],
    ['300us', 0.0003],
    ['300µs', 0.0003],
    ['1000000ns', 0.001],
    ['+10m', 600],
  ])('reads %j as %d seconds, keeping the fraction', (text, seconds) => {
    expect(parseGoDuration(text)).toBeCloseTo(seconds, 9);
  });

  it.each(['', '10', '1d', 'soon', '-5s', '1h 30m', ' 1h', '1e3s', '.s', 'h', '+'])(
    'refuses %j, which Go or Nomad refuses',
    (text) => {
      expect(() => parseGoDuration(text)).toThrow(DurationError);
    },
  );

  it('refuses a duration longer than Go can hold, naming it', () => {
    expect(() => parseGoDuration('9999999999h')).toThrow(/too large: "9999999999h"/);
  });
});
