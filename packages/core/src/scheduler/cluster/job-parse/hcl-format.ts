/** go-cty's `format` verbs (`%s %d %v %q %f %e %g %x %X %o %b %t %%`, flags, width, precision, `%[n]`). */
import {
  HclEvalError,
  HclLimitError,
  checkString,
  numberText,
  toBool,
  toNumber,
  toText,
  typeName,
  type HclValue,
} from './hcl-values.ts';

/** The widest field and the largest precision a format verb may ask for. */
export const maxFormatWidth = 1000;

const verbPattern = /%([-+# 0]*)(?:\[(\d+)\])?(\d+)?(?:\.(\d+))?([a-zA-Z%])/y;

function pad(text: string, width: number, flags: string): string {
  if (text.length >= width) return text;
  if (flags.includes('-')) return text.padEnd(width);
  if (flags.includes('0') && /^[+-]?[0-9]/.test(text)) {
    const sign = /^[+-]/.test(text) ? (text[0] as string) : '';
    return sign + text.slice(sign.length).padStart(width - sign.length, '0');
  }
  return text.padStart(width);
}

function signed(value: number, text: string, flags: string): string {
  if (value >= 0 && !Object.is(value, -0)) {
    if (flags.includes('+')) return `+${text}`;
    if (flags.includes(' ')) return ` ${text}`;
  }
  return text;
}

function integer(value: HclValue, verb: string): number {
  const number = toNumber(value, `the %${verb} argument`);
  if (!Number.isInteger(number))
    throw new HclEvalError(
      'Invalid value',
      `unsupported value for "%${verb}": ${numberText(number)} is not a whole number`,
    );
  return number;
}

function exponent(value: number, precision: number | undefined, upper: boolean): string {
  const text = value.toExponential(precision ?? 6).replace(/e([+-])(\d)$/, 'e$10$2');
  return upper ? text.toUpperCase() : text;
}

function general(value: number, precision: number | undefined): string {
  if (precision === undefined) {
    const text = String(value);
    if (/e/.test(text)) return text.replace(/e([+-])(\d)$/, 'e$10$2');
    return Math.abs(value) >= 1e21 ? exponent(value, undefined, false) : text;
  }
  return String(Number(value.toPrecision(Math.max(precision, 1))));
}

function json(value: HclValue): string {
  return JSON.stringify(value) ?? 'null';
}

function verb(letter: string, value: HclValue, flags: string, precision: number | undefined): string {
  switch (letter) {
    case 'v':
      if (flags.includes('#')) return json(value);
      if (value === null) return 'null';
      if (typeof value === 'object') return json(value);
      return toText(value, 'the %v argument');
    case 's': {
      if (value === null || typeof value === 'object')
        throw new HclEvalError('Invalid value', `unsupported value for "%s": ${typeName(value)} cannot be a string`);
      const text = toText(value, 'the %s argument');
      return precision === undefined ? text : [...text].slice(0, precision).join('');
    }
    case 'q':
      if (value === null || typeof value === 'object')
        throw new HclEvalError('Invalid value', `unsupported value for "%q": ${typeName(value)} cannot be a string`);
      return JSON.stringify(toText(value, 'the %q argument'));
    case 't':
      return String(toBool(value, 'the %t argument'));
    case 'd': {
      const number = integer(value, letter);
      return signed(number, numberText(number), flags);
    }
    case 'b':
    case 'o':
    case 'x':
    case 'X': {
      if (letter.toLowerCase() === 'x' && typeof value === 'string') {
        const hex = Buffer.from(value).toString('hex');
        return letter === 'X' ? hex.toUpperCase() : hex;
      }
      const number = integer(value, letter);
      const text = BigInt(number).toString(letter === 'b' ? 2 : letter === 'o' ? 8 : 16);
      return signed(number, letter === 'X' ? text.toUpperCase() : text, flags);
    }
    case 'f':
    case 'F': {
      const number = toNumber(value, `the %${letter} argument`);
      return signed(number, number.toFixed(precision ?? 6), flags);
    }
    case 'e':
    case 'E': {
      const number = toNumber(value, `the %${letter} argument`);
      return signed(number, exponent(number, precision, letter === 'E'), flags);
    }
    case 'g':
    case 'G': {
      const number = toNumber(value, `the %${letter} argument`);
      const text = general(number, precision);
      return signed(number, letter === 'G' ? text.toUpperCase() : text, flags);
    }
    default:
      throw new HclEvalError('Invalid format', `unrecognized format verb %${letter}`);
  }
}

export function format(template: string, args: HclValue[]): string {
  let out = '';
  let next = 0;
  let position = 0;
  while (position < template.length) {
    const percent = template.indexOf('%', position);
    if (percent < 0) {
      out += template.slice(position);
      break;
    }
    out += template.slice(position, percent);
    verbPattern.lastIndex = percent;
    const match = verbPattern.exec(template);
    if (!match) throw new HclEvalError('Invalid format', `unrecognized format verb at offset ${percent}`);
    position = verbPattern.lastIndex;
    const [, flags = '', argument, widthText, precisionText, letter = ''] = match;
    if (letter === '%') {
      out += '%';
      continue;
    }
    const width = widthText === undefined ? 0 : Number(widthText);
    const precision = precisionText === undefined ? undefined : Number(precisionText);
    if (width > maxFormatWidth || (precision ?? 0) > maxFormatWidth)
      throw new HclLimitError(`a format verb asks for a width or precision above ${maxFormatWidth}`);
    if (argument !== undefined) next = Number(argument) - 1;
    if (next < 0 || next >= args.length)
      throw new HclEvalError('Invalid format', `not enough arguments for the format verb %${letter}`);
    out += pad(verb(letter, args[next] as HclValue, flags, precision), width, flags);
    next++;
    checkString(out);
  }
  if (next < args.length && !/%\[\d+\]/.test(template))
    throw new HclEvalError('Invalid format', `too many arguments; no verbs for ${args.length - next} of them`);
  return out;
}
