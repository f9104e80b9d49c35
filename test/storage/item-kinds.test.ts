/**
 * The item-kind table (`packages/core/src/item-kinds.ts`, and its copy in docs/security.md): every kind of item the
 * services write, with its protection against a table writer (issue 37 §1). A representative run of both services
 * (in memory, every write classified) must write nothing outside the table, and every item of a `MAC` row with a MAC
 * that verifies. The test harnesses (`test/support/item-kind-guard.ts`) classify every write of every test the same
 * way and refuse one no row names, so a new kind of item cannot be added without a row.
 */
import { readFileSync } from 'node:fs';
import { exportSPKI, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ItemKindRow, itemKindOf, itemKindRows } from '../../packages/core/src/item-kinds.ts';
import type { Item, Key } from '../../packages/core/src/storage/store.ts';
import { guardItemKinds } from '../support/item-kind-guard.ts';
import { browseToCallback, startOidcProvider, type TestOidcProvider } from '../support/oidc-provider.ts';
import { type SchedulerService, startSchedulerInMemory } from '../support/scheduler-harness.ts';
import { type SecretsService, startSecretsInMemory } from '../support/secrets-harness.ts';

/** The rows of the item-kind table in docs/security.md: name and protection cells. */
function documentedRows(): Array<{ name: string; protection: string }> {
  const text = readFileSync('docs/security.md', 'utf8');
  const start = text.indexOf('#### Every item kind and its protection');
  expect(start).toBeGreaterThan(-1);
  const lines = text.slice(start).split('\n');
  const first = lines.findIndex((line) => line.startsWith('| kind |'));
  const rows: Array<{ name: string; protection: string }> = [];
  for (const line of lines.slice(first + 2)) {
    if (!line.startsWith('|')) break;
    const cells = line.split(' | ').map((cell) => cell.replace(/^\| /, '').replace(/ \|$/, ''));
    rows.push({ name: cells[0] ?? '', protection: cells[2] ?? '' });
  }
  return rows;
}

