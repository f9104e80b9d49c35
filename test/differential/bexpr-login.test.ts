// biome-ignore-all lint/suspicious/noTemplateCurlyInString: bind names are HIL templates, `${…}` is their syntax
/**
 * What a user sees of go-bexpr v0.1.13 semantics through the API: binding rules written with selectors Nomad
 * would refuse are refused (400), and at login a selector matches exactly when go-bexpr's would: numbers compare,
 * a failure mid-selector is no match, RE2 syntax works. Bind names interpolate as Nomad's binder does.
 */
import { type CryptoKey, exportSPKI, generateKeyPair, type JWTPayload, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SchedulerHarness, startScheduler } from '../support/scheduler-harness.ts';

describe('binding-rule selectors and bind names through the API', () => {
  let h: SchedulerHarness;
  let root: string;
  let key: CryptoKey;
  const mgmt = (method: string, path: string, body?: unknown) =>
    h.call(method, path, { token: root, ...(body === undefined ? {} : { body }) });
  const sign = (claims: JWTPayload) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'EdDSA' })
      .setExpirationTime(Math.floor(h.clock.now() / 1000) + 300)
      .sign(key);
  const login = async (claims: JWTPayload) =>
    h.call('POST', '/v1/acl/login', { body: { AuthMethodName: 'claims', LoginToken: await sign(claims) } });
  const rule = (Selector: string, BindName = 'granted') =>
    mgmt('POST', '/v1/acl/binding-rule', { AuthMethod: 'claims', BindType: 'policy', BindName, Selector });

  beforeAll(async () => {
    h = await startScheduler();
    root = await h.bootstrap();
    const pair = await generateKeyPair('EdDSA', { extractable: true });
    key = pair.privateKey;
    for (const name of ['granted', 'team-ada', 'eng']) {
      expect(
        (await mgmt('POST', `/v1/acl/policy/${name}`, { Rules: 'namespace "default" { policy = "read" }' })).status,
      ).toBe(200);
    }
    const method = await mgmt('POST', '/v1/acl/auth-method', {
      Name: 'claims',
      Type: 'JWT',
      MaxTokenTTL: '1h',
      Config: {
        JWTValidationPubKeys: [await exportSPKI(pair.publicKey)],
        ClaimMappings: { sub: 'user', num: 'num', email: 'email' },
        ListClaimMappings: { groups: 'groups' },
      },
    });
    expect(method.status).toBe(200);
  });
  afterAll(async () => {
    await h?.close();
  });

  it('refuses at write what go-bexpr or RE2 refuses, naming the problem', async () => {
    for (const [selector, message] of [
      ['group-name in list.groups', /selector is invalid: 1:6 \(5\): no match found/],
      ['value."first-name" == "x"', /selector is invalid: 1:7 \(6\)/],
      ['value.num == 042', /selector is invalid: 1:15 \(14\): rule "number": Invalid number literal/],
      ['value.user == "a\\"b"', /selector is invalid: 1:15 \(14\): rule "string": invalid syntax/],
      [
        'value.user matches "(?=a)"',
        /selector is invalid: .*Failed to compile regular expression.*invalid or unsupported Perl syntax/,
      ],
      ['value.user matches `(a)\\1`', /selector is invalid: .*Failed to compile regular expression/],
    ] as const) {
      const reply = await rule(selector);
      expect(reply.status, selector).toBe(400);
      expect(reply.text, selector).toMatch(message);
    }
    for (const selector of [
      'value.user matches `(?i)^ADA$`',
      'value.user matches `^\\pL+$`',
      'any list.groups as g { g == "eng" }',
      '"/value/user" == "ada"',
    ]) {
      expect((await rule(selector)).status, selector).toBe(200);
    }
  });

  it('matches at login exactly where go-bexpr does', async () => {
    // Fresh rules: each binds its own policy only when its selector holds.
    for (const { ID } of (await mgmt('GET', '/v1/acl/binding-rules')).body as { ID: string }[]) {
      expect((await mgmt('DELETE', `/v1/acl/binding-rule/${ID}`)).status).toBe(200);
    }
    expect((await rule('value.num != 42')).status).toBe(200); // must not match 42
    expect((await rule('list.groups.5 != "eng"')).status).toBe(200); // index past the end: an error, no match
    expect((await rule('value.missing.x != "a"')).status).toBe(200); // a missing key mid-selector: no match
    expect((await rule('value.num == 42 and value.user matches `(?i)^ADA$`', 'team-${value.user}')).status).toBe(200);
    expect((await rule('any list.groups as g { g == "eng" }', '${value.email == "" ? "none" : "eng"}')).status).toBe(
      200,
    );
    const out = await login({ sub: 'Ada', num: 42, email: 'ada@example.com', groups: ['eng', 'ops'] });
    expect(out.status).toBe(200);
    expect([...out.body.Policies].sort()).toEqual(['eng', 'team-ada']);
    // 43 differs from 42: only the `!=` rules' first one holds.
    const other = await login({ sub: 'bob', num: 43, groups: [] });
    expect(other.status).toBe(200);
    expect(other.body.Policies).toEqual(['granted']);
  });

  it('fails the login when a matching rule computes a name Nomad would refuse', async () => {
    expect((await rule('value.user == "eve"', 'team ${value.user}')).status).toBe(200);
    const out = await login({ sub: 'eve', num: 1, groups: [] });
    expect(out.status).toBe(400);
    expect(out.text).toBe('computed "policy" bind name for bind target is invalid: "team eve"');
  });
});
