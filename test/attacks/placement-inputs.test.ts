// biome-ignore-all lint/suspicious/noTemplateCurlyInString: constraint targets are Nomad interpolations
/**
 * What placement reads that others choose: a job submitter writes constraints (a version range, a regular
 * expression, up to the job's 256 KB), a node writes its attributes (up to 4,096 characters each). None of it may
 * make placement slow: versions are read by a scanner (go-version's grammar as a regular expression backtracked for
 * seconds on 4,000 characters, for minutes on a long constraint), regular expressions run on RE2 (linear, as Go's;
 * look-behind and back-references are refused, as Go refuses them, and the node is filtered). On the code before the
 * fix each 4,000-character attribute took about a second, a 20,000-character constraint 17 s, and the 200,000-character
 * one here does not answer within the test timeout.
 */
import { describe, expect, it } from 'vitest';
import { place } from '../../packages/core/src/scheduler/placement/place.ts';
import { makeJob, makeNode, requests, task } from '../scheduler/placement/fixtures.ts';

const withConstraint = (constraint: Record<string, string>) =>
  makeJob({ Constraints: [constraint], TaskGroups: [{ Name: 'web', Count: 1, Tasks: [task('a')] }] });

describe('placement inputs chosen by a job submitter or a node', () => {
  it('reads a node’s long version attribute in linear time', () => {
    const nodes = [
      makeNode({ attributes: { 'os.version': `1-${'a'.repeat(4000)}!` } }),
      makeNode({ attributes: { 'os.version': `1-${'1'.repeat(4000)}!` } }),
      makeNode({ attributes: { 'os.version': `1-${'-'.repeat(4000)}!` } }),
    ];
    for (const operand of ['version', 'semver']) {
      const job = withConstraint({ LTarget: '${attr.os.version}', RTarget: '>= 1.0.0', Operand: operand });
      const result = place({ nodes, allocs: [] }, job, requests(job, 'web', 1), 's');
      expect(result.failed.web).toMatchObject({ NodesEvaluated: 3, NodesFiltered: 3 });
    }
  });

  it('reads a job’s 200,000-character version constraint in linear time, and refuses it', () => {
    const node = makeNode({ attributes: { 'os.version': '1.2.3' } });
    const constraint = `>= 1-${'a'.repeat(200_000)}!`;
    const job = withConstraint({ LTarget: '${attr.os.version}', RTarget: constraint, Operand: 'version' });
    const result = place({ nodes: [node], allocs: [] }, job, requests(job, 'web', 1), 's');
    expect(result.failed.web?.NodesFiltered).toBe(1);
  });

  it('runs a job’s regular expression on RE2: a catastrophic pattern answers at once, a Perl-only one filters', () => {
    const node = makeNode({ attributes: { 'unique.note': `${'a'.repeat(4000)}b` } });
    const catastrophic = withConstraint({ LTarget: '${attr.unique.note}', RTarget: '^(a+)+$', Operand: 'regexp' });
    expect(
      place({ nodes: [node], allocs: [] }, catastrophic, requests(catastrophic, 'web', 1), 's').failed.web,
    ).toMatchObject({
      NodesFiltered: 1,
    });
    const backReference = withConstraint({ LTarget: '${attr.unique.note}', RTarget: '(a)\\1', Operand: 'regexp' });
    expect(
      place({ nodes: [node], allocs: [] }, backReference, requests(backReference, 'web', 1), 's').failed.web,
    ).toMatchObject({
      NodesFiltered: 1,
    });
  });
});
