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
    ['a key it cannot honour', 'path "secret/*" {\n capabilities = ["read"]\n allowed_parameters = { "a" = [] }\n}', 'unsupported key "allowed_parameters" in path "secret/*"'],
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
