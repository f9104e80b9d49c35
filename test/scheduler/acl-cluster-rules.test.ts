import { describe, expect, it } from 'vitest';
import { parsePolicyRules, SchedulerAcl } from '../../packages/core/src/scheduler/acl/policy-rules.ts';

/** An ACL from policies given as rules texts, merged in order as a token's policies are. */
const acl = (...policies: string[]) => SchedulerAcl.fromRules(policies.map(parsePolicyRules));
const poolCapabilities = (of: SchedulerAcl, pool: string) =>
  (['read', 'write', 'delete'] as const).filter((capability) => of.allowNodePoolOperation(pool, capability));

describe('node_pool and namespace rules, resolved as Nomad’s acl/acl.go', () => {
  it('expands node_pool policies: read is read, write is read, write and delete, deny is nothing', () => {
    expect(poolCapabilities(acl('node_pool "a" { policy = "read" }'), 'a')).toEqual(['read']);
    expect(poolCapabilities(acl('node_pool "a" { policy = "write" }'), 'a')).toEqual(['read', 'write', 'delete']);
    expect(poolCapabilities(acl('node_pool "a" { policy = "deny" }'), 'a')).toEqual([]);
    expect(poolCapabilities(acl('node_pool "a" { capabilities = ["delete"] }'), 'a')).toEqual(['delete']);
    expect(poolCapabilities(acl('node_pool "a" { policy = "read" }'), 'b')).toEqual([]);
    expect(poolCapabilities(SchedulerAcl.managementAcl, 'anything')).toEqual(['read', 'write', 'delete']);
  });

  it('merges one name across policies; a deny clears what came before and keeps out what comes after', () => {
    expect(
      poolCapabilities(acl('node_pool "a" { policy = "read" }', 'node_pool "a" { capabilities = ["write"] }'), 'a'),
    ).toEqual(['read', 'write']);
    expect(
      poolCapabilities(acl('node_pool "a" { policy = "write" }', 'node_pool "a" { policy = "deny" }'), 'a'),
    ).toEqual([]);
    expect(
      poolCapabilities(acl('node_pool "a" { policy = "deny" }', 'node_pool "a" { policy = "write" }'), 'a'),
    ).toEqual([]);
    expect(poolCapabilities(acl('node_pool "a" { capabilities = ["write", "deny", "read"] }'), 'a')).toEqual([]);
  });

  it('takes the exact rule over any glob, and the closest glob over broader ones (never their union)', () => {
    const layered = acl(
      'node_pool "*" { policy = "write" }\nnode_pool "prod-*" { policy = "read" }\nnode_pool "prod-db" { policy = "deny" }',
    );
    expect(poolCapabilities(layered, 'dev')).toEqual(['read', 'write', 'delete']);
    expect(poolCapabilities(layered, 'prod-web')).toEqual(['read']);
    expect(poolCapabilities(layered, 'prod-db')).toEqual([]);
    // prod-*-x is closer to prod-a-x than prod-* (one character fewer for its stars to stand for).
    const closer = acl('node_pool "prod-*" { policy = "read" }\nnode_pool "prod-*-x" { capabilities = ["delete"] }');
    expect(poolCapabilities(closer, 'prod-a-x')).toEqual(['delete']);
    expect(poolCapabilities(closer, 'prod-a-y')).toEqual(['read']);
  });

  it('shows a namespace to any capability in it but deny; `*` asks whether any namespace allows', () => {
    const rules = acl(
      'namespace "*" { policy = "read" }\nnamespace "secret-*" { policy = "deny" }\nnamespace "ops" { capabilities = ["list-jobs"] }',
    );
    expect(rules.allowNamespace('default')).toBe(true);
    expect(rules.allowNamespace('secret-a')).toBe(false);
    expect(rules.allowNamespace('ops')).toBe(true);
    expect(rules.allowNamespaceOperation('ops', 'read-job')).toBe(false);
    expect(rules.allowNamespaceOperation('ops', 'list-jobs')).toBe(true);
    expect(rules.allowNamespace('*')).toBe(true);
    expect(acl('namespace "a" { policy = "deny" }').allowNamespace('*')).toBe(false);
    expect(acl('namespace "a" { capabilities = ["submit-job"] }').allowNamespaceOperation('*', 'submit-job')).toBe(
      true,
    );
    expect(acl('node { policy = "read" }').allowNamespace('default')).toBe(false);
  });
});
