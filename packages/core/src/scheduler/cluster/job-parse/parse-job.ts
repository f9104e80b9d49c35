/**
 * An HCL2 job file to Nomad's `api.Job`, as Nomad's `jobspec2.ParseWithConfig` answers `POST /v1/jobs/parse` (with
 * `AllowFS: false`). The HCL itself is parsed by `@cdktf/hcl2json`: HashiCorp's own HCL v2 parser (`hashicorp/hcl`)
 * compiled to WebAssembly, so the syntax and its error messages are the real ones. It answers a generic JSON (every
 * non-literal expression as its `${…}` source, never evaluated: no function runs, none reads the disk), which
 * `variables.ts`, `expressions.ts`, `decode.ts` and `normalize.ts` turn into the job as jobspec2 decodes it.
 *
 * The parser's WebAssembly (1.7 MB gzipped) is loaded on the first parse only, so no other route's cold start pays
 * for it; it is imported by a computed name so that bundlers leave it out and the Lambda installs it as a package.
 */
import { bexprReady } from '../../../lib/bexpr.ts';
import { badRequest } from '../../../lib/errors.ts';
import { maxJobBytes } from '../jobs/model.ts';
import { blockTree, childrenOf } from './block-order.ts';
import { type DecodedStruct, decodeBlock, labelled, within } from './decode.ts';
import { expandDynamicBlocks } from './dynamic-blocks.ts';
import { hclError } from './expressions.ts';
import { withCryptoAllowance } from './hcl-crypto-allowance.ts';
import { normalizeJob } from './normalize.ts';
import { resolveScope, singleBody } from './variables.ts';

/** The largest `JobHCL` taken: a job bigger than a stored job may be (`maxJobBytes`) could not be registered. */
export const maxJobHclBytes = maxJobBytes;
/** Brackets nest at most this deep in a job file: a real one nests a dozen levels; the parser recurses on each. */
export const maxHclNesting = 64;

type ParseHcl = (filename: string, contents: string) => Promise<Record<string, unknown>>;
const parserPackage = '@cdktf/hcl2json';
let parser: Promise<ParseHcl> | undefined;

/** The parser, loaded once per process on first use. */
function hclParser(): Promise<ParseHcl> {
  parser ??= (import(parserPackage) as Promise<{ parse?: ParseHcl; default?: { parse: ParseHcl } }>).then((module) => {
    const parse = module.parse ?? module.default?.parse;
    if (!parse) throw new Error(`${parserPackage} has no parse function`);
    return parse;
  });
  return parser;
}

/** Operators the parser recurses on, bounded as brackets are (its WebAssembly stack overflows past a few thousand). */
export const maxUnaryRun = 256;
export const maxConditionals = 1000;

/**
 * What in the text would make the parser recurse past its stack, other than brackets: a run of unary operators
 * (`- - - 1`, `!!!!x`), conditionals (`a ? b : c ? …`), nested template directives (`%{if}%{if}…`). Strings and
 * comments are counted too (an interpolation inside a string is parsed): a bound, not a parse.
 */
