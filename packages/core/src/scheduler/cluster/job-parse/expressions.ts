/**
 * The expressions of a job file, evaluated as Nomad's `jobspec2` evaluates them. The HCL parser
 * (`@cdktf/hcl2json`) answers every literal as JSON and every other expression as its source inside `${…}`; those
 * strings are parsed by `hcl-expression.ts` and evaluated by `hcl-evaluate.ts` with Nomad's function table
 * (`hcl-functions.ts`): templates with interpolations and `%{if}`/`%{for}` directives, operators, conditionals,
 * traversals and splats, `for` expressions, tuple and object constructors, function calls. `var.` and `local.` name
 * the file's variables and locals; any other root (`attr.kernel.name`, `meta.rack`, `NOMAD_PORT_http`) is, as in
 * Nomad, a variable the client interpolates at run time: it stays in the result as `${…}`.
 *
 * Refused with a 400 that names them: the filesystem functions (this server's disk is not the submitter's), unknown
 * functions, type errors, an undeclared `var.` or `local.`, and an expression that costs too much (`hcl-values.ts`). */
import { badRequest } from '../../../lib/errors.ts';
import { evaluateExpression, evaluateTemplate } from './hcl-evaluate.ts';
import { HclExpressionError, parseTemplate } from './hcl-expression.ts';
import { Budget, HclEvalError, HclLimitError, HclRefusedError, type HclValue, type Scope } from './hcl-values.ts';

export type { HclValue, Scope } from './hcl-values.ts';

/** A problem in the job file, as Nomad words its diagnostics: `<where>: <summary>; <detail>`. */
export const hclError = (where: string, summary: string, detail: string) =>
  badRequest(`Failed to parse job: ${where ? `${where}: ` : ''}${summary}; ${detail}`);

export { PendingLocal } from './hcl-values.ts';

/** A string as the parser answered it, evaluated: a template, or the source of a non-literal expression. */
export function evaluateString(text: string, scope: Scope, where: string): HclValue {
  if (!text.includes('{')) return text;
  try {
    const parts = parseTemplate(text);
    return evaluateTemplate(parts, {
      scope,
      bound: new Map(scope.bound ?? []),
      budget: new Budget(),
      evaluate: evaluateExpression,
    });
  } catch (error) {
    if (error instanceof HclExpressionError) throw hclError(where, 'Invalid expression', error.message);
    if (error instanceof HclEvalError) throw hclError(where, error.summary, error.message);
    if (error instanceof HclRefusedError) throw hclError(where, 'Error in function call', error.message);
    if (error instanceof HclLimitError) throw hclError(where, 'Expression too costly', error.message);
    if (error instanceof RangeError) throw hclError(where, 'Expression too costly', 'the expression nests too deeply');
    throw error;
  }
}

/** A value as the parser answered it, every string in it evaluated. */
export function evaluate(value: unknown, scope: Scope, where: string): HclValue {
  if (typeof value === 'string') return evaluateString(value, scope, where);
  if (Array.isArray(value)) return value.map((item) => evaluate(item, scope, where));
  if (value !== null && typeof value === 'object') {
    const out: { [key: string]: HclValue } = {};
    for (const [key, item] of Object.entries(value)) {
      const name = key.includes('${') ? evaluateString(key, scope, where) : key;
      if (typeof name !== 'string') throw hclError(where, 'Invalid object key', `The key "${key}" is not a string.`);
      out[name] = evaluate(item, scope, where);
    }
    return out;
  }
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return value;
  throw hclError(where, 'Unsupported value', typeof value);
}
