/**
 * The two slow functions of Nomad's job-file table (go-cty-funcs' crypto package): `bcrypt(str, cost…)` and
 * `rsadecrypt(ciphertext, privatekey)` (`hcl-rsa-decrypt.ts`). Both draw on the parse's cryptography allowance
 * (`hcl-crypto-allowance.ts`) before doing any work, so one job file costs at most about a second of CPU on them.
 *
 * bcrypt hashes with `bcryptjs` (pure JavaScript, no native build for the Lambda bundle) under Go's rules
 * (`golang.org/x/crypto/bcrypt` as Nomad vendors it): the `$2a$` prefix, cost 10 when none is given, a cost below 4
 * taken as 10, one above 31 refused, a password longer than 72 bytes refused rather than cut.
 */
import bcryptjs from 'bcryptjs';
import { spendCryptoWork } from './hcl-crypto-allowance.ts';
import type { HclFunction } from './hcl-context.ts';
import { rsaDecrypt } from './hcl-rsa-decrypt.ts';
import { HclEvalError, type HclValue, toNumber, toText } from './hcl-values.ts';

const defaultCost = 10;
const [minCost, maxCost] = [4, 31];

function bcrypt(password: string, cost: number): string {
  const generating = (reason: string) =>
    new HclEvalError('Invalid argument', `error occured generating password ${reason}`);
  if (Buffer.byteLength(password) > 72) throw generating('bcrypt: password length exceeds 72 bytes');
  const rounds = cost < minCost ? defaultCost : cost;
  if (rounds > maxCost)
    throw generating(`crypto/bcrypt: cost ${rounds} is outside allowed range (${minCost},${maxCost})`);
  spendCryptoWork(2 ** (rounds - minCost), `bcrypt of cost ${rounds}`);
  // bcryptjs writes `$2b$`; Go writes `$2a$`. The hash is the same for passwords under 256 bytes (the only
  // difference between the two is how a length over 255 wraps), so the salt is given the prefix Go gives.
  const salt = `$2a$${bcryptjs.genSaltSync(rounds).slice(4)}`;
  return bcryptjs.hashSync(password, salt);
}

/** A whole number as gocty reads an `int`: anything else is an argument error. */
function wholeCost(value: HclValue): number {
  if (value === null) throw new HclEvalError('Invalid function argument', 'argument must not be null');
  const cost = toNumber(value, 'the cost');
  if (!Number.isInteger(cost)) throw new HclEvalError('Invalid function argument', 'value must be a whole number');
  if (!Number.isSafeInteger(cost))
    throw new HclEvalError('Invalid function argument', 'value must be a whole number, between -2^63 and 2^63-1');
  return cost;
}

export const cryptoFunctions: Record<string, HclFunction> = {
  bcrypt: {
    min: 1,
    run: ([password, ...costs]) => {
      if (password === null) throw new HclEvalError('Invalid function argument', 'argument must not be null');
      const cost = costs.length > 0 ? wholeCost(costs[0] as HclValue) : defaultCost;
      for (const extra of costs.slice(1)) toNumber(extra, 'the cost');
      if (costs.length > 1) throw new HclEvalError('Invalid argument', 'bcrypt() takes no more than two arguments');
      return bcrypt(toText(password as HclValue, 'the string'), cost);
    },
  },
  rsadecrypt: {
    min: 2,
    max: 2,
    run: ([ciphertext, privateKey]) => {
      if (ciphertext === null || privateKey === null)
        throw new HclEvalError('Invalid function argument', 'argument must not be null');
      return rsaDecrypt(toText(ciphertext as HclValue, 'the ciphertext'), toText(privateKey as HclValue, 'the key'));
    },
  },
};
