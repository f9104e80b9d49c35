/**
 * Evaluates a parsed HCL2 expression or template (`hcl-expression.ts`) as hashicorp/hcl's `hclsyntax` does with
 * Nomad's `jobspec2` evaluation context: `var.` and `local.` name the job file's variables and locals, `for` and
 * `dynamic` bind their own names, the functions are Nomad's table (`hcl-functions.ts`), and any other root
 * (`attr.kernel.name`, `NOMAD_PORT_http`) is, as Nomad's `UndefinedVariable` hook makes it, the string `${<source>}`
 * for the client to interpolate at run time.
 */
import type { Context } from './hcl-context.ts';
import { callFunction } from './hcl-functions.ts';
import type { BinaryOperator, HclExpression, Part } from './hcl-syntax.ts';
import {
  checkList,
  checkString,
  equal,
  HclEvalError,
  isObject,
  newObject,
  PendingLocal,
  sortedKeys,
  toBool,
  toNumber,
  toText,
  typeName,
  unify,
  type HclValue,
} from './hcl-values.ts';

const known = (name: string, context: Context) => context.bound.has(name) || name === 'var' || name === 'local';

/** Whether the expression is a traversal from a root Nomad leaves for run time. */
function runTimeTraversal(expression: HclExpression, context: Context): boolean {
  if (expression.kind === 'variable') return !known(expression.name, context);
  if (expression.kind === 'attribute' && expression.source !== '') return runTimeTraversal(expression.target, context);
  if (expression.kind === 'index' && expression.literalKey && expression.source !== '')
    return runTimeTraversal(expression.target, context);
  return false;
}

function root(name: string, context: Context): HclValue {
  if (context.bound.has(name)) return context.bound.get(name) as HclValue;
  const table = name === 'var' ? context.scope.variables : context.scope.locals;
  const out = newObject();
  for (const [key, value] of table) out[key] = value;
  return out;
}

function lookupAttribute(target: HclValue, name: string, expression: HclExpression, context: Context): HclValue {
  if (expression.kind === 'attribute' && expression.target.kind === 'variable') {
    const rootName = expression.target.name;
    if (!context.bound.has(rootName) && (rootName === 'var' || rootName === 'local')) {
      const table = rootName === 'var' ? context.scope.variables : context.scope.locals;
      if (table.has(name)) return table.get(name) as HclValue;
      if (rootName === 'local' && context.scope.pendingLocals?.has(name)) throw new PendingLocal(name);
      throw new HclEvalError(
        rootName === 'var' ? 'Undefined variable' : 'Unsupported attribute',
        rootName === 'var'
          ? `There is no variable named ${JSON.stringify(name)}: declare it in a variable block.`
          : `This object does not have an attribute named ${JSON.stringify(name)}.`,
      );
    }
  }
  return index(target, name);
}

/** `target[key]` / `target.key`. */
export function index(target: HclValue, key: HclValue): HclValue {
  if (Array.isArray(target)) {
    const position = toNumber(key, 'the index');
    if (!Number.isInteger(position) || position < 0 || position >= target.length)
      throw new HclEvalError('Invalid index', `The given key ${JSON.stringify(key)} does not identify an element.`);
    return target[position] as HclValue;
  }
  if (isObject(target)) {
    const name = toText(key, 'the key');
    if (!Object.hasOwn(target, name))
      throw new HclEvalError('Unsupported attribute', `This object does not have an attribute named "${name}".`);
    return target[name] as HclValue;
  }
  if (target === null) throw new HclEvalError('Attempt to index null value', 'This value is null.');
  throw new HclEvalError('Unsupported operation', `A ${typeName(target)} value cannot be indexed.`);
}

