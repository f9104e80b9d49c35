import { type CryptoKey, exportSPKI, generateKeyPair, type JWTPayload, SignJWT } from 'jose';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ConsoleProduct, launchBrowser, newConsolePage, startConsoleProduct } from '../support/console.ts';

/**
 * A JWT pasted into the console's sign-in page, for both services: the secrets service's `auth/<mount>/login`
 * (npm start's `auth/jwt`, found by discovery) and the scheduler's `acl/login` with a JWT auth method. The JWTs are
 * signed here with a key whose public half the mount and the method are configured with.
 */
let product: ConsoleProduct;
let browser: Browser;
let key: CryptoKey;
let stranger: CryptoKey;
const issuer = 'https://ci.example';

const secretsApi = (method: string, path: string, token: string | undefined, body?: unknown) =>
  fetch(`${product.secretsUrl}/v1/${path}`, {
    method,
    headers: { 'Content-Type': 'application/json', ...(token ? { 'X-Vault-Token': token } : {}) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
const schedulerApi = (method: string, path: string, token: string | undefined, body?: unknown) =>
  fetch(`${product.schedulerUrl}/v1/${path}`, {
    method,
    headers: { 'Content-Type': 'application/json', ...(token ? { 'X-Nomad-Token': token } : {}) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });

const sign = (claims: JWTPayload, audience: string, with_: CryptoKey = key) =>
  new SignJWT(claims)
    .setProtectedHeader({ alg: 'RS256' })
    .setIssuer(issuer)
    .setAudience(audience)
    .setIssuedAt()
    .setExpirationTime('5m')
    .sign(with_);

beforeAll(async () => {
  [product, browser] = await Promise.all([startConsoleProduct(), launchBrowser()]);
  const pair = await generateKeyPair('RS256', { extractable: true });
  key = pair.privateKey;
  stranger = (await generateKeyPair('RS256')).privateKey;
  const pem = await exportSPKI(pair.publicKey);

  const root = product.rootToken;
  expect(
    (
      await secretsApi('PUT', 'sys/policies/acl/reader', root, {
        policy: 'path "secret/*" { capabilities = ["read"] }',
      })
    ).status,
  ).toBe(204);
  expect(
    (
      await secretsApi('POST', 'auth/jwt/config', root, {
        jwt_validation_pubkeys: [pem],
        bound_issuer: issuer,
        default_role: 'ci',
      })
    ).status,
  ).toBe(204);
  const role = await secretsApi('POST', 'auth/jwt/role/ci', root, {
    role_type: 'jwt',
    user_claim: 'sub',
    bound_audiences: ['keyhaven'],
    token_policies: 'reader',
  });
  expect(role.status).toBe(204);

  const management = (
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
  const method = await schedulerApi('POST', 'acl/auth-method', management, {
    Name: 'ci',
    Type: 'JWT',
    TokenLocality: 'local',
    MaxTokenTTL: '30m',
    Config: {
      JWTValidationPubKeys: [pem],
      BoundAudiences: ['nomad'],
      BoundIssuer: [issuer],
      ClaimMappings: { sub: 'user' },
    },
  });
  expect(method.status).toBe(200);
  expect(
    (
      await schedulerApi('POST', 'acl/binding-rule', management, {
        AuthMethod: 'ci',
        Selector: 'value.user == "builder"',
        BindType: 'policy',
        BindName: 'jobs',
      })
    ).status,
  ).toBe(200);
});
afterAll(async () => {
  await browser?.close();
  await product?.stop();
});

const sessionOf = (page: Page, service: string) =>
  page.evaluate(
    (name) =>
      JSON.parse(sessionStorage.getItem(name) ?? 'null') as {
        token: string;
        createdByConsole: boolean;
        policies: string[];
      } | null,
    `keyhaven.${service}.session`,
  );

async function pasteJwt(
  page: Page,
  service: 'secrets' | 'scheduler',
  jwt: string,
  role?: string,
  next?: string,
): Promise<void> {
  await page.goto(
    `${product.consoleUrl}sign-in?service=${service}${next === undefined ? '' : `&next=${encodeURIComponent(next)}`}`,
  );
  await page.getByRole('tab', { name: 'JWT' }).click();
  if (role !== undefined) await page.getByRole('textbox', { name: 'Role' }).fill(role);
  await page.getByRole('textbox', { name: 'JWT' }).fill(jwt);
  await page.getByRole('button', { name: 'Sign in with the JWT' }).click();
}

describe('JWT sign-in through the console', () => {
  it('signs in to the secrets service with a pasted JWT on the discovered auth/jwt; a JWT the mount does not trust gets the API message', async () => {
    const { context, page } = await newConsolePage(browser);
    const forged = await sign({ sub: 'builder' }, 'keyhaven', stranger);
    await pasteJwt(page, 'secrets', forged, 'ci');
    await expect(page.getByLabel('Auth mount').inputValue()).resolves.toBe('jwt');
    const refused = await secretsApi('POST', 'auth/jwt/login', undefined, { role: 'ci', jwt: forged });
    expect(refused.status).toBe(400);
    const message = ((await refused.json()) as { errors: string[] }).errors[0] as string;
    await expect(page.getByRole('alert').textContent()).resolves.toContain(message);
    await expect(sessionOf(page, 'secrets')).resolves.toBeNull();

    await pasteJwt(page, 'secrets', await sign({ sub: 'builder' }, 'keyhaven'), 'ci');
    await page.locator('.signed-in[data-service="secrets"]').waitFor();
    const session = await sessionOf(page, 'secrets');
    expect(session).toMatchObject({ createdByConsole: true, policies: ['default', 'reader'] });
    const lookup = await secretsApi('GET', 'auth/token/lookup-self', session?.token);
    expect(
      ((await lookup.json()) as { data: { meta: Record<string, string>; policies: string[] } }).data,
    ).toMatchObject({ policies: ['default', 'reader'], meta: { role: 'ci' } });
    // The login's token is the console's: sign-out revokes it.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('link', { name: 'Sign in to the secrets service' }).waitFor();
    expect((await secretsApi('GET', 'auth/token/lookup-self', session?.token)).status).toBe(403);
    await context.close();
  });

  it('signs in to the scheduler service with a pasted JWT (acl/login) and lands on the console whatever next= says; a JWT for another audience gets the API message', async () => {
    const { context, page } = await newConsolePage(browser);
    const wrongAudience = await sign({ sub: 'builder' }, 'keyhaven');
    await pasteJwt(page, 'scheduler', wrongAudience);
    await expect(page.getByLabel('Auth method').inputValue()).resolves.toBe('ci');
    const refused = await schedulerApi('POST', 'acl/login', undefined, {
      AuthMethodName: 'ci',
      LoginToken: wrongAudience,
    });
    expect(refused.status).toBeGreaterThanOrEqual(400);
    const alert = await page.getByRole('alert').textContent();
    expect(alert).toContain((await refused.text()).trim());
    expect(alert).toContain(`Error ${refused.status}`);

    // A sign-in link whose `next` names another origin lands on the console's home instead.
    await pasteJwt(page, 'scheduler', await sign({ sub: 'builder' }, 'nomad'), undefined, '//evil.example/x');
    await page.locator('.signed-in[data-service="scheduler"]').waitFor();
    expect(page.url()).toBe(product.consoleUrl);
    const session = await sessionOf(page, 'scheduler');
    expect(session).toMatchObject({ createdByConsole: true, policies: ['jobs'] });
    const self = await schedulerApi('GET', 'acl/token/self', session?.token);
    expect(((await self.json()) as { Policies: string[] }).Policies).toEqual(['jobs']);
    // Sign-out revokes the token the login made here (acl/logout), and forgets it.
    await page.locator('.signed-in[data-service="scheduler"]').getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('link', { name: 'Sign in to the scheduler service' }).waitFor();
    expect((await schedulerApi('GET', 'acl/token/self', session?.token)).status).toBe(403);
    await context.close();
  });

  it('fits a phone and works from the keyboard: a tab chosen with Enter, the JWT form submitted with Enter', async () => {
    const { context, page } = await newConsolePage(browser, 'phone');
    await page.goto(`${product.consoleUrl}sign-in?service=secrets`);
    await page.getByRole('tab', { name: 'JWT' }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('textbox', { name: 'Role' }).fill('ci');
    await page.getByRole('textbox', { name: 'JWT' }).fill(await sign({ sub: 'builder' }, 'keyhaven'));
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    // Enter submits only once the form can be sent: the mount is discovered (slow under load) and the button enabled.
    await page
      .locator('form[aria-label="Sign in to the secrets service with a JWT"] button[type=submit]:enabled')
      .waitFor();
    await page.getByRole('textbox', { name: 'Role' }).press('Enter');
    await page.locator('.signed-in[data-service="secrets"]').waitFor();
    await expect(sessionOf(page, 'secrets')).resolves.toMatchObject({ createdByConsole: true });
    await context.close();
  });
});
