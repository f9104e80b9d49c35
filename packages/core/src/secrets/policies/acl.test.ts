import { describe, expect, it } from 'vitest';
import { Acl } from './acl.ts';
import { type Capability, parsePolicyDocument } from './policy-document.ts';

const acl = (...documents: string[]) => new Acl(documents.map(parsePolicyDocument));
const rule = (path: string, ...capabilities: Capability[]) =>
  `path "${path}" { capabilities = ${JSON.stringify(capabilities)} }\n`;

describe('Acl matching', () => {
  it('an exact rule covers that path only', () => {
    // Vault's docs: "Permit reading only secret/foo. An attached token cannot read secret/food or secret/."
    const a = acl(rule('secret/foo', 'read'));
    expect(a.allows('secret/foo', 'read')).toBe(true);
    expect(a.allows('secret/food', 'read')).toBe(false);
    expect(a.allows('secret/', 'read')).toBe(false);
    expect(a.allows('secret/foo/bar', 'read')).toBe(false);
  });

  it('a trailing * is a prefix glob, not a segment boundary', () => {
    // Vault's docs: secret/bar/* reads secret/bar/zip and secret/bar/zip/zap but not secret/bars/zip;
    // secret/zip-* reads secret/zip-zap and secret/zip-zap/zong but not secret/zip/zap.
    const a = acl(rule('secret/bar/*', 'read'), rule('secret/zip-*', 'read'));
    expect(a.allows('secret/bar/zip', 'read')).toBe(true);
    expect(a.allows('secret/bar/zip/zap', 'read')).toBe(true);
    expect(a.allows('secret/bars/zip', 'read')).toBe(false);
    expect(a.allows('secret/zip-zap', 'read')).toBe(true);
    expect(a.allows('secret/zip-zap/zong', 'read')).toBe(true);
    expect(a.allows('secret/zip/zap', 'read')).toBe(false);
  });

  it('+ stands for exactly one path segment', () => {
    // Vault's docs: secret/+/teamb reads secret/foo/teamb and secret/bar/teamb, not secret/foo/bar/teamb.
    const a = acl(rule('secret/+/teamb', 'read'), rule('secret/+/+/teamc/*', 'read'));
    expect(a.allows('secret/foo/teamb', 'read')).toBe(true);
    expect(a.allows('secret/bar/teamb', 'read')).toBe(true);
    expect(a.allows('secret/foo/bar/teamb', 'read')).toBe(false);
    expect(a.allows('secret/foo/teamb/x', 'read')).toBe(false);
    expect(a.allows('secret/a/b/teamc/x/y', 'read')).toBe(true);
    expect(a.allows('secret/a/teamc/x', 'read')).toBe(false);
  });

  it('grants nothing that no rule names, and reports it as deny', () => {
    const a = acl(rule('secret/app/*', 'read'));
    expect(a.allows('secret/app/db', 'update')).toBe(false);
    expect(a.allows('sys/mounts', 'read')).toBe(false);
    expect(a.capabilities('sys/mounts')).toEqual(['deny']);
    expect(acl().capabilities('secret/x')).toEqual(['deny']);
  });

  it('a root ACL allows everything and reports root', () => {
    const a = new Acl([], true);
    expect(a.allows('sys/anything', 'delete', true)).toBe(true);
    expect(a.capabilities('secret/x')).toEqual(['root']);
  });
});

