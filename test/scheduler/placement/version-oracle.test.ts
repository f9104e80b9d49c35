/**
 * The `version` and `semver` operators against the reference: 1,500 cases answered by hashicorp/go-version v1.9.0
 * and Nomad's helper/constraints/semver themselves (go-version-oracle.tsv says how they were recorded), each
 * answered here by version.ts the same way — comparisons, go-version constraints (`~>` and pre-release rules
 * included) and Nomad's semver constraints, malformed input refused where Go refuses it.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  compareVersions,
  goVersionConstraint,
  parseVersion,
  semverConstraint,
} from '../../../packages/core/src/scheduler/placement/version.ts';

const rows = readFileSync(path.join(import.meta.dirname, 'go-version-oracle.tsv'), 'utf8')
  .split('\n')
  .filter((line) => line !== '' && !line.startsWith('#'))
  .map((line) => line.split('\t') as [string, string, string, string]);

function answer(kind: string, left: string, right: string): string {
  if (kind === 'cmp') {
    const a = parseVersion(left);
    const b = parseVersion(right);
    return a && b ? String(compareVersions(a, b)) : 'err';
  }
  const constraint = kind === 'con' ? goVersionConstraint(left) : semverConstraint(left);
  const version = parseVersion(right);
  return constraint && version ? String(constraint(version)) : 'err';
}

describe('version comparison against hashicorp/go-version and Nomad’s semver constraints', () => {
  it('has the recorded cases of each kind', () => {
    for (const kind of ['cmp', 'con', 'sem']) expect(rows.filter((row) => row[0] === kind)).toHaveLength(500);
  });

  it('answers every recorded case as the Go code did', () => {
    const differing = rows
      .map(([kind, left, right, expected]) => ({ kind, left, right, expected, got: answer(kind, left, right) }))
      .filter((row) => row.got !== row.expected);
    expect(differing).toEqual([]);
  });
});
