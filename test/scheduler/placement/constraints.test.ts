// biome-ignore-all lint/suspicious/noTemplateCurlyInString: constraint targets are Nomad interpolations, `${…}` is their syntax
/**
 * Every constraint operator Nomad has, over every target it resolves, answered as Nomad's `checkConstraint`
 * answers (found-ness included), and through the placement function: the constraint's string as the
 * `ConstraintFiltered` key, job, group and task constraints, and distinct_hosts / distinct_property against the
 * allocations. Version constraints follow hashicorp/go-version and Nomad's semver package.
 */
import { describe, expect, it } from 'vitest';
import {
  checkConstraint,
  meetsConstraint,
  newConstraintCache,
  resolveTarget,
} from '../../../packages/core/src/scheduler/placement/constraints.ts';
import { place } from '../../../packages/core/src/scheduler/placement/place.ts';
import {
  compareVersions,
  goVersionConstraint,
  parseVersion,
  semverConstraint,
} from '../../../packages/core/src/scheduler/placement/version.ts';
import { makeAlloc, makeJob, makeNode, requests, task } from './fixtures.ts';

const cache = newConstraintCache();
const found = (value: string) => ({ value, found: true });
const missing = { value: '', found: false };
const check = (operand: string, left: string | undefined, right: string | undefined) =>
  checkConstraint(
    cache,
    operand,
    left === undefined ? missing : found(left),
    right === undefined ? missing : found(right),
  );

describe('targets', () => {
  const node = makeNode({
    name: 'web-7',
    datacenter: 'dc9',
    pool: 'blue',
    nodeClass: 'edge',
    meta: { rack: 'r1' },
    attributes: { 'kernel.name': 'linux' },
  });

  it.each([
    ['${node.unique.id}', node.ID],
    ['${node.datacenter}', 'dc9'],
    ['${node.unique.name}', 'web-7'],
    ['${node.class}', 'edge'],
    ['${node.pool}', 'blue'],
    ['${attr.kernel.name}', 'linux'],
    ['${meta.rack}', 'r1'],
    ['literal', 'literal'],
  ])('resolves %s', (target, value) => {
    expect(resolveTarget(target, node)).toEqual({ value, found: true });
  });

  it.each(['${attr.nope}', '${meta.nope}', '${node.nope}', '${unknown}'])('does not find %s', (target) => {
    expect(resolveTarget(target, node)).toEqual({ value: '', found: false });
  });
});

describe('operators (Nomad’s checkConstraint)', () => {
  it.each([
    ['=', 'a', 'a', true],
    ['=', 'a', 'b', false],
    ['==', 'a', 'a', true],
    ['is', 'a', 'a', true],
    ['=', undefined, '', false],
    ['!=', 'a', 'b', true],
    ['!=', 'a', 'a', false],
    ['not', 'a', 'b', true],
    // a missing attribute compares as "": != holds against anything else, fails against ""
    ['!=', undefined, 'x', true],
    ['!=', undefined, '', false],
    ['<', '2', '10', true],
    ['<', '2.5', '10', true],
    ['<', 'b', 'a', false],
    ['<=', '10', '10', true],
    ['>', '10', '9', true],
    ['>', 'abc', 'abd', false],
    ['>=', '1e3', '999', true],
    ['>', undefined, '1', false],
    ['is_set', 'anything', undefined, true],
    ['is_set', undefined, undefined, false],
    ['is_not_set', undefined, undefined, true],
    ['is_not_set', '', undefined, false],
    ['regexp', 'linux-6.1', '^linux-[0-9]+', true],
    ['regexp', 'darwin', 'linux', false],
    ['regexp', 'x', '(', false],
    ['regexp', undefined, '.*', false],
    ['set_contains', 'a, b,c', 'c,a', true],
    ['set_contains', 'a,b', 'a,d', false],
    ['set_contains_all', 'a,b,c', 'b', true],
    ['set_contains_any', 'a,b', 'x, b', true],
    ['set_contains_any', 'a,b', 'x,y', false],
    ['set_contains_any', undefined, 'a', false],
    ['version', '1.2.3', '>= 1.2, < 2.0', true],
    ['version', '2.0.0', '>= 1.2, < 2.0', false],
    ['version', '1.2.3-beta', '>= 1.0', false],
    ['version', 'not-a-version', '>= 1.0', false],
    ['version', '1.2.3', 'garbage', false],
    ['semver', '1.2.3-beta', '>= 1.0.0', true], // no pre-release check: SemVer ordering alone
    ['semver', '1.0.0-beta', '>= 1.0.0', false],
    ['semver', '1.3.0', '>= 1.2.0, < 2.0.0', true],
    ['distinct_hosts', undefined, undefined, true],
    ['distinct_property', undefined, undefined, true],
    ['no_such_operator', 'a', 'a', false],
  ])('%s: %s vs %s is %s', (operand, left, right, expected) => {
    expect(check(operand, left, right)).toBe(expected);
  });

  it('refuses an RE2-invalid pattern rather than running a backtracking one', () => {
    expect(check('regexp', 'aaa', '(a+)+$')).toBe(true);
    expect(check('regexp', 'aa', '(?<=a)a')).toBe(false); // look-behind: not RE2
  });
});