describe('Acl precedence (Vault: most specific match wins)', () => {
  it('an exact rule beats any glob, even a deny glob', () => {
    const a = acl(rule('secret/*', 'deny'), rule('secret/open', 'read'));
    expect(a.allows('secret/open', 'read')).toBe(true);
    expect(a.allows('secret/other', 'read')).toBe(false);
  });

  it('a deny on a more specific path overrides a broader grant', () => {
    // Vault's docs: grant secret/*, deny secret/super-secret.
    const a = acl(rule('secret/*', 'create', 'read', 'update'), rule('secret/super-secret', 'deny'));
    expect(a.allows('secret/super-secret', 'read')).toBe(false);
    expect(a.capabilities('secret/super-secret')).toEqual(['deny']);
    expect(a.allows('secret/ordinary', 'read')).toBe(true);
  });

  it('the longest glob prefix wins among globs', () => {
    const a = acl(rule('secret/*', 'read'), rule('secret/app/*', 'deny'));
    expect(a.allows('secret/app/db', 'read')).toBe(false);
    expect(a.allows('secret/apple', 'read')).toBe(true);
  });

  it('rule 1: the pattern whose first wildcard comes later wins', () => {
    // Vault: prefer foo/bar/+/baz over foo/+/bar/baz, and foo/a* over foo/+.
    const a = acl(rule('foo/+/bar/baz', 'read'), rule('foo/bar/+/baz', 'update'));
    expect(a.capabilities('foo/bar/bar/baz')).toEqual(['update']);
    const b = acl(rule('foo/+', 'read'), rule('foo/a*', 'update'));
    expect(b.capabilities('foo/abc')).toEqual(['update']);
    expect(b.capabilities('foo/xyz')).toEqual(['read']);
  });

  it('rule 2: at the same position, a pattern not ending in * beats one that does', () => {
    // Vault: prefer foo/+ over foo/*, and foo/+/bar over foo/+/ba*.
    const a = acl(rule('foo/*', 'read'), rule('foo/+', 'update'));
    expect(a.capabilities('foo/x')).toEqual(['update']);
    expect(a.capabilities('foo/x/y')).toEqual(['read']);
    const b = acl(rule('foo/+/ba*', 'read'), rule('foo/+/bar', 'update'));
    expect(b.capabilities('foo/x/bar')).toEqual(['update']);
    expect(b.capabilities('foo/x/bart')).toEqual(['read']);
    const c = acl(rule('secret/*', 'read'), rule('secret/+/config', 'deny'));
    expect(c.allows('secret/app/config', 'read')).toBe(false);
    expect(c.allows('secret/app/other', 'read')).toBe(true);
  });

  it('rule 3: with both ending in *, fewer + segments wins', () => {
    // Vault's docs: given "secret/*" and "secret/+/+/foo/*", the latter has more wildcard segments,
    // so "secret/+/+/foo/*" has lower priority.
    const a = acl(rule('secret/*', 'read'), rule('secret/+/+/foo/*', 'deny'));
    expect(a.allows('secret/a/b/foo/c', 'read')).toBe(true);
    const b = acl(rule('foo/+/+/baz', 'read'), rule('foo/+/bar/baz', 'update'));
    expect(b.capabilities('foo/x/bar/baz')).toEqual(['update']);
  });

  it('rule 4: then the longer pattern wins', () => {
    // Vault: prefer foo/+/bar/ba* over foo/+/bar/b*.
    const a = acl(rule('foo/+/bar/b*', 'read'), rule('foo/+/bar/ba*', 'update'));
    expect(a.capabilities('foo/x/bar/bat')).toEqual(['update']);
    expect(a.capabilities('foo/x/bar/bxt')).toEqual(['read']);
  });

  it('rule 5: finally the lexically larger pattern wins', () => {
    // Same first wildcard, neither a prefix, two + each, same length: only the text differs.
    const a = acl(rule('x/+/+/z', 'read'), rule('x/+/y/+', 'update'));
    expect(a.capabilities('x/a/y/z')).toEqual(['update']);
  });
});

describe('Acl merging', () => {
  it('unions the capabilities that several policies give the same pattern', () => {
    const a = acl(rule('secret/app/*', 'read'), rule('secret/app/*', 'list'));
    expect(a.capabilities('secret/app/db').sort()).toEqual(['list', 'read']);
  });

  it('deny on the same pattern in any policy wins over every grant, including sudo', () => {
    const a = acl(rule('secret/app/*', 'read', 'sudo'), rule('secret/app/*', 'deny'));
    expect(a.allows('secret/app/db', 'read')).toBe(false);
    expect(a.capabilities('secret/app/db')).toEqual(['deny']);
    expect(acl(rule('secret/x', 'read', 'deny')).capabilities('secret/x')).toEqual(['deny']);
  });

  it('needs sudo on the deciding rule when the path asks for it', () => {
    const a = acl(rule('sys/leases/revoke-prefix/*', 'update'), rule('sys/leases/revoke-force/*', 'update', 'sudo'));
    expect(a.allows('sys/leases/revoke-prefix/secret/', 'update', true)).toBe(false);
    expect(a.allows('sys/leases/revoke-prefix/secret/', 'update')).toBe(true);
    expect(a.allows('sys/leases/revoke-force/secret/', 'update', true)).toBe(true);
  });
});

