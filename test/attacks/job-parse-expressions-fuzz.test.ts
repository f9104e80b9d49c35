// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the strings are HCL templates, `${…}` is their syntax
/**
 * Attack class: a job file's expressions as a way to crash the parse route (a 500). Any caller who may parse sends
 * arbitrary expressions: token soup of every operator, bracket, keyword and function, and every function of the
 * table called with arguments of every type and count (with and without `...`). Whatever they send, the evaluator
 * answers a value or a 400 naming the problem (`DomainError` 'invalid'): never another exception, which the route
 * would answer as a 500. Seeded, so a failure names its input and repeats.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DomainError } from '../../packages/core/src/lib/errors.ts';
import {
  evaluateString,
  type HclValue,
  type Scope,
} from '../../packages/core/src/scheduler/cluster/job-parse/expressions.ts';

const scope = (): Scope => ({
  variables: new Map<string, HclValue>([
    ['x', 'X'],
    ['l', [1, 'a', null, [2]]],
    ['m', { a: 1, b: [1] }],
  ]),
  locals: new Map<string, HclValue>([['y', 5]]),
});

/** The input that made something other than a value or a 400, or undefined. */
function crashes(text: string): string | undefined {
  try {
    evaluateString(text, scope(), 'fuzz');
  } catch (error) {
    if (!(error instanceof DomainError) || error.kind !== 'invalid') return `${JSON.stringify(text)}: ${String(error)}`;
  }
  return undefined;
}

const tokens = [
  '1',
  '"a"',
  'true',
  'null',
  'var.x',
  'var.l',
  'var.m',
  'local.y',
  'attr.z',
  '[',
  ']',
  '{',
  '}',
  '(',
  ')',
  ',',
  '+',
  '-',
  '*',
  '/',
  '%',
  '==',
  '!=',
  '<',
  '&&',
  '||',
  '!',
  '?',
  ':',
  '.',
  '[*]',
  '.*',
  'for',
  'in',
  'k',
  'v',
  '=>',
  '...',
  'if',
  'upper(',
  'format(',
  'range(',
  'merge(',
  'lookup(',
  'try(',
  'convert(',
  'string',
  'list(',
  'jsondecode(',
  'cidrhost(',
  'formatdate(',
  'timeadd(',
  'join(',
  'split(',
  'flatten(',
  'setproduct(',
  'element(',
  'slice(',
  'substr(',
  'regex_replace(',
  '"%{if true}"',
  '"${1}"',
  '<<EOT\nx\nEOT\n',
  '=',
  '"%d"',
  '"%s"',
  '-1',
  '1.5',
];

const functions = [
  'abs',
  'ceil',
  'floor',
  'log',
  'max',
  'min',
  'parseint',
  'pow',
  'signum',
  'chomp',
  'format',
  'formatlist',
  'indent',
  'join',
  'lower',
  'regex_replace',
  'replace',
  'reverse',
  'split',
  'strlen',
  'strrev',
  'substr',
  'title',
  'trim',
  'trimprefix',
  'trimsuffix',
  'trimspace',
  'upper',
  'chunklist',
  'coalesce',
  'coalescelist',
  'compact',
  'concat',
  'contains',
  'distinct',
  'element',
  'flatten',
  'index',
  'keys',
  'length',
  'lookup',
  'merge',
  'range',
  'setintersection',
  'setproduct',
  'setunion',
  'slice',
  'sort',
  'values',
  'zipmap',
  'base64decode',
  'base64encode',
  'csvdecode',
  'jsondecode',
  'jsonencode',
  'urlencode',
  'md5',
  'sha1',
  'sha256',
  'sha512',
  'uuidv4',
  'uuidv5',
  'cidrhost',
  'cidrnetmask',
  'cidrsubnet',
  'cidrsubnets',
  'formatdate',
  'timeadd',
  'try',
  'can',
  'convert',
  'file',
  'rsadecrypt',
];
const args = [
  '1',
  '-1',
  '0',
  '2.5',
  '1e30',
  '"a"',
  '""',
  '"%"',
  '"%v"',
  '"%5.2f"',
  '"%[3]d"',
  '"10.0.0.0/8"',
  '"::/0"',
  '"2020-01-01T00:00:00Z"',
  '"1h"',
  '"a,b\\n1,2"',
  '"{\\"a\\":1}"',
  '"(a"',
  '"-----BEGIN RSA PRIVATE KEY-----\\nMAA=\\n-----END RSA PRIVATE KEY-----\\n"',
  '"AAAA"',
  'true',
  'null',
  '[]',
  '[1, 2]',
  '["a", "b"]',
  '[[1], [2, [3]]]',
  '{}',
  '{ a = 1 }',
  '{ a = [1] }',
  'string',
  'list(number)',
  'var.l',
  'var.m',
  'attr.x',
];

describe('attack: expressions that would crash the evaluator', () => {
  it('token soup is a value or a 400, never another exception', () => {
    const found: string[] = [];
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...tokens), { maxLength: 14 }), (parts) => {
        const crash = crashes(`\${${parts.join(' ')}}`);
        if (crash) found.push(crash);
        return crash === undefined;
      }),
      { numRuns: 4000, seed: 1 },
    );
    expect(found).toEqual([]);
  });

  it('every function with arguments of every type and count is a value or a 400', () => {
    const found: string[] = [];
    fc.assert(
      fc.property(
        fc.constantFrom(...functions),
        fc.array(fc.constantFrom(...args), { maxLength: 4 }),
        fc.boolean(),
        (name, given, expand) => {
          const crash = crashes(`\${${name}(${given.join(', ')}${expand && given.length > 0 ? '...' : ''})}`);
          if (crash) found.push(crash);
          return crash === undefined;
        },
      ),
      { numRuns: 4000, seed: 2 },
    );
    expect(found).toEqual([]);
  });
});
