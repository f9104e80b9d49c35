import { execute } from './execute.ts';
import { builtins } from './functions.ts';
import {
  parseTemplate,
  TemplateError,
  type TemplateFunction,
  type TemplateNode,
  type TemplatePipeline,
  type TemplateValue,
} from './parse.ts';

/**
 * A Go `text/template` compatible engine for the templates Vault users write (username and LDIF
 * templates): text with `{{ }}` actions, trim markers `{{-`/`-}}`, comments, fields `.A.B`, pipelines
 * `a | f x`, parenthesised pipelines, `if`/`else if`/`else`/`with`/`range`/`end`, Go's builtins (`printf`,
 * `print`, `println`, `len`, `index`, `eq`, `ne`, `lt`, `le`, `gt`, `ge`, `and`, `or`, `not`) and Vault's
 * template helpers with their exact semantics. Hand-written: no maintained JS port of text/template fits.
 */

export { printValue } from './execute.ts';
export { formatGoTime, sprintf, utf16le } from './functions.ts';
export { parseTemplate, TemplateError, type TemplateFunction, type TemplateValue } from './parse.ts';

export interface TemplateOptions {
  /** Extra functions (e.g. `utf16le` for LDIF templates). */
  functions?: Record<string, TemplateFunction>;
  /** Milliseconds since the epoch for `unix_time`, `timestamp`… (tests move a clock). */
  now?: () => number;
}

/** Renders a template with `data` as dot. */
export function renderTemplate(source: string, data: TemplateValue, options: TemplateOptions = {}): string {
  const nodes = parseTemplate(source);
  const functions = { ...builtins(options.now ?? Date.now), ...options.functions };
  return execute(nodes, data, functions);
}

/** Parses only: the syntax and the names of functions, without running it. */
export function checkTemplate(source: string, functionNames: string[] = []): void {
  const known = new Set([...Object.keys(builtins(Date.now)), ...functionNames]);
  const visit = (nodes: TemplateNode[]) => {
    for (const node of nodes) {
      if (node.kind === 'text') continue;
      checkPipeline(node.pipeline, known);
      if (node.kind === 'if' || node.kind === 'with') {
        visit(node.whenTrue);
        visit(node.otherwise);
      } else if (node.kind === 'range') {
        visit(node.body);
        visit(node.otherwise);
      }
    }
  };
  visit(parseTemplate(source));
}

function checkPipeline(pipeline: TemplatePipeline, known: Set<string>): void {
  for (const command of pipeline) {
    for (const operand of command) {
      if (operand.kind === 'ident' && !known.has(operand.name))
        throw new TemplateError(`function "${operand.name}" not defined`);
      if (operand.kind === 'pipeline') checkPipeline(operand.pipeline, known);
    }
  }
}
