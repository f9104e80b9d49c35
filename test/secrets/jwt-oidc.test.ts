import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readEntity } from '../../packages/core/src/secrets/auth/jwt/identity.ts';
import { MountStorage } from '../../packages/core/src/secrets/mounts/mount-storage.ts';
import {
  browseToCallback,
  type CallbackDelivery,
  startOidcProvider,
  type TestOidcProvider,
} from '../support/oidc-provider.ts';
import { type CallResult, type SecretsService, startSecretsInMemory } from '../support/secrets-harness.ts';

/** The callback address a browser is sent back to; the test takes over there and calls the app itself. */
const callbackUrl = 'http://127.0.0.1:8200/v1/auth/jwt/oidc/callback';

describe('OIDC login (auth/jwt/oidc) against a real oidc-provider', () => {
  let h: SecretsService;
  let provider: TestOidcProvider;
  const root = (method: string, path: string, body?: unknown) =>
    h.call(method, path, { token: h.rootToken, ...(body === undefined ? {} : { body }) });
  const errorOf = (reply: CallResult) => (reply.body?.errors ?? []).join('; ');

  async function authUrl(body: Record<string, unknown>, mount = 'jwt'): Promise<string> {
    const reply = await h.call('POST', `/v1/auth/${mount}/oidc/auth_url`, {
      body: { redirect_uri: callbackUrl, ...body },
    });
    expect(reply.status).toBe(200);
    return reply.body.data.auth_url;
  }

  /** Delivers what the provider sent the browser with to the callback, as GET (query) or POST (form_post). */
  function deliver(delivery: CallbackDelivery, extra: Record<string, string> = {}, mount = 'jwt'): Promise<CallResult> {
    if (delivery.method === 'GET') {
      const query = new URLSearchParams(delivery.url.search);
      for (const [name, value] of Object.entries(extra)) query.set(name, value);
      return h.call('GET', `/v1/auth/${mount}/oidc/callback?${query}`);
    }
    // As the browser posts it: a form, not JSON.
    return h.call('POST', `/v1/auth/${mount}/oidc/callback`, {
      body: new URLSearchParams({ ...delivery.form, ...extra }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
  }

  beforeAll(async () => {
    provider = await startOidcProvider({
      redirectUris: [callbackUrl, 'http://127.0.0.1:8200/v1/auth/implicit/oidc/callback'],
    });
    provider.accounts.set('alice', {
      email: 'alice@example.com',
      email_verified: true,
      groups: ['admins', 'dev'],
      name: 'Alice',
      department: 'platform',
    });
    provider.accounts.set('bob', { email: 'bob@example.com', groups: ['dev'] });
    h = await startSecretsInMemory();
    // The provider stamps tokens with the real time; the service's clock starts there too.
    h.clock.advance(Math.floor((Date.now() - h.clock.now()) / 1000));
    expect((await root('POST', '/v1/sys/auth/jwt', { type: 'jwt' })).status).toBe(204);
    expect(
      (await root('POST', '/v1/sys/policies/acl/reader', { policy: 'path "secret/*" { capabilities = ["read"] }' }))
        .status,
    ).toBe(204);
    expect((await root('POST', '/v1/secret/app', { password: 'pw' })).status).toBe(204);
    const config = await root('POST', '/v1/auth/jwt/config', {
      oidc_discovery_url: provider.issuer,
      oidc_client_id: provider.clientId,
      oidc_client_secret: provider.clientSecret,
      default_role: 'web',
    });
    expect(config.status).toBe(204);
    const role = await root('POST', '/v1/auth/jwt/role/web', {
      user_claim: 'email',
      groups_claim: 'groups',
      oidc_scopes: 'email,groups,profile',
      claim_mappings: { name: 'name', department: 'department' },
      allowed_redirect_uris: [callbackUrl],
      token_policies: 'reader',
      token_ttl: '30m',
    });
    expect(role.status).toBe(204);
  });
  afterAll(async () => {
    await h?.close();
    await provider?.close();
  });

  it('keeps the client secret sealed in the table and out of the config read', async () => {
    const read = await root('GET', '/v1/auth/jwt/config');
    expect(read.body.data).toMatchObject({
      oidc_discovery_url: provider.issuer,
      oidc_client_id: provider.clientId,
      default_role: 'web',
    });
    expect(JSON.stringify(read.body)).not.toContain(provider.clientSecret);
    const mount = await h.core.mounts.find('auth', 'jwt');
    const stored = await h.core.store.get(`mount#${mount?.uuid}`, 'config');
    expect(JSON.stringify(stored)).not.toContain(provider.clientSecret);
  });

  it('refuses a discovery URL that is not an OIDC provider', async () => {
    expect((await root('POST', '/v1/sys/auth/broken', { type: 'jwt' })).status).toBe(204);
    const reply = await root('POST', '/v1/auth/broken/config', {
      oidc_discovery_url: `${provider.issuer}/nothing-here`,
      oidc_client_id: 'x',
      oidc_client_secret: 'y',
    });
    expect(reply.status).toBe(400);
    expect(errorOf(reply)).toContain('error checking oidc discovery URL');
  });

  it('runs the authorization code flow: auth_url, login, consent, callback, token', async () => {
    const url = new URL(await authUrl({ role: 'web', client_nonce: 'cli-nonce-1' }));
    expect(url.origin).toBe(provider.issuer);
    expect(Object.fromEntries(url.searchParams)).toMatchObject({
      client_id: provider.clientId,
      redirect_uri: callbackUrl,
      response_type: 'code',
      scope: 'openid email groups profile',
      code_challenge_method: 'S256',
    });
    expect(url.searchParams.get('state')).toBeTruthy();
    expect(url.searchParams.get('nonce')).toBeTruthy();
    expect(url.searchParams.get('code_challenge')).toBeTruthy();
    expect(url.searchParams.has('response_mode')).toBe(false);

    // The flow's state is in the table, for whichever process receives the callback, for ten minutes.
    const mount = await h.core.mounts.find('auth', 'jwt');
    const stateItem = await h.core.store.get(`mount#${mount?.uuid}`, `oidc-state/${url.searchParams.get('state')}`);
    expect(stateItem?.expiresAt).toBe(Math.floor(h.clock.now() / 1000) + 600);
    expect(JSON.stringify(stateItem)).not.toContain('code_verifier"');

    const delivery = await browseToCallback(url.href, { login: 'alice', callbackPrefix: callbackUrl });
    expect(delivery.method).toBe('GET');
    const reply = await deliver(delivery, { client_nonce: 'cli-nonce-1' });
    expect(reply.status).toBe(200);
    const auth = reply.body.auth;
    expect(auth).toMatchObject({
      policies: ['default', 'reader'],
      metadata: { role: 'web', name: 'Alice', department: 'platform' },
      lease_duration: 1800,
      renewable: true,
      token_type: 'service',
      orphan: true,
    });
    expect(auth.entity_id).toMatch(/^[0-9a-f-]{36}$/);
    const self = await h.call('GET', '/v1/auth/token/lookup-self', { token: auth.client_token });
    expect(self.body.data).toMatchObject({
      entity_id: auth.entity_id,
      display_name: 'jwt-alice@example.com',
      path: 'auth/jwt/oidc/callback',
    });
    expect((await h.call('GET', '/v1/secret/app', { token: auth.client_token })).body.data).toEqual({ password: 'pw' });
    // Groups came from the provider's userinfo endpoint (its ID token carries only `sub`).
    const storage = new MountStorage(h.core.store, h.core.keyring, mount?.uuid ?? '');
    const entity = await readEntity(storage, auth.entity_id);
    expect(entity?.alias_name).toBe('alice@example.com');
    expect(entity?.group_aliases.map((group) => group.name)).toEqual(['admins', 'dev']);

    const replay = await deliver(delivery, { client_nonce: 'cli-nonce-1' });
    expect(replay.status).toBe(400);
    expect(errorOf(replay)).toBe('Vault login failed. Expired or missing OAuth state.');
  });

  it('gives the same entity to the same user on the next login', async () => {
    const first = await deliver(
      await browseToCallback(await authUrl({}), { login: 'bob', callbackPrefix: callbackUrl }),
    );
    const second = await deliver(
      await browseToCallback(await authUrl({}), { login: 'bob', callbackPrefix: callbackUrl }),
    );
    expect(first.status).toBe(200);
    expect(second.body.auth.entity_id).toBe(first.body.auth.entity_id);
  });

  it('refuses an unknown state, a wrong client_nonce and a missing code', async () => {
    const unknown = await h.call('GET', '/v1/auth/jwt/oidc/callback?state=made-up&code=abc');
    expect(unknown.status).toBe(400);
    expect(errorOf(unknown)).toContain('Expired or missing OAuth state.');
    const delivery = await browseToCallback(await authUrl({ client_nonce: 'right' }), {
      login: 'alice',
      callbackPrefix: callbackUrl,
    });
    const wrong = await deliver(delivery, { client_nonce: 'wrong' });
    expect(wrong.status).toBe(400);
    expect(errorOf(wrong)).toBe('invalid client_nonce');
    // A wrong nonce leaves the state alone (issue 37: whoever learns a state must not spoil the sign-in); the right
    // nonce finishes it, once.
    const right = await deliver(delivery, { client_nonce: 'right' });
    expect(right.status).toBe(200);
    expect(right.body.auth.client_token).toBeTruthy();
    expect(errorOf(await deliver(delivery, { client_nonce: 'right' }))).toContain('Expired or missing OAuth state.');

    const another = await browseToCallback(await authUrl({}), { login: 'alice', callbackPrefix: callbackUrl });
    const state = another.method === 'GET' ? another.url.searchParams.get('state') : '';
    const noCode = await h.call('GET', `/v1/auth/jwt/oidc/callback?state=${state}`);
    expect(noCode.status).toBe(400);
    expect(errorOf(noCode)).toContain('No code or id_token received.');
  });

  it('answers an empty auth_url for a redirect_uri the role does not allow, matching loopback on any port', async () => {
    expect(await authUrl({ redirect_uri: 'https://elsewhere.example/v1/auth/jwt/oidc/callback' })).toBe('');
    expect(await authUrl({ redirect_uri: 'http://127.0.0.1:9999/v1/auth/jwt/oidc/callback' })).not.toBe('');
    expect(await authUrl({ redirect_uri: 'http://127.0.0.1:9999/v1/auth/jwt/oidc/other' })).toBe('');
    const missing = await h.call('POST', '/v1/auth/jwt/oidc/auth_url', { body: { role: 'web' } });
    expect(missing.status).toBe(400);
    expect(errorOf(missing)).toContain('missing redirect_uri');
    const noRole = await h.call('POST', '/v1/auth/jwt/oidc/auth_url', {
      body: { role: 'ghost', redirect_uri: callbackUrl },
    });
    expect(errorOf(noRole)).toContain('role "ghost" could not be found');
  });

  it("applies the role's bound claims to the provider's claims", async () => {
    await root('POST', '/v1/auth/jwt/role/admins', {
      user_claim: 'email',
      groups_claim: 'groups',
      oidc_scopes: 'email,groups',
      bound_claims: { groups: 'admins' },
      allowed_redirect_uris: callbackUrl,
    });
    const bob = await deliver(
      await browseToCallback(await authUrl({ role: 'admins' }), { login: 'bob', callbackPrefix: callbackUrl }),
    );
    expect(bob.status).toBe(400);
    expect(errorOf(bob)).toContain(
      'error validating claims: claim "groups" does not match any associated bound claim values',
    );
    const alice = await deliver(
      await browseToCallback(await authUrl({ role: 'admins' }), { login: 'alice', callbackPrefix: callbackUrl }),
    );
    expect(alice.status).toBe(200);
    await root('POST', '/v1/auth/jwt/role/admins', { bound_subject: 'bob' });
    const wrongSubject = await deliver(
      await browseToCallback(await authUrl({ role: 'admins' }), { login: 'alice', callbackPrefix: callbackUrl }),
    );
    expect(errorOf(wrongSubject)).toContain('invalid subject (sub) claim');
  });

  it('sends max_age and checks auth_time, and refuses the callback from outside token_bound_cidrs', async () => {
    await root('POST', '/v1/auth/jwt/role/strict', {
      user_claim: 'sub',
      max_age: '5m',
      allowed_redirect_uris: callbackUrl,
      token_bound_cidrs: '10.0.0.0/8',
    });
    const url = new URL(await authUrl({ role: 'strict' }));
    expect(url.searchParams.get('max_age')).toBe('300');
    const refused = await deliver(await browseToCallback(url.href, { login: 'alice', callbackPrefix: callbackUrl }));
    expect(refused.status).toBe(403);
    await root('POST', '/v1/auth/jwt/role/strict', { token_bound_cidrs: [] });
    const accepted = await deliver(
      await browseToCallback(await authUrl({ role: 'strict' }), { login: 'alice', callbackPrefix: callbackUrl }),
    );
    expect(accepted.status).toBe(200);
    expect(accepted.body.auth.metadata).toEqual({ role: 'strict' });
  });

  it('finishes a form_post id_token flow posted by the provider', async () => {
    const implicitCallback = 'http://127.0.0.1:8200/v1/auth/implicit/oidc/callback';
    const implicitProvider = await startOidcProvider({ redirectUris: [implicitCallback], responseType: 'id_token' });
    try {
      implicitProvider.accounts.set('carol', { email: 'carol@example.com', groups: ['ops'] });
      expect((await root('POST', '/v1/sys/auth/implicit', { type: 'oidc' })).status).toBe(204);
      const config = await root('POST', '/v1/auth/implicit/config', {
        oidc_discovery_url: implicitProvider.issuer,
        oidc_client_id: implicitProvider.clientId,
        oidc_client_secret: implicitProvider.clientSecret,
        oidc_response_mode: 'form_post',
        oidc_response_types: 'id_token',
      });
      expect(config.status).toBe(204);
      await root('POST', '/v1/auth/implicit/role/web', {
        user_claim: 'email',
        groups_claim: 'groups',
        oidc_scopes: 'email groups',
        allowed_redirect_uris: implicitCallback,
      });
      const reply = await h.call('POST', '/v1/auth/implicit/oidc/auth_url', {
        body: { role: 'web', redirect_uri: implicitCallback },
      });
      const url = new URL(reply.body.data.auth_url);
      expect(url.searchParams.get('response_type')).toBe('id_token');
      expect(url.searchParams.get('response_mode')).toBe('form_post');
      const delivery = await browseToCallback(url.href, { login: 'carol', callbackPrefix: implicitCallback });
      expect(delivery.method).toBe('POST');
      const login = await deliver(delivery, {}, 'implicit');
      expect(login.status).toBe(200);
      expect(login.body.auth.entity_id).toMatch(/^[0-9a-f-]{36}$/);
      const self = await h.call('GET', '/v1/auth/token/lookup-self', { token: login.body.auth.client_token });
      expect(self.body.data.display_name).toBe('implicit-carol@example.com');
    } finally {
      await implicitProvider.close();
    }
  });

  it('refuses a callback after the ten minutes of its state', async () => {
    const delivery = await browseToCallback(await authUrl({}), { login: 'alice', callbackPrefix: callbackUrl });
    h.clock.advance(601);
    const late = await deliver(delivery);
    expect(late.status).toBe(400);
    expect(errorOf(late)).toContain('Expired or missing OAuth state.');
  });
});
