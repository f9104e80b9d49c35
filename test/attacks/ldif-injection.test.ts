import { exportSPKI, generateKeyPair, SignJWT } from 'jose';
import { Client } from 'ldapts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LdapEngine, startLdapEngine } from '../support/ldap-engine.ts';
import { deletionLdif, rollbackLdif } from '../support/ldif-fixtures.ts';
import { adminDn, adminPassword, dynamicDn, groupsDn } from '../support/slapd.ts';

/**
 * Issue 23 §8, LDIF injection. Attacker: anyone who can log in through the JWT auth method (their identity
 * provider lets them choose their `sub`, or a display name claim) and may read `ldap/creds/<role>`. They try to put a
 * new line (`\n`, `\r\n`), or a leading space, ":" or "<", into their display name so that the dynamic role's LDIF,
 * rendered with `{{.DisplayName}}` / `{{.Username}}`, gains an attribute (`description`, `userPassword`, a group
 * `member`) or a whole entry of their choosing. They must never reach the directory with it: the request is refused
 * with a 400 naming the value, and a search of slapd (the real server) finds no injected attribute or entry.
 */

const creationLdif = `dn: cn={{.Username}},${dynamicDn}
objectClass: inetOrgPerson
cn: {{.Username}}
sn: {{.DisplayName}}
description: issued to {{.DisplayName}}
userPassword: {{.Password}}
`;

let e: LdapEngine;
let privateKey: CryptoKey;

beforeAll(async () => {
  e = await startLdapEngine();
  await e.configure();
  const keys = await generateKeyPair('ES256', { extractable: true });
  privateKey = keys.privateKey;
  const root = (method: string, path: string, body?: unknown) => e.h.call(method, path, { token: e.h.rootToken, body });
  expect((await root('POST', '/v1/sys/auth/jwt', { type: 'jwt' })).status).toBe(204);
  expect(
    (await root('POST', '/v1/auth/jwt/config', { jwt_validation_pubkeys: [await exportSPKI(keys.publicKey)] })).status,
  ).toBe(204);
  expect(
    (await root('PUT', '/v1/sys/policies/acl/dyn', { policy: 'path "ldap/creds/dyn" { capabilities = ["read"] }' }))
      .status,
  ).toBe(204);
  const role = await root('POST', '/v1/auth/jwt/role/dev', {
    role_type: 'jwt',
    user_claim: 'sub',
    bound_audiences: 'keyhaven',
    token_policies: 'dyn',
  });
  expect(role.status, JSON.stringify(role.body)).toBe(204);
  const dynamic = await e.call('POST', 'role/dyn', {
    creation_ldif: creationLdif,
    deletion_ldif: deletionLdif,
    rollback_ldif: rollbackLdif,
  });
  expect(dynamic.status, JSON.stringify(dynamic.body)).toBe(204);
});
afterAll(() => e?.close());

/** A login as `sub`: the token the attacker then reads creds with. */
async function loginAs(sub: string): Promise<string> {
  // The harness's clock (not the wall clock) is the service's now.
  const now = Math.floor(e.h.clock.now() / 1000);
  const jwt = await new SignJWT({ sub })
    .setProtectedHeader({ alg: 'ES256' })
    .setAudience('keyhaven')
    .setIssuedAt(now)
    .setExpirationTime(now + 600)
    .sign(privateKey);
  const reply = await e.h.call('POST', '/v1/auth/jwt/login', { body: { role: 'dev', jwt } });
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return reply.body.auth.client_token as string;
}

/** Everything under ou=dynamic and the developers group, as slapd holds them (searched as the directory's admin). */
async function directoryState(): Promise<{ entries: Array<Record<string, unknown>>; developers: unknown }> {
  const client = new Client({ url: e.slapd.url });
  try {
    await client.bind(adminDn, adminPassword);
    const { searchEntries } = await client.search(dynamicDn, { scope: 'sub', filter: '(objectClass=*)' });
    const group = await client.search(`cn=developers,${groupsDn}`, { scope: 'base', attributes: ['member'] });
    return { entries: searchEntries.map((entry) => ({ ...entry })), developers: group.searchEntries[0]?.member };
  } finally {
    await client.unbind();
  }
}

describe('LDIF injection through a login display name (issue 23 §8): JWT user → dynamic role LDIF', () => {
  const attempts: Array<[string, string]> = [
    ['a new line that adds an attribute', 'mallory\ndescription: injected-attribute'],
    ['a CRLF that adds a password', 'mallory\r\nuserPassword: injected-password'],
    [
      'a blank line that starts a new entry',
      `mallory\n\ndn: cn=injected-entry,${dynamicDn}\nobjectClass: inetOrgPerson\ncn: injected-entry\nsn: x`,
    ],
    [
      'a new line that joins a group',
      `mallory\n\ndn: cn=developers,${groupsDn}\nchangetype: modify\nadd: member\nmember: cn=injected-member,${dynamicDn}\n-`,
    ],
    ['a NUL', 'mallory\u0000x'],
    ['a Unicode line separator', 'mallory\u2028description: injected-attribute'],
  ];

  for (const [what, sub] of attempts) {
    it(`refuses ${what} with a 400 naming the display name, and slapd gains nothing`, async () => {
      const before = await directoryState();
      const token = await loginAs(sub);
      const reply = await e.h.call('GET', '/v1/ldap/creds/dyn', { token });
      expect(reply.status, JSON.stringify(reply.body)).toBe(400);
      expect(reply.body.errors[0]).toMatch(
        /display name cannot be written into the role's LDIF: it holds the control character U\+/,
      );
      const after = await directoryState();
      expect(after).toEqual(before);
      expect(JSON.stringify(after)).not.toMatch(/injected/);
    });
  }

  it('a leading space, ":" or "<" in a rendered username is refused (LDIF would not read it back as given)', async () => {
    // The role writer chooses the username template; a display name at its start must not change how LDIF reads it.
    expect(
      (
        await e.call('POST', 'role/raw', {
          creation_ldif: creationLdif,
          deletion_ldif: deletionLdif,
          username_template: '{{.DisplayName | replace "jwt-" ""}}',
        })
      ).status,
    ).toBe(204);
    expect(
      (
        await e.h.call('PUT', '/v1/sys/policies/acl/dyn', {
          token: e.h.rootToken,
          body: { policy: 'path "ldap/creds/*" { capabilities = ["read"] }' },
        })
      ).status,
    ).toBe(204);
    for (const sub of [' mallory', ':bWFsbG9yeQ==', '<file:///etc/passwd']) {
      const before = await directoryState();
      const reply = await e.h.call('GET', '/v1/ldap/creds/raw', { token: await loginAs(sub) });
      expect(reply.status, `${JSON.stringify(sub)}: ${JSON.stringify(reply.body)}`).toBe(400);
      expect(reply.body.errors[0]).toMatch(/generated username cannot be written into the role's LDIF: it starts with/);
      expect(await directoryState()).toEqual(before);
    }
  });

  it('an ordinary display name with ":" inside is written verbatim (stored as given, not reinterpreted)', async () => {
    const token = await loginAs('ma:llory');
    const reply = await e.h.call('GET', '/v1/ldap/creds/dyn', { token });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    const created = await e.slapd.entry(`cn=${reply.body.data.username},${dynamicDn}`);
    expect(created?.sn).toBe('jwt-ma:llory');
    expect(created?.description).toBe('issued to jwt-ma:llory');
  });
});
