import { createHash, randomInt, randomUUID } from 'node:crypto';
import { printValue, truthy, typeName } from './execute.ts';
import { TemplateError, type TemplateFunction, type TemplateValue } from './parse.ts';

/** The functions templates call: Go's builtins, Vault's template helpers, and Go's `fmt` and `time` formatting. */

const asString = (value: TemplateValue, what: string): string => {
  if (typeof value === 'string') return value;
  if (Buffer.isBuffer(value)) return value.toString('latin1');
  throw new TemplateError(`${what} must be a string, got ${typeName(value)}`);
};
const asInt = (value: TemplateValue, what: string): number => {
  if (typeof value === 'number' && Number.isInteger(value)) return value;
  throw new TemplateError(`${what} must be an integer, got ${typeName(value)}`);
};
const bytesOf = (value: TemplateValue): Buffer =>
  Buffer.isBuffer(value) ? value : Buffer.from(asString(value, 'value'), 'utf8');

const alphanumeric = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

export function builtins(now: () => number): Record<string, TemplateFunction> {
  const compare =
    (name: string, test: (a: number | string, b: number | string) => boolean) =>
    (a: TemplateValue, b: TemplateValue) => {
      if ((typeof a !== 'number' && typeof a !== 'string') || typeof a !== typeof b)
        throw new TemplateError(`incompatible types for comparison in ${name}`);
      return test(a as number | string, b as number | string);
    };
  return {
    // Vault's helpers (sdk/helper/template): argument order as in a pipeline, the piped value last.
    random: (length, charset) => {
      const size = asInt(length, 'random length');
      if (size < 0) throw new TemplateError('random length must be >= 0');
      const chars = [...(charset === undefined ? alphanumeric : asString(charset, 'charset'))];
      if (chars.length === 0) throw new TemplateError('random charset must not be empty');
      return Array.from({ length: size }, () => chars[randomInt(chars.length)]).join('');
    },
    truncate: (maxLength, value) => {
      const max = asInt(maxLength, 'max length');
      if (max <= 0) throw new TemplateError('max length must be > 0');
      const text = asString(value, 'value');
      return text.length <= max ? text : text.slice(0, max);
    },
    truncate_sha256: (maxLength, value) => {
      const max = asInt(maxLength, 'max length');
      if (max <= 8) throw new TemplateError('max length must be > 8');
      const text = asString(value, 'value');
      if (text.length <= max) return text;
      const cut = max - 8;
      return text.slice(0, cut) + sha256Hex(text.slice(cut)).slice(0, 8);
    },
    uppercase: (value) => asString(value, 'value').toUpperCase(),
    lowercase: (value) => asString(value, 'value').toLowerCase(),
    replace: (find, replacement, value) =>
      asString(value, 'value').replaceAll(asString(find, 'find'), asString(replacement, 'replacement')),
    sha256: (value) => sha256Hex(bytesOf(value)),
    base64: (value) => bytesOf(value).toString('base64'),
    unix_time: () => Math.floor(now() / 1000),
    unix_time_millis: () => Math.floor(now()),
    timestamp: (layout) => formatGoTime(new Date(now()), asString(layout, 'layout')),
    uuid: () => randomUUID(),
    // Go's builtins.
    printf: (format, ...args) => sprintf(asString(format, 'format'), args),
    print: (...args) =>
      args
        .map(
          (arg, index) =>
            (index > 0 && typeof arg !== 'string' && typeof args[index - 1] !== 'string' ? ' ' : '') + printValue(arg),
        )
        .join(''),
    println: (...args) => `${args.map(printValue).join(' ')}\n`,
    len: (value) => {
      if (typeof value === 'string') return Buffer.byteLength(value);
      if (Buffer.isBuffer(value) || Array.isArray(value)) return value.length;
      if (value && typeof value === 'object') return Object.keys(value).length;
      throw new TemplateError(`len of ${typeName(value)}`);
    },
    index: (collection, ...keys) => {
      let current = collection;
      for (const key of keys) {
        if (Array.isArray(current) && typeof key === 'number') current = current[key];
        else if (current && typeof current === 'object' && typeof key === 'string')
          current = (current as Record<string, unknown>)[key];
        else throw new TemplateError(`can't index item of type ${typeName(current)}`);
      }
      return current;
    },
    eq: (a, ...others) => others.some((other) => other === a),
    ne: (a, b) => a !== b,
    lt: compare('lt', (a, b) => a < b),
    le: compare('le', (a, b) => a <= b),
    gt: compare('gt', (a, b) => a > b),
    ge: compare('ge', (a, b) => a >= b),
    and: (...args) => args.find((arg) => !truthy(arg)) ?? args[args.length - 1],
    or: (...args) => args.find((arg) => truthy(arg)) ?? args[args.length - 1],
    not: (value) => !truthy(value),
  };
}

/** `utf16le`: the UTF-16 little-endian bytes of a string (LDIF templates only, for AD's `unicodePwd`). */
export const utf16le: TemplateFunction = (value) => Buffer.from(asString(value, 'value'), 'utf16le');

const sha256Hex = (value: string | Buffer) => createHash('sha256').update(value).digest('hex');

