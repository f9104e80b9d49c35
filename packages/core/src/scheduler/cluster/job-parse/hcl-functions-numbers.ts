/** The number functions of Nomad's job-file table (go-cty stdlib's number.go). */
import type { HclFunction } from './hcl-context.ts';
import { HclEvalError, numberText, toNumber, toText, type HclValue } from './hcl-values.ts';

const unaryNumber = (apply: (value: number) => number): HclFunction => ({
  min: 1,
  max: 1,
  run: ([value]) => apply(toNumber(value as HclValue, 'the argument')),
});

const numbersOf = (args: HclValue[]) => {
  if (args.length === 0) throw new HclEvalError('Invalid arguments', 'must pass at least one number');
  return args.map((arg, position) => toNumber(arg, `argument ${position + 1}`));
};

const digits = '0123456789abcdefghijklmnopqrstuvwxyz';

function parseInteger(text: string, base: number): number {
  if (!Number.isInteger(base) || base < 2 || base > 62)
    throw new HclEvalError('Invalid base', 'base must be a whole number between 2 and 62 inclusive');
  const match = /^([+-]?)(.+)$/s.exec(text);
  const body = match?.[2] ?? '';
  let value = 0n;
  for (const char of body) {
    const digit =
      base <= 36
        ? digits.indexOf(char.toLowerCase())
        : `0123456789${digits.slice(10)}${digits.slice(10).toUpperCase()}`.indexOf(char);
    if (digit < 0 || digit >= base)
      throw new HclEvalError('Invalid number', `cannot parse ${JSON.stringify(text)} as a base ${base} integer`);
    value = value * BigInt(base) + BigInt(digit);
  }
  if (body === '')
    throw new HclEvalError('Invalid number', `cannot parse ${JSON.stringify(text)} as a base ${base} integer`);
  return Number(match?.[1] === '-' ? -value : value);
}

export const numberFunctions: Record<string, HclFunction> = {
  abs: unaryNumber(Math.abs),
  ceil: unaryNumber(Math.ceil),
  floor: unaryNumber(Math.floor),
  signum: unaryNumber((value) => (value > 0 ? 1 : value < 0 ? -1 : 0)),
  log: {
    min: 2,
    max: 2,
    run: ([value, base]) => {
      const result =
        Math.log(toNumber(value as HclValue, 'the number')) / Math.log(toNumber(base as HclValue, 'the base'));
      if (!Number.isFinite(result)) throw new HclEvalError('Invalid number', 'the logarithm is not a finite number');
      return result;
    },
  },
  pow: {
    min: 2,
    max: 2,
    run: ([value, power]) => {
      const result = toNumber(value as HclValue, 'the number') ** toNumber(power as HclValue, 'the power');
      if (!Number.isFinite(result)) throw new HclEvalError('Invalid number', 'the power is not a finite number');
      return result;
    },
  },
  max: { min: 0, run: (args) => Math.max(...numbersOf(args)) },
  min: { min: 0, run: (args) => Math.min(...numbersOf(args)) },
  parseint: {
    min: 2,
    max: 2,
    run: ([text, base]) => {
      if (typeof text !== 'string')
        throw new HclEvalError(
          'Invalid argument',
          `first argument must be a string, not ${numberText(toNumber(text as HclValue, 'the text'))}`,
        );
      return parseInteger(toText(text, 'the text'), toNumber(base as HclValue, 'the base'));
    },
  },
};
