import { describe, expect, it } from 'vitest';
import { DomainError } from '../../lib/errors.ts';
import { parsePolicyDocument } from './policy-document.ts';

/** The 400 a bad document earns, as the API reports it. */
function refusal(text: string): { status: number; message: string } {
  try {
    parsePolicyDocument(text);
  } catch (error) {
    if (error instanceof DomainError) return { status: error.status, message: error.message };
    throw error;
  }
  throw new Error('the document was accepted');
}

describe('parsePolicyDocument', () => {
  it('reads HCL path blocks with comments', () => {
    const rules = parsePolicyDocument(`
      # app secrets
      path "secret/app/*" {
        capabilities = ["read", "list"]
      }
      // the one config it may change
      path "secret/app/config" { capabilities = ["update"] }
    `);
    expect(rules).toEqual([
      { pattern: 'secret/app/*', capabilities: ['read', 'list'] },
      { pattern: 'secret/app/config', capabilities: ['update'] },
    ]);
  });

  it('reads the JSON form, as a map and as a list of maps', () => {
    expect(
      parsePolicyDocument(
        '{"path": {"secret/*": {"capabilities": ["read"]}, "sys/mounts": {"capabilities": ["list"]}}}',
      ),
    ).toEqual([
      { pattern: 'secret/*', capabilities: ['read'] },
      { pattern: 'sys/mounts', capabilities: ['list'] },
    ]);
    expect(
      parsePolicyDocument(
        '{"path": [{"secret/a": {"capabilities": ["read"]}}, {"secret/b": {"capabilities": ["delete"]}}]}',
      ),
    ).toEqual([
      { pattern: 'secret/a', capabilities: ['read'] },
      { pattern: 'secret/b', capabilities: ['delete'] },
    ]);
  });

  it('expands the legacy `policy = "..."` shorthand', () => {
    expect(parsePolicyDocument('path "secret/*" { policy = "read" }')).toEqual([
      { pattern: 'secret/*', capabilities: ['read', 'list'] },
    ]);
    expect(parsePolicyDocument('path "secret/*" { policy = "write" }')[0]?.capabilities.sort()).toEqual([
      'create',
      'delete',
      'list',
      'read',
      'update',
    ]);
    expect(parsePolicyDocument('path "secret/*" { policy = "sudo" }')[0]?.capabilities).toContain('sudo');
    expect(parsePolicyDocument('path "secret/*" { policy = "deny" }')[0]?.capabilities).toEqual(['deny']);
  });

  it('keeps only deny when a rule lists deny with other capabilities', () => {
    expect(parsePolicyDocument('path "secret/x" { capabilities = ["read", "deny", "sudo"] }')).toEqual([
      { pattern: 'secret/x', capabilities: ['deny'] },
    ]);
  });

  it('reads parameter constraints, with names lower-cased as Vault keys them', () => {
    const [rule] = parsePolicyDocument(`
      path "secret/foo" {
        capabilities = ["create", "update"]
        allowed_parameters = {
          "Bar" = ["zip", "zap-*", 1, true]
          "*"   = []
        }
        denied_parameters = { "salary" = [] }
        required_parameters = ["bar", "Baz"]
      }
    `);
    expect(rule).toEqual({
      pattern: 'secret/foo',
      capabilities: ['create', 'update'],
      parameters: {
        allowed: [
          ['bar', ['zip', 'zap-*', 1, true]],
          ['*', []],
        ],
        denied: [['salary', []]],
        required: ['bar', 'Baz'],
      },
    });
  });

  it('reads parameter constraints in the JSON form', () => {
    const json = JSON.stringify({
      path: {
        'secret/foo': { capabilities: ['update'], denied_parameters: { key: ['a*'] }, required_parameters: ['key'] },
      },
    });
    expect(parsePolicyDocument(json)[0]?.parameters).toEqual({ denied: [['key', ['a*']]], required: ['key'] });
    // A name that is special to JavaScript objects is just a name.
    const special = '{"path": {"s": {"capabilities": ["update"], "allowed_parameters": {"__proto__": ["x"]}}}}';
    expect(parsePolicyDocument(special)[0]?.parameters).toEqual({ allowed: [['__proto__', ['x']]] });
  });

  it('keeps no constraints that could not refuse anything, nor any on a deny rule', () => {
    const empty =
      'path "s" {\n capabilities = ["update"]\n allowed_parameters = {}\n denied_parameters = {}\n required_parameters = []\n}';
    expect(parsePolicyDocument(empty)).toEqual([{ pattern: 's', capabilities: ['update'] }]);
    expect(parsePolicyDocument(empty)[0]).not.toHaveProperty('parameters');
    const deny = 'path "s" {\n capabilities = ["deny"]\n required_parameters = ["a"]\n}';
    expect(parsePolicyDocument(deny)[0]).toStrictEqual({ pattern: 's', capabilities: ['deny'] });
  });

  it('accepts an empty document and a top-level name', () => {
    expect(parsePolicyDocument('# nothing yet\n')).toEqual([]);
    expect(parsePolicyDocument('name = "x"\npath "a" { capabilities = ["read"] }')).toHaveLength(1);
  });

  it('reads what Vault reads: comments, `*` mid-path, `+` inside a segment, a leading `/`', () => {
    expect(parsePolicyDocument('path "/secret/*/x" {\n comment = "why"\n capabilities = ["read"]\n}')).toEqual([
      { pattern: 'secret/*/x', capabilities: ['read'] },
    ]);
    expect(parsePolicyDocument('path "secret/a+b" { capabilities = ["read"] }')).toEqual([
      { pattern: 'secret/a+b', capabilities: ['read'] },
    ]);
    const [rule] = parsePolicyDocument(
      'path "s" {\n capabilities = ["update"]\n allowed_parameters { "*" = [] }\n required_parameters = ["a", 1]\n}',
    );
    expect(rule?.parameters).toEqual({ allowed: [['*', []]], required: ['a', '1'] });
  });

  it('refuses parameter names with a * that is not the whole name: Vault would match them literally, never as a pattern', () => {
    for (const [body, message] of [
      ['allowed_parameters { "foo*" = [] }', 'allowed_parameters: parameter name "foo*" is refused'],
      ['denied_parameters = { "*x" = ["a"] }', 'denied_parameters: parameter name "*x" is refused'],
      ['required_parameters = ["x*"]', 'required_parameters: parameter name "x*" is refused'],
      ['required_parameters = ["*"]', 'required_parameters: parameter name "*" is refused'],
    ] as const) {
      expect(() => parsePolicyDocument(`path "s" {\n capabilities = ["update"]\n ${body}\n}`), body).toThrow(message);
    }
    expect(() =>
      parsePolicyDocument('path "s" {\n capabilities = ["deny"]\n denied_parameters = { "a*" = [] }\n}'),
    ).toThrow('parameter name "a*" is refused');
  });

  it('lower-cases parameter names with Go\'s simple mapping: "İd" is id, a final Σ is σ', () => {
    const [rule] = parsePolicyDocument(
      'path "s" {\n capabilities = ["update"]\n denied_parameters = { "İd" = [] "ΟΔΟΣ" = [] }\n}',
    );
    expect(rule?.parameters).toEqual({
      denied: [
        ['id', []],
        ['οδοσ', []],
      ],
    });
    expect(() =>
      parsePolicyDocument('path "s" {\n capabilities = ["update"]\n denied_parameters = { "İd" = [] "id" = ["x"] }\n}'),
    ).toThrow('"İd" and "id" name the same parameter');
  });

  it("refuses JSON strings with surrogate escapes, as Vault (Go's strconv.Unquote) does; HCL reads them as U+FFFD, as hcl does", () => {
    expect(() => parsePolicyDocument('{"path": {"kv/\\ud83d\\udd11": {"capabilities": ["read"]}}}')).toThrow(
      'invalid string "kv/\\ud83d\\udd11": a \\u escape of a UTF-16 surrogate half is not a character',
    );
    expect(() =>
      parsePolicyDocument('{"path": {"kv/a": {"capabilities": ["read"], "denied_parameters": {"x": ["\\udd11"]}}}}'),
    ).toThrow('surrogate half');
    expect(parsePolicyDocument('path "kv/\\ud83d\\udd11" { capabilities = ["read"] }')).toEqual([
      { pattern: 'kv/\ufffd\ufffd', capabilities: ['read'] },
    ]);
    // A leading U+FEFF stays part of the string, as in Go: this path is not kv/x.
    expect(parsePolicyDocument('path "\\ufeffkv/x" { capabilities = ["read"] }')).toEqual([
      { pattern: '\ufeffkv/x', capabilities: ['read'] },
    ]);
  });

  it("drops JSON booleans from parameter lists, as hcl's JSON parser does", () => {
    const [rule] = parsePolicyDocument(
      '{"path": {"s": {"capabilities": ["update"], "denied_parameters": {"flag": [true]}}}}',
    );
    // An empty list: every value of `flag` is denied.
    expect(rule?.parameters).toEqual({ denied: [['flag', []]] });
  });

  it('keeps one rule per path, and a parameter map with distinct names, as written', () => {
    expect(
      parsePolicyDocument('path "a" { capabilities = ["read"] }\npath "b" { capabilities = ["deny"] }'),
    ).toHaveLength(2);
    const [rule] = parsePolicyDocument(
      'path "a" {\n capabilities = ["update"]\n denied_parameters = { x = ["a"] "y" = ["b"] }\n}',
    );
    expect(rule?.parameters).toEqual({
      denied: [
        ['x', ['a']],
        ['y', ['b']],
      ],
    });
  });

  it.each([
    [
      'an attribute given twice',
      'path "a" {\n capabilities = ["deny"]\n capabilities = ["read"]\n}',
      'At 3:2: key "capabilities" is given twice (first at 2:2)',
    ],
    [
      'an attribute given twice, once quoted',
      'path "a" {\n capabilities = ["deny"]\n "capabilities" = ["read"]\n}',
      'At 3:2: key "capabilities" is given twice (first at 2:2)',
    ],
    [
      'a parameter given twice',
      'path "a" {\n capabilities = ["update"]\n denied_parameters = { x = ["a"], x = ["b"] }\n}',
      'At 3:35: key "x" is given twice (first at 3:24)',
    ],
    [
      'a parameter given as x and "x"',
      'path "a" {\n capabilities = ["update"]\n denied_parameters = { x = ["a"] "x" = ["b"] }\n}',
      'At 3:34: key "x" is given twice (first at 3:24)',
    ],
    [
      'a parameter map given in two forms',
      'path "a" {\n capabilities = ["update"]\n denied_parameters = { x = ["a"] }\n denied_parameters { y = ["b"] }\n}',
      'At 4:2: path "a": "denied_parameters" is given twice (first at 3:2)',
    ],
    [
      'a parameter map given as a block and a labelled block',
      'path "a" {\n capabilities = ["update"]\n denied_parameters = { x = ["a"] }\n denied_parameters "y" { }\n}',
      'At 4:2: path "a": "denied_parameters" is given twice (first at 3:2)',
    ],
    [
      'a labelled parameter block given twice',
      'path "a" {\n capabilities = ["update"]\n allowed_parameters "x" { }\n allowed_parameters "x" { }\n}',
      'allowed_parameters: "x" is given twice',
    ],
    [
      'a required parameter named twice',
      'path "a" {\n capabilities = ["update"]\n required_parameters = ["X", "x"]\n}',
      'required_parameters: "X" and "x" name the same parameter twice',
    ],
    [
      'a path block given twice',
      'path "a" { capabilities = ["read"] }\npath "a" { capabilities = ["deny"] }',
      'At 2:6: path "a" is given twice (first at 1:6)',
    ],
    [
      'a path given with and without its leading /',
      'path "a" { capabilities = ["read"] }\npath "/a" { capabilities = ["deny"] }',
      'At 2:6: path "/a" is given twice (first at 1:6 (as "a"))',
    ],
    [
      'a JSON member given twice',
      '{"path": {"a": {"capabilities": ["deny"], "capabilities": ["read"]}}}',
      'At 1:43: key "capabilities" is given twice (first at 1:17)',
    ],
    [
      'a JSON path given twice',
      '{"path": {"a": {"capabilities": ["read"]}, "a": {"capabilities": ["deny"]}}}',
      'At 1:44: key "a" is given twice (first at 1:11)',
    ],
    [
      'a JSON path given twice in a list',
      '{"path": [{"a": {"capabilities": ["read"]}}, {"a": {"capabilities": ["deny"]}}]}',
      'path "a" is given twice',
    ],
    [
      '"path" given twice at the top of JSON',
      '{"path": {"a": {"capabilities": ["read"]}}, "path": {"b": {"capabilities": ["deny"]}}}',
      'key "path" is given twice (first at 1:2)',
    ],
    [
      'a JSON parameter given twice',
      '{"path": {"a": {"capabilities": ["update"], "denied_parameters": {"x": ["a"], "x": ["b"]}}}}',
      'key "x" is given twice',
    ],
    [
      'two parameter names differing only in case',
      'path "a" {\n capabilities = ["update"]\n denied_parameters = { X = ["a"], x = ["b"] }\n}',
      '"X" and "x" name the same parameter',
    ],
    [
      'an unknown capability',
      'path "secret/*" { capabilities = ["raed"] }',
      'path "secret/*": invalid capability "raed"',
    ],
    [
      'capabilities that are not a list',
      'path "secret/*" { capabilities = "read" }',
      'capabilities: expected a list but found a string ("read")',
    ],
    ['an unknown legacy policy', 'path "secret/*" { policy = "admin" }', 'invalid policy "admin"'],
    ['a + next to a *', 'path "secret/+*" { capabilities = ["read"] }', "invalid use of wildcards ('+*' is forbidden)"],
    [
      'a key it cannot honour',
      'path "secret/*" {\n capabilities = ["read"]\n mfa_methods = ["totp"]\n}',
      'path "secret/*": unsupported key "mfa_methods"',
    ],
    [
      'a response-wrapping TTL',
      'path "secret/*" {\n capabilities = ["read"]\n min_wrapping_ttl = "1s"\n}',
      'unsupported key "min_wrapping_ttl" (response wrapping is not supported)',
    ],
    [
      'a maximum response-wrapping TTL',
      'path "secret/*" {\n capabilities = ["read"]\n max_wrapping_ttl = "90s"\n}',
      'unsupported key "max_wrapping_ttl"',
    ],
    [
      'a control group',
      'path "s" {\n capabilities = ["read"]\n control_group = { ttl = "1h" }\n}',
      'unsupported key "control_group"',
    ],
    [
      'event types',
      'path "s" {\n capabilities = ["subscribe"]\n subscribe_event_types = ["*"]\n}',
      'unsupported key "subscribe_event_types"',
    ],
    [
      'allowed_parameters that is not a map',
      'path "s" {\n capabilities = ["update"]\n allowed_parameters = ["a"]\n}',
      'allowed_parameters: expected an object of names to values but found a list',
    ],
    [
      'parameter values that are not a list',
      'path "s" {\n capabilities = ["update"]\n denied_parameters = { "a" = "x" }\n}',
      'denied_parameters.a: expected a list but found a string ("x")',
    ],
    ['null', 'path "s" { capabilities = null }', 'Unknown token'],
    [
      'a JSON null in a list',
      '{"path": {"s": {"capabilities": ["read", null]}}}',
      'unexpected token while parsing list: NULL',
    ],
    ['a `\\/` escape', 'path "a\\/b" { capabilities = ["read"] }', 'illegal char escape'],
    ['a path labelled true', 'path true { capabilities = ["read"] }', 'got: BOOL'],
    ['path = { … } around path rules', 'path = { "secret/x" = { capabilities = ["read"] } }', 'invalid key "secret/x"'],
    ['an unknown top-level key', 'paths "secret/*" { capabilities = ["read"] }', 'invalid key "paths"'],
    [
      'a templated path',
      'path "secret/{{identity.entity.id}}/*" { capabilities = ["read"] }',
      'templated policy paths ({{…}}) are not supported',
    ],
    [
      'unbalanced template braces',
      'path "secret/{{identity.entity.id}/*" { capabilities = ["read"] }',
      'unbalanced templating characters',
    ],
    ['broken HCL', 'path "secret/*" { capabilities = ["read" }', 'failed to parse policy: At 1:'],
    ['a JSON path that is not an object', '{"path": {"secret/*": ["read"]}}', 'invalid key "secret/*"'],
  ])('refuses %s with a 400 naming it', (_what, text, message) => {
    const { status, message: actual } = refusal(text);
    expect(status).toBe(400);
    expect(actual).toContain(message);
  });
});
