/**
 * The expressions of a job file, as far as this service evaluates them. The HCL parser (`@cdktf/hcl2json`) answers
 * every literal as JSON and every other expression as its source inside `${…}`; here those are evaluated as Nomad's
 * `jobspec2` evaluates them, for the subset this service supports:
 *
 * - literals, and templates (`"a-${var.x}"`) whose interpolations are references: `var.<name>` and `local.<name>`,
 *   with attribute and index steps (`var.map.key`, `var.list[0]`). A template that is one interpolation keeps the
 *   value's type, as HCL's does; `$${` and `%%{` are the escapes of `${` and `%{`.
 * - any other root (`attr.kernel.name`, `meta.rack`, `NOMAD_PORT_http`, `node.unique.id`) is, as in Nomad, a variable
 *   the client interpolates at run time: it stays in the result as `${…}`.
 *
 * Refused with a 400 that names them: function calls (Nomad's `file()` would read the server's disk; none is
 * evaluated here), operators, `for` expressions, conditionals, template directives (`%{if}`), an undeclared
 * `var.` or `local.`.
 */
import { badRequest } from '../../../lib/errors.ts';

export type HclValue = string | number | boolean | null | HclValue[] | { [key: string]: HclValue };

/** The values `var.` and `local.` name. */
export interface Scope {
  variables: Map<string, HclValue>;
  locals: Map<string, HclValue>;
  /** Locals declared but not evaluated yet: a reference to one waits (`PendingLocal`) rather than fails. */
  pendingLocals?: Set<string>;
}

/** A problem in the job file, as Nomad words its diagnostics: `<where>: <summary>; <detail>`. */
export const hclError = (where: string, summary: string, detail: string) =>
  badRequest(`Failed to parse job: ${where ? `${where}: ` : ''}${summary}; ${detail}`);

const identifier = '[A-Za-z_][A-Za-z0-9_-]*';
const step = String.raw`\s*(?:\.\s*[A-Za-z0-9_-]+|\[\s*(?:\d+|"(?:[^"\\]|\\.)*")\s*\])`;
const traversal = new RegExp(`^(${identifier})((?:${step})*)$`);
const oneStep = new RegExp(step, 'y');
const functionCall = new RegExp(`(${identifier}(?:::${identifier})*)\\s*\\(`);

/** A local's value not yet evaluated (`locals` may name each other in any order). */
export class PendingLocal extends Error {}

/** The value of a reference (`var.a.b[0]`), or `undefined` when its root is a run-time variable Nomad keeps. */
function reference(source: string, scope: Scope, where: string): HclValue | undefined {
  const match = traversal.exec(source);
  if (!match) return refuseExpression(source, where);
  const [, root, rest = ''] = match;
  if (root !== 'var' && root !== 'local') return undefined;
  const steps = stepsOf(rest);
  const name = steps.shift();
  if (typeof name !== 'string')
    throw hclError(where, 'Invalid reference', `A reference to ${root} must name one, as ${root}.<name>.`);
  const table = root === 'var' ? scope.variables : scope.locals;
  if (!table.has(name)) {
    if (root === 'local' && scope.pendingLocals?.has(name)) throw new PendingLocal(name);
    throw hclError(
      where,
      root === 'var' ? 'Undefined variable' : 'Unsupported attribute',
      root === 'var'
        ? `There is no variable named ${JSON.stringify(name)}: declare it in a variable block.`
        : `This object does not have an attribute named ${JSON.stringify(name)}.`,
    );
  }
  let value = table.get(name) as HclValue;
  for (const key of steps) {
    const next = Array.isArray(value)
      ? typeof key === 'number'
        ? value[key]
        : undefined
      : value !== null && typeof value === 'object'
        ? Object.hasOwn(value, String(key))
          ? value[String(key)]
          : undefined
        : undefined;
    if (next === undefined)
      throw hclError(
        where,
        'Invalid index',
        `${source}: the value has no element or attribute ${JSON.stringify(key)}.`,
      );
    value = next;
  }
  return value;
}

function stepsOf(rest: string): Array<string | number> {
  const steps: Array<string | number> = [];
  oneStep.lastIndex = 0;
  while (oneStep.lastIndex < rest.length) {
    const match = oneStep.exec(rest);
    if (!match) break;
    const text = match[0].trim();
    if (text.startsWith('.')) {
      const name = text.slice(1).trim();
      steps.push(/^\d+$/.test(name) ? Number(name) : name);
    } else {
      const inner = text.slice(1, -1).trim();
      steps.push(inner.startsWith('"') ? (JSON.parse(inner) as string) : Number(inner));
    }
  }
  return steps;
}

function refuseExpression(source: string, where: string): never {
  const call = functionCall.exec(source);
  if (call)
    throw hclError(
      where,
      `Call to function "${call[1]}"`,
      'functions are not evaluated by this service: write the value, or pass it as a variable.',
    );
  throw hclError(
    where,
    'Unsupported expression',
    `"${source}": only literals and references (var.<name>, local.<name>) are evaluated by this service.`,
  );
}

/** Where the `${` that starts at `open` ends (the index of its `}`), skipping quoted strings and nested braces. */
function closingBrace(text: string, open: number): number {
  let depth = 0;
  for (let index = open + 2; index < text.length; index++) {
    const char = text[index];
    if (char === '"') {
      for (index++; index < text.length && text[index] !== '"'; index++) if (text[index] === '\\') index++;
    } else if (char === '{') depth++;
    else if (char === '}') {
      if (depth === 0) return index;
      depth--;
    }
  }
  return -1;
}

function asTemplateText(value: HclValue, source: string, where: string): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  throw hclError(
    where,
    'Invalid template interpolation value',
    `The expression "${source}" is ${value === null ? 'null' : 'not a string'}: a string template needs a string.`,
  );
}

/** A string as the parser answered it, evaluated: a template, or the source of a non-literal expression. */
export function evaluateString(text: string, scope: Scope, where: string): HclValue {
  let out = '';
  let index = 0;
  while (index < text.length) {
    if (text.startsWith('$${', index) || text.startsWith('%%{', index)) {
      out += text.slice(index + 1, index + 3);
      index += 3;
      continue;
    }
    if (text.startsWith('%{', index))
      throw hclError(where, 'Unsupported template directive', `"${text}": %{…} directives are not evaluated here.`);
    if (!text.startsWith('${', index)) {
      out += text[index];
      index++;
      continue;
    }
    const end = closingBrace(text, index);
    if (end < 0) throw hclError(where, 'Unterminated template interpolation', `"${text}"`);
    const source = text.slice(index + 2, end).trim();
    const value = reference(source, scope, where);
    if (index === 0 && end === text.length - 1 && value !== undefined) return value;
    out += value === undefined ? `\${${source}}` : asTemplateText(value, source, where);
    index = end + 1;
  }
  return out;
}

/** A value as the parser answered it, every string in it evaluated. */
export function evaluate(value: unknown, scope: Scope, where: string): HclValue {
  if (typeof value === 'string') return evaluateString(value, scope, where);
  if (Array.isArray(value)) return value.map((item) => evaluate(item, scope, where));
  if (value !== null && typeof value === 'object') {
    const out: { [key: string]: HclValue } = {};
    for (const [key, item] of Object.entries(value)) out[key] = evaluate(item, scope, where);
    return out;
  }
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return value;
  throw hclError(where, 'Unsupported value', typeof value);
}
