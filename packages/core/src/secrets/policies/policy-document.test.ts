import { describe, expect, it } from 'vitest';
import { ApiError } from '../../http/errors.ts';
import { parsePolicyDocument } from './policy-document.ts';

/** The 400 a bad document earns, as the API reports it. */
function refusal(text: string): { status: number; message: string } {
  try {
    parsePolicyDocument(text);
  } catch (error) {
    if (error instanceof ApiError) return { status: error.status, message: error.message };
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
    expect(parsePolicyDocument('{"path": {"secret/*": {"capabilities": ["read"]}, "sys/mounts": {"capabilities": ["list"]}}}')).toEqual([
      { pattern: 'secret/*', capabilities: ['read'] },
      { pattern: 'sys/mounts', capabilities: ['list'] },
    ]);
    expect(parsePolicyDocument('{"path": [{"secret/a": {"capabilities": ["read"]}}, {"secret/b": {"capabilities": ["delete"]}}]}')).toEqual([
      { pattern: 'secret/a', capabilities: ['read'] },
      { pattern: 'secret/b', capabilities: ['delete'] },
    ]);
  });

  it('expands the legacy `policy = "..."` shorthand', () => {
    expect(parsePolicyDocument('path "secret/*" { policy = "read" }')).toEqual([{ pattern: 'secret/*', capabilities: ['read', 'list'] }]);
    expect(parsePolicyDocument('path "secret/*" { policy = "write" }')[0]?.capabilities.sort()).toEqual(['create', 'delete', 'list', 'read', 'update']);
    expect(parsePolicyDocument('path "secret/*" { policy = "sudo" }')[0]?.capabilities).toContain('sudo');
    expect(parsePolicyDocument('path "secret/*" { policy = "deny" }')[0]?.capabilities).toEqual(['deny']);
  });

  it('keeps only deny when a rule lists deny with other capabilities', () => {
    expect(parsePolicyDocument('path "secret/x" { capabilities = ["read", "deny", "sudo"] }')).toEqual([{ pattern: 'secret/x', capabilities: ['deny'] }]);
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
      path: { 'secret/foo': { capabilities: ['update'], denied_parameters: { key: ['a*'] }, required_parameters: ['key'] } },
    });
    expect(parsePolicyDocument(json)[0]?.parameters).toEqual({ denied: [['key', ['a*']]], required: ['key'] });
    // A name that is special to JavaScript objects is just a name.
    const special = '{"path": {"s": {"capabilities": ["update"], "allowed_parameters": {"__proto__": ["x"]}}}}';
    expect(parsePolicyDocument(special)[0]?.parameters).toEqual({ allowed: [['__proto__', ['x']]] });
  });

  it('keeps no constraints that could not refuse anything, nor any on a deny rule', () => {
    const empty = 'path "s" {\n capabilities = ["update"]\n allowed_parameters = {}\n denied_parameters = {}\n required_parameters = []\n}';
    expect(parsePolicyDocument(empty)).toEqual([{ pattern: 's', capabilities: ['update'] }]);
    expect(parsePolicyDocument(empty)[0]).not.toHaveProperty('parameters');
    const deny = 'path "s" {\n capabilities = ["deny"]\n required_parameters = ["a"]\n}';
    expect(parsePolicyDocument(deny)[0]).toStrictEqual({ pattern: 's', capabilities: ['deny'] });
  });

  it('accepts an empty document and a top-level name', () => {
    expect(parsePolicyDocument('# nothing yet\n')).toEqual([]);
    expect(parsePolicyDocument('name = "x"\npath "a" { capabilities = ["read"] }')).toHaveLength(1);
  });

  it.each([
    ['an unknown capability', 'path "secret/*" { capabilities = ["raed"] }', 'invalid capability "raed" in path "secret/*"'],
    ['capabilities that are not a list', 'path "secret/*" { capabilities = "read" }', 'capabilities of "secret/*" must be a list'],
    ['an unknown legacy policy', 'path "secret/*" { policy = "admin" }', 'invalid policy "admin"'],
    ['a * before the end', 'path "secret/*/x" { capabilities = ["read"] }', '"*" is only allowed at the end'],
    ['a + inside a segment', 'path "secret/a+b" { capabilities = ["read"] }', '"+" must be a whole path segment'],
    ['a key it cannot honour', 'path "secret/*" {\n capabilities = ["read"]\n mfa_methods = ["totp"]\n}', 'unsupported key "mfa_methods" in path "secret/*"'],
    ['a response-wrapping TTL', 'path "secret/*" {\n capabilities = ["read"]\n min_wrapping_ttl = "1s"\n}', 'unsupported key "min_wrapping_ttl" in path "secret/*" (response wrapping is not supported)'],
    ['a maximum response-wrapping TTL', 'path "secret/*" {\n capabilities = ["read"]\n max_wrapping_ttl = "90s"\n}', 'unsupported key "max_wrapping_ttl"'],
    ['allowed_parameters that is not a map', 'path "s" {\n capabilities = ["update"]\n allowed_parameters = ["a"]\n}', 'allowed_parameters of "s" must map parameter names to lists of values'],
    ['parameter values that are not a list', 'path "s" {\n capabilities = ["update"]\n denied_parameters = { "a" = "x" }\n}', 'denied_parameters of "s": the values of "a" must be a list'],
    ['a wildcard inside a parameter name', 'path "s" {\n capabilities = ["update"]\n allowed_parameters = { "a*" = [] }\n}', 'parameter key "a*" cannot contain a wildcard'],
    ['required_parameters that are not names', 'path "s" {\n capabilities = ["update"]\n required_parameters = [1]\n}', 'required_parameters of "s" must be a list of names'],
    ['a wildcard in required_parameters', 'path "s" {\n capabilities = ["update"]\n required_parameters = ["*"]\n}', 'parameter key "*": wildcard is not permitted here'],
    ['an unknown top-level key', 'paths "secret/*" { capabilities = ["read"] }', 'invalid key "paths"'],
    ['a path block without its label', 'path { capabilities = ["read"] }', 'a path block needs exactly one label'],
    ['broken HCL', 'path "secret/*" { capabilities = ["read" }', 'failed to parse policy: line 1'],
    ['broken JSON', '{"path": {"secret/*": ', 'failed to parse policy'],
    ['a JSON path that is not an object', '{"path": {"secret/*": ["read"]}}', 'path "secret/*" must be an object'],
  ])('refuses %s with a 400 naming it', (_what, text, message) => {
    const { status, message: actual } = refusal(text);
    expect(status).toBe(400);
    expect(actual).toContain(message);
  });
});