describe('Acl lists (Vault checks a list of `p` as `p/`)', () => {
  it('a glob under the directory grants listing the directory itself', () => {
    const a = acl(rule('secret/app/*', 'read', 'list'));
    expect(a.allows('secret/app', 'list')).toBe(true);
    expect(a.allows('secret/app/', 'list')).toBe(true);
    expect(a.allows('secret/app', 'read')).toBe(false);
  });

  it('an exact rule with or without the trailing slash grants the list', () => {
    expect(acl(rule('secret/app', 'list')).allows('secret/app/', 'list')).toBe(true);
    expect(acl(rule('secret/app/', 'list')).allows('secret/app', 'list')).toBe(true);
  });

  it('a + rule for the directory name grants the list, but a deny glob below it wins (current vault/acl.go; GHSA-xp3c-3jw3-4vcr)', () => {
    expect(acl(rule('secret/+', 'list')).allows('secret/app', 'list')).toBe(true);
    const a = acl(rule('secret/+', 'list'), rule('secret/private/*', 'deny'));
    expect(a.allows('secret/private', 'list')).toBe(false);
    expect(a.allows('secret/private/', 'list')).toBe(false);
    expect(a.capabilities('secret/private/')).toEqual(['deny']);
    expect(a.allows('secret/private/x', 'read')).toBe(false);
    expect(a.allows('secret/public', 'list')).toBe(true);
    // A glob list grant with a deny glob under it (the case of OpenBao's advisory).
    const b = acl(rule('kv/metadata/*', 'list'), rule('kv/metadata/private/*', 'deny'));
    expect(b.allows('kv/metadata/private', 'list')).toBe(false);
    expect(b.allows('kv/metadata/public', 'list')).toBe(true);
    // A more precise list grant still wins over a broader deny.
    const c = acl(rule('kv/*', 'deny'), rule('kv/+/x', 'list'));
    expect(c.allows('kv/a/x', 'list')).toBe(true);
  });

  it('capabilities() looks a path up as Vault does for sys/capabilities', () => {
    const a = acl(rule('secret/app', 'list'));
    expect(a.capabilities('secret/app/')).toEqual(['list']);
    expect(a.capabilities('secret/app')).toEqual(['list']);
  });
});

