import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type CryptoKey, exportJWK, exportSPKI, generateKeyPair, type JWK, type JWTPayload, SignJWT } from 'jose';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createSecretsApp } from '../../packages/core/src/http/secrets-app.ts';
import { readEntity } from '../../packages/core/src/secrets/auth/jwt/identity.ts';
import { MountStorage } from '../../packages/core/src/secrets/mounts/mount-storage.ts';
import { type CallResult, type SecretsService, startSecretsInMemory } from '../support/secrets-harness.ts';

interface SigningKey {
  alg: 'RS256' | 'ES256' | 'EdDSA';
  kid: string;
  privateKey: CryptoKey;
  pem: string;
  jwk: JWK;
}

async function signingKey(alg: SigningKey['alg'], kid: string): Promise<SigningKey> {
  const { publicKey, privateKey } = await generateKeyPair(alg, { extractable: true });
  return {
    alg,
    kid,
    privateKey,
    pem: await exportSPKI(publicKey),
    jwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' },
  };
}

/** A JWKS endpoint whose key set the test changes, counting fetches. */
async function startJwksServer() {
  let keys: JWK[] = [];
  let fetches = 0;
  const server: Server = createServer((_request, response) => {
    fetches++;
    response.setHeader('content-type', 'application/json');
    response.end(JSON.stringify({ keys }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks`,
    setKeys: (next: JWK[]) => {
      keys = next;
    },
    fetches: () => fetches,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('JWT login (auth/jwt)', () => {
  let h: SecretsService;
  let rsa: SigningKey;
  let ec: SigningKey;
  let ed: SigningKey;
  let stranger: SigningKey;
  let jwks: Awaited<ReturnType<typeof startJwksServer>>;
  const root = (method: string, path: string, body?: unknown) =>
    h.call(method, path, { token: h.rootToken, ...(body === undefined ? {} : { body }) });
  const now = () => Math.floor(h.clock.now() / 1000);

  async function jwt(
    key: SigningKey,
    claims: JWTPayload,
    options: { iat?: number | null; exp?: number | null } = {},
  ): Promise<string> {
    const token = new SignJWT(claims).setProtectedHeader({ alg: key.alg, kid: key.kid });
    if (options.iat !== null) token.setIssuedAt(options.iat ?? now());
    if (options.exp !== null) token.setExpirationTime(options.exp ?? now() + 300);
    return token.sign(key.privateKey);
  }

  const login = (body: Record<string, unknown>, mount = 'jwt') => h.call('POST', `/v1/auth/${mount}/login`, { body });

  const errorOf = (reply: CallResult) => (reply.body?.errors ?? []).join('; ');

  beforeAll(async () => {
    h = await startSecretsInMemory();
    [rsa, ec, ed, stranger] = await Promise.all([
      signingKey('RS256', 'rsa-1'),
      signingKey('ES256', 'ec-1'),
      signingKey('EdDSA', 'ed-1'),
      signingKey('RS256', 'rsa-x'),
    ]);
    jwks = await startJwksServer();
    expect((await root('POST', '/v1/sys/auth/jwt', { type: 'jwt' })).status).toBe(204);
    expect(
      (await root('POST', '/v1/sys/policies/acl/reader', { policy: 'path "secret/*" { capabilities = ["read"] }' }))
        .status,
    ).toBe(204);
    expect((await root('POST', '/v1/secret/app', { password: 'pw' })).status).toBe(204);
  });
  afterAll(async () => {
    await jwks.close();
    await h.close();
  });

  describe('config', () => {
    it('needs exactly one key source and says which were given', async () => {
      const none = await root('POST', '/v1/auth/jwt/config', { bound_issuer: 'x' });
      expect(none.status).toBe(400);
      expect(errorOf(none)).toContain('none was given');
      const two = await root('POST', '/v1/auth/jwt/config', { jwks_url: jwks.url, jwt_validation_pubkeys: [rsa.pem] });
      expect(two.status).toBe(400);
      expect(errorOf(two)).toContain("given: 'jwks_url', 'jwt_validation_pubkeys'");
    });

    it.each([
      [{ jwt_validation_pubkeys: 'RSA' }, 'error parsing public key 0'],
      [
        { jwt_validation_pubkeys: ['-----BEGIN PRIVATE KEY-----\nAA==\n-----END PRIVATE KEY-----'] },
        'error parsing public key',
      ],
      [
        { oidc_discovery_url: 'http://127.0.0.1:1', oidc_client_id: 'c' },
        "both 'oidc_client_id' and 'oidc_client_secret'",
      ],
      [
        { jwt_validation_pubkeys: ['PEM'], oidc_client_id: 'c', oidc_client_secret: 's' },
        "'oidc_discovery_url' must be set for OIDC",
      ],
      [
        { jwks_pairs: [{ jwks_url: 'http://127.0.0.1:1/a' }], bound_issuer: 'iss' },
        "'bound_issuer' is not supported for use with 'jwks_pairs'",
      ],
      [
        { jwks_pairs: [{ jwks_url: 'http://127.0.0.1:1/a' }], jwks_ca_pem: 'x' },
        "'jwks_ca_pem' cannot be used with 'jwks_pairs'",
      ],
      [{ jwks_url: 'http://127.0.0.1:1/a', jwks_ca_pem: 'not a pem' }, "could not parse 'jwks_ca_pem'"],
      [{ jwks_pairs: [{ url: 'x' }] }, 'jwks_pairs'],
      [{ jwt_validation_pubkeys: ['PEM'], jwt_supported_algs: ['RS256', 'HS256'] }, 'invalid jwt_supported_algs'],
      [{ jwt_validation_pubkeys: ['PEM'], oidc_response_types: 'code,token' }, 'invalid oidc_response_types'],
      [
        { jwt_validation_pubkeys: ['PEM'], oidc_response_types: ['id_token'] },
        "'query' oidc_response_mode may not be used with an 'id_token'",
      ],
      [{ jwt_validation_pubkeys: ['PEM'], oidc_response_mode: 'fragment' }, 'invalid oidc_response_mode'],
      [
        { jwt_validation_pubkeys: ['PEM'], provider_config: { provider: 'azure' } },
        'provider "azure" is not supported',
      ],
      [{ jwt_validation_pubkeys: ['PEM'], provider_config: { x: 1 } }, "'provider' field not found"],
      [{ jwks_url: 'ftp://example.com/keys' }, 'is not an http or https URL'],
    ])('refuses %j', async (body, message) => {
      const withPem = JSON.parse(JSON.stringify(body).replaceAll('"PEM"', JSON.stringify(rsa.pem)));
      const reply = await root('POST', '/v1/auth/jwt/config', withPem);
      expect(reply.status).toBe(400);
      expect(errorOf(reply)).toContain(message);
    });

    it('fetches a JWKS URL on write and refuses one that does not answer a key set', async () => {
      const down = await root('POST', '/v1/auth/jwt/config', { jwks_url: 'http://127.0.0.1:1/jwks' });
      expect(down.status).toBe(400);
      expect(errorOf(down)).toContain('error checking jwks URL "http://127.0.0.1:1/jwks"');
      jwks.setKeys([rsa.jwk]);
      const before = jwks.fetches();
      expect((await root('POST', '/v1/auth/jwt/config', { jwks_url: jwks.url })).status).toBe(204);
      expect(jwks.fetches()).toBe(before + 1);
    });

    it('replaces the whole config on every write', async () => {
      expect(
        (
          await root('POST', '/v1/auth/jwt/config', {
            jwt_validation_pubkeys: [rsa.pem],
            bound_issuer: 'https://issuer',
            default_role: 'Dev',
          })
        ).status,
      ).toBe(204);
      const read = await root('GET', '/v1/auth/jwt/config');
      expect(read.status).toBe(200);
      expect(read.body.data).toMatchObject({
        jwt_validation_pubkeys: [rsa.pem],
        bound_issuer: 'https://issuer',
        default_role: 'dev',
        oidc_discovery_url: '',
        jwks_url: '',
        oidc_response_mode: '',
        namespace_in_state: true,
      });
      expect(read.body.data).not.toHaveProperty('oidc_client_secret');
      expect(
        (await root('POST', '/v1/auth/jwt/config', { jwt_validation_pubkeys: [rsa.pem, ec.pem, ed.pem] })).status,
      ).toBe(204);
      const replaced = await root('GET', '/v1/auth/jwt/config');
      expect(replaced.body.data.bound_issuer).toBe('');
      expect(replaced.body.data.default_role).toBe('');
      expect(replaced.body.data.jwt_validation_pubkeys).toHaveLength(3);
    });
  });

  describe('roles', () => {
    it.each([
      [{ role_type: 'jwt', bound_subject: 's' }, "a user claim must be defined on the role ('user_claim')"],
      [{ role_type: 'jwt', user_claim: 'sub' }, 'must have at least one bound constraint'],
      [{ role_type: 'saml', user_claim: 'sub' }, "invalid 'role_type'"],
      [{ user_claim: 'sub' }, "'allowed_redirect_uris' must be set"],
      [
        { role_type: 'jwt', user_claim: 'sub', bound_claims_type: 'regex', bound_subject: 's' },
        "invalid 'bound_claims_type'",
      ],
      [
        { role_type: 'jwt', user_claim: 'sub', bound_claims_type: 'glob', bound_claims: { n: 5 } },
        'must be a string or a list of strings',
      ],
      [
        { role_type: 'jwt', user_claim: 'sub', bound_claims: { n: { deep: 1 } } },
        'must be a string, number, boolean or a list of them',
      ],
      [
        { role_type: 'jwt', user_claim: 'sub', bound_subject: 's', claim_mappings: { email: 'role' } },
        'metadata key "role" is reserved',
      ],
      [
        {
          role_type: 'jwt',
          user_claim: 'sub',
          bound_subject: 's',
          claim_mappings: { email: 'mail', '/contact/email': 'mail' },
        },
        'multiple keys are mapped to metadata key "mail"',
      ],
      [
        { role_type: 'jwt', user_claim: 'sub', bound_subject: 's', token_ttl: '2h', token_max_ttl: '1h' },
        "'token_ttl' (7200s) should not be greater than 'token_max_ttl' (3600s)",
      ],
      [
        { role_type: 'jwt', user_claim: 'sub', bound_subject: 's', token_type: 'batch', token_period: 60 },
        'periodic tokens',
      ],
      [
        { role_type: 'jwt', user_claim: 'sub', bound_subject: 's', token_type: 'batch', token_num_uses: 2 },
        'limited use count',
      ],
      [{ role_type: 'jwt', user_claim: 'sub', bound_subject: 's', token_type: 'sometimes' }, 'token_type'],
      [
        { role_type: 'jwt', user_claim: 'sub', bound_subject: 's', token_bound_cidrs: '10.0.0.0/33' },
        "invalid 'token_bound_cidrs'",
      ],
      [{ role_type: 'jwt', user_claim: 'sub', bound_subject: 's', token_num_uses: -1 }, 'token_num_uses'],
      [{ role_type: 'jwt', user_claim: 'sub', bound_subject: 's', token_ttl: 'soon' }, 'token_ttl'],
      [
        { role_type: 'jwt', user_claim: 'sub', bound_subject: 's', policies: 'a', token_policies: 'b' },
        "cannot specify both 'token_policies' and 'policies'",
      ],
      [{ role_type: 'jwt', user_claim: 'sub', bound_subject: 's', clock_skew_leeway: 'later' }, 'clock_skew_leeway'],
    ])('refuses %j', async (body, message) => {
      const reply = await root('POST', '/v1/auth/jwt/role/bad', body);
      expect(reply.status).toBe(400);
      expect(errorOf(reply)).toContain(message);
      expect((await root('GET', '/v1/auth/jwt/role/bad')).status).toBe(404);
    });

    it('creates, reads with every field, lists, merges updates and deletes', async () => {
      const created = await root('POST', '/v1/auth/jwt/role/Ops', {
        role_type: 'jwt',
        user_claim: 'sub',
        bound_audiences: 'api,cli',
        bound_claims: { '/org/team': ['core', 'infra'] },
        claim_mappings: { email: 'email' },
        groups_claim: 'groups',
        policies: 'reader',
        bound_cidrs: ['127.0.0.1'],
        ttl: '1h',
        max_ttl: '2h',
        num_uses: 3,
        clock_skew_leeway: -1,
        expiration_leeway: '30s',
        verbose_oidc_logging: true,
      });
      expect(created.status).toBe(200);
      expect(created.body.warnings.join(' ')).toContain('verbose_oidc_logging has been enabled');
      const read = await root('GET', '/v1/auth/jwt/role/ops');
      expect(read.status).toBe(200);
      expect(read.body.data).toEqual({
        role_type: 'jwt',
        bound_audiences: ['api', 'cli'],
        bound_subject: '',
        bound_claims_type: 'string',
        bound_claims: { '/org/team': ['core', 'infra'] },
        claim_mappings: { email: 'email' },
        user_claim: 'sub',
        user_claim_json_pointer: false,
        groups_claim: 'groups',
        allowed_redirect_uris: [],
        oidc_scopes: [],
        verbose_oidc_logging: true,
        max_age: 0,
        clock_skew_leeway: -1,
        expiration_leeway: 30,
        not_before_leeway: 0,
        token_ttl: 3600,
        token_max_ttl: 7200,
        token_explicit_max_ttl: 0,
        token_period: 0,
        token_policies: ['reader'],
        token_bound_cidrs: ['127.0.0.1/32'],
        token_no_default_policy: false,
        token_num_uses: 3,
        token_type: 'default',
        policies: ['reader'],
        bound_cidrs: ['127.0.0.1/32'],
        ttl: 3600,
        max_ttl: 7200,
        period: 0,
        num_uses: 3,
      });
      expect(
        (await root('POST', '/v1/auth/jwt/role/ops', { token_ttl: 600, verbose_oidc_logging: false })).status,
      ).toBe(204);
      const merged = (await root('GET', '/v1/auth/jwt/role/ops')).body.data;
      expect(merged).toMatchObject({
        token_ttl: 600,
        token_max_ttl: 7200,
        bound_audiences: ['api', 'cli'],
        groups_claim: 'groups',
      });
      expect(
        (
          await root('POST', '/v1/auth/jwt/role/web', {
            user_claim: 'email',
            allowed_redirect_uris: ['http://localhost:8250/oidc/callback'],
          })
        ).status,
      ).toBe(204);
      expect((await root('GET', '/v1/auth/jwt/role/web')).body.data.role_type).toBe('oidc');
      const list = await root('LIST', '/v1/auth/jwt/role');
      expect(list.body.data.keys).toEqual(expect.arrayContaining(['ops', 'web']));
      expect((await root('DELETE', '/v1/auth/jwt/role/ops')).status).toBe(204);
      expect((await root('GET', '/v1/auth/jwt/role/ops')).status).toBe(404);
      expect((await root('DELETE', '/v1/auth/jwt/role/web')).status).toBe(204);
      expect((await root('LIST', '/v1/auth/jwt/role')).status).toBe(404);
    });
  });

  describe('login', () => {
    beforeAll(async () => {
      expect(
        (
          await root('POST', '/v1/auth/jwt/config', {
            jwt_validation_pubkeys: [rsa.pem, ec.pem, ed.pem],
            bound_issuer: 'https://ci.example',
          })
        ).status,
      ).toBe(204);
    });
    beforeEach(async () => {
      const role = {
        role_type: 'jwt',
        user_claim: 'sub',
        bound_audiences: ['keyhaven'],
        groups_claim: 'groups',
        claim_mappings: { email: 'email', '/build/number': 'build' },
        token_policies: ['reader'],
        token_ttl: '1h',
      };
      await root('DELETE', '/v1/auth/jwt/role/ci');
      expect((await root('POST', '/v1/auth/jwt/role/ci', role)).status).toBe(204);
    });
    const claims = (extra: JWTPayload = {}) => ({
      iss: 'https://ci.example',
      aud: 'keyhaven',
      sub: 'builder',
      groups: ['dev', 'ops'],
      email: 'b@example.com',
      build: { number: 42 },
      ...extra,
    });

    it.each(['RS256', 'ES256', 'EdDSA'] as const)(
      'logs in with an %s token and answers the auth object',
      async (alg) => {
        const key = { RS256: () => rsa, ES256: () => ec, EdDSA: () => ed }[alg]();
        const reply = await login({ role: 'ci', jwt: await jwt(key, claims()) });
        expect(reply.status).toBe(200);
        const auth = reply.body.auth;
        expect(auth).toMatchObject({
          policies: ['default', 'reader'],
          token_policies: ['default', 'reader'],
          metadata: { role: 'ci', email: 'b@example.com', build: '42' },
          lease_duration: 3600,
          renewable: true,
          token_type: 'service',
          orphan: true,
        });
        expect(auth.client_token).toMatch(/^hvs\./);
        expect(auth.accessor).not.toBe('');
        expect(auth.entity_id).toMatch(/^[0-9a-f-]{36}$/);
        const self = await h.call('GET', '/v1/auth/token/lookup-self', { token: auth.client_token });
        expect(self.body.data).toMatchObject({
          entity_id: auth.entity_id,
          display_name: 'jwt-builder',
          path: 'auth/jwt/login',
          orphan: true,
        });
        expect((await h.call('GET', '/v1/secret/app', { token: auth.client_token })).body.data).toEqual({
          password: 'pw',
        });
      },
    );

    it('keeps one entity per user claim value, with its alias and the group aliases of the last login', async () => {
      const first = (await login({ role: 'ci', jwt: await jwt(rsa, claims()) })).body.auth.entity_id;
      const again = (await login({ role: 'ci', jwt: await jwt(ec, claims({ groups: ['dev', 'release'] })) })).body.auth
        .entity_id;
      const other = (await login({ role: 'ci', jwt: await jwt(rsa, claims({ sub: 'someone-else' })) })).body.auth
        .entity_id;
      expect(again).toBe(first);
      expect(other).not.toBe(first);
      const mount = await h.core.mounts.find('auth', 'jwt');
      const storage = new MountStorage(h.core.store, h.core.keyring, mount?.uuid ?? '');
      const entity = await readEntity(storage, first);
      expect(entity).toMatchObject({
        id: first,
        alias_name: 'builder',
        mount_accessor: mount?.accessor,
        alias_metadata: { role: 'ci', email: 'b@example.com', build: '42' },
      });
      expect(entity?.group_aliases.map((group) => group.name)).toEqual(['dev', 'release']);
      const otherEntity = await readEntity(storage, other);
      expect(otherEntity?.group_aliases.find((group) => group.name === 'dev')?.id).toBe(
        entity?.group_aliases.find((group) => group.name === 'dev')?.id,
      );
    });

    it('uses default_role when the login names none, and refuses unknown and oidc roles', async () => {
      expect(errorOf(await login({ jwt: await jwt(rsa, claims()) }))).toContain('missing role');
      expect(errorOf(await login({ role: 'nope', jwt: await jwt(rsa, claims()) }))).toContain(
        'role "nope" could not be found',
      );
      expect(
        (
          await root('POST', '/v1/auth/jwt/role/browser', {
            user_claim: 'sub',
            allowed_redirect_uris: 'http://localhost/cb',
          })
        ).status,
      ).toBe(204);
      expect(errorOf(await login({ role: 'browser', jwt: await jwt(rsa, claims()) }))).toContain(
        'role with oidc role_type is not allowed',
      );
      expect(errorOf(await login({ role: 'ci' }))).toContain('missing token');
      const config = (await root('GET', '/v1/auth/jwt/config')).body.data;
      await root('POST', '/v1/auth/jwt/config', { ...config, default_role: 'ci' });
      try {
        expect((await login({ jwt: await jwt(rsa, claims()) })).status).toBe(200);
      } finally {
        await root('POST', '/v1/auth/jwt/config', config);
      }
    });

    it('refuses a bad signature, an algorithm outside jwt_supported_algs and a malformed token', async () => {
      const forged = await login({ role: 'ci', jwt: await jwt({ ...stranger, kid: 'rsa-1' }, claims()) });
      expect(forged.status).toBe(400);
      expect(errorOf(forged)).toContain('error validating token: failed to verify id token signature');
      expect(errorOf(await login({ role: 'ci', jwt: 'not.a.jwt' }))).toContain('error validating token: malformed JWT');
      const config = (await root('GET', '/v1/auth/jwt/config')).body.data;
      await root('POST', '/v1/auth/jwt/config', { ...config, jwt_supported_algs: ['ES256'] });
      try {
        const refused = await login({ role: 'ci', jwt: await jwt(rsa, claims()) });
        expect(refused.status).toBe(400);
        expect(errorOf(refused)).toContain('token signed with unsupported algorithm "RS256"');
        expect((await login({ role: 'ci', jwt: await jwt(ec, claims()) })).status).toBe(200);
      } finally {
        await root('POST', '/v1/auth/jwt/config', config);
      }
    });

    it('checks iss, aud and sub', async () => {
      expect(errorOf(await login({ role: 'ci', jwt: await jwt(rsa, claims({ iss: 'https://evil' })) }))).toContain(
        'invalid issuer (iss) claim',
      );
      expect(errorOf(await login({ role: 'ci', jwt: await jwt(rsa, claims({ aud: ['other', 'x'] })) }))).toContain(
        'invalid audience (aud) claim',
      );
      expect((await login({ role: 'ci', jwt: await jwt(rsa, claims({ aud: ['other', 'keyhaven'] })) })).status).toBe(
        200,
      );
      await root('POST', '/v1/auth/jwt/role/bysub', { role_type: 'jwt', user_claim: 'sub', bound_subject: 'builder' });
      const unbound = await login({ role: 'bysub', jwt: await jwt(rsa, claims()) });
      expect(unbound.status).toBe(400);
      expect(errorOf(unbound)).toContain('audience claim found in JWT but no audiences bound to the role');
      const { aud: _aud, ...withoutAud } = claims();
      expect((await login({ role: 'bysub', jwt: await jwt(rsa, withoutAud) })).status).toBe(200);
      expect(
        errorOf(await login({ role: 'bysub', jwt: await jwt(rsa, { ...withoutAud, sub: 'intruder' }) })),
      ).toContain('invalid subject (sub) claim');
    });

    it('applies the exp, nbf and iat leeways with their 0 (default) and -1 (disabled) meanings', async () => {
      const ok = async (extra: JWTPayload, times: { iat?: number | null; exp?: number | null } = {}) =>
        (await login({ role: 'ci', jwt: await jwt(rsa, claims(extra), times) })).status;
      const why = async (extra: JWTPayload, times: { iat?: number | null; exp?: number | null } = {}) =>
        errorOf(await login({ role: 'ci', jwt: await jwt(rsa, claims(extra), times) }));
      // Defaults: 150 s for exp and nbf plus 60 s of clock skew.
      expect(await ok({}, { exp: now() - 200 })).toBe(200);
      expect(await why({}, { exp: now() - 220 })).toContain('token is expired (exp)');
      expect(await ok({ nbf: now() + 200 })).toBe(200);
      expect(await why({ nbf: now() + 220 })).toContain('token not valid yet (nbf)');
      expect(await ok({}, { iat: now() + 50 })).toBe(200);
      expect(await why({}, { iat: now() + 70 })).toContain('token issued in the future (iat)');
      expect(await why({}, { iat: null, exp: null })).toContain('no issue time, notbefore, or expiration time');
      // Without exp a token lives expiration_leeway (+ skew) past its start.
      expect(await ok({}, { iat: now() - 100, exp: null })).toBe(200);
      expect(await why({}, { iat: now() - 300, exp: null })).toContain('token is expired');

      await root('POST', '/v1/auth/jwt/role/ci', {
        clock_skew_leeway: -1,
        expiration_leeway: -1,
        not_before_leeway: -1,
      });
      expect(await why({}, { exp: now() - 1 })).toContain('token is expired (exp)');
      expect(await why({ nbf: now() + 1 })).toContain('token not valid yet (nbf)');
      expect(await why({}, { iat: now() + 1 })).toContain('token issued in the future (iat)');
      expect(await ok({}, { exp: now() + 1 })).toBe(200);

      await root('POST', '/v1/auth/jwt/role/ci', {
        clock_skew_leeway: 0,
        expiration_leeway: '10m',
        not_before_leeway: 5,
      });
      expect(await ok({}, { exp: now() - 600 })).toBe(200);
      expect(await why({ nbf: now() + 70 })).toContain('token not valid yet (nbf)');
    });

    it('matches bound_claims: JSON pointers, lists (any match), numbers, booleans, globs', async () => {
      await root('POST', '/v1/auth/jwt/role/ci', {
        bound_claims: { '/org/team': ['core', 'infra'], level: 3, admin: false, groups: 'ops' },
      });
      const base = { org: { team: 'infra' }, level: 3, admin: false };
      expect((await login({ role: 'ci', jwt: await jwt(rsa, claims(base)) })).status).toBe(200);
      expect(
        errorOf(await login({ role: 'ci', jwt: await jwt(rsa, claims({ ...base, org: { team: 'web' } })) })),
      ).toContain('claim "/org/team" does not match any associated bound claim values');
      expect(errorOf(await login({ role: 'ci', jwt: await jwt(rsa, claims({ ...base, level: '3' })) }))).toContain(
        'claim "level" does not match',
      );
      expect(errorOf(await login({ role: 'ci', jwt: await jwt(rsa, claims({ ...base, admin: true })) }))).toContain(
        'claim "admin" does not match',
      );
      expect(errorOf(await login({ role: 'ci', jwt: await jwt(rsa, claims({ ...base, groups: ['dev'] })) }))).toContain(
        'claim "groups" does not match',
      );
      expect(errorOf(await login({ role: 'ci', jwt: await jwt(rsa, claims({ level: 3, admin: false })) }))).toContain(
        'claim "/org/team" is missing',
      );

      await root('POST', '/v1/auth/jwt/role/ci', {
        bound_claims_type: 'glob',
        bound_claims: { ref: ['refs/heads/release-*', 'refs/tags/v*.*'] },
      });
      expect(
        (await login({ role: 'ci', jwt: await jwt(rsa, claims({ ref: 'refs/heads/release-2026.1' })) })).status,
      ).toBe(200);
      expect((await login({ role: 'ci', jwt: await jwt(rsa, claims({ ref: 'refs/tags/v1.2' })) })).status).toBe(200);
      expect((await login({ role: 'ci', jwt: await jwt(rsa, claims({ ref: 'refs/heads/main' })) })).status).toBe(400);
      expect((await login({ role: 'ci', jwt: await jwt(rsa, claims({ ref: 'refs/heads/release-[x]' })) })).status).toBe(
        200,
      );
    });

    it('reads user_claim as a string (or a JSON pointer) and groups_claim as a list', async () => {
      expect(errorOf(await login({ role: 'ci', jwt: await jwt(rsa, claims({ sub: undefined })) }))).toContain(
        'claim "sub" not found in token',
      );
      await root('POST', '/v1/auth/jwt/role/ci', { user_claim: 'uid' });
      expect(errorOf(await login({ role: 'ci', jwt: await jwt(rsa, claims({ uid: 7 })) }))).toContain(
        'claim "uid" could not be converted to string',
      );
      await root('POST', '/v1/auth/jwt/role/ci', { user_claim: '/profile/login', user_claim_json_pointer: true });
      const pointed = await login({ role: 'ci', jwt: await jwt(rsa, claims({ profile: { login: 'pointer-user' } })) });
      expect(pointed.status).toBe(200);
      expect(
        (await h.call('GET', '/v1/auth/token/lookup-self', { token: pointed.body.auth.client_token })).body.data
          .display_name,
      ).toBe('jwt-pointer-user');
      await root('POST', '/v1/auth/jwt/role/ci', { user_claim: 'sub', user_claim_json_pointer: false });
      expect(errorOf(await login({ role: 'ci', jwt: await jwt(rsa, claims({ groups: { a: 1 } })) }))).toContain(
        '"groups" claim could not be converted to string list',
      );
      expect(errorOf(await login({ role: 'ci', jwt: await jwt(rsa, claims({ groups: ['a', 3] })) }))).toContain(
        'value 3 in groups claim could not be parsed as string',
      );
      expect(errorOf(await login({ role: 'ci', jwt: await jwt(rsa, claims({ groups: undefined })) }))).toContain(
        '"groups" claim not found in token',
      );
    });

    it('gives a token that expires after token_ttl on the moved clock and obeys the max and explicit max TTL', async () => {
      await root('POST', '/v1/auth/jwt/role/ci', { token_ttl: 60, token_max_ttl: 120 });
      const token = (await login({ role: 'ci', jwt: await jwt(rsa, claims()) })).body.auth;
      expect(token.lease_duration).toBe(60);
      expect((await h.call('GET', '/v1/secret/app', { token: token.client_token })).status).toBe(200);
      h.clock.advance(61);
      expect((await h.call('GET', '/v1/secret/app', { token: token.client_token })).status).toBe(403);

      await root('POST', '/v1/auth/jwt/role/ci', { token_ttl: 0, token_max_ttl: 0, token_explicit_max_ttl: 30 });
      expect((await login({ role: 'ci', jwt: await jwt(rsa, claims()) })).body.auth.lease_duration).toBe(30);
      await root('POST', '/v1/auth/jwt/role/ci', { token_explicit_max_ttl: 0, token_period: '10m' });
      const periodic = (await login({ role: 'ci', jwt: await jwt(rsa, claims()) })).body.auth;
      expect(periodic.lease_duration).toBe(600);
      expect(
        (await h.call('GET', '/v1/auth/token/lookup-self', { token: periodic.client_token })).body.data.period,
      ).toBe(600);
    });

    it('gives a token refused after token_num_uses uses', async () => {
      await root('POST', '/v1/auth/jwt/role/ci', { token_num_uses: 2 });
      const token = (await login({ role: 'ci', jwt: await jwt(rsa, claims()) })).body.auth;
      expect(token.num_uses).toBe(2);
      expect((await h.call('GET', '/v1/secret/app', { token: token.client_token })).status).toBe(200);
      expect((await h.call('GET', '/v1/secret/app', { token: token.client_token })).status).toBe(200);
      expect((await h.call('GET', '/v1/secret/app', { token: token.client_token })).status).toBe(403);
    });

    it('honours token_no_default_policy and token_type batch', async () => {
      await root('POST', '/v1/auth/jwt/role/ci', { token_no_default_policy: true, token_type: 'batch' });
      const reply = await login({ role: 'ci', jwt: await jwt(rsa, claims()) });
      expect(reply.body.auth).toMatchObject({
        policies: ['reader'],
        token_type: 'batch',
        renewable: false,
        orphan: true,
        accessor: '',
      });
      expect(reply.body.auth.client_token).toMatch(/^hvb\./);
      expect((await h.call('GET', '/v1/secret/app', { token: reply.body.auth.client_token })).status).toBe(200);
      const self = await h.call('GET', '/v1/auth/token/lookup-self', { token: reply.body.auth.client_token });
      expect(self.status).toBe(403);
    });

    it('refuses a login from outside token_bound_cidrs with 403 and binds the token to them', async () => {
      await root('POST', '/v1/auth/jwt/role/ci', { token_bound_cidrs: '10.0.0.0/8, 192.168.1.1' });
      const outside = await login({ role: 'ci', jwt: await jwt(rsa, claims()) });
      expect(outside.status).toBe(403);
      const from = (ip: string) => createSecretsApp({ core: async () => h.core, clientIp: () => ip });
      const inside = await from('10.1.2.3').request('/v1/auth/jwt/login', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ role: 'ci', jwt: await jwt(rsa, claims()) }),
      });
      expect(inside.status).toBe(200);
      const token = ((await inside.json()) as { auth: { client_token: string } }).auth.client_token;
      const readFrom = (ip: string) => from(ip).request('/v1/secret/app', { headers: { 'X-Secrets-Token': token } });
      expect((await readFrom('10.9.9.9')).status).toBe(200);
      expect((await readFrom('192.168.1.1')).status).toBe(200);
      expect((await readFrom('127.0.0.1')).status).toBe(403);
    });

    it('renews a login token from the role as it is now, and refuses once the role is gone', async () => {
      const token = (await login({ role: 'ci', jwt: await jwt(rsa, claims()) })).body.auth.client_token;
      const renewSelf = () => h.call('POST', '/v1/auth/token/renew-self', { token, body: {} });
      expect((await renewSelf()).body.auth.lease_duration).toBe(3600);
      await root('POST', '/v1/auth/jwt/role/ci', { token_ttl: '5m', token_max_ttl: '1h', token_period: 0 });
      expect((await renewSelf()).body.auth.lease_duration).toBe(300);
      await root('DELETE', '/v1/auth/jwt/role/ci');
      const refused = await renewSelf();
      expect(refused.status).toBe(400);
      expect(errorOf(refused)).toContain('role ci does not exist during renewal');
    });

    it('maps claim values to metadata and refuses an object claim', async () => {
      await root('POST', '/v1/auth/jwt/role/ci', { claim_mappings: { email: 'email', org: 'org' } });
      expect(errorOf(await login({ role: 'ci', jwt: await jwt(rsa, claims({ org: { x: 1 } })) }))).toContain(
        "error converting claim 'org' to string",
      );
      const reply = await login({ role: 'ci', jwt: await jwt(rsa, claims({ org: 'acme' })) });
      expect(reply.body.auth.metadata).toEqual({ role: 'ci', email: 'b@example.com', org: 'acme' });
    });
  });

  describe('JWKS', () => {
    it('verifies against a JWKS URL, refetching only when an unknown kid appears', async () => {
      jwks.setKeys([rsa.jwk, ec.jwk]);
      expect((await root('POST', '/v1/sys/auth/keys', { type: 'jwt' })).status).toBe(204);
      expect((await root('POST', '/v1/auth/keys/config', { jwks_url: jwks.url })).status).toBe(204);
      expect(
        (
          await root('POST', '/v1/auth/keys/role/ci', {
            role_type: 'jwt',
            user_claim: 'sub',
            bound_audiences: 'keyhaven',
          })
        ).status,
      ).toBe(204);
      const token = (key: SigningKey) => jwt(key, { aud: 'keyhaven', sub: 'rotator' });
      const fetchesAfterWrite = jwks.fetches();
      expect((await login({ role: 'ci', jwt: await token(rsa) }, 'keys')).status).toBe(200);
      expect((await login({ role: 'ci', jwt: await token(ec) }, 'keys')).status).toBe(200);
      expect(jwks.fetches()).toBe(fetchesAfterWrite);

      const rotated = await signingKey('ES256', 'ec-2');
      jwks.setKeys([rotated.jwk]);
      expect((await login({ role: 'ci', jwt: await token(rotated) }, 'keys')).status).toBe(200);
      expect(jwks.fetches()).toBe(fetchesAfterWrite + 1);
      expect((await login({ role: 'ci', jwt: await token(rotated) }, 'keys')).status).toBe(200);
      expect(jwks.fetches()).toBe(fetchesAfterWrite + 1);
      const gone = await login({ role: 'ci', jwt: await token(rsa) }, 'keys');
      expect(gone.status).toBe(400);
      expect(errorOf(gone)).toContain('no key in the key set matches the token');
    });

    it('tries every set of jwks_pairs', async () => {
      const second = await startJwksServer();
      try {
        second.setKeys([ed.jwk]);
        jwks.setKeys([rsa.jwk]);
        expect(
          (
            await root('POST', '/v1/auth/keys/config', {
              jwks_pairs: [{ jwks_url: jwks.url }, JSON.stringify({ jwks_url: second.url })],
            })
          ).status,
        ).toBe(204);
        expect((await root('GET', '/v1/auth/keys/config')).body.data.jwks_pairs).toEqual([
          { jwks_url: jwks.url, jwks_ca_pem: '' },
          { jwks_url: second.url, jwks_ca_pem: '' },
        ]);
        expect(
          (await login({ role: 'ci', jwt: await jwt(ed, { aud: 'keyhaven', sub: 'pairs' }) }, 'keys')).status,
        ).toBe(200);
        expect(
          (await login({ role: 'ci', jwt: await jwt(rsa, { aud: 'keyhaven', sub: 'pairs' }) }, 'keys')).status,
        ).toBe(200);
        expect(
          (await login({ role: 'ci', jwt: await jwt(ec, { aud: 'keyhaven', sub: 'pairs' }) }, 'keys')).status,
        ).toBe(400);
      } finally {
        await second.close();
      }
    });

    it('fetches an https JWKS with jwks_ca_pem, and refuses it without', async () => {
      const dir = mkdtempSync(path.join(tmpdir(), 'keyhaven-jwks-tls-'));
      const server = createHttpsServer();
      try {
        execFileSync(
          'openssl',
          [
            'req',
            '-x509',
            '-newkey',
            'ec',
            '-pkeyopt',
            'ec_paramgen_curve:P-256',
            '-nodes',
            '-days',
            '1',
            '-subj',
            '/CN=127.0.0.1',
            '-addext',
            'subjectAltName=IP:127.0.0.1',
            '-keyout',
            path.join(dir, 'key.pem'),
            '-out',
            path.join(dir, 'cert.pem'),
          ],
          { stdio: 'ignore' },
        );
        const cert = readFileSync(path.join(dir, 'cert.pem'), 'utf8');
        server.setSecureContext({ key: readFileSync(path.join(dir, 'key.pem')), cert });
        server.on('request', (_request, response) => {
          response.setHeader('content-type', 'application/json');
          response.end(JSON.stringify({ keys: [ec.jwk] }));
        });
        await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
        const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/keys`;
        const untrusted = await root('POST', '/v1/auth/keys/config', { jwks_url: url });
        expect(untrusted.status).toBe(400);
        expect(errorOf(untrusted)).toContain('error checking jwks URL');
        expect((await root('POST', '/v1/auth/keys/config', { jwks_url: url, jwks_ca_pem: cert })).status).toBe(204);
        expect((await root('GET', '/v1/auth/keys/config')).body.data.jwks_ca_pem).toBe(cert);
        expect((await login({ role: 'ci', jwt: await jwt(ec, { aud: 'keyhaven', sub: 'tls' }) }, 'keys')).status).toBe(
          200,
        );
      } finally {
        await new Promise<void>((resolve) => server.close(() => resolve()));
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it('serves the same method under type oidc', async () => {
      expect((await root('POST', '/v1/sys/auth/oidc', { type: 'oidc' })).status).toBe(204);
      expect((await root('POST', '/v1/auth/oidc/config', { jwt_validation_pubkeys: rsa.pem })).status).toBe(204);
      expect(
        (await root('POST', '/v1/auth/oidc/role/ci', { role_type: 'jwt', user_claim: 'sub', bound_subject: 'x' }))
          .status,
      ).toBe(204);
      expect((await login({ role: 'ci', jwt: await jwt(rsa, { sub: 'x' }) }, 'oidc')).status).toBe(200);
    });
  });
});