function recursionHazard(text: string): string | undefined {
  const unary = /[-!](?:\s*[-!])*/g;
  let longest = 0;
  for (const match of text.matchAll(unary)) longest = Math.max(longest, match[0].replace(/\s/g, '').length);
  if (longest > maxUnaryRun) return `a run of ${longest} unary operators: at most ${maxUnaryRun} are taken`;
  const conditionals = text.split('?').length - 1;
  if (conditionals > maxConditionals) return `${conditionals} "?": at most ${maxConditionals} are taken`;
  let depth = 0;
  for (const match of text.matchAll(/%\{~?\s*(if|for|endif|endfor)\b/g)) {
    depth += match[1] === 'if' || match[1] === 'for' ? 1 : -1;
    if (depth > maxHclNesting) return `template directives nested more than ${maxHclNesting} deep`;
  }
  return undefined;
}

/** The deepest nesting of `{`, `[` and `(` in the text (strings included: a bound, not a parse). */
function nesting(text: string): number {
  let depth = 0;
  let deepest = 0;
  for (const char of text) {
    if (char === '{' || char === '[' || char === '(') deepest = Math.max(deepest, ++depth);
    else if ((char === '}' || char === ']' || char === ')') && depth > 0) depth--;
  }
  return deepest;
}

/** The HCL parser's answer, or a 400 with its diagnostics (`input.hcl:3,5-10: Summary; Detail`). */
async function parsed(filename: string, text: string): Promise<Record<string, unknown>> {
  const parse = await hclParser();
  try {
    return await parse(filename, text);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw badRequest(`Failed to parse job: ${message.replace(/^parse config: \[(.*)\]$/s, '$1')}`);
  }
}

export interface ParseRequest {
  /** The job file. */
  JobHCL: string;
  /** The content of a variables file (`name = value` lines). */
  Variables?: string;
}

export async function parseJobHcl(request: ParseRequest): Promise<DecodedStruct> {
  for (const [field, text] of [
    ['JobHCL', request.JobHCL],
    ['Variables', request.Variables ?? ''],
  ] as const) {
    if (Buffer.byteLength(text) > maxJobHclBytes)
      throw badRequest(`${field} is ${Buffer.byteLength(text)} bytes: at most ${maxJobHclBytes} are taken`);
    if (nesting(text) > maxHclNesting)
      throw badRequest(`${field} nests brackets ${nesting(text)} levels deep: at most ${maxHclNesting} are taken`);
    const hazard = recursionHazard(text);
    if (hazard) throw badRequest(`${field} has ${hazard}`);
  }
  // regex_replace runs on RE2, loaded (in a bundle, as a chunk of its own) only when a file may call it.
  if (`${request.JobHCL}${request.Variables ?? ''}`.includes('regex_replace')) await bexprReady('matches');
  const top = await parsed('input.hcl', request.JobHCL);
  const given = request.Variables ? await parsed('variables.hcl', request.Variables) : {};
  for (const key of Object.keys(top))
    if (!['job', 'variable', 'variables', 'locals'].includes(key))
      throw hclError('', 'Unsupported block type', `Blocks of type "${key}" are not expected here.`);
  // From here the parse is synchronous: one cryptography allowance (bcrypt, rsadecrypt) covers all of it.
  return withCryptoAllowance(() => decodeJobFile(request.JobHCL, top, given));
}

function decodeJobFile(jobHcl: string, top: Record<string, unknown>, given: Record<string, unknown>): DecodedStruct {
  const scope = resolveScope(top, given);
  if (top.job === undefined) throw hclError('', 'Missing job block', 'A job block is required');
  const jobs = top.job;
  if (typeof jobs !== 'object' || jobs === null || Array.isArray(jobs))
    throw hclError('', 'Missing name for job', 'All job blocks must have 1 labels (name).');
  const labels = Object.keys(jobs);
  const label = labels[0] as string;
  const where = `job "${label}"`;
  const body = expandDynamicBlocks(singleBody((jobs as Record<string, unknown>)[label], where, 'job'), scope, where);
  if (labels.length > 1) throw hclError(where, 'Duplicate job block', 'Only one block of type "job" is allowed.');
  const node = childrenOf(blockTree(jobHcl), 'job')[0];
  const extras = { names: ['vault', 'secret', 'task'], found: {} as Record<string, unknown> };
  const job = decodeBlock('Job', body, where, scope, { node, extras });
  const vault =
    extras.found.vault === undefined
      ? null
      : decodeBlock('Vault', singleBody(extras.found.vault, where, 'vault'), within(where, 'vault'), scope, {
          node: childrenOf(node, 'vault')[0],
        });
  const labelledBlocks = (name: string, structName: string): DecodedStruct[] =>
    extras.found[name] === undefined
      ? []
      : labelled(extras.found[name], where, name, node).map(([label, item, child]) =>
          decodeBlock(structName, item, within(where, `${name} "${label}"`), scope, { label, node: child }),
        );
  return normalizeJob(job, label, {
    vault,
    secrets: labelledBlocks('secret', 'Secret'),
    tasks: labelledBlocks('task', 'Task'),
  });
}
