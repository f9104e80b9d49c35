import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SecretsService, startSecretsInMemory } from '../support/secrets-harness.ts';

/** `sys/policies/password/...`. */
describe('password policies', () => {
  let h: SecretsService;
  const call = (method: string, path: string, body?: unknown) =>
    h.call(method, `/v1/sys/policies/password${path}`, { token: h.rootToken, body });
  beforeAll(async () => {
    h = await startSecretsInMemory();
  });
  afterAll(() => h.close());

  const policy =
    'length = 16\nrule "charset" {\n  charset = "abcdef"\n  min-chars = 2\n}\nrule "charset" {\n  charset = "0123456789"\n  min-chars = 4\n}\n';

  it('stores, reads, lists, generates and deletes a policy', async () => {
    expect((await call('GET', '/hex')).status).toBe(404);
    expect((await call('POST', '/hex', { policy })).status).toBe(204);
    expect((await call('GET', '/hex')).body.data).toEqual({ policy });
    expect((await call('LIST', '')).body.data.keys).toEqual(['hex']);
    for (let index = 0; index < 20; index++) {
      const generated = await call('GET', '/hex/generate');
      expect(generated.status).toBe(200);
      const password: string = generated.body.data.password;
      expect(password).toMatch(/^[a-f0-9]{16}$/);
      expect(password.replace(/[^0-9]/g, '').length).toBeGreaterThanOrEqual(4);
      expect(password.replace(/[^a-f]/g, '').length).toBeGreaterThanOrEqual(2);
    }
    expect((await call('DELETE', '/hex')).status).toBe(204);
    expect((await call('GET', '/hex')).status).toBe(404);
    expect((await call('GET', '/hex/generate')).status).toBe(404);
    expect((await call('LIST', '')).status).toBe(404);
  });

  it('accepts JSON and base64-encoded policies, storing them decoded', async () => {
    const json = JSON.stringify({ length: 8, rule: { charset: { charset: 'XYZ', 'min-chars': 1 } } });
    expect((await call('POST', '/json', { policy: json })).status).toBe(204);
    expect((await call('GET', '/json/generate')).body.data.password).toMatch(/^[XYZ]{8}$/);
    expect((await call('POST', '/b64', { policy: Buffer.from(policy).toString('base64') })).status).toBe(204);
    expect((await call('GET', '/b64')).body.data.policy).toBe(policy);
  });

  it('rejects impossible and malformed policies at write, naming the problem', async () => {
    const cases: Array<[string, string]> = [
      ['length = 2\nrule "charset" { charset = "ab" }', 'between 4 and 100'],
      ['length = 200\nrule "charset" { charset = "ab" }', 'between 4 and 100'],
      ['length = 5\nrule "charset" {\n charset = "ab"\n min-chars = 6\n}', 'require at least 6'],
      ['length = 8', 'charset'],
      // hcl (as Vault parses password policies) reads an attribute cut off at the end of input as absent.
      ['length = ', '"length" is required'],
      ['length = 8\nrule "charset" { charset = "ab" ', 'unable to parse policy: '],
      [
        'length = 8\nlength = 20\nrule "charset" { charset = "ab" }',
        'At 2:1: key "length" is given twice (first at 1:1)',
      ],
      ['{"length": 8, "length": 20, "rule": {"charset": {"charset": "ab"}}}', 'key "length" is given twice'],
    ];
    for (const [text, message] of cases) {
      const response = await call('POST', '/bad', { policy: text });
      expect(response.status, text).toBe(400);
      expect(response.body.errors[0]).toContain(message);
      expect(response.body.errors[0]).toContain('policy');
    }
    const missing = await call('POST', '/bad', {});
    expect(missing.status).toBe(400);
    expect(missing.body.errors[0]).toContain('policy');
    expect((await call('GET', '/bad')).status).toBe(404);
  });
});
