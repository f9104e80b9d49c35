/**
 * A job file's input variables and locals, as Nomad's `jobspec2` resolves them (`types.variables.go`): declared by
 * `variable "name" { default, type, description }` blocks or a `variables { name = default }` block, given values by
 * the request's `Variables` (the content of a variables file: `name = value` lines), and `locals { … }` evaluated
 * from them. A variable neither given nor defaulted is an error (`Unset variable`), as is a value for one not declared.
 * `validation` blocks are checked against the value the variable ends with (`variable-validation.ts`).
 */
import { evaluate, type HclValue, hclError, PendingLocal, type Scope } from './expressions.ts';
import { decodeValidations, type Validation, validateValue } from './variable-validation.ts';

interface Declaration {
  defaultValue?: HclValue;
  type?: string;
  validations?: Validation[];
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const emptyScope = (): Scope => ({ variables: new Map(), locals: new Map() });

/** One block's body from the parser's answer: blocks are arrays of bodies; more than one is a duplicate. */
export function singleBody(value: unknown, where: string, blockType: string): Record<string, unknown> {
  if (!Array.isArray(value) || !value.every(isObject))
    throw hclError(
      where,
      'Unsupported argument',
      `An argument named "${blockType}" is not expected here: write a block.`,
    );
  if (value.length !== 1)
    throw hclError(where, `Duplicate ${blockType} block`, `Only one ${blockType} block is allowed here.`);
  return value[0] as Record<string, unknown>;
}

function declarations(top: Record<string, unknown>): Map<string, Declaration> {
  const declared = new Map<string, Declaration>();
  const declare = (name: string, declaration: Declaration) => {
    if (declared.has(name))
      throw hclError(`variable "${name}"`, 'Duplicate variable', `The variable "${name}" is declared twice.`);
    declared.set(name, declaration);
  };
  if (top.variable !== undefined) {
    if (!isObject(top.variable))
      throw hclError('', 'Missing name for variable', 'A variable block needs one label, its name.');
    for (const [name, bodies] of Object.entries(top.variable)) {
      const where = `variable "${name}"`;
      const body = Array.isArray(bodies) && bodies.length > 1 ? null : singleBody(bodies, where, 'variable');
      if (!body) throw hclError(where, 'Duplicate variable', `The variable "${name}" is declared twice.`);
      for (const key of Object.keys(body))
        if (!['default', 'type', 'description', 'sensitive', 'validation'].includes(key))
          throw hclError(where, 'Unsupported argument', `An argument named "${key}" is not expected here.`);
      const declaration: Declaration = {};
      if (body.default !== undefined) declaration.defaultValue = evaluate(body.default, emptyScope(), where);
      if (typeof body.type === 'string') declaration.type = body.type.replace(/^\$\{(.*)\}$/s, '$1').trim();
      if (body.validation !== undefined) declaration.validations = decodeValidations(body.validation, name);
      declare(name, declaration);
    }
  }
  if (top.variables !== undefined) {
    if (!Array.isArray(top.variables) || !top.variables.every(isObject))
      throw hclError('', 'Unsupported argument', 'variables is a block: variables { name = value }.');
    for (const body of top.variables as Array<Record<string, unknown>>)
      for (const [name, value] of Object.entries(body))
        declare(name, { defaultValue: evaluate(value, emptyScope(), `variables.${name}`) });
  }
  return declared;
}

/** A value converted to a declared primitive type, as HCL converts (`"3"` to a number, `true` to `"true"`). */
function typed(value: HclValue, type: string | undefined, name: string): HclValue {
  const where = `variable "${name}"`;
  const wrong = (wanted: string) =>
    hclError(where, 'Invalid value for variable', `The value given for "${name}" is not a ${wanted}.`);
  switch (type) {
    case 'string':
      if (typeof value === 'string') return value;
      if (typeof value === 'number' || typeof value === 'boolean') return String(value);
      throw wrong('string');
    case 'number':
      if (typeof value === 'number') return value;
      if (typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value))) return Number(value);
      throw wrong('number');
    case 'bool':
      if (typeof value === 'boolean') return value;
      if (value === 'true' || value === 'false') return value === 'true';
      throw wrong('bool');
    default:
      return value;
  }
}

/** The scope of a job file: its variables (defaults, then the given values) and its locals. */
export function resolveScope(top: Record<string, unknown>, given: Record<string, unknown>): Scope {
  const declared = declarations(top);
  const scope = emptyScope();
  for (const [name, value] of Object.entries(given)) {
    if (!declared.has(name))
      throw hclError(
        'Variables',
        'Undefined variable',
        `A "${name}" variable was given a value but is not declared in the job file.`,
      );
    const declaration = declared.get(name);
    const typedValue = typed(evaluate(value, emptyScope(), `Variables.${name}`), declaration?.type, name);
    if (declaration?.validations) validateValue(name, typedValue, 'varfile', declaration.validations);
    scope.variables.set(name, typedValue);
  }
  for (const [name, declaration] of declared) {
    if (scope.variables.has(name)) continue;
    if (declaration.defaultValue === undefined)
      throw hclError(
        `variable "${name}"`,
        `Unset variable "${name}"`,
        'A used variable must be set or have a default value: give it in Variables.',
      );
    const typedValue = typed(declaration.defaultValue, declaration.type, name);
    if (declaration.validations) validateValue(name, typedValue, 'default', declaration.validations);
    scope.variables.set(name, typedValue);
  }
  resolveLocals(top.locals, scope);
  return scope;
}

function resolveLocals(blocks: unknown, scope: Scope): void {
  if (blocks === undefined) return;
  if (!Array.isArray(blocks) || !blocks.every(isObject))
    throw hclError('', 'Unsupported argument', 'locals is a block: locals { name = value }.');
  const pending = new Map<string, unknown>();
  for (const body of blocks as Array<Record<string, unknown>>)
    for (const [name, value] of Object.entries(body)) {
      if (pending.has(name))
        throw hclError(`local.${name}`, 'Duplicate local value definition', `A local "${name}" is defined twice.`);
      pending.set(name, value);
    }
  scope.pendingLocals = new Set(pending.keys());
  while (pending.size > 0) {
    let progressed = false;
    for (const [name, value] of pending) {
      try {
        scope.locals.set(name, evaluate(value, scope, `local.${name}`));
      } catch (error) {
        if (error instanceof PendingLocal) continue;
        throw error;
      }
      pending.delete(name);
      scope.pendingLocals.delete(name);
      progressed = true;
    }
    if (!progressed)
      throw hclError(
        'locals',
        'Cycle in local values',
        `The locals ${[...pending.keys()].map((name) => `"${name}"`).join(', ')} refer to each other.`,
      );
  }
  delete scope.pendingLocals;
}
