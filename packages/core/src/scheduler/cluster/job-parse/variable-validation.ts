/**
 * A variable's `validation { condition, error_message }` blocks, as Nomad's `jobspec2` checks them
 * (`types.variables.go`, `decodeVariableValidationBlock` and `validateValue`, written after Terraform's): both
 * arguments are required; the condition may refer to nothing but the variable itself (`var.<name>`) and must refer
 * to it; the message is a non-blank string. Once the variable has its value (typed by its declaration), each
 * condition is evaluated with only `var.<name>` bound, through the same evaluator and limits as every expression
 * (`expressions.ts`); a null or non-bool result is an error in the job file, and `false` is
 * `Invalid value for <default|varfile> variable` with the block's message.
 */
import { evaluate, evaluateString, type HclValue, hclError, type Scope } from './expressions.ts';
import { parseTemplate } from './hcl-expression.ts';
import type { HclExpression, Part } from './hcl-syntax.ts';

export interface Validation {
  condition: unknown;
  message: string;
  /** Its position among the variable's validation blocks, from 1, for the error. */
  ordinal: number;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The traversals of an expression that are not names its own `for`s bind, as `hcl.Expression.Variables()`. */
function references(expression: HclExpression, bound: Set<string>, out: HclExpression[]): void {
  const walk = (inner: HclExpression, names = bound) => references(inner, names, out);
  switch (expression.kind) {
    case 'variable':
      if (!bound.has(expression.name)) out.push(expression);
      return;
    case 'attribute':
    case 'index': {
      let root: HclExpression = expression;
      while (root.kind === 'attribute' || root.kind === 'index') {
        if (root.kind === 'index' && !root.literalKey) walk(root.key);
        root = root.target;
      }
      if (root.kind === 'variable') {
        if (!bound.has(root.name)) out.push(expression);
      } else walk(root);
      return;
    }
    case 'literal':
    case 'splatItem':
      return;
    case 'template':
      partReferences(expression.parts, bound, out);
      return;
    case 'splat':
      walk(expression.target);
      walk(expression.each);
      return;
    case 'call':
      for (const arg of expression.args) walk(arg);
      return;
    case 'tuple':
      for (const item of expression.items) walk(item);
      return;
    case 'object':
      for (const item of expression.items) {
        walk(item.key);
        walk(item.value);
      }
      return;
    case 'parenthesis':
      walk(expression.inner);
      return;
    case 'conditional':
      walk(expression.condition);
      walk(expression.whenTrue);
      walk(expression.whenFalse);
      return;
    case 'binary':
      walk(expression.left);
      walk(expression.right);
      return;
    case 'unary':
      walk(expression.operand);
      return;
    case 'for': {
      walk(expression.collection);
      const inner = new Set(bound).add(expression.valueName);
      if (expression.keyName) inner.add(expression.keyName);
      if (expression.keyResult) walk(expression.keyResult, inner);
      walk(expression.valueResult, inner);
      if (expression.condition) walk(expression.condition, inner);
      return;
    }
  }
}

function partReferences(parts: Part[], bound: Set<string>, out: HclExpression[]): void {
  for (const part of parts)
    if (part.kind === 'interpolation') references(part.expression, bound, out);
    else if (part.kind === 'if') {
      references(part.condition, bound, out);
      partReferences(part.whenTrue, bound, out);
      partReferences(part.whenFalse, bound, out);
    } else if (part.kind === 'for') {
      references(part.collection, bound, out);
      const inner = new Set(bound).add(part.valueName);
      if (part.keyName) inner.add(part.keyName);
      partReferences(part.body, inner, out);
    }
}

/** Whether a traversal is `var.<name>` (or goes on from it: `var.<name>[0]`, `var.<name>.key`). */
function isSelf(traversal: HclExpression, name: string): boolean {
  let node = traversal;
  while (node.kind === 'attribute' || node.kind === 'index') {
    const target: HclExpression = node.target;
    if (target.kind === 'variable') return target.name === 'var' && node.kind === 'attribute' && node.name === name;
    node = target;
  }
  return false;
}

function checkCondition(condition: unknown, name: string, where: string): void {
  const found: HclExpression[] = [];
  if (typeof condition === 'string' && condition.includes('{')) {
    let parts: Part[];
    try {
      parts = parseTemplate(condition);
    } catch (error) {
      throw hclError(where, 'Invalid expression', (error as Error).message);
    }
    partReferences(parts, new Set(), found);
  }
  let self = 0;
  for (const traversal of found) {
    if (isSelf(traversal, name)) self++;
    else
      throw hclError(
        where,
        'Invalid reference in variable validation',
        `The condition for variable "${name}" can only refer to the variable itself, using var.${name}.`,
      );
  }
  if (self === 0)
    throw hclError(
      where,
      'Invalid variable validation condition',
      `The condition for variable "${name}" must refer to var.${name} in order to test incoming values.`,
    );
}

/** The `validation` blocks of one `variable` block, checked as Nomad decodes them. */
export function decodeValidations(blocks: unknown, name: string): Validation[] {
  const where = `variable "${name}"`;
  if (!Array.isArray(blocks) || !blocks.every(isObject))
    throw hclError(where, 'Unsupported argument', 'validation is a block: validation { condition, error_message }.');
  return blocks.map((body, position) => {
    for (const key of Object.keys(body))
      if (key !== 'condition' && key !== 'error_message')
        throw hclError(
          where,
          'Unsupported argument',
          `An argument named "${key}" is not expected in a validation block.`,
        );
    for (const required of ['condition', 'error_message'])
      if (body[required] === undefined)
        throw hclError(
          where,
          'Missing required argument',
          `The argument "${required}" is required in a validation block, but no definition was found.`,
        );
    checkCondition(body.condition, name, where);
    const message = evaluate(body.error_message, { variables: new Map(), locals: new Map() }, where);
    if (typeof message !== 'string')
      throw hclError(where, 'Incorrect attribute value type', 'error_message must be a string.');
    if (message.trim() === '')
      throw hclError(
        where,
        'Invalid validation error message',
        'An empty or blank string is not a valid nor useful error message.',
      );
    return { condition: body.condition, message, ordinal: position + 1 };
  });
}

/** Each condition evaluated with only `var.<name>` bound; the first that fails is the error. */
export function validateValue(
  name: string,
  value: HclValue,
  from: 'default' | 'varfile',
  validations: Validation[],
): void {
  const where = `variable "${name}"`;
  const scope: Scope = { variables: new Map([[name, value]]), locals: new Map() };
  for (const validation of validations) {
    const result =
      typeof validation.condition === 'string'
        ? evaluateString(validation.condition, scope, where)
        : evaluate(validation.condition, scope, where);
    if (result === null)
      throw hclError(
        where,
        'Invalid variable validation result',
        'Validation condition expression must return either true or false, not null.',
      );
    const passed = result === true || result === 'true' ? true : result === false || result === 'false' ? false : null;
    if (passed === null)
      throw hclError(
        where,
        'Invalid variable validation result',
        `Invalid validation condition result value: a bool is required, not ${Array.isArray(result) ? 'a tuple' : typeof result}.`,
      );
    if (!passed)
      throw hclError(
        where,
        `Invalid value for ${from} variable`,
        `${validation.message} (checked by validation block ${validation.ordinal} of variable "${name}")`,
      );
  }
}