const protectionCell = (row: ItemKindRow) => `${row.protection}${row.mac ? ` (\`${row.mac.name}\`)` : ''}`;

describe('the item-kind table', () => {
  it('docs/security.md lists exactly the rows of item-kinds.ts, in order, with their protection', () => {
    expect(documentedRows()).toEqual(itemKindRows.map((row) => ({ name: row.name, protection: protectionCell(row) })));
  });

  it('a MAC row names its MAC kind and no other row does; every row says why', () => {
    for (const row of itemKindRows) {
      expect(row.mac !== undefined, row.name).toBe(row.protection === 'MAC');
      expect(row.why.length, row.name).toBeGreaterThan(10);
    }
    expect(new Set(itemKindRows.map((row) => row.name)).size).toBe(itemKindRows.length);
  });

  it("every MAC kind of the secrets service binds the initialisation's epoch and every scheduler ACL kind the bootstrap's, but the markers and the keyring's item", () => {
    const unbound = ['keyring', 'init-marker', 'scheduler-bootstrap-marker'];
    const acl = [
      'scheduler-acl-token',
      'scheduler-acl-policy',
      'scheduler-acl-role',
      'scheduler-acl-auth-method',
      'scheduler-acl-binding-rule',
      'scheduler-oidc-state',
    ];
    for (const row of itemKindRows) {
      if (!row.mac) continue;
      const name = row.mac.name;
      const expected = unbound.includes(name)
        ? undefined
        : acl.includes(name)
          ? 'bootstrap'
          : name.startsWith('scheduler-')
            ? undefined
            : 'init';
      expect(row.mac.epoch, `${row.name} (${name})`).toBe(expected);
    }
  });

  it('classifies keys by partition, sort key and mount type: a kind it does not know has no row', () => {
    const types = (uuid: string) => ({ a: 'jwt', b: 'kv', c: 'ldap', token: 'token' })[uuid];
    expect(itemKindOf('sys', 'audit/file/')?.name).toBe('audit device');
    expect(itemKindOf('mount#a', 'role/web', types)?.name).toBe('login configuration and roles (JWT/OIDC)');
    expect(itemKindOf('mount#c', 'role/web', types)?.name).toBe('directory dynamic roles');
    expect(itemKindOf('mount#token', 'role/app', types)?.name).toBe('token role');
    expect(itemKindOf('mount#b', 'some/secret', types)?.name).toBe('kv v1 data');
    expect(itemKindOf('mount#a', 'some/secret', types)).toBeUndefined();
    expect(itemKindOf('sys', 'something-new')).toBeUndefined();
    expect(itemKindOf('sched#brand-new', 'x')).toBeUndefined();
  });
});

describe('a representative run of both services writes only kinds of the table, MAC rows with their MAC', () => {
  let secrets: SecretsService;
  let scheduler: SchedulerService;
  let provider: TestOidcProvider;
  const seen = new Map<string, number>();
  const unsigned: string[] = [];
  const callback = 'http://127.0.0.1:8200/v1/auth/jwt/oidc/callback';

  /** Counts each row written, and checks a MAC row's put carries the MAC its kind, key and attributes give. */
  const watch = (service: { core: { store: SecretsService['core']['store'] } }) =>
    guardItemKinds(service.core.store, (row: ItemKindRow, key: Key, item?: Item) => {
      seen.set(row.name, (seen.get(row.name) ?? 0) + 1);
      if (row.mac && item && item.mac !== service.core.store.macOf(row.mac, item))
        unsigned.push(`${row.name}: ${key.pk} / ${key.sk}`);
    });

  beforeAll(async () => {
    provider = await startOidcProvider({
      redirectUris: [callback.replace('/jwt/', '/oidc/'), 'http://127.0.0.1:4646/ui/settings/tokens'],
    });
    provider.accounts.set('alice', { email: 'alice@example.com' });
    secrets = await startSecretsInMemory();
    secrets.clock.advance(Math.floor((Date.now() - secrets.clock.now()) / 1000));
    watch(secrets);
    scheduler = await startSchedulerInMemory();
    scheduler.clock.advance(Math.floor((Date.now() - scheduler.clock.now()) / 1000));
    watch(scheduler);
  });
  afterAll(async () => {
    await secrets?.close();
    await scheduler?.close();
    await provider?.close();
  });

  it('the secrets service: mounts, policies, tokens, leases, kv, logins, OIDC, token roles, password policies, audit', async () => {
    const root = async (method: string, path: string, body?: unknown, expected = [200, 204]) => {
      const reply = await secrets.call(method, path, {
        token: secrets.rootToken,
        ...(body === undefined ? {} : { body }),
      });
      expect(expected, `${method} ${path}: ${JSON.stringify(reply.body)}`).toContain(reply.status);
      return reply;
    };
    await root('POST', '/v1/sys/mounts/kv2', { type: 'kv', options: { version: '2' } });
    await root('POST', '/v1/kv2/data/app', { data: { password: 'p1' } });
    await root('POST', '/v1/kv2/config', { max_versions: 5 });
    await root('POST', '/v1/secret/app', { password: 'p1' });
    await root('POST', '/v1/sys/policies/acl/reader', { policy: 'path "secret/*" { capabilities = ["read"] }' });
    await root('POST', '/v1/sys/policies/password/strong', {
      policy: 'length = 20\nrule "charset" {\n  charset = "abcdefghijklmnopqrstuvwxyz0123456789"\n}',
    });
    await root('POST', '/v1/auth/token/roles/app', { allowed_policies: ['reader'] });
    const child = await root('POST', '/v1/auth/token/create/app', { policies: ['reader'], ttl: '1h' });
    await secrets.call('GET', '/v1/secret/app', { token: child.body.auth.client_token });
    await root('POST', '/v1/sys/audit/second', { type: 'file', options: { file_path: 'stdout' } });
    await root('POST', '/v1/sys/mounts/secret/tune', { default_lease_ttl: '1h' });

    // A JWT login (config, role, identity, the issued-token index) and an OIDC sign-in (state, then its callback).
    const keys = await generateKeyPair('ES256');
    await root('POST', '/v1/sys/auth/jwt', { type: 'jwt' });
    await root('POST', '/v1/auth/jwt/config', { jwt_validation_pubkeys: [await exportSPKI(keys.publicKey)] });
    await root('POST', '/v1/auth/jwt/role/ci', {
      role_type: 'jwt',
      user_claim: 'sub',
      bound_audiences: ['ci'],
      token_policies: ['reader'],
    });
    const jwt = await new SignJWT({})
      .setProtectedHeader({ alg: 'ES256' })
      .setSubject('build-7')
      .setAudience('ci')
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(keys.privateKey);
    const login = await secrets.call('POST', '/v1/auth/jwt/login', { body: { role: 'ci', jwt } });
    expect(login.status).toBe(200);
    await root('POST', '/v1/sys/auth/oidc', { type: 'oidc' });
    await root('POST', '/v1/auth/oidc/config', {
      oidc_discovery_url: provider.issuer,
      oidc_client_id: provider.clientId,
      oidc_client_secret: provider.clientSecret,
      default_role: 'web',
    });
    await root('POST', '/v1/auth/oidc/role/web', {
      user_claim: 'email',
      oidc_scopes: 'email',
      allowed_redirect_uris: [callback.replace('/jwt/', '/oidc/')],
      token_policies: 'reader',
    });
    const url = await root('POST', '/v1/auth/oidc/oidc/auth_url', {
      redirect_uri: callback.replace('/jwt/', '/oidc/'),
      client_nonce: 'n',
    });
    expect(url.body.data.auth_url).toMatch(/^http/);

    // Revocation: the token's leases and children go with it.
    await root('POST', '/v1/auth/token/revoke', { token: child.body.auth.client_token });
    await root('DELETE', '/v1/sys/mounts/kv2');
    await root('DELETE', '/v1/sys/auth/jwt');

    expect(unsigned).toEqual([]);
    // The keyring and the init marker are written as the harness starts, before this watch (their MACs are checked by
    // test/attacks/table-writer-audit-and-markers.test.ts).
    expect(
      [
        'audit device',
        'mount',
        'ACL policy',
        'password policy',
        'token',
        "token's children and leases",
        'accessor',
        'issued-token index',
        'in-service marker',
        'login configuration and roles (JWT/OIDC)',
        'OIDC sign-in in progress (secrets)',
        'login identity (JWT/OIDC)',
        'token role',
        'kv v2 data and metadata',
        'kv v1 data',
      ].filter((name) => !seen.has(name)),
    ).toEqual([]);
  });

  it('the scheduler: bootstrap, ACL objects, a login, an OIDC sign-in, node pools and namespaces', async () => {
    const management = await scheduler.bootstrap();
    const mgmt = async (method: string, path: string, body?: unknown) => {
      const reply = await scheduler.call(method, path, { token: management, ...(body === undefined ? {} : { body }) });
      expect(reply.status, `${method} ${path}: ${reply.text}`).toBe(200);
      return reply;
    };
    await mgmt('POST', '/v1/acl/policy/jobs', { Rules: 'namespace "default" { policy = "read" }' });
    await mgmt('POST', '/v1/acl/role', { Name: 'eng', Policies: [{ Name: 'jobs' }] });
    await mgmt('POST', '/v1/acl/token', { Type: 'client', Policies: ['jobs'], ExpirationTTL: '1h' });
    await mgmt('POST', '/v1/acl/auth-method', {
      Name: 'sso',
      Type: 'OIDC',
      TokenLocality: 'local',
      MaxTokenTTL: '1h',
      Config: {
        OIDCDiscoveryURL: provider.issuer,
        OIDCClientID: provider.clientId,
        OIDCClientSecret: provider.clientSecret,
        AllowedRedirectURIs: ['http://127.0.0.1:4646/ui/settings/tokens'],
        BoundAudiences: [provider.clientId],
      },
    });
    await mgmt('POST', '/v1/acl/binding-rule', { AuthMethod: 'sso', BindType: 'role', BindName: 'eng', Selector: '' });
    const url = await scheduler.call('POST', '/v1/acl/oidc/auth-url', {
      body: { AuthMethodName: 'sso', RedirectURI: 'http://127.0.0.1:4646/ui/settings/tokens', ClientNonce: 'n' },
    });
    expect(url.status).toBe(200);
    const delivery = await browseToCallback(url.body.AuthURL, {
      login: 'alice',
      callbackPrefix: 'http://127.0.0.1:4646/ui/settings/tokens',
    });
    const params = delivery.url.searchParams;
    const completed = await scheduler.call('POST', '/v1/acl/oidc/complete-auth', {
      body: {
        AuthMethodName: 'sso',
        ClientNonce: 'n',
        RedirectURI: 'http://127.0.0.1:4646/ui/settings/tokens',
        State: params.get('state'),
        Code: params.get('code'),
      },
    });
    expect(completed.status).toBe(200);
    await mgmt('POST', '/v1/node/pools', { Name: 'gpu' });
    await mgmt('POST', '/v1/namespace/prod', { Name: 'prod' });

    expect(unsigned).toEqual([]);
    expect(
      [
        'scheduler ACL token',
        "scheduler token's secret",
        'scheduler ACL policy',
        'scheduler ACL role',
        "scheduler role's name",
        'scheduler auth method',
        'scheduler binding rule',
        'scheduler OIDC sign-in in progress',
        'scheduler bootstrap marker',
        'scheduler indexes and counts',
        'scheduler event',
        'node pool',
        'namespace',
      ].filter((name) => !seen.has(name)),
    ).toEqual([]);
  });
});
