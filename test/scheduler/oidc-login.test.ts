import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OIDC_STATE_PK } from '../../packages/core/src/scheduler/keys.ts';
import { browseToCallback, startOidcProvider, type TestOidcProvider } from '../support/oidc-provider.ts';
import { type SchedulerService, startSchedulerInMemory } from '../support/scheduler-harness.ts';

/** Where the provider sends the browser back (the UI's callback page); the test takes over there. */
const callbackUrl = 'http://127.0.0.1:4646/ui/settings/tokens';
const otherCallback = 'http://127.0.0.1:4646/oidc/other';

describe('OIDC login (/v1/acl/oidc/auth-url, /v1/acl/oidc/complete-auth) against a real oidc-provider', () => {
  let h: SchedulerService;
  let provider: TestOidcProvider;
  let root: string;
  const mgmt = (method: string, path: string, body?: unknown) =>
    h.call(method, path, { token: root, ...(body === undefined ? {} : { body }) });
  const authUrl = (body: Record<string, unknown>) =>
    h.call('POST', '/v1/acl/oidc/auth-url', {
      body: { AuthMethodName: 'sso', RedirectURI: callbackUrl, ClientNonce: 'nonce-1', ...body },
    });

  /** auth-url, then the provider's login and consent as a browser; returns the state and code it sent back. */
  async function browse(login: string, clientNonce = 'nonce-1'): Promise<{ State: string; Code: string }> {
    const reply = await authUrl({ ClientNonce: clientNonce });
    expect(reply.status).toBe(200);
    const delivery = await browseToCallback(reply.body.AuthURL, { login, callbackPrefix: callbackUrl });
    expect(delivery.method).toBe('GET');
    return { State: delivery.url.searchParams.get('state') ?? '', Code: delivery.url.searchParams.get('code') ?? '' };
  }
  const complete = (flow: { State: string; Code: string }, body: Record<string, unknown> = {}) =>
    h.call('POST', '/v1/acl/oidc/complete-auth', {
      body: { AuthMethodName: 'sso', ClientNonce: 'nonce-1', RedirectURI: callbackUrl, ...flow, ...body },
    });

  beforeAll(async () => {
    provider = await startOidcProvider({ redirectUris: [callbackUrl, otherCallback] });
    provider.accounts.set('alice', { email: 'alice@example.com', groups: ['eng', 'ops'], name: 'Alice' });
    provider.accounts.set('bob', { email: 'bob@example.com', groups: ['sales'] });
    h = await startSchedulerInMemory();
    // The provider stamps tokens with the real time; the service's clock starts there too.
    h.clock.advance(Math.floor((Date.now() - h.clock.now()) / 1000));
    root = await h.bootstrap();
    expect(
      (await mgmt('POST', '/v1/acl/policy/jobs', { Rules: 'namespace "default" { policy = "read" }' })).status,
    ).toBe(200);
    expect((await mgmt('POST', '/v1/acl/role', { Name: 'team-eng', Policies: [{ Name: 'jobs' }] })).status).toBe(200);
    const method = await mgmt('POST', '/v1/acl/auth-method', {
      Name: 'sso',
      Type: 'OIDC',
      TokenLocality: 'local',
      MaxTokenTTL: '1h',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: Nomad's interpolation syntax, not a JS template
      TokenNameFormat: '${auth_method_name}-${value.email}',
      Config: {
        OIDCDiscoveryURL: provider.issuer,
        OIDCClientID: provider.clientId,
        OIDCClientSecret: provider.clientSecret,
        OIDCScopes: ['email', 'groups', 'profile'],
        AllowedRedirectURIs: [callbackUrl],
        BoundAudiences: [provider.clientId],
        ClaimMappings: { email: 'email', name: 'name' },
        ListClaimMappings: { groups: 'groups' },
        VerboseOIDCLogging: false,
      },
    });
    expect(method.status).toBe(200);
    // The client secret is sealed at rest and never shown, neither in the write's reply nor on read.
    expect(JSON.stringify(method.body)).not.toContain(provider.clientSecret);
    const read = await mgmt('GET', '/v1/acl/auth-method/sso');
    expect(read.status).toBe(200);
    expect(read.body.Config.OIDCClientID).toBe(provider.clientId);
    expect(JSON.stringify(read.body)).not.toContain(provider.clientSecret);
    const rule = await mgmt('POST', '/v1/acl/binding-rule', {
      AuthMethod: 'sso',
      Selector: '"eng" in list.groups',
      BindType: 'role',
      BindName: 'team-eng',
    });
    expect(rule.status).toBe(200);
  });
  afterAll(async () => {
    await h?.close();
    await provider?.close();
  });

  it('builds the authorization URL and keeps the flow in the table for ten minutes', async () => {
    const reply = await authUrl({});
    expect(reply.status).toBe(200);
    const url = new URL(reply.body.AuthURL);
    expect(url.origin).toBe(provider.issuer);
    expect(Object.fromEntries(url.searchParams)).toMatchObject({
      client_id: provider.clientId,
      redirect_uri: callbackUrl,
      response_type: 'code',
      scope: 'openid email groups profile',
      code_challenge_method: 'S256',
    });
    const state = url.searchParams.get('state') ?? '';
    expect(url.searchParams.get('nonce')).toBeTruthy();
    expect(url.searchParams.get('code_challenge')).toBeTruthy();
    const item = await h.core.store.get(OIDC_STATE_PK, state);
    expect(OIDC_STATE_PK.startsWith('sched#')).toBe(true);
    expect(item?.expiresAt).toBe(Math.floor(h.clock.now() / 1000) + 600);
    expect(item?.Nonce).toBe(url.searchParams.get('nonce'));
    // The PKCE verifier is sealed and the client nonce hashed.
    expect(JSON.stringify(item)).not.toContain('nonce-1');
  });

  it('completes the flow: code exchange, claims, role binding, token as /v1/acl/login mints it', async () => {
    const flow = await browse('alice');
    const out = await complete(flow);
    expect(out.status).toBe(200);
    expect(out.body).toMatchObject({
      Name: 'sso-alice@example.com',
      Type: 'client',
      Global: false,
      Policies: [],
      ExpirationTTL: '1h0m0s',
    });
    expect(out.body.Roles.map((role: { Name: string }) => role.Name)).toEqual(['team-eng']);
    expect(out.headers.get('X-Scheduler-Index')).toBe(String(out.body.CreateIndex));
    expect(Date.parse(out.body.ExpirationTime)).toBe(h.clock.now() + 3600 * 1000);
    const self = await h.call('GET', '/v1/acl/token/self', { token: out.body.SecretID });
    expect(self.status).toBe(200);
    expect(self.body.AccessorID).toBe(out.body.AccessorID);
    expect((await h.call('GET', '/v1/acl/role/name/team-eng', { token: out.body.SecretID })).status).toBe(200);

    // The state is single use.
    const replay = await complete(flow);
    expect(replay.status).toBe(400);
    expect(replay.text).toContain('OIDC state not found or expired');
    expect(await h.core.store.get(OIDC_STATE_PK, flow.State)).toBeUndefined();
  });

  it('answers 400 when no binding rule matches', async () => {
    const out = await complete(await browse('bob'));
    expect(out).toMatchObject({ status: 400, text: 'no role or policy bindings matched' });
  });

  it('refuses an unknown state and a wrong client nonce', async () => {
    const unknown = await complete({ State: 'made-up', Code: 'abc' });
    expect(unknown.status).toBe(400);
    expect(unknown.text).toContain('OIDC state not found or expired');

    const flow = await browse('alice', 'the-right-nonce');
    const wrong = await complete(flow, { ClientNonce: 'another-nonce' });
    expect(wrong).toMatchObject({ status: 400, text: 'invalid client nonce' });

    // An `iss` passed on from the authorization response must be the provider's.
    const wrongIssuer = await complete(await browse('alice'), { Iss: 'https://evil.example' });
    expect(wrongIssuer.status).toBe(400);
    expect(wrongIssuer.text).toContain('failed to exchange the OIDC code');
  });

  it('refuses a flow after its ten minutes', async () => {
    const flow = await browse('alice');
    h.clock.advance(601);
    const late = await complete(flow);
    expect(late.status).toBe(400);
    expect(late.text).toContain('OIDC state not found or expired');
  });

  it('refuses a redirect URI the auth method does not allow, and bad requests', async () => {
    const disallowed = await authUrl({ RedirectURI: otherCallback });
    expect(disallowed.status).toBe(400);
    expect(disallowed.text).toContain('is not allowed by auth method sso');
    expect((await authUrl({ AuthMethodName: 'nope' })).status).toBe(400);
    expect((await authUrl({ ClientNonce: '' })).status).toBe(400);
    const jwtMethod = await mgmt('POST', '/v1/acl/auth-method', {
      Name: 'plain-jwt',
      Type: 'JWT',
      MaxTokenTTL: '1h',
      Config: { JWKSURL: `${provider.issuer}/jwks` },
    });
    expect(jwtMethod.status).toBe(200);
    expect((await authUrl({ AuthMethodName: 'plain-jwt' })).text).toContain('not OIDC');

    const flow = await browse('alice');
    const otherRedirect = await complete(flow, { RedirectURI: otherCallback });
    expect(otherRedirect.status).toBe(400);
  });
});