describe('Acl parameter constraints (Vault: allowed_parameters, denied_parameters, required_parameters)', () => {
  const constrained = (path: string, body: string, ...capabilities: Capability[]) =>
    `path "${path}" {\n capabilities = ${JSON.stringify(capabilities.length > 0 ? capabilities : ['create', 'update'])}\n ${body}\n}\n`;
  const writes = (a: Acl, data: Record<string, unknown>, path = 'secret/foo') => a.allows(path, 'update', false, data);

  it('allowed_parameters: only the listed names, with the listed values; an empty list allows any value', () => {
    // Vault's docs: "bar" may be "zip" or "zap", "baz" anything, nothing else.
    const a = acl(constrained('secret/foo', 'allowed_parameters = { "bar" = ["zip", "zap"], "baz" = [] }'));
    expect(writes(a, { bar: 'zip' })).toBe(true);
    expect(writes(a, { bar: 'zap', baz: 'anything' })).toBe(true);
    expect(writes(a, { bar: 'zop' })).toBe(false);
    expect(writes(a, { bar: 'zip', other: '1' })).toBe(false);
    expect(writes(a, { BAR: 'zip' })).toBe(true); // names compare case-insensitively; values do not
    expect(writes(a, { bar: 'ZIP' })).toBe(false);
    expect(writes(a, {})).toBe(true); // no parameters, nothing to refuse
  });

  it('allowed_parameters "*" allows any other name, while listed names keep their values', () => {
    const a = acl(constrained('secret/foo', 'allowed_parameters = { "*" = [], "bar" = ["zip"] }'));
    expect(writes(a, { anything: 'x', bar: 'zip' })).toBe(true);
    expect(writes(a, { anything: 'x', bar: 'zap' })).toBe(false);
    expect(writes(acl(constrained('secret/foo', 'allowed_parameters = { "*" = [] }')), { a: 1, b: [2] })).toBe(true);
  });

  it('values use * as a prefix or suffix glob on strings', () => {
    const a = acl(constrained('secret/foo', 'allowed_parameters = { "bar" = ["foo-*", "*-bar", "*mid*"] }'));
    expect(writes(a, { bar: 'foo-1' })).toBe(true);
    expect(writes(a, { bar: '1-bar' })).toBe(true);
    expect(writes(a, { bar: 'a-mid-b' })).toBe(true);
    expect(writes(a, { bar: 'foo' })).toBe(false);
    expect(writes(a, { bar: 'x-foo-1' })).toBe(false);
    expect(writes(acl(constrained('secret/foo', 'allowed_parameters = { "bar" = ["*"] }')), { bar: '*' })).toBe(true);
    expect(writes(acl(constrained('secret/foo', 'allowed_parameters = { "bar" = ["*"] }')), { bar: 'x' })).toBe(false);
  });

  it('booleans must be the same value; numbers never match (Vault compares json.Number with int); no glob', () => {
    const a = acl(constrained('secret/foo', 'allowed_parameters = { "n" = [1, true], "s" = ["1*"] }'));
    expect(writes(a, { n: true })).toBe(true);
    expect(writes(a, { n: 1 })).toBe(false);
    expect(writes(a, { n: '1' })).toBe(false);
    expect(writes(a, { n: false })).toBe(false);
    expect(writes(a, { s: 12 })).toBe(false);
    expect(writes(a, { s: '12' })).toBe(true);
    const denied = acl(constrained('secret/foo', 'denied_parameters = { "n" = [1] }'));
    expect(writes(denied, { n: 1 })).toBe(true);
  });

  it('lists and comma-separated strings are checked element by element (Vault 1.21)', () => {
    const allowed = acl(constrained('secret/foo', 'allowed_parameters = { "policies" = ["dev-*", "ops"] }'));
    expect(writes(allowed, { policies: ['dev-a', 'ops'] })).toBe(true);
    expect(writes(allowed, { policies: ['dev-a', 'root'] })).toBe(false);
    expect(writes(allowed, { policies: 'dev-a, ops' })).toBe(true);
    expect(writes(allowed, { policies: 'ops,root' })).toBe(false);
    // As in Vault, the whole string is tried first, so a prefix glob lets a comma-separated tail through.
    expect(writes(allowed, { policies: 'dev-a,root' })).toBe(true);
    // Every element of nothing matches: Vault allows an empty list or string whatever the values.
    expect(writes(allowed, { policies: [] })).toBe(true);
    expect(writes(allowed, { policies: '' })).toBe(true);

    const denied = acl(constrained('secret/foo', 'denied_parameters = { "policies" = ["root"] }'));
    expect(writes(denied, { policies: ['dev', 'root'] })).toBe(false);
    expect(writes(denied, { policies: 'dev,root' })).toBe(false);
    expect(writes(denied, { policies: ['dev'] })).toBe(true);
  });

  it('denied_parameters: the listed values of a name, any value with an empty list, everything with "*"', () => {
    const a = acl(constrained('secret/foo', 'denied_parameters = { "bar" = ["zip"], "salary" = [] }'));
    expect(writes(a, { bar: 'zap', other: 'x' })).toBe(true);
    expect(writes(a, { bar: 'zip' })).toBe(false);
    expect(writes(a, { Salary: '1' })).toBe(false);
    const all = acl(constrained('secret/foo', 'denied_parameters = { "*" = [] }'));
    expect(writes(all, { any: 'x' })).toBe(false);
    expect(writes(all, {})).toBe(true);
  });

  it('denied wins over allowed', () => {
    const a = acl(
      constrained('secret/foo', 'allowed_parameters = { "bar" = [] }\n denied_parameters = { "bar" = ["zip"] }'),
    );
    expect(writes(a, { bar: 'zap' })).toBe(true);
    expect(writes(a, { bar: 'zip' })).toBe(false);
  });

  it('required_parameters must all be present, even alongside allowed names', () => {
    const a = acl(
      constrained('secret/foo', 'required_parameters = ["bar", "baz"]\n allowed_parameters = { "*" = [] }'),
    );
    expect(writes(a, { bar: '1', baz: '2', more: '3' })).toBe(true);
    expect(writes(a, { bar: '1' })).toBe(false);
    expect(writes(a, {})).toBe(false);
  });

  it('applies to read, create, update and patch, not to list or delete, and not to capability look-ups', () => {
    const a = acl(
      constrained('secret/foo', 'required_parameters = ["bar"]', 'create', 'read', 'update', 'patch', 'delete', 'list'),
    );
    for (const capability of ['read', 'create', 'update', 'patch'] as const) {
      expect(a.allows('secret/foo', capability, false, {})).toBe(false);
      expect(a.allows('secret/foo', capability, false, { bar: 'x' })).toBe(true);
    }
    expect(a.allows('secret/foo', 'delete', false, {})).toBe(true);
    expect(a.allows('secret/foo', 'list', false, {})).toBe(true);
    expect(a.allows('secret/foo', 'update')).toBe(true); // no parameters given: a capability check only
    expect(a.capabilities('secret/foo').sort()).toEqual(['create', 'delete', 'list', 'patch', 'read', 'update']);
  });

  it('takes the constraints of the deciding rule only: another matching pattern lends none', () => {
    const a = acl(constrained('secret/*', 'allowed_parameters = { "bar" = ["zip"] }'), rule('secret/foo', 'update'));
    expect(writes(a, { bar: 'zap' })).toBe(true);
    expect(writes(a, { bar: 'zap' }, 'secret/other')).toBe(false);
  });

  it('merges the same pattern across policies: values unioned, an empty list wins, required unioned', () => {
    const a = acl(
      constrained(
        'secret/foo',
        'allowed_parameters = { "bar" = ["zip"], "baz" = ["one"] }\n required_parameters = ["bar"]',
      ),
      constrained('secret/foo', 'allowed_parameters = { "bar" = ["zap"], "baz" = [] }\n required_parameters = ["baz"]'),
    );
    expect(writes(a, { bar: 'zip', baz: 'anything' })).toBe(true);
    expect(writes(a, { bar: 'zap', baz: 'x' })).toBe(true);
    expect(writes(a, { bar: 'zop', baz: 'x' })).toBe(false);
    expect(writes(a, { bar: 'zip' })).toBe(false);

    const denied = acl(
      constrained('secret/foo', 'denied_parameters = { "bar" = ["zip"] }'),
      constrained('secret/foo', 'denied_parameters = { "bar" = ["zap"] }'),
    );
    expect(writes(denied, { bar: 'zip' })).toBe(false);
    expect(writes(denied, { bar: 'zap' })).toBe(false);
    expect(writes(denied, { bar: 'zop' })).toBe(true);
  });

  it('merging a rule without constraints into one with them keeps them, as Vault does', () => {
    const a = acl(rule('secret/foo', 'update'), constrained('secret/foo', 'allowed_parameters = { "bar" = [] }'));
    expect(writes(a, { bar: 'x' })).toBe(true);
    expect(writes(a, { other: 'x' })).toBe(false);
  });

  it('a deny for the same pattern drops every constraint along with every grant', () => {
    const a = acl(constrained('secret/foo', 'required_parameters = ["bar"]'), rule('secret/foo', 'deny'));
    expect(writes(a, { bar: 'x' })).toBe(false);
    expect(a.capabilities('secret/foo')).toEqual(['deny']);
  });

  it('does not let a parameter named like an object property slip through', () => {
    const a = acl(constrained('secret/foo', 'allowed_parameters = { "bar" = [] }'));
    expect(writes(a, JSON.parse('{"__proto__": "x"}'))).toBe(false);
    expect(writes(a, { constructor: 'x' })).toBe(false);
    const denied = acl(
      '{"path": {"secret/foo": {"capabilities": ["update"], "denied_parameters": {"__proto__": []}}}}',
    );
    expect(writes(denied, JSON.parse('{"__proto__": "x"}'))).toBe(false);
    expect(writes(denied, { other: 'x' })).toBe(true);
  });

  it('root ignores every constraint', () => {
    expect(
      new Acl([parsePolicyDocument(constrained('secret/foo', 'required_parameters = ["bar"]'))], true).allows(
        'secret/foo',
        'update',
        false,
        {},
      ),
    ).toBe(true);
  });
});

