/**
 * Attacker: anyone who learns a sign-in's OIDC `state` while it is in progress (it travels in the authorization URL
 * and the callback URL: a proxy's log, a shared screen, a Referer), and a table writer.
 * They try: (1) to spoil the sign-in: send the callback (`auth/jwt/oidc/callback`, `acl/oidc/complete-auth`) with that
 * state and a guessed client nonce before the person does, so the state is used up and the person's own callback
 * fails; (2) to edit a stored state (the role it was issued for, its expiry) or write one of their own.
 * They must never reach: the person's sign-in failing because of them, or a flow the service did not start. Each
 * service checks what the caller sent (client nonce, nonce, method, redirect) before it takes the state, and state is
 * authenticated (MAC over its key, content and expiry): an edited or forged one counts as missing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OIDC_STATE_PK } from '../../packages/core/src/scheduler/keys.ts';
import { browseToCallback, startOidcProvider, type TestOidcProvider } from '../support/oidc-provider.ts';
import { type SchedulerService, startSchedulerInMemory } from '../support/scheduler-harness.ts';
import { type SecretsService, startSecretsInMemory } from '../support/secrets-harness.ts';

const secretsCallback = 'http://127.0.0.1:8200/v1/auth/jwt/oidc/callback';
const schedulerCallback = 'http://127.0.0.1:4646/ui/settings/tokens';

let provider: TestOidcProvider;
beforeAll(async () => {
  provider = await startOidcProvider({ redirectUris: [secretsCallback, schedulerCallback] });
  provider.accounts.set('alice', { email: 'alice@example.com', groups: ['eng'] });
});
afterAll(async () => provider?.close());

describe('the secrets service (auth/jwt/oidc)', () => {
  let h: SecretsService;
  const root = (method: string, path: string, body?: unknown) =>
    h.call(method, path, { token: h.rootToken, ...(body === undefined ? {} : { body }) });
  const begin = async (role = 'web') => {
    const reply = await root('POST', '/v1/auth/jwt/oidc/auth_url', {
      role,
      redirect_uri: secretsCallback,
      client_nonce: 'the-persons-nonce',
    });
    expect(reply.status).toBe(200);
    const delivery = await browseToCallback(reply.body.data.auth_url, {
      login: 'alice',
      callbackPrefix: secretsCallback,
    });
    if (delivery.method !== 'GET') throw new Error('expected a GET callback');
    return delivery.url;
  };
  const callback = (url: URL, clientNonce: string, code?: string) => {
    const query = new URLSearchParams(url.search);
    query.set('client_nonce', clientNonce);
    if (code !== undefined) query.set('code', code);
    return h.call('GET', `/v1/auth/jwt/oidc/callback?${query}`);
  };

  beforeAll(async () => {
    h = await startSecretsInMemory();
    h.clock.advance(Math.floor((Date.now() - h.clock.now()) / 1000));
    expect((await root('POST', '/v1/sys/auth/jwt', { type: 'jwt' })).status).toBe(204);
    expect(
      (
        await root('POST', '/v1/auth/jwt/config', {
          oidc_discovery_url: provider.issuer,
          oidc_client_id: provider.clientId,
          oidc_client_secret: provider.clientSecret,
        })
      ).status,
    ).toBe(204);
    for (const [name, policies] of [
      ['web', 'default'],
      ['admin', 'reader'],
    ] as const) {
      const role = await root('POST', `/v1/auth/jwt/role/${name}`, {
        user_claim: 'email',
        oidc_scopes: 'email',
        allowed_redirect_uris: [secretsCallback],
        token_policies: policies,
        ...(name === 'admin' ? { bound_claims: { email: 'nobody@example.com' } } : {}),
      });
      expect(role.status).toBe(204);
    }
  });
  afterAll(async () => h?.close());

  it('a callback with the state and a guessed client nonce is refused and leaves the sign-in to finish', async () => {
    const url = await begin();
    for (const guess of ['', 'guess', 'the-persons-nonc']) {
      const spoiled = await callback(url, guess, 'attackers-junk-code');
      expect(spoiled.status).toBe(400);
      expect(spoiled.body.errors).toEqual(['invalid client_nonce']);
    }
    const own = await callback(url, 'the-persons-nonce');
    expect(own.status).toBe(200);
    expect(own.body.auth.metadata.role).toBe('web');
    // Used once: a replay of the person's own callback finds no state.
    expect((await callback(url, 'the-persons-nonce')).body.errors[0]).toContain('Expired or missing OAuth state.');
  });

  it('a table writer moves a state to another role or extends its expiry: it counts as missing', async () => {
    const url = await begin();
    const state = url.searchParams.get('state') ?? '';
    const mount = await h.core.mounts.find('auth', 'jwt');
    const key = { pk: `mount#${mount?.uuid}`, sk: `oidc-state/${state}` };
    const stored = await h.core.store.get(key.pk, key.sk);
    expect(stored?.mac).toMatch(/^v1:/);
    await h.core.store.put({ ...(stored as typeof key), value: { ...(stored?.value as object), role: 'admin' } });
    const moved = await callback(url, 'the-persons-nonce');
    expect(moved.status).toBe(400);
    expect(moved.body.errors[0]).toContain('Expired or missing OAuth state.');
    await h.core.store.put({ ...(stored as typeof key), expiresAt: (stored?.expiresAt as number) + 86_400 });
    expect((await callback(url, 'the-persons-nonce')).body.errors[0]).toContain('Expired or missing OAuth state.');
  });
});

describe('the scheduler (acl/oidc/complete-auth)', () => {
  let h: SchedulerService;
  let management: string;
  const begin = async () => {
    const reply = await h.call('POST', '/v1/acl/oidc/auth-url', {
      body: { AuthMethodName: 'sso', RedirectURI: schedulerCallback, ClientNonce: 'the-persons-nonce' },
    });
    expect(reply.status).toBe(200);
    const delivery = await browseToCallback(reply.body.AuthURL, { login: 'alice', callbackPrefix: schedulerCallback });
    if (delivery.method !== 'GET') throw new Error('expected a GET callback');
    return { State: delivery.url.searchParams.get('state') ?? '', Code: delivery.url.searchParams.get('code') ?? '' };
  };
  const complete = (flow: { State: string; Code: string }, body: Record<string, unknown>) =>
    h.call('POST', '/v1/acl/oidc/complete-auth', {
      body: { AuthMethodName: 'sso', RedirectURI: schedulerCallback, ...flow, ...body },
    });

  beforeAll(async () => {
    h = await startSchedulerInMemory();
    h.clock.advance(Math.floor((Date.now() - h.clock.now()) / 1000));
    management = await h.bootstrap();
    const method = await h.call('POST', '/v1/acl/auth-method', {
      token: management,
      body: {
        Name: 'sso',
        Type: 'OIDC',
        TokenLocality: 'local',
        MaxTokenTTL: '1h',
        Config: {
          OIDCDiscoveryURL: provider.issuer,
          OIDCClientID: provider.clientId,
          OIDCClientSecret: provider.clientSecret,
          OIDCScopes: ['email'],
          AllowedRedirectURIs: [schedulerCallback],
          BoundAudiences: [provider.clientId],
          ClaimMappings: { email: 'email' },
        },
      },
    });
    expect(method.status).toBe(200);
    expect(
      (await h.call('POST', '/v1/acl/policy/jobs', { token: management, body: { Rules: 'namespace "default" {}' } }))
        .status,
    ).toBe(200);
    const rule = await h.call('POST', '/v1/acl/binding-rule', {
      token: management,
      body: { AuthMethod: 'sso', BindType: 'policy', BindName: 'jobs', Selector: '' },
    });
    expect(rule.status).toBe(200);
  });
  afterAll(async () => h?.close());

  it('complete-auth with the state and a guessed client nonce, or another redirect, is refused and leaves the sign-in to finish', async () => {
    const flow = await begin();
    const spoiled = await complete({ State: flow.State, Code: 'junk' }, { ClientNonce: 'guess' });
    expect(spoiled).toMatchObject({ status: 400, text: 'invalid client nonce' });
    const redirected = await complete(
      { State: flow.State, Code: 'junk' },
      { ClientNonce: 'the-persons-nonce', RedirectURI: 'http://127.0.0.1:4646/elsewhere' },
    );
    expect(redirected.status).toBe(400);
    expect(await h.core.store.get(OIDC_STATE_PK, flow.State)).toBeDefined();
    const own = await complete(flow, { ClientNonce: 'the-persons-nonce' });
    expect(own.status).toBe(200);
    expect(own.body.Policies).toEqual(['jobs']);
    expect(await h.core.store.get(OIDC_STATE_PK, flow.State)).toBeUndefined();
    expect((await complete(flow, { ClientNonce: 'the-persons-nonce' })).text).toContain('OIDC state not found');
  });

  it("a table writer extends a stored state's expiry: it counts as missing", async () => {
    const flow = await begin();
    const stored = await h.core.store.get(OIDC_STATE_PK, flow.State);
    expect(stored?.mac).toMatch(/^v1:/);
    await h.core.store.put({
      ...(stored as { pk: string; sk: string }),
      expiresAt: (stored?.expiresAt as number) + 86_400,
    });
    const extended = await complete(flow, { ClientNonce: 'the-persons-nonce' });
    expect(extended.status).toBe(400);
    expect(extended.text).toContain('OIDC state not found');
  });
});
