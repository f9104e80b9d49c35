// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the strings are HCL templates, `${…}` is their syntax
/**
 * The job-file expression evaluator (`packages/core/src/scheduler/cluster/job-parse/hcl-*.ts`) against the real
 * hashicorp/hcl v2: Debian's golang-github-hashicorp-hcl-v2-dev 2.14.1 with golang-github-zclconf-go-cty-dev 1.12.1,
 * run by test/differential/hcl2/hcl2-harness.go with go-cty's stdlib functions under the names Nomad's
 * jobspec2/functions.go gives them. Every case is evaluated by both; a value must be the same, an error an error.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { HclValue } from '../../packages/core/src/scheduler/cluster/job-parse/expressions.ts';
import { evaluateExpression } from '../../packages/core/src/scheduler/cluster/job-parse/hcl-evaluate.ts';
import { parseExpression } from '../../packages/core/src/scheduler/cluster/job-parse/hcl-expression.ts';
import { Budget } from '../../packages/core/src/scheduler/cluster/job-parse/hcl-values.ts';
import { buildGoHarness, runGoHarness } from '../support/go-harness.ts';
import { expressionCases, permissive, variables } from './hcl2/cases.ts';

interface Verdict {
  result?: unknown;
  error?: string;
}

function ours(expr: string): Verdict {
  try {
    const scope = { variables: new Map(Object.entries(variables) as Array<[string, HclValue]>), locals: new Map() };
    const value = evaluateExpression(parseExpression(expr), {
      scope,
      bound: new Map(),
      budget: new Budget(),
      evaluate: evaluateExpression,
    });
    return { result: JSON.parse(JSON.stringify(value)) };
  } catch (error) {
    return { error: error instanceof Error ? `${error.constructor.name}: ${error.message}` : String(error) };
  }
}

describe('HCL2 expressions: ours against hashicorp/hcl v2 + go-cty stdlib', () => {
  let theirs: Verdict[];
  beforeAll(async () => {
    const binary = buildGoHarness(new URL('./hcl2/hcl2-harness.go', import.meta.url).pathname);
    theirs = await runGoHarness<{ expr: string; vars: unknown }, Verdict>(
      binary,
      expressionCases.map((expr) => ({ expr, vars: variables })),
    );
  }, 600_000);

  it(`has ${expressionCases.length} cases covering every function in the table`, () => {
    expect(expressionCases.length).toBeGreaterThanOrEqual(150);
  });

  it('evaluates each case as hcl does: the same value, or an error for an error', () => {
    const mismatches: string[] = [];
    expressionCases.forEach((expr, position) => {
      const go = theirs[position] as Verdict;
      const mine = ours(expr);
      const known = permissive[expr];
      const same = known
        ? go.error !== undefined && JSON.stringify(mine.result) === JSON.stringify(known.value)
        : go.error !== undefined
          ? mine.error !== undefined && !/^(TypeError|RangeError|Error):/.test(mine.error)
          : mine.error === undefined && JSON.stringify(sortKeys(mine.result)) === JSON.stringify(sortKeys(go.result));
      if (!same) mismatches.push(`${expr}\n    hcl:  ${JSON.stringify(go)}\n    ours: ${JSON.stringify(mine)}`);
    });
    expect(mismatches.join('\n')).toBe('');
  });

  it('counts both outcomes: the table has values and errors', () => {
    expect(theirs.filter((verdict) => verdict.error === undefined).length).toBeGreaterThan(100);
    expect(theirs.filter((verdict) => verdict.error !== undefined).length).toBeGreaterThan(20);
  });
});

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((key) => [key, sortKeys((value as Record<string, unknown>)[key])]),
    );
  return value;
}