/**
 * The decision tables of Vault's own vault/acl_test.go (testACLSingle, testLayeredACL), over the same policies:
 * [operation, path, allowed, with sudo].
 */
describe("Acl against Vault's acl_test.go decision tables", () => {
  const vaultAclPolicy = `
name = "DeV"
path "dev/*" { policy = "sudo" }
path "stage/*" { policy = "write" }
path "stage/aws/*" {
  policy = "read"
  capabilities = ["update", "sudo"]
}
path "stage/aws/policy/*" { policy = "sudo" }
path "prod/*" { policy = "read" }
path "prod/aws/*" { policy = "deny" }
path "sys/*" { policy = "deny" }
path "foo/bar" { capabilities = ["read", "create", "sudo"] }
path "baz/quux" { capabilities = ["read", "create", "patch"] }
path "test/+/segment" { capabilities = ["read"] }
path "+/segment/at/front" { capabilities = ["read"] }
path "test/segment/at/end/+" { capabilities = ["read"] }
path "test/segment/at/end/v2/+/" { capabilities = ["read"] }
path "test/+/wildcard/+/*" { capabilities = ["read"] }
path "test/+/wildcardglob/+/end*" { capabilities = ["read"] }
path "1/2/*" { capabilities = ["create"] }
path "1/2/+" { capabilities = ["read"] }
path "1/2/+/+" { capabilities = ["update", "recover"] }
`;
  const vaultAclPolicy2 = `
name = "OpS"
path "dev/hide/*" { policy = "deny" }
path "stage/aws/policy/*" {
  policy = "deny"
  capabilities = ["read", "update", "sudo"]
}
path "prod/*" { policy = "write" }
path "sys/seal" { policy = "sudo" }
path "foo/bar" { capabilities = ["deny"] }
path "baz/quux" { capabilities = ["deny"] }
`;
  type Case = [Capability, string, boolean, boolean];
  const check = (a: Acl, cases: Case[]) => {
    for (const [operation, path, allowed, sudo] of cases) {
      expect([operation, path, a.allows(path, operation)]).toEqual([operation, path, allowed]);
      if (allowed)
        expect([operation, path, 'sudo', a.allows(path, operation, true)]).toEqual([operation, path, 'sudo', sudo]);
    }
  };

  it('testACLSingle', () => {
    check(acl(vaultAclPolicy), [
      ['read', 'root', false, false],
      ['read', 'dev/foo', true, true],
      ['update', 'dev/foo', true, true],
      ['delete', 'stage/foo', true, false],
      ['list', 'stage/aws/foo', true, true],
      ['update', 'stage/aws/foo', true, true],
      ['update', 'stage/aws/policy/foo', true, true],
      ['delete', 'prod/foo', false, false],
      ['update', 'prod/foo', false, false],
      ['read', 'prod/foo', true, false],
      ['list', 'prod/foo', true, false],
      ['read', 'prod/aws/foo', false, false],
      ['read', 'foo/bar', true, true],
      ['list', 'foo/bar', false, true],
      ['update', 'foo/bar', false, true],
      ['create', 'foo/bar', true, true],
      ['read', 'baz/quux', true, false],
      ['create', 'baz/quux', true, false],
      ['patch', 'baz/quux', true, false],
      ['list', 'baz/quux', false, false],
      ['update', 'baz/quux', false, false],
      ['read', 'test/foo/bar/segment', false, false],
      ['read', 'test/foo/segment', true, false],
      ['read', 'test/bar/segment', true, false],
      ['read', 'test/segment/at/frond', false, false],
      ['read', 'test/segment/at/front', true, false],
      ['read', 'test/segment/at/end/foo', true, false],
      ['read', 'test/segment/at/end/foo/', false, false],
      ['read', 'test/segment/at/end/v2/foo/', true, false],
      ['read', 'test/segment/wildcard/at/foo/', true, false],
      ['read', 'test/segment/wildcard/at/end', true, false],
      ['read', 'test/segment/wildcard/at/end/', true, false],
      ['read', '1/2/3/4', false, false],
      ['read', '1/2/3', true, false],
      ['update', '1/2/3', false, false],
      ['update', '1/2/3/4', true, false],
      ['create', '1/2/3/4/5', true, false],
      ['recover', '1/2/3/4', true, false],
    ]);
  });

  it('testLayeredACL', () => {
    check(acl(vaultAclPolicy, vaultAclPolicy2), [
      ['read', 'root', false, false],
      ['read', 'dev/foo', true, true],
      ['update', 'dev/foo', true, true],
      ['read', 'dev/hide/foo', false, false],
      ['update', 'dev/hide/foo', false, false],
      ['delete', 'stage/foo', true, false],
      ['list', 'stage/aws/foo', true, true],
      ['update', 'stage/aws/foo', true, true],
      ['update', 'stage/aws/policy/foo', false, false],
      ['delete', 'prod/foo', true, false],
      ['update', 'prod/foo', true, false],
      ['read', 'prod/foo', true, false],
      ['list', 'prod/foo', true, false],
      ['read', 'prod/aws/foo', false, false],
      ['read', 'sys/status', false, false],
      ['update', 'sys/seal', true, true],
      ['read', 'foo/bar', false, false],
      ['list', 'foo/bar', false, false],
      ['update', 'foo/bar', false, false],
      ['create', 'foo/bar', false, false],
      ['read', 'baz/quux', false, false],
      ['list', 'baz/quux', false, false],
      ['update', 'baz/quux', false, false],
      ['create', 'baz/quux', false, false],
      ['patch', 'baz/quux', false, false],
    ]);
  });
});