function withBinding<T>(context: Context, names: Array<[string | undefined, HclValue]>, run: () => T): T {
  const saved = names.map(([name]) => [name, context.bound.get(name ?? ''), context.bound.has(name ?? '')] as const);
  for (const [name, value] of names) if (name !== undefined) context.bound.set(name, value);
  try {
    return run();
  } finally {
    for (const [name, value, had] of saved)
      if (name !== undefined) {
        if (had) context.bound.set(name, value as HclValue);
        else context.bound.delete(name);
      }
  }
}

/** A collection's (key, value) pairs in iteration order: list positions, or object keys sorted. */
function pairs(collection: HclValue): Array<[HclValue, HclValue]> {
  if (Array.isArray(collection)) return collection.map((value, position) => [position, value]);
  if (isObject(collection)) return sortedKeys(collection).map((key) => [key, collection[key] as HclValue]);
  if (collection === null) throw new HclEvalError('Iteration over null value', 'A null value cannot be iterated.');
  throw new HclEvalError('Iteration over non-iterable value', `A ${typeName(collection)} value cannot be iterated.`);
}

function binary(operator: BinaryOperator, left: HclValue, right: HclValue): HclValue {
  switch (operator) {
    case '==':
      return equal(left, right);
    case '!=':
      return !equal(left, right);
    case '&&':
      return toBool(left, 'the left operand') && toBool(right, 'the right operand');
    case '||':
      return toBool(left, 'the left operand') || toBool(right, 'the right operand');
  }
  const a = toNumber(left, 'the left operand');
  const b = toNumber(right, 'the right operand');
  switch (operator) {
    case '<':
      return a < b;
    case '<=':
      return a <= b;
    case '>':
      return a > b;
    case '>=':
      return a >= b;
    case '+':
      return finite(a + b);
    case '-':
      return finite(a - b);
    case '*':
      return finite(a * b);
    case '/':
      if (b === 0) throw new HclEvalError('Operation failed', 'Error during operation: divide by zero.');
      return finite(a / b);
    default:
      if (b === 0) throw new HclEvalError('Operation failed', 'Error during operation: divide by zero.');
      return a % b;
  }
}

function finite(value: number): number {
  if (!Number.isFinite(value)) throw new HclEvalError('Operation failed', 'The result is not a finite number.');
  return value;
}

function splat(target: HclValue, each: HclExpression, context: Context): HclValue {
  if (target === null) return [];
  const items = Array.isArray(target) ? target : [target];
  return items.map((item) => withBinding(context, [['\u0000splat', item]], () => evaluateExpression(each, context)));
}

function forExpression(expression: Extract<HclExpression, { kind: 'for' }>, context: Context): HclValue {
  const collection = evaluateExpression(expression.collection, context);
  const list: HclValue[] = [];
  const object = newObject();
  const groups = new Map<string, HclValue[]>();
  for (const [key, value] of pairs(collection)) {
    context.budget.spend(1);
    withBinding(
      context,
      [
        [expression.keyName, key],
        [expression.valueName, value],
      ],
      () => {
        if (expression.condition) {
          const keep = evaluateExpression(expression.condition, context);
          if (keep === null) throw new HclEvalError('Condition is null', 'The for condition is null.');
          if (!toBool(keep, 'the for condition')) return;
        }
        const result = evaluateExpression(expression.valueResult, context);
        if (!expression.keyResult) {
          list.push(result);
          return;
        }
        const name = toText(evaluateExpression(expression.keyResult, context), 'the key');
        if (expression.group) {
          if (!groups.has(name)) groups.set(name, []);
          (groups.get(name) as HclValue[]).push(result);
        } else if (Object.hasOwn(object, name))
          throw new HclEvalError(
            'Duplicate object key',
            `Two different items produced the key ${JSON.stringify(name)}: add "..." after the value to group them.`,
          );
        else object[name] = result;
      },
    );
  }
  if (!expression.keyResult) return checkList(list);
  for (const [name, values] of groups) object[name] = values;
  return object;
}

