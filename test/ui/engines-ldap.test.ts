import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ConsoleProduct,
  launchBrowser,
  newConsolePage,
  screenshot,
  secretsCall,
  signInWithToken,
  startConsoleProduct,
} from '../support/console.ts';
import {
  baseDn,
  dynamicDn,
  managerDn,
  managerPassword,
  peopleDn,
  type Slapd,
  serviceAccountsDn,
  startSlapd,
} from '../support/slapd.ts';

/** The directory engine's pages against a real slapd: the dev mount `ldap/` configured through the API. */
let product: ConsoleProduct;
let browser: Browser;
let slapd: Slapd;

const api = (method: string, path: string, body?: unknown) => secretsCall(product, method, path, body);

beforeAll(async () => {
  [product, browser, slapd] = await Promise.all([startConsoleProduct(), launchBrowser(), startSlapd()]);
  const configured = await api('POST', 'ldap/config', {
    binddn: managerDn,
    bindpass: managerPassword,
    url: slapd.url,
    userdn: baseDn,
  });
  expect(configured.status, JSON.stringify(configured.body)).toBe(204);
});
afterAll(async () => {
  await browser?.close();
  await product?.stop();
  await slapd?.close();
});

/** A signed-in tab; a step that cannot happen fails within 10 s, naming the step. */
async function signedInPage(size: 'laptop' | 'phone' = 'laptop') {
  const opened = await newConsolePage(browser, size);
  opened.page.setDefaultTimeout(10_000);
  await signInWithToken(opened.page, product, 'secrets', product.rootToken);
  return opened;
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

describe('directory engine pages', () => {
  it('shows the config without its bind password, creates a static role, shows its credential and next rotation, and rotates it now', async () => {
    const { context, page } = await signedInPage();
    await page.getByRole('link', { name: 'Directory (ldap/)' }).click();
    const config = page.getByRole('region', { name: 'Configuration' });
    await expect(config.textContent()).resolves.toContain(slapd.url);
    await expect(config.textContent()).resolves.toContain(managerDn);
    await expect(page.locator('main').textContent()).resolves.not.toContain(managerPassword);

    // A write the API refuses shows its message: moving the URL without the bind password.
    await page.getByRole('button', { name: 'Edit configuration' }).click();
    await page.getByRole('textbox', { name: 'URL' }).fill(slapd.ldapsUrl);
    await page.getByRole('button', { name: 'Save configuration' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toContain('"bindpass" is required when "url" changes');
    await page.getByRole('button', { name: 'Cancel' }).click();

    await tab(page, 'Static roles').click();
    await page.getByRole('link', { name: 'Create static role' }).click();
    await page.getByRole('textbox', { name: 'Name', exact: true }).fill('team/alice');
    await page.getByRole('textbox', { name: 'Username' }).fill('alice');
    await page.getByRole('textbox', { name: 'Rotation period' }).fill('1h');
    await page.getByRole('textbox', { name: 'Rotation period' }).press('Enter');
    await page.getByRole('heading', { name: 'Static role team/alice' }).waitFor();

    const credentials = page.getByRole('region', { name: 'Credentials' });
    await credentials.getByRole('button', { name: 'Reveal password' }).waitFor();
    await expect(credentials.textContent()).resolves.toMatch(/Next rotationin (59m\d+s|1h) \(\d{4}-\d\d-\d\dT/);
    await expect(credentials.textContent()).resolves.toContain(`cn=alice,${peopleDn}`);
    await page.evaluate(() => window.scrollTo(0, 0));
    await screenshot(page, 'ldap-static-role');
    const first = await reveal(page, 'password');
    const read = await api('GET', 'ldap/static-cred/team/alice');
    expect(first).toBe(read.body.data.password);
    expect(await slapd.canBind(`cn=alice,${peopleDn}`, first)).toBe(true);

    await page.getByRole('button', { name: 'Rotate now' }).click();
    await page.getByRole('status').filter({ hasText: 'Rotated at' }).waitFor();
    // The credential is read again after the rotation: the new password comes back hidden.
    await page.getByRole('button', { name: 'Reveal password', exact: true }).waitFor();
    const second = await reveal(page, 'password');
    expect(second).not.toBe(first);
    expect((await api('GET', 'ldap/static-cred/team/alice')).body.data.password).toBe(second);
    expect(await slapd.canBind(`cn=alice,${peopleDn}`, second)).toBe(true);
    expect(await slapd.canBind(`cn=alice,${peopleDn}`, first)).toBe(false);
    await expect(reveal(page, 'previous password')).resolves.toBe(first);

    // Edit: the rotation period (username and DN are fixed once created, so the form leaves them out).
    await page.getByRole('button', { name: 'Edit' }).click();
    await expect(page.getByRole('textbox', { name: 'Username' }).count()).resolves.toBe(0);
    await page.getByRole('textbox', { name: 'Rotation period' }).fill('2h');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('region', { name: 'The static role' }).getByText('2h (7200 s)').waitFor();
    expect((await api('GET', 'ldap/static-role/team/alice')).body.data.rotation_period).toBe(7200);

    // The list shows the folder, and the role in it.
    await tab(page, 'Static roles').click();
    await page.getByRole('link', { name: 'team/' }).click();
    await page.getByRole('link', { name: 'alice' }).waitFor();
    await context.close();
  });

  it('creates a library set, checks an account out and in, with the status page and the API agreeing', async () => {
    const { context, page } = await signedInPage();
    await page.goto(`${product.consoleUrl}vault/ldap/ldap/library`);
    await page.getByRole('link', { name: 'Create library set' }).click();
    await page.getByRole('textbox', { name: 'Name', exact: true }).fill('pool');
    await page.getByRole('textbox', { name: 'Service accounts' }).fill('svc-1, svc-2');
    await page.getByRole('textbox', { name: 'Check-out TTL', exact: true }).fill('1h');
    await page.getByRole('button', { name: 'Create library set' }).click();
    await page.getByRole('heading', { name: 'Library set pool' }).waitFor();

    const accounts = page.getByRole('region', { name: 'Accounts' });
    const row = (account: string) => accounts.getByRole('row').filter({ hasText: account });
    /** Waits until the status table shows the account so (the table reloads after each action). */
    const shows = (account: string, state: 'available' | 'checked out') =>
      row(account)
        .filter({ hasText: state === 'available' ? /available/ : /checked out/ })
        .waitFor();
    await shows('svc-1', 'available');
    await shows('svc-2', 'available');

    await page.getByRole('button', { name: 'Check out an account' }).click();
    const checkedOut = page.getByRole('region', { name: 'Checked-out account' });
    await checkedOut.waitFor();
    await expect(checkedOut.textContent()).resolves.toMatch(/service_account_namesvc-1/);
    await expect(checkedOut.textContent()).resolves.toMatch(/lease idldap\/library\/pool\/check-out\//);
    await expect(checkedOut.textContent()).resolves.toContain('lease duration1h');
    await shows('svc-1', 'checked out');
    await shows('svc-2', 'available');
    expect((await api('GET', 'ldap/library/pool/status')).body.data).toMatchObject({
      'svc-1': { available: false },
      'svc-2': { available: true },
    });
    await page.evaluate(() => window.scrollTo(0, 0));
    await screenshot(page, 'ldap-library');
    const password = await reveal(page, 'password');
    expect(await slapd.canBind(`cn=svc-1,${serviceAccountsDn}`, password)).toBe(true);

    await page.getByRole('button', { name: 'Check in svc-1' }).click();
    await page.getByRole('status').filter({ hasText: 'Checked in: svc-1' }).waitFor();
    await shows('svc-1', 'available');
    await expect(row('svc-1').textContent()).resolves.not.toContain('checked out');
    expect((await api('GET', 'ldap/library/pool/status')).body.data).toEqual({
      'svc-1': { available: true },
      'svc-2': { available: true },
    });
    // Check-in gave the account a new password: the borrowed one no longer binds.
    expect(await slapd.canBind(`cn=svc-1,${serviceAccountsDn}`, password)).toBe(false);
    await context.close();
  });

  it('creates a dynamic role from LDIF, generates an account that binds, and revoking its lease deletes it', async () => {
    const { context, page } = await signedInPage();
    await page.goto(`${product.consoleUrl}vault/ldap/ldap/create/role`);
    await page.getByRole('textbox', { name: 'Name', exact: true }).fill('dev');
    await page
      .getByRole('textbox', { name: 'Creation LDIF' })
      .fill(
        `dn: cn={{.Username}},${dynamicDn}\nobjectClass: inetOrgPerson\ncn: {{.Username}}\nsn: dev\nuserPassword: {{.Password}}\n`,
      );
    await page
      .getByRole('textbox', { name: 'Deletion LDIF' })
      .fill(`dn: cn={{.Username}},${dynamicDn}\nchangetype: delete\n`);
    await page.getByRole('textbox', { name: 'Default TTL' }).fill('10m');
    await page.getByRole('button', { name: 'Create dynamic role' }).click();
    await page.getByRole('heading', { name: 'Dynamic role dev' }).waitFor();
    await page.getByRole('button', { name: 'Generate credentials' }).click();
    const issued = page.getByRole('region', { name: 'Issued credential' });
    await issued.waitFor();
    await expect(issued.textContent()).resolves.toContain('lease duration10m');
    const dn =
      (await issued
        .locator('dt', { hasText: 'distinguished_names' })
        .locator('xpath=following-sibling::dd')
        .textContent()) ?? '';
    expect(dn).toMatch(new RegExp(`^cn=v_root_dev_.*,${dynamicDn}$`));
    const password = await reveal(page, 'password');
    expect(await slapd.canBind(dn, password)).toBe(true);
    await issued.getByRole('button', { name: 'Revoke lease' }).click();
    await issued.getByRole('button', { name: 'Lease revoked' }).waitFor();
    expect(await slapd.exists(dn)).toBe(false);
    await context.close();
  });

  it("shows what a narrower token may not do as the API's 403, and the rest of the page", async () => {
    const policy =
      'path "ldap/static-role" { capabilities = ["list"] }\npath "ldap/static-role/*" { capabilities = ["read", "list"] }';
    expect((await api('POST', 'sys/policies/acl/ldap-roles-only', { policy })).status).toBe(204);
    const token = (await api('POST', 'auth/token/create', { policies: ['ldap-roles-only'] })).body.auth
      .client_token as string;
    const { context, page } = await newConsolePage(browser);
    page.setDefaultTimeout(10_000);
    await signInWithToken(page, product, 'secrets', token);
    await page.goto(`${product.consoleUrl}vault/ldap/ldap`);
    await expect(page.getByRole('alert').textContent()).resolves.toMatch(/Permission denied.*HTTP 403/);
    await page.goto(`${product.consoleUrl}vault/ldap/ldap/static-role/team/alice`);
    await expect(page.getByRole('region', { name: 'The static role' }).textContent()).resolves.toContain(
      `cn=alice,${peopleDn}`,
    );
    const credentials = page.getByRole('region', { name: 'Credentials' });
    await expect(credentials.getByRole('alert').textContent()).resolves.toMatch(/Permission denied.*HTTP 403/);
    await expect(credentials.textContent()).resolves.not.toContain('Next rotation');
    const before = (await api('GET', 'ldap/static-cred/team/alice')).body.data.password;
    await credentials.getByRole('button', { name: 'Rotate now' }).click();
    await expect(credentials.getByRole('alert').nth(1).textContent()).resolves.toMatch(/Permission denied.*HTTP 403/);
    expect((await api('GET', 'ldap/static-cred/team/alice')).body.data.password).toBe(before);
    await context.close();
  });

  it('shows a library set at a phone width without sideways scrolling', async () => {
    const { context, page } = await signedInPage('phone');
    await page.goto(`${product.consoleUrl}vault/ldap/ldap/library/pool`);
    await page.getByRole('region', { name: 'Accounts' }).getByRole('row').filter({ hasText: 'svc-2' }).waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await context.close();
  });
});