describe('Acl parameter constraints compare as Go does (issue 23 §6)', () => {
  const constrained = (body: string) => acl(`path "secret/foo" {\n capabilities = ["create", "update"]\n ${body}\n}\n`);
  const writes = (a: Acl, data: Record<string, unknown>) => a.allows('secret/foo', 'update', false, data);

  it('lower-cases names with simple case mapping: a denied "İd" denies id, a denied final Σ denies σ', () => {
    const a = constrained('denied_parameters = { "İd" = [] "ΟΔΟΣ" = [] }');
    expect(writes(a, { id: 'x' })).toBe(false);
    expect(writes(a, { ID: 'x' })).toBe(false);
    expect(writes(a, { οδοσ: 'x' })).toBe(false);
    expect(writes(a, { 'i\u0307d': 'x' })).toBe(true);
    const k = constrained('allowed_parameters = { "\u212aey" = ["a"] }');
    expect(writes(k, { key: 'b' })).toBe(false);
    expect(writes(k, { key: 'a' })).toBe(true);
  });

  it("trims comma-separated values with Go's space set: U+0085 and U+00A0 are spaces, U+FEFF is not", () => {
    const denied = constrained('denied_parameters = { "role" = ["admin"] }');
    expect(writes(denied, { role: 'reader,admin\u0085' })).toBe(false);
    expect(writes(denied, { role: '\u00a0admin' })).toBe(false);
    expect(writes(denied, { role: 'reader,\ufeffadmin' })).toBe(true);
    const allowed = constrained('allowed_parameters = { "group" = ["reader"] }');
    expect(writes(allowed, { group: '\ufeffreader' })).toBe(false);
    expect(writes(allowed, { group: 'reader,\u2028reader\u3000' })).toBe(true);
  });

  it('lower-cases policies and token_policies values before checking them, as current vault/acl.go does', () => {
    const a = constrained('denied_parameters = { "token_policies" = ["root", "admin*"] }');
    expect(writes(a, { token_policies: 'ROOT' })).toBe(false);
    expect(writes(a, { token_policies: ['default', 'Admin-2'] })).toBe(false);
    expect(writes(a, { Token_Policİes: 'default,ROOT' })).toBe(false);
    expect(writes(a, { token_policies: 'default' })).toBe(true);
    const b = constrained('allowed_parameters = { "policies" = ["app-*"] }');
    expect(writes(b, { policies: 'APP-1,app-2' })).toBe(true);
    // Other parameters keep their case.
    const c = constrained('denied_parameters = { "name" = ["root"] }');
    expect(writes(c, { name: 'ROOT' })).toBe(true);
  });

  it('looks required parameters up by their Go-lower-cased name', () => {
    const a = constrained('required_parameters = ["İd"]');
    expect(writes(a, { id: 1 })).toBe(true);
    expect(writes(a, { 'i\u0307d': 1 })).toBe(false);
  });
});
