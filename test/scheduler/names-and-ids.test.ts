import { randomUUID } from 'node:crypto';
import { type CryptoKey, exportSPKI, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type SchedulerCallResult,
  type SchedulerService,
  startSchedulerInMemory,
} from '../support/scheduler-harness.ts';

/** Past DynamoDB's 1024-byte sort key and 2048-byte partition key: before the check these reached a key and failed with 500. */
const long = 'a'.repeat(2000);
const longer = 'b'.repeat(3000);
const badNames = ['', long, longer, 'has space', 'dot.name', 'ünïcode', 'nul\u0000byte', '../../etc'];
const badIds = [long, 'not-a-uuid', `${randomUUID()}x`, '00000000-0000-0000-0000-00000000000g'];

describe('names and IDs are checked before they reach a table key', () => {
  let h: SchedulerService;
  let root: string;
  let signingKey: CryptoKey;
  const mgmt = (method: string, path: string, body?: unknown) =>
    h.call(method, path, { token: root, ...(body === undefined ? {} : { body }) });
  /** A 400 whose plain-text message says what is wrong and does not echo kilobytes of input back. */
  const expectRefused = (out: SchedulerCallResult, message: RegExp) => {
    // A name with a slash in a URL path (`..%2F..%2Fetc`) is refused before routing, as every non-canonical path
    // is (issue 23 §1, test/attacks/path-spellings.test.ts): for its `..` parts, or (a name no row lets hold a `/`)
    // for its encoded slash; in a body it meets the name rule.
    const expected = out.text.startsWith('an encoded slash')
      ? /^an encoded slash \(%2F\) in the URL path is not allowed/
      : out.text.startsWith('a "." or ".." segment')
        ? /^a "\." or "\.\." segment in the URL path is not allowed$/
        : message;
    expect({ status: out.status, text: out.text }).toEqual({ status: 400, text: expect.stringMatching(expected) });
    expect(out.text.length).toBeLessThan(300);
  };
  const segment = (value: string) => encodeURIComponent(value);
  const jwtMethod = (name: string, extra: Record<string, unknown> = {}) => ({
    Name: name,
    Type: 'JWT',
    MaxTokenTTL: '1h',
    Config: { JWKSURL: 'http://127.0.0.1:1/jwks' },
    ...extra,
  });

  beforeAll(async () => {
    h = await startSchedulerInMemory();
    root = await h.bootstrap();
    expect((await mgmt('PUT', '/v1/acl/policy/base', { Rules: 'node { policy = "read" }' })).status).toBe(200);
    const keys = await generateKeyPair('EdDSA', { extractable: true });
    signingKey = keys.privateKey;
    expect(
      (
        await mgmt('POST', '/v1/acl/auth-method', {
          ...jwtMethod('corp'),
          Config: { JWTValidationPubKeys: [await exportSPKI(keys.publicKey)], ClaimMappings: { team: 'team' } },
        })
      ).status,
    ).toBe(200);
    expect(
      // biome-ignore lint/suspicious/noTemplateCurlyInString: Nomad's interpolation syntax, not a JS template
      (await mgmt('POST', '/v1/acl/binding-rule', { AuthMethod: 'corp', BindType: 'role', BindName: '${value.team}' }))
        .status,
    ).toBe(200);
    expect((await mgmt('POST', '/v1/acl/role', { Name: 'eng', Policies: [{ Name: 'base' }] })).status).toBe(200);
  });
  afterAll(() => h.close());

  it('acl/token/:accessor_id: an accessor ID must be a UUID on every method', async () => {
    for (const id of badIds) {
      const path = `/v1/acl/token/${segment(id)}`;
      expectRefused(await mgmt('GET', path), /^invalid ACL token accessor ID '.*': must be a UUID$/);
      expectRefused(await mgmt('POST', path, { Name: 'x', Policies: ['base'] }), /^invalid ACL token accessor ID/);
      expectRefused(await mgmt('PUT', path, { Name: 'x', Policies: ['base'] }), /^invalid ACL token accessor ID/);
      expectRefused(await mgmt('DELETE', path), /^invalid ACL token accessor ID/);
    }
    // Well-formed and absent: Nomad's answers.
    const absent = randomUUID();
    expect(await mgmt('GET', `/v1/acl/token/${absent}`)).toMatchObject({ status: 404, text: 'ACL token not found' });
    expect(await mgmt('DELETE', `/v1/acl/token/${absent}`)).toMatchObject({
      status: 400,
      text: `Cannot delete nonexistent tokens: ${absent}`,
    });
  });

  it('acl/token: role links by a malformed ID or name are unknown roles', async () => {
    expectRefused(
      await mgmt('POST', '/v1/acl/token', { Name: 'x', Roles: [{ ID: long }] }),
      /^cannot find role a{64}… \(2000 characters\)$/,
    );
    expectRefused(
      await mgmt('POST', '/v1/acl/token', { Name: 'x', Roles: [{ Name: longer }] }),
      /^cannot find role b{64}…/,
    );
    expectRefused(
      await mgmt('POST', '/v1/acl/token', { Name: 'x', Roles: [{ Name: 'no such role' }] }),
      /^cannot find role no such role$/,
    );
  });

  it('acl/policy/:name: 1 to 128 letters, digits and dashes on every method', async () => {
    for (const name of badNames.filter(Boolean)) {
      const path = `/v1/acl/policy/${segment(name)}`;
      expectRefused(await mgmt('GET', path), /^invalid ACL policy name '.*': 1 to 128 letters, digits and dashes$/);
      expectRefused(await mgmt('DELETE', path), /^invalid ACL policy name/);
      // A write says it as Nomad's policy validation does.
      expectRefused(
        await mgmt('PUT', path, { Rules: 'node { policy = "read" }' }),
        /^ACL policy validation failed: invalid name/,
      );
      expectRefused(
        await mgmt('POST', path, { Rules: 'node { policy = "read" }' }),
        /^ACL policy validation failed: invalid name/,
      );
    }
    const longest = 'p'.repeat(128);
    expect((await mgmt('GET', `/v1/acl/policy/${longest}`)).status).toBe(404);
    expect((await mgmt('PUT', `/v1/acl/policy/${longest}`, { Rules: 'node { policy = "read" }' })).status).toBe(200);
    expectRefused(await mgmt('GET', `/v1/acl/policy/${longest}p`), /^invalid ACL policy name/);
  });

  it('acl/role/:role_id, acl/role/name/:name and the policy links of a role', async () => {
    for (const id of badIds) {
      const path = `/v1/acl/role/${segment(id)}`;
      expectRefused(await mgmt('GET', path), /^invalid ACL role ID '.*': must be a UUID$/);
      expectRefused(
        await mgmt('POST', path, { ID: id, Name: 'r', Policies: [{ Name: 'base' }] }),
        /^invalid ACL role ID/,
      );
      expectRefused(await mgmt('DELETE', path), /^invalid ACL role ID/);
    }
    for (const name of badNames.filter(Boolean)) {
      expectRefused(
        await mgmt('GET', `/v1/acl/role/name/${segment(name)}`),
        /^invalid ACL role name '.*': 1 to 128 letters, digits, dashes and underscores$/,
      );
    }
    expectRefused(
      await mgmt('POST', '/v1/acl/role', { Name: longer, Policies: [{ Name: 'base' }] }),
      /^ACL role validation failed: invalid name 'b{64}… \(3000 characters\)'/,
    );
    expectRefused(
      await mgmt('POST', '/v1/acl/role', { Name: 'links', Policies: [{ Name: longer }] }),
      /^cannot find policy b{64}…/,
    );
    expect((await mgmt('GET', `/v1/acl/role/${randomUUID()}`)).status).toBe(404);
    expect(await mgmt('DELETE', `/v1/acl/role/${randomUUID()}`)).toMatchObject({
      status: 404,
      text: 'ACL role not found',
    });
  });

  it('acl/auth-method and acl/auth-method/:name: 1 to 128 letters, digits and dashes', async () => {
    for (const name of ['', long, longer]) {
      expectRefused(
        await mgmt('POST', '/v1/acl/auth-method', jwtMethod(name)),
        /^ACL auth method validation failed: invalid name/,
      );
    }
    for (const name of badNames.filter(Boolean)) {
      const path = `/v1/acl/auth-method/${segment(name)}`;
      expectRefused(
        await mgmt('GET', path),
        /^invalid ACL auth-method name '.*': 1 to 128 letters, digits and dashes$/,
      );
      expectRefused(await mgmt('POST', path, jwtMethod(name)), /^invalid ACL auth-method name/);
      expectRefused(await mgmt('PUT', path, jwtMethod(name)), /^invalid ACL auth-method name/);
      expectRefused(await mgmt('DELETE', path), /^invalid ACL auth-method name/);
    }
    expect(await mgmt('DELETE', '/v1/acl/auth-method/absent')).toMatchObject({
      status: 404,
      text: 'ACL auth-method not found',
    });
  });

  it('acl/binding-rule/:rule_id must be a UUID; a rule naming a malformed auth method finds none', async () => {
    for (const id of badIds) {
      const path = `/v1/acl/binding-rule/${segment(id)}`;
      expectRefused(await mgmt('GET', path), /^invalid ACL binding rule ID '.*': must be a UUID$/);
      expectRefused(await mgmt('POST', path, { BindType: 'management' }), /^invalid ACL binding rule ID/);
      expectRefused(await mgmt('PUT', path, { BindType: 'management' }), /^invalid ACL binding rule ID/);
      expectRefused(await mgmt('DELETE', path), /^invalid ACL binding rule ID/);
    }
    expectRefused(
      await mgmt('POST', '/v1/acl/binding-rule', { AuthMethod: longer, BindType: 'management' }),
      /^ACL auth-method b{64}… \(3000 characters\) not found$/,
    );
    expect(await mgmt('DELETE', `/v1/acl/binding-rule/${randomUUID()}`)).toMatchObject({
      status: 404,
      text: 'ACL binding rule not found',
    });
  });

  it('acl/login, acl/oidc/auth-url and acl/oidc/complete-auth (no token needed): AuthMethodName is checked', async () => {
    for (const name of [long, longer, 'has space']) {
      expectRefused(
        await h.call('POST', '/v1/acl/login', { body: { AuthMethodName: name, LoginToken: 'x.y.z' } }),
        /^invalid AuthMethodName '.*': 1 to 128/,
      );
      expectRefused(
        await h.call('POST', '/v1/acl/oidc/auth-url', {
          body: { AuthMethodName: name, RedirectURI: 'http://localhost/cb', ClientNonce: 'n' },
        }),
        /^invalid AuthMethodName/,
      );
      expectRefused(
        await h.call('POST', '/v1/acl/oidc/complete-auth', {
          body: { AuthMethodName: name, ClientNonce: 'n', State: 's', Code: 'c', RedirectURI: 'http://localhost/cb' },
        }),
        /^invalid AuthMethodName/,
      );
    }
    expectRefused(
      await h.call('POST', '/v1/acl/login', { body: { AuthMethodName: 'absent', LoginToken: 'x.y.z' } }),
      /^auth method absent not found$/,
    );
    // A state is a sort key: 500 characters of three bytes each are past DynamoDB's 1024 bytes.
    const oidc = { Name: 'sso', Type: 'OIDC', MaxTokenTTL: '1h' };
    const config = {
      OIDCDiscoveryURL: 'http://127.0.0.1:1',
      OIDCClientID: 'c',
      OIDCClientSecret: 's',
      AllowedRedirectURIs: ['http://localhost/cb'],
    };
    expect((await mgmt('POST', '/v1/acl/auth-method', { ...oidc, Config: config })).status).toBe(200);
    for (const state of ['中'.repeat(500), 's'.repeat(2000)]) {
      const body = {
        AuthMethodName: 'sso',
        ClientNonce: 'n',
        State: state,
        Code: 'c',
        RedirectURI: 'http://localhost/cb',
      };
      expectRefused(await h.call('POST', '/v1/acl/oidc/complete-auth', { body }), /^OIDC state not found or expired/);
    }
  });

  it('a login whose claim computes a role name no role can have is refused (400, as Nomad), and a real one still binds', async () => {
    const sign = (team: string) =>
      new SignJWT({ team })
        .setProtectedHeader({ alg: 'EdDSA' })
        .setIssuedAt(Math.floor(h.clock.now() / 1000))
        .setExpirationTime(Math.floor(h.clock.now() / 1000) + 300)
        .sign(signingKey);
    const bad = await h.call('POST', '/v1/acl/login', {
      body: { AuthMethodName: 'corp', LoginToken: await sign(longer) },
    });
    expect(bad.status).toBe(400);
    expect(bad.text).toMatch(/^computed "role" bind name for bind target is invalid: "b+"$/);
    const good = await h.call('POST', '/v1/acl/login', {
      body: { AuthMethodName: 'corp', LoginToken: await sign('eng') },
    });
    expect(good.status).toBe(200);
    expect(good.body.Roles).toEqual([expect.objectContaining({ Name: 'eng' })]);
  });
});
