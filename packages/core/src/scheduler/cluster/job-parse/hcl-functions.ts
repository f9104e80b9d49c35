/**
 * The functions a job file may call: Nomad's `jobspec2/functions.go` table (go-cty's stdlib, go-cty-funcs'
 * encoding/crypto/uuid/cidr, hcl's `try`/`can`), each in its own group file. The filesystem functions (`file`,
 * `fileexists`, `fileset`, `filebase64`, `abspath`, `basename`, `dirname`, `pathexpand`) are refused as Nomad's
 * server refuses them (`AllowFS: false`): this server's disk is not the submitter's. Anything else not in the table
 * (`env`, `templatefile`, Terraform-only functions) is an unknown function, as in Nomad. The slow ones, `bcrypt` and
 * `rsadecrypt`, spend the parse's cryptography allowance (`hcl-crypto-allowance.ts`).
 */
import { cidrFunctions } from './hcl-functions-cidr.ts';
import { convert, typeOf } from './hcl-convert.ts';
import { collectionFunctions } from './hcl-functions-collections.ts';
import { cryptoFunctions } from './hcl-functions-crypto.ts';
import { encodingFunctions } from './hcl-functions-encoding.ts';
import { numberFunctions } from './hcl-functions-numbers.ts';
import { stringFunctions } from './hcl-functions-strings.ts';
import { timeFunctions } from './hcl-functions-time.ts';
import { yamlDecode } from './hcl-yaml-decode.ts';
import { yamlEncode } from './hcl-yaml-encode.ts';
import type { HclExpression } from './hcl-syntax.ts';
import type { Context, HclFunction } from './hcl-context.ts';
import { checkList, HclEvalError, HclRefusedError, toList, toText, type HclValue } from './hcl-values.ts';

export const filesystemFunctions = [
  'abspath',
  'basename',
  'dirname',
  'file',
  'filebase64',
  'fileexists',
  'fileset',
  'pathexpand',
];

const table: Record<string, HclFunction> = {
  ...numberFunctions,
  ...stringFunctions,
  ...collectionFunctions,
  ...encodingFunctions,
  ...cidrFunctions,
  ...timeFunctions,
  ...cryptoFunctions,
  yamldecode: {
    min: 1,
    max: 1,
    run: ([source], context) => {
      if (source === null) throw new HclEvalError('Invalid function argument', 'YAML source code cannot be null');
      return yamlDecode(toText(source as HclValue, 'the YAML source'), context.budget);
    },
  },
  yamlencode: { min: 1, max: 1, run: ([value]) => yamlEncode(value as HclValue) },
};

/** `try(a, b, …)`: the first argument that evaluates without an error; `can(a)`: whether it does. */
function lazy(name: 'try' | 'can', args: HclExpression[], context: Context): HclValue {
  if (name === 'can' && args.length !== 1)
    throw new HclEvalError('Incorrect number of function arguments', 'can takes exactly one argument.');
  if (name === 'try' && args.length === 0)
    throw new HclEvalError('Incorrect number of function arguments', 'try needs at least one argument.');
  for (const arg of args) {
    try {
      const value = context.evaluate(arg, context);
      return name === 'can' ? true : value;
    } catch (error) {
      if (!(error instanceof HclEvalError)) throw error;
    }
  }
  if (name === 'can') return false;
  throw new HclEvalError('Error in function call', 'no expression succeeded: every argument of try failed.');
}

export function callFunction(call: Extract<HclExpression, { kind: 'call' }>, context: Context): HclValue {
  const { name } = call;
  if (filesystemFunctions.includes(name))
    throw new HclRefusedError(
      `Call to function "${name}" refused: filesystem function disabled (the server does not read its own disk for a job file; not even inside try or can).`,
    );
  if ((name === 'try' || name === 'can') && !call.expandLast) return lazy(name, call.args, context);
  if (name === 'convert') {
    const [value, type] = call.args;
    if (call.args.length !== 2 || !value || !type || call.expandLast)
      throw new HclEvalError('Incorrect number of function arguments', 'Function "convert" expects 2 arguments.');
    try {
      return convert(context.evaluate(value, context), typeOf(type));
    } catch (error) {
      if (error instanceof HclEvalError)
        throw new HclEvalError('Invalid function argument', `Call to function "convert" failed: ${error.message}`);
      throw error;
    }
  }
  const fn = Object.hasOwn(table, name) ? table[name] : undefined;
  if (!fn)
    throw new HclEvalError(
      'Call to unknown function',
      `Call to function "${name}" refused: there is no function named "${name}" in a Nomad job file.`,
    );
  let args = call.args.map((arg) => context.evaluate(arg, context));
  if (call.expandLast) {
    const last = args.pop() as HclValue;
    args = [...args, ...toList(last, `the expanded last argument of ${name}`)];
  }
  if (args.length < fn.min || (fn.max !== undefined && args.length > fn.max))
    throw new HclEvalError(
      'Incorrect number of function arguments',
      `Function "${name}" expects ${fn.max === fn.min ? fn.min : fn.max === undefined ? `at least ${fn.min}` : `${fn.min} to ${fn.max}`} arguments, got ${args.length}.`,
    );
  context.budget.spend(args.length);
  try {
    const result = fn.run(args, context);
    if (Array.isArray(result)) context.budget.spend(checkList(result).length);
    else if (typeof result === 'string') context.budget.spend(Math.ceil(result.length / 64));
    return result;
  } catch (error) {
    if (error instanceof HclEvalError)
      throw new HclEvalError('Error in function call', `Call to function "${name}" failed: ${error.message}`);
    throw error;
  }
}
