import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ConsulEmulator, startConsulEmulator } from '../emulators/consul.ts';
import { type GoogleEmulator, startGoogleEmulator } from '../emulators/google.ts';
import { useEmulatedGoogle } from '../support/cloud-engine.ts';
import {
  type ConsoleProduct,
  launchBrowser,
  newConsolePage,
  screenshot,
  secretsCall,
  signInWithToken,
  startConsoleProduct,
} from '../support/console.ts';

/**
 * The cloud and mesh engines' pages on the dev mounts `cloud/` and `mesh/`: the cloud engine against the Google
 * emulator (the operator's endpoint settings point at it, as in the cloud tests), the mesh engine against the
 * Consul-compatible emulator the mesh tests use.
 */
let product: ConsoleProduct;
let browser: Browser;
let google: GoogleEmulator;
let consul: ConsulEmulator;
let consulRoot: string;
let root: { email: string; credentials: string };

const api = (method: string, path: string, body?: unknown) => secretsCall(product, method, path, body);

beforeAll(async () => {
  [google, consul, browser] = await Promise.all([startGoogleEmulator(), startConsulEmulator(), launchBrowser()]);
  useEmulatedGoogle(google);
  product = await startConsoleProduct();
  google.addProject('proj-1');
  root = google.seedServiceAccount('proj-1', 'keyhaven-root');
  const configured = await api('POST', 'cloud/config', { credentials: root.credentials });
  expect(configured.status, JSON.stringify(configured.body)).toBe(204);
  const bootstrap = await consul.request('PUT', '/v1/acl/bootstrap');
  consulRoot = (bootstrap.json as { SecretID: string }).SecretID;
});
afterAll(async () => {
  await browser?.close();
  await product?.stop();
  await Promise.all([google?.close(), consul?.close()]);
});

async function signedInPage(): Promise<{ page: Page; close: () => Promise<void> }> {
  const { context, page } = await newConsolePage(browser);
  page.setDefaultTimeout(10_000);
  await signInWithToken(page, product, 'secrets', product.rootToken);
  return { page, close: () => context.close() };
}

/** A tab of the engine's pages (the side menu has links of the same names). */
const tab = (page: Page, name: string) => page.locator('nav.engine-tabs').getByRole('link', { name, exact: true });

/** Reveals a hidden value by its button and answers what it shows. */
async function reveal(page: Page, label: string): Promise<string> {
  const value = page
    .locator('.secret-value')
    .filter({ has: page.getByRole('button', { name: new RegExp(`^(Reveal|Hide) ${label}$`) }) })
    .locator('code');
  await expect(value.textContent()).resolves.toBe('••••••••');
  await page.getByRole('button', { name: `Reveal ${label}`, exact: true }).click();
  await page.getByRole('button', { name: `Hide ${label}`, exact: true }).waitFor();
  return (await value.textContent()) ?? '';
}

const project = '//cloudresourcemanager.googleapis.com/projects/proj-1';
const scope = 'https://www.googleapis.com/auth/cloud-platform';