describe('versions (hashicorp/go-version)', () => {
  const compare = (a: string, b: string) => {
    const left = parseVersion(a);
    const right = parseVersion(b);
    if (!left || !right) throw new Error(`unparsable ${a} or ${b}`);
    return compareVersions(left, right);
  };

  it.each([
    ['1.2.3', '1.2.3', 0],
    ['1.2', '1.2.0', 0],
    ['v1.2.3', '1.2.3', 0],
    ['1.2.3', '1.2.4', -1],
    ['1.10.0', '1.9.0', 1],
    ['1.2.3.4', '1.2.3', 1],
    ['1.2.3.0', '1.2.3', 0],
    ['1.2.3-alpha', '1.2.3', -1],
    ['1.2.3-alpha', '1.2.3-beta', -1],
    ['1.2.3-alpha.2', '1.2.3-alpha.10', -1],
    ['1.2.3-1', '1.2.3-alpha', -1],
    ['1.2.3+meta', '1.2.3', 0],
    ['1.2.3beta', '1.2.3', -1],
  ])('compares %s with %s as %i', (a, b, expected) => {
    expect(compare(a, b)).toBe(expected);
  });

  it.each(['', 'x', '1.2.3-.', '1..2', '1.2.3+', '99999999999999999999.0'])('does not parse %j', (text) => {
    expect(parseVersion(text)).toBeUndefined();
  });

  it.each([
    ['~> 1.2', '1.9.9', true],
    ['~> 1.2', '2.0.0', false],
    ['~> 1.2.3', '1.2.9', true],
    ['~> 1.2.3', '1.3.0', false],
    ['!= 1.2.3', '1.2.3', false],
    ['1.2.3', '1.2.3', true],
    ['= 1.2.3', 'v1.2.3', true],
    ['> 1.0.0-beta', '1.0.0-rc', true],
    ['> 1.0.0-beta', '1.0.1-rc', false],
    ['< 1.0', '0.9.0-dev', false],
    ['>=1.0,<=1.5', '1.5.0', true],
  ])('go-version constraint %j holds for %s: %s', (constraint, version, expected) => {
    const parsed = goVersionConstraint(constraint);
    const given = parseVersion(version);
    expect(parsed && given ? parsed(given) : undefined).toBe(expected);
  });

  it('reads the semver operator’s constraints as Nomad: strict versions, no ~>, pre-releases ordered', () => {
    expect(semverConstraint('~> 1.2.0')).toBeUndefined();
    expect(semverConstraint('>= 1.2.3beta')).toBeUndefined();
    const preRelease = semverConstraint('> 1.0.0-beta');
    expect(preRelease?.(parseVersion('1.0.1-rc') ?? expect.fail())).toBe(true);
    expect(check('semver', '1.5', '>= 1.2.0')).toBe(true);
  });
});

