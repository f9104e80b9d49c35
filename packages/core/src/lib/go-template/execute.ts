import {
  type Command,
  type Operand,
  TemplateError,
  type TemplateFunction,
  type TemplateNode,
  type TemplatePipeline,
  type TemplateValue,
} from './parse.ts';

/** Running a parsed template: pipelines, fields, function calls, and how Go prints and tests values. */

export function execute(
  nodes: TemplateNode[],
  dot: TemplateValue,
  functions: Record<string, TemplateFunction>,
): string {
  let out = '';
  for (const node of nodes) {
    switch (node.kind) {
      case 'text':
        out += node.text;
        break;
      case 'action':
        out += printValue(evalPipeline(node.pipeline, dot, functions));
        break;
      case 'if':
      case 'with': {
        const value = evalPipeline(node.pipeline, dot, functions);
        if (truthy(value)) out += execute(node.whenTrue, node.kind === 'with' ? value : dot, functions);
        else out += execute(node.otherwise, dot, functions);
        break;
      }
      case 'range': {
        const value = evalPipeline(node.pipeline, dot, functions);
        const items = Array.isArray(value)
          ? value
          : value && typeof value === 'object'
            ? Object.keys(value)
                .sort()
                .map((key) => (value as Record<string, unknown>)[key])
            : [];
        if (items.length === 0) out += execute(node.otherwise, dot, functions);
        for (const item of items) out += execute(node.body, item, functions);
        break;
      }
    }
  }
  return out;
}

function evalPipeline(
  pipeline: TemplatePipeline,
  dot: TemplateValue,
  functions: Record<string, TemplateFunction>,
): TemplateValue {
  let previous: { value: TemplateValue } | undefined;
  for (const command of pipeline) {
    previous = { value: evalCommand(command, dot, functions, previous) };
  }
  return previous?.value;
}

function evalCommand(
  command: Command,
  dot: TemplateValue,
  functions: Record<string, TemplateFunction>,
  piped: { value: TemplateValue } | undefined,
): TemplateValue {
  const [head, ...rest] = command as [Operand, ...Operand[]];
  if (head.kind === 'ident') {
    const fn = functions[head.name];
    if (!fn) throw new TemplateError(`function "${head.name}" not defined`);
    const args = rest.map((operand) => evalOperand(operand, dot, functions));
    if (piped) args.push(piped.value);
    try {
      return fn(...args);
    } catch (error) {
      if (error instanceof TemplateError) throw new TemplateError(`error calling ${head.name}: ${error.message}`);
      throw error;
    }
  }
  if (rest.length > 0 || piped)
    throw new TemplateError(
      `can't give arguments to a non-function ${head.kind === 'field' ? `.${head.path.join('.')}` : 'value'}`,
    );
  return evalOperand(head, dot, functions);
}

function evalOperand(operand: Operand, dot: TemplateValue, functions: Record<string, TemplateFunction>): TemplateValue {
  switch (operand.kind) {
    case 'literal':
      return operand.value;
    case 'field':
      return fieldOf(dot, operand.path);
    case 'ident': {
      const fn = functions[operand.name];
      if (!fn) throw new TemplateError(`function "${operand.name}" not defined`);
      return fn();
    }
    case 'pipeline':
      return fieldOf(evalPipeline(operand.pipeline, dot, functions), operand.path);
  }
}

function fieldOf(value: TemplateValue, path: string[]): TemplateValue {
  let current = value;
  for (const name of path) {
    if (current === null || current === undefined || typeof current !== 'object' || Buffer.isBuffer(current)) {
      throw new TemplateError(`can't evaluate field ${name} in type ${typeName(current)}`);
    }
    if (!(name in current)) throw new TemplateError(`can't evaluate field ${name}`);
    current = (current as Record<string, unknown>)[name];
  }
  return current;
}

export function truthy(value: TemplateValue): boolean {
  if (value === null || value === undefined || value === false || value === 0 || value === '') return false;
  if (Array.isArray(value)) return value.length > 0;
  if (Buffer.isBuffer(value)) return value.length > 0;
  if (typeof value === 'object') return Object.keys(value).length > 0;
  return true;
}

export const typeName = (value: TemplateValue) =>
  value === null || value === undefined ? 'nil' : Buffer.isBuffer(value) ? '[]byte' : typeof value;

/** How Go prints a value with `{{.}}`: `<no value>` for a missing one, bytes as they are. */
export function printValue(value: TemplateValue): string {
  if (value === undefined || value === null) return '<no value>';
  if (Buffer.isBuffer(value)) return value.toString('latin1');
  if (Array.isArray(value)) return `[${value.map(printValue).join(' ')}]`;
  if (typeof value === 'object')
    return `map[${Object.keys(value)
      .sort()
      .map((key) => `${key}:${printValue((value as Record<string, unknown>)[key])}`)
      .join(' ')}]`;
  return String(value);
}
