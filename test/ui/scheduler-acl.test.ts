import { exportSPKI, generateKeyPair } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SchedulerConsole, screenshot, startSchedulerConsole } from '../support/console.ts';

/**
 * The console's scheduler ACL pages in Chromium against the product as `npm start` runs it: a policy the service
 * refuses shows the service's message; a policy, role, auth method (JWT with a public key) and binding rule are
 * created, edited and deleted in the pages, each effect read back through the API; a token's secret is shown once,
 * hidden until revealed, and works.
 */
let pem = '';

let ui: SchedulerConsole;
beforeAll(async () => {
  ui = await startSchedulerConsole();
  pem = await exportSPKI((await generateKeyPair('EdDSA', { extractable: true })).publicKey);
}, 120_000);
afterAll(() => ui?.stop());

describe('the scheduler ACL pages', () => {
  it('shows the service’s own message for a bad policy, then creates, edits and deletes a policy and a role', async () => {
    const { context, page } = await ui.signedIn();
    const bad = 'namespace "default" { policy = "reed" }';
    const expected = (await ui.api('POST', 'acl/policy/probe', { Name: 'probe', Rules: bad })).text;
    expect(expected).toContain('ACL policy validation failed');

    await ui.open(page, 'policies/new');
    await page.getByLabel('Name', { exact: true }).fill('readers');
    await page.getByLabel('Rules').fill(bad);
    await page.getByRole('button', { name: 'Create policy' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toContain(expected.trim());
    expect((await ui.api('GET', 'acl/policy/readers')).status).toBe(404);

    await page.getByLabel('Rules').fill('namespace "default" { policy = "read" }');
    await page.getByLabel('Description').fill('reads jobs');
    await page.getByRole('button', { name: 'Create policy' }).click();
    await page.getByRole('heading', { name: 'ACL policy readers', exact: true }).waitFor();
    expect((await ui.api('GET', 'acl/policy/readers')).json()).toMatchObject({
      Name: 'readers',
      Description: 'reads jobs',
      Rules: 'namespace "default" { policy = "read" }',
    });

    await page.getByRole('form', { name: 'Edit policy readers' }).getByLabel('Description').fill('reads default jobs');
    await page.getByRole('button', { name: 'Save policy' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
    expect((await ui.api('GET', 'acl/policy/readers')).json()).toMatchObject({ Description: 'reads default jobs' });

    // A role linked to the policy, chosen from the policies the token may list.
    await ui.open(page, 'roles/new');
    await page.getByLabel('Name', { exact: true }).fill('ops');
    await page.getByRole('checkbox', { name: 'readers' }).check();
    await page.getByRole('button', { name: 'Create role' }).click();
    await page.getByRole('heading', { name: 'ACL role', exact: true }).waitFor();
    const role = (await ui.api('GET', 'acl/role/name/ops')).json() as { ID: string; Policies: unknown };
    expect(role.Policies).toEqual([{ Name: 'readers' }]);
    await expect(page.getByRole('link', { name: 'readers' }).first().getAttribute('href')).resolves.toBe(
      '/ui/scheduler/policies/readers',
    );

    await page.getByRole('form', { name: 'Edit role ops' }).getByLabel('Description').fill('operators');
    await page.getByRole('button', { name: 'Save role' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
    expect((await ui.api('GET', `acl/role/${role.ID}`)).json()).toMatchObject({
      Name: 'ops',
      Description: 'operators',
    });

    await page.getByRole('button', { name: 'Delete role ops' }).click();
    await page.getByRole('button', { name: 'Confirm delete' }).click();
    await page.getByRole('heading', { name: 'ACL roles', exact: true }).waitFor();
    expect((await ui.api('GET', `acl/role/${role.ID}`)).status).toBe(404);

    await ui.open(page, 'policies/readers');
    await page.getByRole('button', { name: 'Delete policy readers' }).click();
    await page.getByRole('button', { name: 'Confirm delete' }).click();
    await page.getByRole('heading', { name: 'ACL policies', exact: true }).waitFor();
    expect((await ui.api('GET', 'acl/policy/readers')).status).toBe(404);
    await context.close();
  });

  it('creates a JWT auth method with a public key and a binding rule, edits both, and deletes them', async () => {
    const { context, page } = await ui.signedIn();
    await ui.open(page, 'auth-methods/new');
    await page.getByLabel('Name', { exact: true }).fill('corp');
    await page.getByLabel('Type').selectOption('JWT');
    await page.getByLabel('Token locality').selectOption('global');
    await page.getByLabel('Max token TTL').fill('30m');
    await page.getByLabel('JWT validation public keys (PEM)').fill(pem);
    await page.getByLabel('Claim mappings', { exact: true }).fill('sub = user\nteam = team');
    await page.getByLabel('List claim mappings').fill('groups = groups');
    await page.getByRole('button', { name: 'Create auth method' }).click();
    await page.getByRole('heading', { name: 'ACL auth method corp', exact: true }).waitFor();
    expect((await ui.api('GET', 'acl/auth-method/corp')).json()).toMatchObject({
      Name: 'corp',
      Type: 'JWT',
      TokenLocality: 'global',
      MaxTokenTTL: '30m0s',
      Config: {
        JWTValidationPubKeys: [pem.trim()],
        ClaimMappings: { sub: 'user', team: 'team' },
        ListClaimMappings: { groups: 'groups' },
      },
    });

    // Edit as JSON: the config keys the fields do not offer are there too.
    const edit = page.getByRole('form', { name: 'Edit auth method corp' });
    await edit.getByRole('tab', { name: 'JSON' }).click();
    const json = edit.getByLabel('Config (JSON)');
    const config = JSON.parse(await json.inputValue()) as Record<string, unknown>;
    await json.fill(JSON.stringify({ ...config, BoundAudiences: ['nomad'], ClockSkewLeeway: '30s' }));
    await edit.getByLabel('Max token TTL').fill('2h');
    await page.getByRole('button', { name: 'Save auth method' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
    expect((await ui.api('GET', 'acl/auth-method/corp')).json()).toMatchObject({
      MaxTokenTTL: '2h0m0s',
      Config: { BoundAudiences: ['nomad'], ClockSkewLeeway: '30s' },
    });

    // A binding rule: a bad selector gets the service's message; a good one is created, edited, deleted.
    await page.getByRole('link', { name: 'Its binding rules', exact: true }).click();
    await page.getByRole('link', { name: 'Create binding rule' }).click();
    await expect(page.getByLabel('Auth method').inputValue()).resolves.toBe('corp');
    await page.getByLabel('Selector').fill('"eng" in list.groups and');
    await page.getByLabel('Bind type').selectOption('policy');
    await page.getByLabel('Bind name').fill('readers');
    await page.getByRole('button', { name: 'Create binding rule' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toContain('selector is invalid');
    await page.getByLabel('Selector').fill('"eng" in list.groups');
    await page.getByLabel('Description').fill('engineers read');
    await page.getByRole('button', { name: 'Create binding rule' }).click();
    await page.getByRole('heading', { name: 'ACL binding rule', exact: true }).waitFor();
    const rules = (await ui.api('GET', 'acl/binding-rules')).json() as Array<{ ID: string }>;
    expect(rules).toHaveLength(1);
    const id = (rules[0] as { ID: string }).ID;
    expect((await ui.api('GET', `acl/binding-rule/${id}`)).json()).toMatchObject({
      AuthMethod: 'corp',
      Selector: '"eng" in list.groups',
      BindType: 'policy',
      BindName: 'readers',
      Description: 'engineers read',
    });

    const ruleForm = page.getByRole('form', { name: 'Edit binding rule' });
    await ruleForm.getByLabel('Bind type').selectOption('role');
    // biome-ignore lint/suspicious/noTemplateCurlyInString: Nomad's interpolation syntax, typed into the page
    await ruleForm.getByLabel('Bind name').fill('team-${value.team}');
    await page.getByRole('button', { name: 'Save binding rule' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
    expect((await ui.api('GET', `acl/binding-rule/${id}`)).json()).toMatchObject({
      BindType: 'role',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: Nomad's interpolation syntax
      BindName: 'team-${value.team}',
    });

    await page.getByRole('button', { name: 'Delete binding rule' }).click();
    await page.getByRole('button', { name: 'Confirm delete' }).click();
    await page.getByRole('heading', { name: 'ACL binding rules', exact: true }).waitFor();
    expect((await ui.api('GET', `acl/binding-rule/${id}`)).status).toBe(404);

    await ui.open(page, 'auth-methods/corp');
    await page.getByRole('button', { name: 'Delete auth method corp' }).click();
    await page.getByRole('button', { name: 'Confirm delete' }).click();
    await page.getByRole('heading', { name: 'ACL auth methods', exact: true }).waitFor();
    expect((await ui.api('GET', 'acl/auth-method/corp')).status).toBe(404);
    await context.close();
  });

  it('never shows an OIDC method’s client secret, and an edit must give it again (the service’s message otherwise)', async () => {
    const secret = 'oidc-client-secret-never-shown';
    const created = await ui.api('POST', 'acl/auth-method', {
      Name: 'sso',
      Type: 'OIDC',
      MaxTokenTTL: '1h',
      Config: {
        OIDCDiscoveryURL: 'http://127.0.0.1:9/',
        OIDCClientID: 'keyhaven',
        OIDCClientSecret: secret,
        AllowedRedirectURIs: ['http://127.0.0.1:8200/ui/callback'],
      },
    });
    expect(created.status).toBe(200);
    const { context, page } = await ui.signedIn();
    await ui.open(page, 'auth-methods/sso');
    await page.getByRole('heading', { name: 'ACL auth method sso', exact: true }).waitFor();
    const edit = page.getByRole('form', { name: 'Edit auth method sso' });
    await expect(edit.getByLabel('OIDC client ID').inputValue()).resolves.toBe('keyhaven');
    await expect(edit.getByLabel('OIDC client secret').inputValue()).resolves.toBe('');
    await expect(page.content()).resolves.not.toContain(secret);
    await edit.getByLabel('Max token TTL').fill('3h');
    await page.getByRole('button', { name: 'Save auth method' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toContain('missing OIDC client secret');
    await edit.getByLabel('OIDC client secret').fill(secret);
    await page.getByRole('button', { name: 'Save auth method' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
    const read = (await ui.api('GET', 'acl/auth-method/sso')).json() as {
      MaxTokenTTL: string;
      Config: Record<string, unknown>;
    };
    expect(read.MaxTokenTTL).toBe('3h0m0s');
    expect(read.Config).not.toHaveProperty('OIDCClientSecret');
    await expect(page.content()).resolves.not.toContain(secret);
    await context.close();
  });

  it('creates a token whose secret is shown once, hidden until revealed, and works; lists and deletes tokens', async () => {
    expect((await ui.api('POST', 'acl/policy/jobs', { Rules: 'namespace "default" { policy = "read" }' })).status).toBe(
      200,
    );
    const { context, page } = await ui.signedIn();
    await ui.open(page, 'tokens/new');
    await page.getByLabel('Name', { exact: true }).fill('ci deployer');
    await page.getByLabel('Policies').fill('jobs');
    await page.getByLabel('Expiration TTL').fill('1h');
    await page.getByRole('button', { name: 'Create token' }).click();
    await page.getByRole('heading', { name: 'Token created', exact: true }).waitFor();
    const secretCell = page.locator('.secret-value code');
    await expect(secretCell.textContent()).resolves.toBe('••••••••');
    await page.getByRole('button', { name: 'Reveal secret ID' }).click();
    const secret = (await secretCell.textContent()) ?? '';
    expect(secret).toMatch(/^[0-9a-f-]{36}$/);
    const self = await fetch(`${ui.product.schedulerUrl}/v1/acl/token/self`, { headers: { 'X-Nomad-Token': secret } });
    const token = (await self.json()) as {
      AccessorID: string;
      Name: string;
      Policies: string[];
      ExpirationTTL: string;
    };
    expect(token).toMatchObject({ Name: 'ci deployer', Policies: ['jobs'], ExpirationTTL: '1h0m0s' });

    await ui.open(page, 'tokens');
    await page.getByRole('link', { name: token.AccessorID }).waitFor();
    await expect(page.getByRole('cell', { name: 'ci deployer' }).isVisible()).resolves.toBe(true);
    await screenshot(page, 'scheduler-tokens');
    // The token page never shows the secret again.
    await page.getByRole('link', { name: token.AccessorID }).click();
    await page.getByRole('heading', { name: 'ACL token', exact: true }).waitFor();
    await expect(page.locator('main').textContent()).resolves.not.toContain(secret);
    await page.getByRole('button', { name: 'Delete token ci deployer' }).click();
    await page.getByRole('button', { name: 'Confirm delete' }).click();
    await page.getByRole('heading', { name: 'ACL tokens', exact: true }).waitFor();
    expect((await ui.api('GET', `acl/token/${token.AccessorID}`)).status).toBe(404);

    // My token: the signed-in ui.management token, read through acl/token/self.
    await page.getByRole('link', { name: 'My token' }).click();
    await page.locator('.details').waitFor();
    await expect(page.getByRole('main').textContent()).resolves.toContain('Bootstrap Token');
    await context.close();
  });

  it('shows the API’s 403 to a client token, and fits a phone', async () => {
    const client = (
      await ui.api('POST', 'acl/token', { Name: 'reader', Type: 'client', Policies: ['jobs'] })
    ).json() as {
      SecretID: string;
    };
    const { context, page } = await ui.signedIn(client.SecretID, 'phone');
    await ui.open(page, 'tokens');
    await expect(page.getByRole('alert').textContent()).resolves.toContain('Permission denied');
    await expect(page.getByRole('alert').textContent()).resolves.toContain('HTTP 403');
    await ui.open(page, 'policies');
    await page.getByRole('link', { name: 'jobs' }).waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await context.close();
  });
});