describe('constraints in placement', () => {
  const linux = makeNode({ attributes: { 'kernel.name': 'linux', 'os.version': '12.4' }, meta: { tier: 'gold' } });
  const other = makeNode({ attributes: { 'kernel.name': 'darwin', 'os.version': '13.1' }, meta: { tier: 'silver' } });

  it('filters by job, group and task constraints, keyed by the constraint’s string', () => {
    const job = makeJob({
      Constraints: [{ LTarget: '${attr.kernel.name}', RTarget: 'linux', Operand: '=' }],
      TaskGroups: [
        {
          Name: 'web',
          Count: 1,
          Constraints: [{ LTarget: '${meta.tier}', RTarget: 'gold,platinum', Operand: 'set_contains_any' }],
          Tasks: [
            task('a', 100, 100, {
              Constraints: [{ LTarget: '${attr.os.version}', RTarget: '>= 12', Operand: 'version' }],
            }),
          ],
        },
      ],
    });
    const result = place({ nodes: [linux, other], allocs: [] }, job, requests(job, 'web', 1), 's');
    expect(result.placements.map((p) => p.node.ID)).toEqual([linux.ID]);
    expect(result.placements[0]?.metrics.ConstraintFiltered).toEqual({ '${attr.kernel.name} = linux': 1 });
    const impossible = makeJob({
      TaskGroups: [
        {
          Name: 'web',
          Count: 2,
          Tasks: [
            task('a', 100, 100, {
              Constraints: [{ LTarget: '${attr.os.version}', RTarget: '>= 14', Operand: 'version' }],
            }),
          ],
        },
      ],
    });
    const failed = place({ nodes: [linux, other], allocs: [] }, impossible, requests(impossible, 'web', 2), 's');
    expect(failed.failed.web).toMatchObject({
      NodesEvaluated: 2,
      NodesFiltered: 2,
      ConstraintFiltered: { '${attr.os.version} version >= 14': 2 },
      CoalescedFailures: 1,
    });
  });

  it('reads ${node.unique.name} (a target unique to the node escapes the class cache)', () => {
    const job = makeJob({
      Constraints: [{ LTarget: '${node.unique.name}', RTarget: other.Name, Operand: '!=' }],
      TaskGroups: [{ Name: 'web', Count: 3, Tasks: [task('a')] }],
    });
    const result = place({ nodes: [linux, other], allocs: [] }, job, requests(job, 'web', 3), 's');
    expect(result.placements.map((p) => p.node.ID)).toEqual([linux.ID, linux.ID, linux.ID]);
    for (const placement of result.placements)
      expect(placement.metrics.ConstraintFiltered).toEqual({ [`\${node.unique.name} != ${other.Name}`]: 1 });
  });

  it('distinct_hosts: one allocation of the job per node, counting the running ones and this call’s', () => {
    const nodes = [makeNode(), makeNode(), makeNode()];
    const job = makeJob({
      Constraints: [{ LTarget: '', RTarget: '', Operand: 'distinct_hosts' }],
      TaskGroups: [{ Name: 'web', Count: 3, Tasks: [task('a')] }],
    });
    const running = makeAlloc(job, 'web', nodes[0] as never);
    const result = place({ nodes, allocs: [running] }, job, requests(job, 'web', 3), 's');
    expect(result.placements.map((p) => p.node.ID).sort()).toEqual([nodes[1]?.ID, nodes[2]?.ID].sort());
    expect(result.failed.web).toMatchObject({
      NodesEvaluated: 3,
      NodesFiltered: 3,
      ConstraintFiltered: { distinct_hosts: 3 },
    });
    const off = makeJob({
      Constraints: [{ LTarget: '', RTarget: 'false', Operand: 'distinct_hosts' }],
      TaskGroups: [{ Name: 'web', Count: 4, Tasks: [task('a')] }],
    });
    expect(place({ nodes, allocs: [] }, off, requests(off, 'web', 4), 's').placements).toHaveLength(4);
  });

  it('distinct_property: at most RTarget allocations per value of the property', () => {
    const nodes = [
      makeNode({ meta: { rack: 'r1' } }),
      makeNode({ meta: { rack: 'r1' } }),
      makeNode({ meta: { rack: 'r2' } }),
      makeNode({ meta: {} }),
    ];
    const job = makeJob({
      TaskGroups: [
        {
          Name: 'web',
          Count: 4,
          Constraints: [{ LTarget: '${meta.rack}', RTarget: '2', Operand: 'distinct_property' }],
          Tasks: [task('a')],
        },
      ],
    });
    const result = place({ nodes, allocs: [] }, job, requests(job, 'web', 5), 's');
    const racks = result.placements.map((p) => p.node.Meta?.rack);
    expect(racks.filter((rack) => rack === 'r1')).toHaveLength(2);
    expect(racks.filter((rack) => rack === 'r2')).toHaveLength(2);
    expect(result.placements).toHaveLength(4);
    expect(result.failed.web?.ConstraintFiltered).toEqual({
      'distinct_property: ${meta.rack}=r1 used by 2 allocs': 2,
      'distinct_property: ${meta.rack}=r2 used by 2 allocs': 1,
      'missing property "${meta.rack}"': 1,
    });
  });

  it('checks an affinity’s operator the same way (meetsConstraint)', () => {
    expect(meetsConstraint(cache, { LTarget: '${meta.tier}', RTarget: 'gold', Operand: '=' }, linux)).toBe(true);
    expect(meetsConstraint(cache, { LTarget: '${meta.tier}', RTarget: 'gold', Operand: '=' }, other)).toBe(false);
  });
});
