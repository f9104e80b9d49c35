/** Durations as Vault and Nomad accept them: integer seconds, or Go-style strings such as `90s`, `1h30m`, `2d`. */

const unitSeconds: Record<string, number> = {
  ns: 1e-9,
  us: 1e-6,
  µs: 1e-6,
  μs: 1e-6,
  ms: 1e-3,
  s: 1,
  m: 60,
  h: 3600,
  d: 86400,
};
/** The units Vault's durations take: Go's, and days. */
const vaultUnitDuration = /^(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h|d)/;

export class DurationError extends Error {}

/** Go's largest time.Duration, in whole seconds: nothing longer is a duration anywhere in Vault or Nomad. */
export const maxDurationSeconds = 9_223_372_036;

/** Seconds (whole, rounded down) from a number or a duration string; negatives and garbage throw DurationError. */
export function parseDuration(value: unknown): number {
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || value < 0) throw new DurationError(`must be a non-negative duration, got ${value}`);
    return checkedMax(Math.floor(value), String(value));
  }
  if (typeof value !== 'string') throw new DurationError('must be a duration (seconds or a string like "1h30m")');
  const text = value.trim();
  if (text === '') return 0;
  if (/^\d+$/.test(text)) return checkedMax(Number(text), value);
  if (text.startsWith('-')) throw new DurationError(`must be a non-negative duration, got "${value}"`);
  return checkedMax(Math.floor(sumOfUnits(text, vaultUnitDuration, value)), value);
}

/**
 * Go's `time.ParseDuration`, as Nomad reads its durations (`ExpirationTTL`, `MaxTokenTTL`, leeways, `?wait=`): a
 * sequence of decimal numbers, each with a unit (`ns`, `us`, `µs`, `ms`, `s`, `m`, `h`), such as `1h30m` or `1500ms`;
 * `0` alone needs no unit. Unlike `parseDuration` (Vault's forms) it takes no days and no bare seconds, and it keeps
 * the fraction: the result is in seconds, not rounded. Negative durations are refused (no Nomad field takes one).
 */
export function parseGoDuration(value: string): number {
  const text = value;
  if (text === '0') return 0;
  if (text.startsWith('-')) throw new DurationError(`must be a non-negative duration, got "${value}"`);
  const rest = text.startsWith('+') ? text.slice(1) : text;
  if (rest === '') throw new DurationError(`is not a valid duration: "${value}"`);
  const total = sumOfUnits(rest, goUnitDuration, value);
  if (!(total <= maxDurationSeconds))
    throw new DurationError(`is too large: "${value}" (at most ${maxDurationSeconds} seconds)`);
  return total;
}

/** Seconds in a sequence of numbers with units (`1h30m`), each matched by `unit` at the start of what is left. */
function sumOfUnits(text: string, unit: RegExp, given: string): number {
  let rest = text;
  let total = 0;
  while (rest.length > 0) {
    const match = unit.exec(rest);
    if (!match) throw new DurationError(`is not a valid duration: "${given}"`);
    total += Number(match[1]) * (unitSeconds[match[2] as string] as number);
    rest = rest.slice(match[0].length);
  }
  return total;
}

/** Go's time.Duration units; Go has no day. */
const goUnitDuration = /^(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/;

function checkedMax(seconds: number, given: string): number {
  if (!(seconds <= maxDurationSeconds))
    throw new DurationError(`is too large: "${given}" (at most ${maxDurationSeconds} seconds)`);
  return seconds;
}

/** Go's time.Duration String() for whole seconds: `0s`, `45s`, `1h30m0s`. */
export function formatDuration(seconds: number): string {
  if (seconds === 0) return '0s';
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  if (h > 0) return `${h}h${m}m${s}s`;
  if (m > 0) return `${m}m${s}s`;
  return `${s}s`;
}