export function evaluateExpression(expression: HclExpression, context: Context): HclValue {
  context.budget.spend(1);
  switch (expression.kind) {
    case 'literal':
      return expression.value;
    case 'template':
      return evaluateTemplate(expression.parts, context);
    case 'parenthesis':
      return evaluateExpression(expression.inner, context);
    case 'splatItem':
      return context.bound.get('\u0000splat') as HclValue;
    case 'variable':
      if (!known(expression.name, context)) return `\${${expression.source}}`;
      return root(expression.name, context);
    case 'attribute':
      if (runTimeTraversal(expression, context)) return `\${${expression.source}}`;
      return lookupAttribute(evaluateExpression(expression.target, context), expression.name, expression, context);
    case 'index': {
      if (runTimeTraversal(expression, context)) return `\${${expression.source}}`;
      const target = evaluateExpression(expression.target, context);
      return index(target, evaluateExpression(expression.key, context));
    }
    case 'splat':
      return splat(evaluateExpression(expression.target, context), expression.each, context);
    case 'call':
      return callFunction(expression, context);
    case 'tuple':
      return expression.items.map((item) => evaluateExpression(item, context));
    case 'object': {
      const out = newObject();
      for (const item of expression.items) {
        const key = evaluateExpression(item.key, context);
        out[toText(key, 'an object key')] = evaluateExpression(item.value, context);
      }
      return out;
    }
    case 'conditional': {
      const condition = evaluateExpression(expression.condition, context);
      if (condition === null) throw new HclEvalError('Null condition', 'The condition value is null.');
      const chosen = toBool(condition, 'the condition') ? expression.whenTrue : expression.whenFalse;
      const other = chosen === expression.whenTrue ? expression.whenFalse : expression.whenTrue;
      const value = evaluateExpression(chosen, context);
      const [unified] = unify([value, evaluateExpression(other, context)]);
      return unified as HclValue;
    }
    case 'unary': {
      const operand = evaluateExpression(expression.operand, context);
      return expression.operator === '!' ? !toBool(operand, 'the operand') : -toNumber(operand, 'the operand');
    }
    case 'binary':
      return binary(
        expression.operator,
        evaluateExpression(expression.left, context),
        evaluateExpression(expression.right, context),
      );
    case 'for':
      return forExpression(expression, context);
  }
}

function interpolated(value: HclValue): string {
  if (value === null) throw new HclEvalError('Invalid template interpolation value', 'The expression result is null.');
  if (typeof value === 'object')
    throw new HclEvalError(
      'Invalid template interpolation value',
      `Cannot include the given value in a string template: string required, not ${typeName(value)}.`,
    );
  return toText(value, 'the interpolation');
}

function templateText(parts: Part[], context: Context): string {
  let out = '';
  const append = (chunk: string) => {
    context.budget.spend(1 + Math.ceil(chunk.length / 64));
    out = checkString(out + chunk);
  };
  for (const part of parts) {
    if (part.kind === 'text') append(part.text);
    else if (part.kind === 'interpolation') append(interpolated(evaluateExpression(part.expression, context)));
    else if (part.kind === 'if') {
      const condition = evaluateExpression(part.condition, context);
      if (condition === null) throw new HclEvalError('Invalid template directive', 'The if condition is null.');
      append(templateText(toBool(condition, 'the if condition') ? part.whenTrue : part.whenFalse, context));
    } else {
      for (const [key, value] of pairs(evaluateExpression(part.collection, context)))
        append(
          withBinding(
            context,
            [
              [part.keyName, key],
              [part.valueName, value],
            ],
            () => templateText(part.body, context),
          ),
        );
    }
  }
  return out;
}

/** A template's value: one bare interpolation keeps its value's type, anything else is a string. */
export function evaluateTemplate(parts: Part[], context: Context): HclValue {
  const [only] = parts;
  if (parts.length === 1 && only?.kind === 'interpolation') return evaluateExpression(only.expression, context);
  return templateText(parts, context);
}
