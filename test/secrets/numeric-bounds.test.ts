import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SecretsService, startSecretsInMemory } from '../support/secrets-harness.ts';

/**
 * Numbers a body may carry that no field can use: past 2^53 they cannot even be stored exactly (the SDK refuses
 * them, which was a 500). Every one is a 400 naming the field; the largest value each field takes still works.
 * Token fields are covered in tokens.test.ts and token-roles.test.ts, ldap `length` in ldap-config.test.ts.
 */
describe('numeric fields of the engines and login methods', () => {
  let h: SecretsService;
  const call = (method: string, url: string, body?: string) => h.call(method, url, { token: h.rootToken, body });

  beforeAll(async () => {
    h = await startSecretsInMemory();
    expect((await h.call('POST', '/v1/sys/auth/jwt', { token: h.rootToken, body: { type: 'jwt' } })).status).toBe(204);
  });
  afterAll(() => h?.close());

  const role = (extra: string) => `{"role_type":"jwt","user_claim":"sub","bound_audiences":["a"],${extra}}`;

  it('refuses claims and provider options with numbers that cannot be stored, naming where', async () => {
    const cases: Array<[string, string, string]> = [
      ['/v1/auth/jwt/role/big', role('"bound_claims":{"x":9007199254740993}'), '"bound_claims.x"'],
      ['/v1/auth/jwt/role/big', role('"bound_claims":{"groups":[1,1e300]}'), '"bound_claims.groups.1"'],
      [
        '/v1/auth/jwt/config',
        '{"jwks_url":"https://issuer.example/jwks","provider_config":{"provider":"azure","limits":[1,-9007199254740993]}}',
        '"provider_config.limits.1"',
      ],
    ];
    for (const [url, body, field] of cases) {
      const reply = await call('POST', url, body);
      expect(reply.status, body).toBe(400);
      expect(reply.body.errors[0]).toContain(field);
    }
    expect((await call('GET', '/v1/auth/jwt/role/big')).status).toBe(404);
    expect(
      (await call('POST', '/v1/auth/jwt/role/ok', role('"bound_claims":{"x":9007199254740991,"y":[1.5,-2]}'))).status,
    ).toBe(204);
    expect((await call('GET', '/v1/auth/jwt/role/ok')).body.data.bound_claims).toEqual({
      x: 9007199254740991,
      y: [1.5, -2],
    });
  });

  it("bounds the signed leeways of a role at Go's longest duration", async () => {
    for (const field of ['clock_skew_leeway', 'expiration_leeway', 'not_before_leeway']) {
      for (const value of ['9223372037', '-9223372037', '1e300']) {
        const reply = await call('POST', '/v1/auth/jwt/role/leeway', role(`"${field}":${value}`));
        expect(reply.status, `${field}=${value}`).toBe(400);
        expect(reply.body.errors[0]).toContain(`"${field}"`);
      }
    }
    expect(
      (
        await call(
          'POST',
          '/v1/auth/jwt/role/leeway',
          role('"clock_skew_leeway":-9223372036,"expiration_leeway":9223372036'),
        )
      ).status,
    ).toBe(204);
  });

  it('refuses counts past the largest on a role, and durations that overflow', async () => {
    for (const [field, value] of [
      ['token_num_uses', '"9007199254740993"'],
      ['token_num_uses', '2147483648'],
      ['token_ttl', '"99999999999h"'],
      ['max_age', '1e300'],
    ]) {
      const reply = await call('POST', '/v1/auth/jwt/role/counts', role(`"${field}":${value}`));
      expect(reply.status, `${field}=${value}`).toBe(400);
      expect(reply.body.errors[0]).toContain(`"${field}"`);
    }
  });
});
