/** The time functions of Nomad's job-file table (go-cty stdlib's datetime.go): `formatdate` and `timeadd`. */

import { dayNames, monthNames } from '../../../lib/go-template/functions.ts';
import type { HclFunction } from './hcl-context.ts';
import { HclEvalError, type HclValue, toText } from './hcl-values.ts';

interface Timestamp {
  /** Milliseconds since the epoch (UTC), and the nanoseconds below the millisecond. */
  millis: number;
  nanos: number;
  /** The offset written, in minutes east of UTC; `Z` when null. */
  offset: number | null;
}

const rfc3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

function parseTimestamp(value: HclValue | undefined): Timestamp {
  const text = toText(value as HclValue, 'the timestamp');
  const match = rfc3339.exec(text);
  if (!match) throw new HclEvalError('Invalid timestamp', `not a valid RFC3339 timestamp: ${JSON.stringify(text)}`);
  const [, year, month, day, hour, minute, second, fraction = '', zone = 'Z'] = match;
  const offset = /^[Zz]$/.test(zone)
    ? null
    : (zone[0] === '-' ? -1 : 1) * (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(4, 6)));
  const local = Date.UTC(Number(year), Number(month) - 1, Number(day), Number(hour), Number(minute), Number(second));
  const check = new Date(local);
  if (check.getUTCDate() !== Number(day) || Number(hour) > 23 || Number(minute) > 59 || Number(second) > 59)
    throw new HclEvalError('Invalid timestamp', `not a valid RFC3339 timestamp: ${JSON.stringify(text)}`);
  const digits = `${fraction.slice(1)}000000000`.slice(0, 9);
  return {
    millis: local - (offset ?? 0) * 60_000 + Number(digits.slice(0, 3)),
    nanos: Number(digits.slice(3)),
    offset,
  };
}

/** The wall-clock fields of a timestamp in its own offset. */
function fields(time: Timestamp) {
  const date = new Date(time.millis + (time.offset ?? 0) * 60_000);
  return {
    year: date.getUTCFullYear(),
    month: date.getUTCMonth() + 1,
    day: date.getUTCDate(),
    weekday: date.getUTCDay(),
    hour: date.getUTCHours(),
    minute: date.getUTCMinutes(),
    second: date.getUTCSeconds(),
  };
}

const two = (value: number) => String(value).padStart(2, '0');

function zoneText(offset: number | null, colon: boolean): string {
  if (offset === null) return 'Z';
  const sign = offset < 0 ? '-' : '+';
  const minutes = Math.abs(offset);
  return `${sign}${two(Math.floor(minutes / 60))}${colon ? ':' : ''}${two(minutes % 60)}`;
}

function formatTimestamp(time: Timestamp): string {
  const f = fields(time);
  return `${String(f.year).padStart(4, '0')}-${two(f.month)}-${two(f.day)}T${two(f.hour)}:${two(f.minute)}:${two(f.second)}${zoneText(time.offset, true)}`;
}

const units: Record<string, number> = { ns: 1, us: 1e3, µs: 1e3, μs: 1e3, ms: 1e6, s: 1e9, m: 60e9, h: 3600e9 };

/** A Go duration (`1h30m`, `-1.5s`) in nanoseconds. */
function parseDuration(text: string): number {
  const match = /^([+-]?)((?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+$/.exec(text);
  if (text === '0') return 0;
  if (!match) throw new HclEvalError('Invalid duration', `time: invalid duration ${JSON.stringify(text)}`);
  let total = 0;
  for (const part of text.replace(/^[+-]/, '').matchAll(/(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/g))
    total += Number(part[1]) * (units[part[2] as string] as number);
  return match[1] === '-' ? -total : total;
}

function formatDate(spec: string, time: Timestamp): string {
  const f = fields(time);
  const hour12 = f.hour % 12 === 0 ? 12 : f.hour % 12;
  const tokens: Record<string, () => string> = {
    YYYY: () => String(f.year).padStart(4, '0'),
    YY: () => two(f.year % 100),
    MMMM: () => monthNames[f.month - 1] as string,
    MMM: () => (monthNames[f.month - 1] as string).slice(0, 3),
    MM: () => two(f.month),
    M: () => String(f.month),
    DD: () => two(f.day),
    D: () => String(f.day),
    EEEE: () => dayNames[f.weekday] as string,
    EEE: () => (dayNames[f.weekday] as string).slice(0, 3),
    hh: () => two(f.hour),
    h: () => String(f.hour),
    HH: () => two(hour12),
    H: () => String(hour12),
    AA: () => (f.hour < 12 ? 'AM' : 'PM'),
    aa: () => (f.hour < 12 ? 'am' : 'pm'),
    mm: () => two(f.minute),
    m: () => String(f.minute),
    ss: () => two(f.second),
    s: () => String(f.second),
    ZZZZZ: () => zoneText(time.offset, true).replace(/^Z$/, '+00:00'),
    ZZZZ: () => zoneText(time.offset, false).replace(/^Z$/, '+0000'),
    ZZZ: () => (time.offset === null ? 'UTC' : zoneText(time.offset, false)),
    Z: () => zoneText(time.offset, true),
  };
  let out = '';
  let position = 0;
  while (position < spec.length) {
    const char = spec[position] as string;
    if (char === "'") {
      // A quoted literal; '' is a quote, inside one or alone.
      let cursor = position + 1;
      if (spec[cursor] === "'") {
        out += "'";
        position = cursor + 1;
        continue;
      }
      for (;;) {
        if (cursor >= spec.length) throw new HclEvalError('Invalid date format', "unterminated literal '");
        if (spec[cursor] === "'" && spec[cursor + 1] === "'") {
          out += "'";
          cursor += 2;
        } else if (spec[cursor] === "'") break;
        else out += spec[cursor++];
      }
      position = cursor + 1;
      continue;
    }
    if (/[A-Za-z]/.test(char)) {
      let end = position;
      while (spec[end] === char) end++;
      const token = spec.slice(position, end);
      const render = tokens[token];
      if (!render) throw new HclEvalError('Invalid date format', `invalid date format verb ${JSON.stringify(token)}`);
      out += render();
      position = end;
      continue;
    }
    out += char;
    position++;
  }
  return out;
}

export const timeFunctions: Record<string, HclFunction> = {
  timeadd: {
    min: 2,
    max: 2,
    run: ([timestamp, duration]) => {
      const time = parseTimestamp(timestamp);
      const nanos = time.nanos + parseDuration(toText(duration as HclValue, 'the duration'));
      const millis = time.millis + Math.floor(nanos / 1e6);
      if (!Number.isFinite(millis) || Math.abs(millis) > 8.64e15)
        throw new HclEvalError('Invalid duration', 'the time is out of range');
      return formatTimestamp({ millis, nanos: 0, offset: time.offset });
    },
  },
  formatdate: {
    min: 2,
    max: 2,
    run: ([spec, timestamp]) => formatDate(toText(spec as HclValue, 'the format'), parseTimestamp(timestamp)),
  },
};
