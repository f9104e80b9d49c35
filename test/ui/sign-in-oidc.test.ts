import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ConsoleProduct,
  launchBrowser,
  loopbackOnly,
  newConsolePage,
  screenshot,
  signInWithToken,
  startConsoleProduct,
} from '../support/console.ts';
import { startOidcProvider, type TestOidcProvider } from '../support/oidc-provider.ts';

/**
 * OIDC sign-in through the console to both services against a real oidc-provider, driven in Chromium: the sign-in
 * page discovers the methods without a token, the tab goes to the provider's login and consent forms and comes back
 * to the console's callback pages, which finish the sign-in only for the `state` this tab started.
 */
let product: ConsoleProduct;
let browser: Browser;
let provider: TestOidcProvider;
let management: string;
let secretsCallback: string;
let schedulerCallback: string;

const secretsApi = (method: string, path: string, token: string, body?: unknown) =>
  fetch(`${product.secretsUrl}/v1/${path}`, {
    method,
    headers: { 'X-Vault-Token': token, 'Content-Type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
const schedulerApi = (method: string, path: string, token: string, body?: unknown) =>
  fetch(`${product.schedulerUrl}/v1/${path}`, {
    method,
    headers: { 'X-Nomad-Token': token, 'Content-Type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });

beforeAll(async () => {
  [product, browser] = await Promise.all([startConsoleProduct(), launchBrowser()]);
  secretsCallback = `${product.consoleUrl}vault/auth/jwt/oidc/callback`;
  schedulerCallback = `${product.consoleUrl}settings/tokens`;
  provider = await startOidcProvider({ redirectUris: [secretsCallback, schedulerCallback] });
  provider.accounts.set('alice', { email: 'alice@example.com', email_verified: true, groups: ['eng'], name: 'Alice' });

  // Secrets service: npm start's auth/jwt (listed for anonymous callers) configured for the provider.
  const root = product.rootToken;
  expect(
    (
      await secretsApi('PUT', 'sys/policies/acl/reader', root, {
        policy: 'path "secret/*" { capabilities = ["read"] }',
      })
    ).status,
  ).toBe(204);
  const config = await secretsApi('POST', 'auth/jwt/config', root, {
    oidc_discovery_url: provider.issuer,
    oidc_client_id: provider.clientId,
    oidc_client_secret: provider.clientSecret,
    default_role: 'web',
  });
  expect(config.status).toBe(204);
  const role = {
    user_claim: 'email',
    groups_claim: 'groups',
    oidc_scopes: 'email,groups,profile',
    token_policies: 'reader',
    token_ttl: '30m',
  };
  expect(
    (await secretsApi('POST', 'auth/jwt/role/web', root, { ...role, allowed_redirect_uris: [secretsCallback] })).status,
  ).toBe(204);
  expect(
    (
      await secretsApi('POST', 'auth/jwt/role/elsewhere', root, {
        ...role,
        allowed_redirect_uris: ['https://other.example/cb'],
      })
    ).status,
  ).toBe(204);

  // Scheduler service: an OIDC method whose binding rule gives the eng group a role.
  management = (
    (await (await fetch(`${product.schedulerUrl}/v1/acl/bootstrap`, { method: 'POST' })).json()) as { SecretID: string }
  ).SecretID;
  expect(
    (
      await schedulerApi('POST', 'acl/policy/jobs', management, {
        Name: 'jobs',
        Rules: 'namespace "default" { policy = "read" }',
      })
    ).status,
  ).toBe(200);
  expect(
    (await schedulerApi('POST', 'acl/role', management, { Name: 'team-eng', Policies: [{ Name: 'jobs' }] })).status,
  ).toBe(200);
  const method = await schedulerApi('POST', 'acl/auth-method', management, {
    Name: 'sso',
    Type: 'OIDC',
    TokenLocality: 'local',
    MaxTokenTTL: '1h',
    Default: true,
    Config: {
      OIDCDiscoveryURL: provider.issuer,
      OIDCClientID: provider.clientId,
      OIDCClientSecret: provider.clientSecret,
      OIDCScopes: ['email', 'groups'],
      AllowedRedirectURIs: [schedulerCallback],
      BoundAudiences: [provider.clientId],
      ClaimMappings: { email: 'email' },
      ListClaimMappings: { groups: 'groups' },
    },
  });
  expect(method.status).toBe(200);
  expect(
    (
      await schedulerApi('POST', 'acl/binding-rule', management, {
        AuthMethod: 'sso',
        Selector: '"eng" in list.groups',
        BindType: 'role',
        BindName: 'team-eng',
      })
    ).status,
  ).toBe(200);
});
afterAll(async () => {
  await browser?.close();
  await product?.stop();
  await provider?.close();
});

async function openPage(): Promise<{ context: BrowserContext; page: Page; requests: string[]; aborted: string[] }> {
  const opened = await newConsolePage(browser);
  return { ...opened, aborted: await loopbackOnly(opened.context) };
}

/** oidc-provider's development login and consent forms, filled in as a person would in the same tab. */
async function loginAtProvider(page: Page, login: string): Promise<void> {
  await page.waitForURL((url) => url.href.startsWith(provider.issuer));
  await page.getByPlaceholder('Enter any login').fill(login);
  await page.getByPlaceholder('and password').fill('any password');
  await page.getByRole('button', { name: 'Sign-in' }).click();
  await page.getByRole('button', { name: 'Continue' }).click();
}

const sessionOf = (page: Page, service: string) =>
  page.evaluate(
    (key) =>
      JSON.parse(sessionStorage.getItem(key) ?? 'null') as {
        token: string;
        createdByConsole: boolean;
        policies: string[];
      } | null,
    `keyhaven.${service}.session`,
  );

describe('OIDC sign-in through the console', () => {
  it('signs in to the secrets service through the discovered auth/jwt and the provider, lands where the person was going, and sign-out revokes the token', async () => {
    const { context, page } = await openPage();
    await page.goto(`${product.consoleUrl}sign-in?next=/ui/vault/tokens`);
    const panel = page.getByRole('region', { name: 'Secrets service' });
    await panel.getByRole('tab', { name: 'OIDC' }).click();
    const mount = panel.getByLabel('Auth mount');
    await expect(mount.locator('option').first().textContent()).resolves.toBe('jwt/ — jwt (dev default)');
    await page.getByRole('region', { name: 'Scheduler service' }).getByRole('tab', { name: 'OIDC' }).click();
    await expect(
      page
        .getByRole('region', { name: 'Scheduler service' })
        .getByLabel('Auth method')
        .locator('option')
        .first()
        .textContent(),
    ).resolves.toBe('sso (default)');
    await screenshot(page, 'sign-in');

    await panel.getByRole('button', { name: 'Sign in with OIDC' }).click();
    await loginAtProvider(page, 'alice');
    await page.waitForURL(`${product.consoleUrl}vault/tokens`);
    await page.locator('.signed-in[data-service="secrets"]').waitFor();
    await expect(page.locator('.signed-in[data-service="secrets"]').textContent()).resolves.toContain(
      'jwt-alice@example.com',
    );
    const session = await sessionOf(page, 'secrets');
    expect(session).toMatchObject({ createdByConsole: true, policies: expect.arrayContaining(['reader']) });
    // The token is the role's: its policies, as the service says.
    const lookup = await secretsApi('GET', 'auth/token/lookup-self', session?.token ?? '');
    expect(((await lookup.json()) as { data: { policies: string[] } }).data.policies).toEqual(['default', 'reader']);
    await expect(page.evaluate(() => sessionStorage.getItem('keyhaven.oidc.pending'))).resolves.toBeNull();

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('link', { name: 'Sign in to the secrets service' }).waitFor();
    await expect(page.evaluate(() => sessionStorage.length)).resolves.toBe(0);
    expect((await secretsApi('GET', 'auth/token/lookup-self', session?.token ?? '')).status).toBe(403);
    await context.close();
  });

  it('signs in to the scheduler service at /ui/settings/tokens: complete-auth gives the role the binding rule names; sign-out forgets it, and a pasted token stays valid', async () => {
    const { context, page } = await openPage();
    await page.goto(`${product.consoleUrl}settings/tokens`);
    const panel = page.getByRole('region', { name: 'Scheduler service' });
    await expect(page.getByRole('region', { name: 'Secrets service' }).count()).resolves.toBe(0);
    await panel.getByRole('tab', { name: 'OIDC' }).click();
    await panel.getByRole('button', { name: 'Sign in with OIDC' }).click();
    await loginAtProvider(page, 'alice');
    await page.waitForURL(product.consoleUrl);
    await page.locator('.signed-in[data-service="scheduler"]').waitFor();
    await expect(page.locator('.signed-in[data-service="scheduler"]').textContent()).resolves.toContain('OIDC-sso');
    const session = await sessionOf(page, 'scheduler');
    expect(session?.createdByConsole).toBe(true);
    const self = await schedulerApi('GET', 'acl/token/self', session?.token ?? '');
    expect(self.status).toBe(200);
    expect(((await self.json()) as { Roles: Array<{ Name: string }> }).Roles.map((role) => role.Name)).toEqual([
      'team-eng',
    ]);

    // Sign-out forgets it. (The scheduler has no route by which a token revokes itself, as Nomad has none:
    // docs/security.md, "Web console", lists that as left open; the token lasts until its MaxTokenTTL.)
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('link', { name: 'Sign in to the scheduler service' }).waitFor();
    await expect(sessionOf(page, 'scheduler')).resolves.toBeNull();

    // A pasted token is the person's own: signing out forgets it and leaves it valid.
    await signInWithToken(page, product, 'scheduler', management);
    await expect(sessionOf(page, 'scheduler')).resolves.toMatchObject({ createdByConsole: false });
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('link', { name: 'Sign in to the scheduler service' }).waitFor();
    expect((await schedulerApi('GET', 'acl/token/self', management)).status).toBe(200);
    await context.close();
  });

  it('refuses a callback whose state was tampered with or that was opened in another browser, without sending its code', async () => {
    const { context, page, requests } = await openPage();
    await page.goto(`${product.consoleUrl}sign-in?service=secrets`);
    await page.getByRole('tab', { name: 'OIDC' }).click();
    await page.getByRole('button', { name: 'Sign in with OIDC' }).click();
    await page.waitForURL((url) => url.href.startsWith(provider.issuer));
    // The console's script is held back while the provider returns, so the test holds the callback address unused.
    const isScript = (url: URL) => url.pathname === '/ui/app.js';
    await page.route(isScript, (route) => route.abort());
    await loginAtProvider(page, 'alice');
    await page.waitForURL((url) => url.href.startsWith(`${secretsCallback}?`));
    const callback = page.url();
    await page.unroute(isScript);
    const returned = new URL(callback);
    expect(returned.searchParams.get('code')).toBeTruthy();

    const tampered = new URL(callback);
    tampered.searchParams.set('state', `${returned.searchParams.get('state')}x`);
    await page.goto(tampered.href);
    await expect(page.getByRole('alert').textContent()).resolves.toContain(
      'does not match the OIDC sign-in started in this tab',
    );
    // A stolen callback address opened in another browser: no sign-in was started there.
    const thief = await openPage();
    await thief.page.goto(callback);
    await expect(thief.page.getByRole('alert').textContent()).resolves.toContain(
      'No OIDC sign-in was started in this tab',
    );
    expect([...requests, ...thief.requests].filter((url) => url.includes('/v1/auth/jwt/oidc/callback'))).toEqual([]);
    await expect(sessionOf(thief.page, 'secrets')).resolves.toBeNull();
    await thief.context.close();

    // The untampered return still finishes the sign-in this tab started; then its state and code are spent.
    await page.goto(callback);
    await page.locator('.signed-in[data-service="secrets"]').waitFor();
    await expect(sessionOf(page, 'secrets')).resolves.toMatchObject({ createdByConsole: true });
    const replay = await fetch(`${product.secretsUrl}/v1/auth/jwt/oidc/callback${returned.search}`);
    expect(replay.status).toBe(400);
    await context.close();
  });

  it('says what to fix when the role does not allow the redirect URI, and shows the scheduler refusing it in its own words', async () => {
    const { context, page } = await openPage();
    await page.goto(`${product.consoleUrl}sign-in?service=secrets`);
    await page.getByRole('tab', { name: 'OIDC' }).click();
    await page.getByRole('textbox', { name: 'Role' }).fill('elsewhere');
    await page.getByRole('button', { name: 'Sign in with OIDC' }).click();
    // The secrets service answers an empty authorization URL, as Vault does; the console says what to fix.
    const alert = await page.getByRole('alert').textContent();
    expect(alert).toContain(
      `the role must list ${product.consoleUrl}vault/auth/jwt/oidc/callback in its allowed_redirect_uris`,
    );
    expect(page.url()).toContain('/ui/sign-in');

    const narrowed = await schedulerApi('POST', 'acl/auth-method', management, {
      Name: 'narrow',
      Type: 'OIDC',
      TokenLocality: 'local',
      MaxTokenTTL: '1h',
      Config: {
        OIDCDiscoveryURL: provider.issuer,
        OIDCClientID: provider.clientId,
        OIDCClientSecret: provider.clientSecret,
        AllowedRedirectURIs: ['https://other.example/cb'],
      },
    });
    expect(narrowed.status).toBe(200);
    await page.goto(`${product.consoleUrl}settings/tokens`);
    await page.getByRole('tab', { name: 'OIDC' }).click();
    await page.getByLabel('Auth method').selectOption('narrow');
    await page.getByRole('button', { name: 'Sign in with OIDC' }).click();
    const refusal = await page.getByRole('alert').textContent();
    expect(refusal).toContain('Error 400');
    expect(refusal).toMatch(/redirect/i);
    await context.close();
  });
});