/** Go's fmt verbs that templates use: %s %q %v %d %x %X %t %f %%, with widths like %5s and %-5s. */
export function sprintf(format: string, args: TemplateValue[]): string {
  let next = 0;
  return (
    format.replace(
      /%([-0 +#]*)(\d+)?(?:\.(\d+))?([sqvdxXtf%])/g,
      (_match, flags: string, width: string | undefined, precision: string | undefined, verb: string) => {
        if (verb === '%') return '%';
        if (next >= args.length) return `%!${verb}(MISSING)`;
        const arg = args[next++];
        let text: string;
        switch (verb) {
          case 's':
          case 'v':
            text = printValue(arg);
            break;
          case 'q':
            text = typeof arg === 'number' ? `'${String.fromCodePoint(arg)}'` : goQuote(printValue(arg));
            break;
          case 'd':
            text = typeof arg === 'number' ? String(Math.trunc(arg)) : `%!d(${typeName(arg)}=${printValue(arg)})`;
            break;
          case 'x':
          case 'X': {
            const hex = typeof arg === 'number' ? arg.toString(16) : bytesOf(arg).toString('hex');
            text = verb === 'X' ? hex.toUpperCase() : hex;
            break;
          }
          case 't':
            text = typeof arg === 'boolean' ? String(arg) : `%!t(${typeName(arg)}=${printValue(arg)})`;
            break;
          default:
            text =
              typeof arg === 'number'
                ? arg.toFixed(precision === undefined ? 6 : Number(precision))
                : `%!f(${typeName(arg)}=${printValue(arg)})`;
        }
        const size = width === undefined ? 0 : Number(width);
        if (text.length >= size) return text;
        const pad = (flags.includes('0') && !flags.includes('-') && verb !== 's' ? '0' : ' ').repeat(
          size - text.length,
        );
        return flags.includes('-') ? text + pad : pad + text;
      },
    ) +
    (next < args.length
      ? `%!(EXTRA ${args
          .slice(next)
          .map((arg) => `${typeName(arg)}=${printValue(arg)}`)
          .join(', ')})`
      : '')
  );
}

/** strconv.Quote: double-quoted with Go escapes; printable Unicode kept. */
function goQuote(text: string): string {
  let out = '"';
  for (const char of text) {
    const code = char.codePointAt(0) as number;
    if (char === '"' || char === '\\') out += `\\${char}`;
    else if (char === '\n') out += '\\n';
    else if (char === '\t') out += '\\t';
    else if (char === '\r') out += '\\r';
    else if (code < 0x20 || code === 0x7f) out += `\\x${code.toString(16).padStart(2, '0')}`;
    else out += char;
  }
  return `${out}"`;
}

/** English month and weekday names, as Go's `time` package and cty's `formatdate` print them. */
export const monthNames = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];
export const dayNames = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];

/** Go's time.Format with a reference-time layout (`2006-01-02T15:04:05Z07:00`), in UTC. */
export function formatGoTime(date: Date, layout: string): string {
  const pad = (value: number, size = 2, char = '0') => String(value).padStart(size, char);
  const hour = date.getUTCHours();
  const dayOfYear =
    Math.floor(
      (Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate()) - Date.UTC(date.getUTCFullYear(), 0, 1)) /
        86_400_000,
    ) + 1;
  const nanos = date.getUTCMilliseconds() * 1_000_000;
  const tokens: Array<[string, () => string]> = [
    ['January', () => monthNames[date.getUTCMonth()] as string],
    ['Jan', () => (monthNames[date.getUTCMonth()] as string).slice(0, 3)],
    ['Monday', () => dayNames[date.getUTCDay()] as string],
    ['Mon', () => (dayNames[date.getUTCDay()] as string).slice(0, 3)],
    ['MST', () => 'UTC'],
    ['2006', () => pad(date.getUTCFullYear(), 4)],
    ['Z07:00:00', () => 'Z'],
    ['-07:00:00', () => '+00:00:00'],
    ['Z07:00', () => 'Z'],
    ['-07:00', () => '+00:00'],
    ['Z0700', () => 'Z'],
    ['-0700', () => '+0000'],
    ['Z07', () => 'Z'],
    ['-07', () => '+00'],
    ['002', () => pad(dayOfYear, 3)],
    ['__2', () => pad(dayOfYear, 3, ' ')],
    ['_2', () => pad(date.getUTCDate(), 2, ' ')],
    ['01', () => pad(date.getUTCMonth() + 1)],
    ['02', () => pad(date.getUTCDate())],
    ['03', () => pad(hour % 12 || 12)],
    ['04', () => pad(date.getUTCMinutes())],
    ['05', () => pad(date.getUTCSeconds())],
    ['06', () => pad(date.getUTCFullYear() % 100)],
    ['15', () => pad(hour)],
    ['PM', () => (hour >= 12 ? 'PM' : 'AM')],
    ['pm', () => (hour >= 12 ? 'pm' : 'am')],
    ['1', () => String(date.getUTCMonth() + 1)],
    ['2', () => String(date.getUTCDate())],
    ['3', () => String(hour % 12 || 12)],
    ['4', () => String(date.getUTCMinutes())],
    ['5', () => String(date.getUTCSeconds())],
  ];
  let out = '';
  let pos = 0;
  outer: while (pos < layout.length) {
    const fraction = /^[.,](0+|9+)(?!\d)/.exec(layout.slice(pos));
    if (fraction) {
      const digits = (fraction[1] as string).length;
      const text = String(nanos).padStart(9, '0').slice(0, digits);
      out +=
        (fraction[1] as string)[0] === '9'
          ? /^0*$/.test(text)
            ? ''
            : `.${text.replace(/0+$/, '')}`
          : `${layout[pos]}${text}`;
      pos += fraction[0].length;
      continue;
    }
    for (const [token, render] of tokens) {
      if (layout.startsWith(token, pos)) {
        out += render();
        pos += token.length;
        continue outer;
      }
    }
    out += layout[pos];
    pos++;
  }
  return out;
}
