/** The string functions of Nomad's job-file table (go-cty stdlib's string.go, format.go, regexp.go). */
import { compileGoRegexp } from '../../../lib/bexpr.ts';
import { format } from './hcl-format.ts';
import type { HclFunction } from './hcl-context.ts';
import { checkList, checkString, HclEvalError, toList, toNumber, toText, type HclValue } from './hcl-values.ts';

const segmenter = new Intl.Segmenter('en', { granularity: 'grapheme' });
const graphemes = (text: string) => Array.from(segmenter.segment(text), (segment) => segment.segment);

const text = (value: HclValue | undefined, what = 'the string') => toText(value as HclValue, what);

const stringFunction = (apply: (value: string) => string): HclFunction => ({
  min: 1,
  max: 1,
  run: ([value]) => checkString(apply(text(value))),
});

function formatList(args: HclValue[]): HclValue {
  const [template, ...rest] = args;
  let length: number | undefined;
  rest.forEach((arg, position) => {
    if (!Array.isArray(arg)) return;
    if (length !== undefined && arg.length !== length)
      throw new HclEvalError(
        'Invalid argument',
        `argument ${position + 2} has length ${arg.length}, which is inconsistent with argument 2 of length ${length}`,
      );
    length = arg.length;
  });
  const count = length ?? 1;
  const out: HclValue[] = [];
  for (let item = 0; item < count; item++)
    out.push(
      format(
        text(template, 'the format'),
        rest.map((arg) => (Array.isArray(arg) ? (arg[item] as HclValue) : arg)),
      ),
    );
  return checkList(out);
}

export const stringFunctions: Record<string, HclFunction> = {
  upper: stringFunction((value) => value.toUpperCase()),
  lower: stringFunction((value) => value.toLowerCase()),
  strrev: stringFunction((value) => graphemes(value).reverse().join('')),
  /** Nomad's table maps `reverse` to go-cty's string reverse, as `strrev`. */
  reverse: stringFunction((value) => graphemes(value).reverse().join('')),
  trimspace: stringFunction((value) => value.trim()),
  chomp: stringFunction((value) => value.replace(/(?:\r\n|\n|\r)+$/, '')),
  title: stringFunction((value) =>
    value.replace(
      /(^|[^\p{L}\p{N}_'])(\p{L})/gu,
      (_all, before: string, letter: string) => before + letter.toUpperCase(),
    ),
  ),
  strlen: { min: 1, max: 1, run: ([value]) => graphemes(text(value)).length },
  substr: {
    min: 3,
    max: 3,
    run: ([value, offsetValue, lengthValue]) => {
      const chars = graphemes(text(value));
      let offset = toNumber(offsetValue as HclValue, 'the offset');
      const length = toNumber(lengthValue as HclValue, 'the length');
      if (offset < 0) offset = Math.max(chars.length + offset, 0);
      if (offset > chars.length) return '';
      const end = length < 0 ? chars.length : Math.min(offset + length, chars.length);
      return chars.slice(offset, end).join('');
    },
  },
  indent: {
    min: 2,
    max: 2,
    run: ([spaces, value]) => {
      const count = toNumber(spaces as HclValue, 'the number of spaces');
      if (count > 1000) throw new HclEvalError('Invalid argument', 'indent takes at most 1000 spaces');
      const prefix = ' '.repeat(Math.max(0, Math.trunc(count)));
      return checkString(text(value).replace(/\n/g, `\n${prefix}`));
    },
  },
  join: {
    min: 2,
    run: ([separator, ...lists]) => {
      const items = lists.flatMap((list) => toList(list as HclValue, 'a list to join'));
      return checkString(
        items
          .map((item) => {
            if (item === null) throw new HclEvalError('Invalid argument', 'a list to join has a null element');
            return text(item, 'an element to join');
          })
          .join(text(separator, 'the separator')),
      );
    },
  },
  split: {
    min: 2,
    max: 2,
    run: ([separator, value]) => checkList(text(value).split(text(separator, 'the separator'))),
  },
  trim: {
    min: 2,
    max: 2,
    run: ([value, cutset]) => {
      const cut = new Set(text(cutset, 'the cutset'));
      const chars = [...text(value)];
      let start = 0;
      let end = chars.length;
      while (start < end && cut.has(chars[start] as string)) start++;
      while (end > start && cut.has(chars[end - 1] as string)) end--;
      return chars.slice(start, end).join('');
    },
  },
  trimprefix: {
    min: 2,
    max: 2,
    run: ([value, prefix]) => {
      const whole = text(value);
      const cut = text(prefix, 'the prefix');
      return whole.startsWith(cut) ? whole.slice(cut.length) : whole;
    },
  },
  trimsuffix: {
    min: 2,
    max: 2,
    run: ([value, suffix]) => {
      const whole = text(value);
      const cut = text(suffix, 'the suffix');
      return cut !== '' && whole.endsWith(cut) ? whole.slice(0, whole.length - cut.length) : whole;
    },
  },
  replace: {
    min: 3,
    max: 3,
    run: ([value, search, replacement]) => {
      const find = text(search, 'the substring');
      const into = text(replacement, 'the replacement');
      const whole = text(value);
      if (find === '')
        return checkString(
          graphemes(whole)
            .map((char) => into + char)
            .join('') + into,
        );
      return checkString(whole.split(find).join(into));
    },
  },
  regex_replace: {
    min: 3,
    max: 3,
    run: ([value, pattern, replacement]) => {
      // RE2, as Go's regexp: linear time, so no pattern backtracks for seconds on a crafted string.
      let regex: ReturnType<typeof compileGoRegexp>;
      try {
        regex = compileGoRegexp(text(pattern, 'the pattern'));
      } catch (error) {
        throw new HclEvalError('Invalid pattern', `invalid regular expression: ${(error as Error).message}`);
      }
      return checkString(regex.matcher(text(value)).replaceAll(text(replacement, 'the replacement')));
    },
  },
  format: { min: 1, run: ([template, ...args]) => format(text(template, 'the format'), args) },
  formatlist: { min: 1, run: formatList },
};
