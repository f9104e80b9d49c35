import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describedPaths } from '../../packages/ui/src/engines/openapi-paths.ts';
import { type ConsulEmulator, startConsulEmulator } from '../emulators/consul.ts';
import { mountHref } from '../../packages/ui/src/secrets/mount-links.ts';
import {
  type ConsoleProduct,
  launchBrowser,
  newConsolePage,
  secretsCall,
  signInWithToken,
  startConsoleProduct,
} from '../support/console.ts';

/**
 * Issue 42: the console has a page for an engine it was not written for. A mount of a type without a page of its own
 * links to the generic page (`/ui/vault/engine/<mount>`), which lists the mount's paths as the service's OpenAPI
 * document describes them and reads or lists a path without parameters. Shown here on the dev mount `mesh/` (its
 * own pages aside, the generic page serves any mount) against `npm start`.
 */
describe('where the mounts page links a mount', () => {
  it('links kv to its browser, an engine with pages to them, and any other type to the generic page', () => {
    const pages = new Set(['ldap', 'cloud', 'mesh']);
    expect(mountHref('secret/', 'kv', pages)).toBe('/ui/vault/secrets/secret/');
    expect(mountHref('team/ldap/', 'ldap', pages)).toBe('/ui/vault/ldap/team%2Fldap/');
    expect(mountHref('totp/', 'totp', pages)).toBe('/ui/vault/engine/totp');
    expect(mountHref('team/otp/', 'totp', pages)).toBe('/ui/vault/engine/team%2Fotp');
  });

  it("reads a mount's paths from an OpenAPI document: its operations, summaries and parameters", () => {
    const document = {
      paths: {
        '/totp/keys/': { get: { summary: 'Lists the keys.' } },
        '/totp/keys/{name}': { get: { summary: 'Reads a key.' }, post: {}, delete: {} },
        '/totp/config': { get: {}, post: { summary: 'Configures it.' } },
        '/other/keys/': { get: {} },
      },
    };
    expect(describedPaths(document, 'totp/')).toEqual([
      { path: 'keys/', operations: ['list'], summary: 'Lists the keys.', parameterised: false },
      {
        path: 'keys/{name}',
        operations: ['read', 'write', 'delete'],
        summary: 'Reads a key.',
        parameterised: true,
      },
      { path: 'config', operations: ['read', 'write'], summary: 'Configures it.', parameterised: false },
    ]);
    expect(describedPaths({}, 'totp')).toEqual([]);
  });
});

describe('the generic engine page (Chromium, npm start)', () => {
  let product: ConsoleProduct;
  let browser: Browser;
  let consul: ConsulEmulator;
  beforeAll(async () => {
    [product, browser, consul] = await Promise.all([startConsoleProduct(), launchBrowser(), startConsulEmulator()]);
    const consulRoot = ((await consul.request('PUT', '/v1/acl/bootstrap')).json as { SecretID: string }).SecretID;
    const configured = await secretsCall(product, 'POST', 'mesh/config/access', {
      address: consul.address,
      token: consulRoot,
    });
    expect(configured.status, JSON.stringify(configured.body)).toBeLessThan(300);
  });
  afterAll(async () => {
    await browser?.close();
    await product?.stop();
    await consul?.close();
  });

  it("lists the mount's paths from the OpenAPI document and lists a collection from there", async () => {
    const created = await secretsCall(product, 'POST', 'mesh/roles/app', { mesh_policies: 'svc-read' });
    expect(created.status, JSON.stringify(created.body)).toBe(204);
    const { context, page } = await newConsolePage(browser);
    page.setDefaultTimeout(10_000);
    try {
      await signInWithToken(page, product, 'secrets', product.rootToken);
      await page.goto(`${product.consoleUrl}vault/engine/mesh`);
      await page.getByRole('heading', { name: 'Engine at mesh/' }).waitFor();
      const table = page.locator('main table');
      await expect(table.textContent()).resolves.toContain('mesh/roles/{name}');
      const rolesRow = table.locator('tr').filter({ has: page.locator('code', { hasText: /^mesh\/roles\/$/ }) });
      await expect(rolesRow.textContent()).resolves.toContain('list');
      // A path with a parameter has no button; the collection is listed from its own.
      const paramRow = table
        .locator('tr')
        .filter({ has: page.locator('code', { hasText: /^mesh\/roles\/\{name\}$/ }) });
      await expect(paramRow.getByRole('button').count()).resolves.toBe(0);
      await page.getByRole('button', { name: 'List roles', exact: true }).click();
      const answer = page.getByRole('region', { name: 'Answer' });
      await answer.waitFor();
      expect(JSON.parse((await answer.locator('pre').textContent()) ?? '{}').data).toEqual({ keys: ['app'] });
      await page.getByRole('button', { name: 'Read config/access', exact: true }).click();
      await answer.locator('h2', { hasText: 'mesh/config/access' }).waitFor();
      expect(JSON.parse((await answer.locator('pre').textContent()) ?? '{}').data).toMatchObject({
        address: consul.address,
      });
      // A call the API refuses shows the refusal as the API worded it (an empty collection is Vault's 404), no answer.
      expect((await secretsCall(product, 'DELETE', 'mesh/roles/app')).status).toBe(204);
      await page.getByRole('button', { name: 'List roles', exact: true }).click();
      await page.getByRole('alert').filter({ hasText: 'Error 404' }).waitFor();
      await expect(answer.count()).resolves.toBe(0);
    } finally {
      await context.close();
    }
  });
});