describe('cloud engine pages', () => {
  it('shows the config without the credentials, creates a roleset and generates an access token from it', async () => {
    const { page, close } = await signedInPage();
    await page.getByRole('link', { name: 'Cloud (cloud/)' }).click();
    const config = page.getByRole('region', { name: 'Configuration' });
    await expect(config.textContent()).resolves.toContain('Identity token audience');
    const shown = (await page.locator('main').textContent()) ?? '';
    expect(shown).not.toContain('private_key');
    expect(shown).not.toContain(JSON.parse(root.credentials).private_key_id);

    await tab(page, 'Rolesets').click();
    await page.getByRole('link', { name: 'Create roleset' }).click();
    await page.getByRole('textbox', { name: 'Name', exact: true }).fill('app');
    await page.getByRole('textbox', { name: 'Project' }).fill('proj-1');
    await page
      .getByRole('textbox', { name: 'Bindings' })
      .fill(`resource "${project}" {\n  roles = ["roles/bogus role"]\n}`);
    await page.getByRole('textbox', { name: 'Token scopes' }).fill(scope);
    await page.getByRole('button', { name: 'Create roleset' }).click();
    // The API's own message for a bad binding, and nothing made in the cloud.
    await expect(page.getByRole('alert').textContent()).resolves.toContain(
      'invalid "bindings": role "roles/bogus role"',
    );
    expect(google.serviceAccounts().map((account) => account.email)).toEqual([root.email]);

    await page
      .getByRole('textbox', { name: 'Bindings' })
      .fill(`resource "${project}" {\n  roles = ["roles/viewer"]\n}`);
    await page.getByRole('button', { name: 'Create roleset' }).click();
    await page.getByRole('heading', { name: 'Roleset app' }).waitFor();
    const read = await api('GET', 'cloud/roleset/app');
    const email = read.body.data.service_account_email as string;
    await expect(page.getByRole('region', { name: 'The roleset' }).textContent()).resolves.toContain(email);
    expect(google.bindingsOf(`serviceAccount:${email}`)).toEqual(['projects/proj-1 roles/viewer']);

    await page.getByRole('button', { name: 'Generate access token' }).click();
    const issued = page.getByRole('region', { name: 'Issued credential' });
    await issued.waitFor();
    await expect(issued.textContent()).resolves.toContain('none (the engine cannot revoke this credential)');
    await page.evaluate(() => window.scrollTo(0, 0));
    await screenshot(page, 'cloud-roleset');
    const token = await reveal(page, 'token');
    expect(google.tokenInfo(token)).toMatchObject({ principal: email, scopes: [scope] });

    // The edit form shows the bindings as the HCL they are written in.
    await page.getByRole('button', { name: 'Edit' }).click();
    await expect(page.getByRole('textbox', { name: 'Bindings' }).inputValue()).resolves.toBe(
      `resource "${project}" {\n  roles = ["roles/viewer"]\n}`,
    );
    await close();
  });

  it('creates a key-type static account and issues a leased key, hidden until revealed', async () => {
    const account = google.seedServiceAccount('proj-1', 'app-static');
    const { page, close } = await signedInPage();
    await page.goto(`${product.consoleUrl}vault/cloud/cloud/create/static-account`);
    await page.getByRole('textbox', { name: 'Name', exact: true }).fill('keys');
    await page.getByRole('combobox', { name: 'Secret type' }).selectOption('service_account_key');
    await page.getByRole('textbox', { name: 'Service account email' }).fill(account.email);
    await page.getByRole('button', { name: 'Create static account' }).click();
    await page.getByRole('heading', { name: 'Static account keys' }).waitFor();
    await page.getByRole('button', { name: 'Generate key' }).click();
    const issued = page.getByRole('region', { name: 'Issued credential' });
    await issued.waitFor();
    await expect(issued.textContent()).resolves.toMatch(/lease idcloud\/static-account\/keys\/key\//);
    const key = JSON.parse(Buffer.from(await reveal(page, 'private key data'), 'base64').toString('utf8'));
    expect(google.keys(account.email).map((entry) => entry.id)).toContain(key.private_key_id);
    await close();
  });
  it('creates an impersonated account, mints a token by impersonation, and deletes the account after asking', async () => {
    const target = google.seedServiceAccount('proj-1', 'impersonated-app');
    const { page, close } = await signedInPage();
    await page.goto(`${product.consoleUrl}vault/cloud/cloud/impersonated-account`);
    await page.getByText('No impersonated accounts here yet.').waitFor();
    await page.getByRole('link', { name: 'Create impersonated account' }).click();
    await page.getByRole('textbox', { name: 'Name', exact: true }).fill('bq');
    await page.getByRole('textbox', { name: 'Service account email' }).fill(target.email);
    await page.getByRole('textbox', { name: 'Token scopes' }).fill(scope);
    await page.getByRole('textbox', { name: 'Token TTL' }).fill('2h');
    await page.getByRole('button', { name: 'Create impersonated account' }).click();
    await page.getByRole('heading', { name: 'Impersonated account bq' }).waitFor();
    await expect(page.getByRole('region', { name: 'The impersonated account' }).textContent()).resolves.toContain(
      '2h (7200 s)',
    );
    await page.getByRole('button', { name: 'Generate access token' }).click();
    await page.getByRole('region', { name: 'Issued credential' }).waitFor();
    const token = await reveal(page, 'token');
    expect(google.tokenInfo(token)).toMatchObject({ principal: target.email, via: 'generateAccessToken' });

    await page.getByRole('button', { name: 'Delete' }).click();
    await page
      .getByRole('group', { name: 'Delete this impersonated account?' })
      .getByRole('button', { name: 'Confirm' })
      .click();
    await page.getByText('No impersonated accounts here yet.').waitFor();
    expect((await api('GET', 'cloud/impersonated-account/bq')).status).toBe(404);
    await close();
  });
});

describe('mesh engine pages', () => {
  it('configures the access, creates a role, generates a token and revokes its lease', async () => {
    const { page, close } = await signedInPage();
    await page.getByRole('link', { name: 'Mesh (mesh/)' }).click();
    // Not configured yet: the API's 400 says where to write it.
    await expect(page.getByRole('alert').textContent()).resolves.toContain(
      "the mesh server's access has not been configured",
    );
    await page.getByRole('button', { name: 'Configure' }).click();
    await page.getByRole('textbox', { name: 'Address' }).fill(consul.address);
    await page.getByLabel('Management token').fill(consulRoot);
    await page.getByRole('button', { name: 'Save configuration' }).click();
    const config = page.getByRole('region', { name: 'Configuration' });
    await expect(config.textContent()).resolves.toContain(consul.address);
    expect((await page.locator('main').textContent()) ?? '').not.toContain(consulRoot);
    expect((await api('GET', 'mesh/config/access')).body.data).toEqual({ address: consul.address, scheme: 'http' });

    await tab(page, 'Roles').click();
    await page.getByRole('link', { name: 'Create role' }).click();
    await page.getByRole('textbox', { name: 'Name', exact: true }).fill('web');
    await page.getByRole('textbox', { name: 'Service identities' }).fill('web:dc1,dc2; api');
    await page.getByRole('textbox', { name: 'Lease TTL', exact: true }).fill('30m');
    await page.getByRole('button', { name: 'Create role' }).click();
    await page.getByRole('heading', { name: 'Role web' }).waitFor();
    expect((await api('GET', 'mesh/roles/web')).body.data).toMatchObject({
      service_identities: ['web:dc1,dc2', 'api'],
      ttl: 1800,
    });

    await page.getByRole('button', { name: 'Generate token' }).click();
    const issued = page.getByRole('region', { name: 'Issued credential' });
    await issued.waitFor();
    await expect(issued.textContent()).resolves.toContain('lease duration30m');
    await page.evaluate(() => window.scrollTo(0, 0));
    await screenshot(page, 'mesh-role');
    const secret = await reveal(page, 'token');
    expect(consul.token(secret)).toMatchObject({
      ServiceIdentities: [{ ServiceName: 'web', Datacenters: ['dc1', 'dc2'] }, { ServiceName: 'api' }],
    });

    await page.getByRole('button', { name: 'Revoke lease' }).click();
    await page.getByRole('button', { name: 'Lease revoked' }).waitFor();
    expect(consul.token(secret)).toBeUndefined();
    await close();
  });
});
