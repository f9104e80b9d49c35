import { Client, InvalidDNSyntaxError, NoSuchObjectError } from 'ldapts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonLogger } from '../../packages/core/src/lib/log.ts';
import { dnProblem } from '../../packages/core/src/secrets/engines/ldap/dn.ts';
import { rotateDue } from '../../packages/core/src/secrets/engines/ldap/rotation.ts';
import { ConditionFailed } from '../../packages/core/src/storage/store.ts';
import { failRecording, type LdapEngine, startLdapEngine } from '../support/ldap-engine.ts';
import { freePort, managerDn, managerPassword, peopleDn } from '../support/slapd.ts';

describe('ldap config and root rotation (real slapd)', () => {
  let e: LdapEngine;
  beforeAll(async () => {
    e = await startLdapEngine();
  });
  afterAll(() => e?.close());

  /** The bind password the engine holds now, proven to work against the directory. */
  async function currentRootPassword(): Promise<string> {
    const password = await e.storedPassword('config');
    expect(password).toBeTruthy();
    expect(await e.slapd.canBind(managerDn, password as string)).toBe(true);
    return password as string;
  }

  it('has no config until one is written', async () => {
    expect((await e.call('GET', 'config')).status).toBe(404);
    expect((await e.call('POST', 'rotate-root')).status).toBe(400);
  });

  it('requires binddn and bindpass', async () => {
    const noPass = await e.call('POST', 'config', { binddn: managerDn, url: e.slapd.url });
    expect(noPass.status).toBe(400);
    expect(noPass.body.errors[0]).toContain('bindpass');
    const noDn = await e.call('POST', 'config', { bindpass: 'x', url: e.slapd.url });
    expect(noDn.status).toBe(400);
    expect(noDn.body.errors[0]).toContain('binddn');
  });

  it('shows the documented fields with defaults and never the bind password', async () => {
    expect((await e.call('POST', 'config', { binddn: managerDn, bindpass: managerPassword })).status).toBe(204);
    const read = await e.call('GET', 'config');
    expect(read.status).toBe(200);
    expect(read.body.data).toMatchObject({
      binddn: managerDn,
      url: 'ldap://127.0.0.1',
      schema: 'openldap',
      userattr: 'cn',
      request_timeout: 90,
      connection_timeout: 30,
      tls_min_version: 'tls12',
      tls_max_version: 'tls12',
      starttls: false,
      insecure_tls: false,
      certificate: '',
      length: 64,
      password_policy: '',
      case_sensitive_names: false,
      skip_static_role_import_rotation: false,
      rotation_period: 0,
      rotation_schedule: '',
      rotation_window: 0,
      disable_automated_rotation: false,
    });
    expect(read.body.data).not.toHaveProperty('bindpass');
    expect(read.body.data).not.toHaveProperty('client_tls_key');
    expect(JSON.stringify(read.body)).not.toContain(managerPassword);
  });

  it('merges a POST into the stored config and keeps fields not sent', async () => {
    await e.configure({ userdn: 'ou=people,dc=example,dc=org', request_timeout: '45s' });
    expect((await e.call('POST', 'config', { userattr: 'uid' })).status).toBe(204);
    const read = await e.call('GET', 'config');
    expect(read.body.data).toMatchObject({
      binddn: managerDn,
      url: e.slapd.url,
      userdn: 'ou=people,dc=example,dc=org',
      userattr: 'uid',
      request_timeout: 45,
    });
    await e.call('POST', 'config', { userattr: '' });
  });

  it('defaults userattr per schema', async () => {
    for (const [schema, userattr] of [
      ['ad', 'userPrincipalName'],
      ['racf', 'racfid'],
      ['openldap', 'cn'],
    ]) {
      expect((await e.call('POST', 'config', { schema })).status).toBe(204);
      expect((await e.call('GET', 'config')).body.data).toMatchObject({ schema, userattr });
    }
    const bad = await e.call('POST', 'config', { schema: 'novell' });
    expect(bad.status).toBe(400);
    expect(bad.body.errors[0]).toContain('schema');
  });

  it('rejects length together with password_policy, naming both', async () => {
    const both = await e.call('POST', 'config', { length: 20, password_policy: 'strong' });
    expect(both.status).toBe(400);
    expect(both.body.errors[0]).toContain('length');
    expect(both.body.errors[0]).toContain('password_policy');
    expect((await e.call('GET', 'config')).body.data).toMatchObject({ length: 64, password_policy: '' });
  });

  it('validates the rotation fields', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ rotation_period: '1h', rotation_schedule: '0 * * * *' }, 'rotation_schedule'],
      [{ rotation_period: 5 }, 'rotation_period'],
      [{ rotation_schedule: '0 * * * * *' }, 'rotation_schedule'],
      [{ rotation_schedule: 'every day' }, 'rotation_schedule'],
      [{ rotation_schedule: '0 3 * * *', rotation_window: '30m' }, 'rotation_window'],
      [{ rotation_period: '1h', rotation_window: '2h' }, 'rotation_window'],
      [{ rotation_period: 'soon' }, 'rotation_period'],
    ];
    for (const [body, field] of cases) {
      const response = await e.call('POST', 'config', body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.errors[0]).toContain(field);
    }
    expect((await e.call('POST', 'config', { rotation_schedule: '0 3 * * *', rotation_window: '2h' })).status).toBe(
      204,
    );
    expect((await e.call('GET', 'config')).body.data).toMatchObject({
      rotation_schedule: '0 3 * * *',
      rotation_window: 7200,
      rotation_period: 0,
    });
    // Choosing a period replaces the schedule; the window then no longer applies and must go.
    expect((await e.call('POST', 'config', { rotation_period: '1h' })).status).toBe(400);
    expect((await e.call('POST', 'config', { rotation_period: '1h', rotation_window: 0 })).status).toBe(204);
    expect((await e.call('GET', 'config')).body.data).toMatchObject({ rotation_schedule: '', rotation_period: 3600 });
    expect((await e.call('POST', 'config', { rotation_period: 0 })).status).toBe(204);
  });

  it('validates url, certificates and TLS versions', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ url: 'http://127.0.0.1' }, 'url'],
      [{ certificate: 'not a pem' }, 'certificate'],
      [{ client_tls_cert: e.slapd.clientCert }, 'client_tls_key'],
      [{ tls_min_version: 'tls13', tls_max_version: 'tls12' }, 'tls_min_version'],
      [{ tls_min_version: 'ssl3' }, 'tls_min_version'],
      [{ length: 2 }, 'length'],
    ];
    for (const [body, field] of cases) {
      const response = await e.call('POST', 'config', body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.errors[0]).toContain(field);
    }
  });

  it('rotate-root sets a new password in the directory that only the engine knows', async () => {
    await e.configure();
    const rotated = await e.call('POST', 'rotate-root');
    expect(rotated.status, JSON.stringify(rotated.body)).toBe(204);
    const first = await currentRootPassword();
    expect(first).toMatch(/^[A-Za-z0-9]{64}$/);
    expect(await e.slapd.canBind(managerDn, managerPassword)).toBe(false);
    expect(JSON.stringify((await e.call('GET', 'config')).body)).not.toContain(first);
    expect((await e.call('GET', 'config')).body.data.last_bind_password_rotation).toBe(
      new Date(e.h.clock.now() - (e.h.clock.now() % 1000)).toISOString(),
    );

    // The engine keeps working with the password it set, and rotates again.
    expect((await e.call('POST', 'rotate-root')).status).toBe(204);
    const second = await currentRootPassword();
    expect(second).not.toBe(first);
    expect(await e.slapd.canBind(managerDn, first)).toBe(false);
    const item = await e.item('config');
    expect(item?.pending).toBeUndefined();
  });

  it('uses the deprecated length, then a password policy', async () => {
    await e.call('POST', 'config', { length: 12 });
    expect((await e.call('POST', 'rotate-root')).status).toBe(204);
    expect(await currentRootPassword()).toMatch(/^[A-Za-z0-9]{12}$/);

    const missing = await e.call('POST', 'config', { length: 0, password_policy: 'digits-and-dashes' });
    expect(missing.status).toBe(204);
    const noPolicy = await e.call('POST', 'rotate-root');
    expect(noPolicy.status).toBe(400);
    expect(noPolicy.body.errors[0]).toContain('digits-and-dashes');

    const policy =
      'length = 20\nrule "charset" {\n  charset = "0123456789"\n  min-chars = 2\n}\nrule "charset" {\n  charset = "-"\n  min-chars = 1\n}\n';
    expect(
      (
        await e.h.call('POST', '/v1/sys/policies/password/digits-and-dashes', {
          token: e.h.rootToken,
          body: { policy },
        })
      ).status,
    ).toBe(204);
    expect((await e.call('POST', 'rotate-root')).status).toBe(204);
    const password = await currentRootPassword();
    expect(password).toMatch(/^[0-9-]{20}$/);
    expect(password).toContain('-');
    await e.call('POST', 'config', { password_policy: '' });
  });

  it('rolls the directory back when storing the new root password fails', async () => {
    const before = await currentRootPassword();
    const spy = failRecording(e, 'config', new ConditionFailed('simulated storage failure'));
    try {
      const response = await e.call('POST', 'rotate-root');
      expect(response.status).toBe(502);
      expect(response.body.errors[0]).toContain('rolled back');
    } finally {
      spy.mockRestore();
    }
    expect(await currentRootPassword()).toBe(before);
    expect((await e.item('config'))?.pending).toBeUndefined();
    expect((await e.call('POST', 'rotate-root')).status).toBe(204);
  });

  it('recovers a root rotation that reached the directory but was never recorded', async () => {
    const before = await currentRootPassword();
    const storage = await e.storage();
    // A run that wrote ahead and changed the directory, then died.
    const orphan = 'pending-password-from-a-crashed-run';
    await storage.update('config', {
      set: {
        pending: storage.seal('config', orphan),
        pendingId: 'crashed',
        pendingUntil: Math.floor(e.h.clock.now() / 1000) + 60,
      },
    });
    await e.slapd.entry(managerDn);
    const { Client } = await import('ldapts');
    const admin = new Client({ url: e.slapd.url });
    await admin.bind('cn=admin,dc=example,dc=org', 'admin-secret');
    await admin.modify(
      managerDn,
      (await import('../../packages/core/src/secrets/engines/ldap/schemas.ts')).passwordChanges('openldap', orphan),
    );
    await admin.unbind();
    expect(await e.slapd.canBind(managerDn, before)).toBe(false);

    // The directory takes the pending password: the change had landed, so the next one records it and goes on
    // at once, without waiting for the crashed run's window.
    expect((await e.call('POST', 'rotate-root')).status).toBe(204);
    const after = await currentRootPassword();
    expect(after).not.toBe(orphan);
    expect(await e.slapd.canBind(managerDn, orphan)).toBe(false);
    expect((await e.item('config'))?.pending).toBeUndefined();
  });

  it('binds with the root password a killed rotation left in the directory, without waiting for its window', async () => {
    const storage = await e.storage();
    const orphan = 'root-changed-then-killed';
    await storage.update('config', {
      set: {
        pending: storage.seal('config', orphan),
        pendingId: 'killed',
        pendingUntil: Math.floor(e.h.clock.now() / 1000) + 150,
      },
    });
    const { Client } = await import('ldapts');
    const admin = new Client({ url: e.slapd.url });
    await admin.bind('cn=admin,dc=example,dc=org', 'admin-secret');
    await admin.modify(
      managerDn,
      (await import('../../packages/core/src/secrets/engines/ldap/schemas.ts')).passwordChanges('openldap', orphan),
    );
    await admin.unbind();
    // Any operation that needs the directory settles it first, instead of binding with the dead password.
    const role = await e.call('POST', 'static-role/after-root-crash', {
      username: 'frank',
      dn: `cn=frank,${peopleDn}`,
      rotation_period: '1h',
    });
    expect(role.status, JSON.stringify(role.body)).toBe(204);
    expect(await currentRootPassword()).toBe(orphan);
    expect((await e.item('config'))?.pending).toBeUndefined();
    expect((await e.call('DELETE', 'static-role/after-root-crash')).status).toBe(204);
  });

  it('waits out a root write-ahead that the directory does not take while its run may still be under way', async () => {
    const before = await currentRootPassword();
    const storage = await e.storage();
    await storage.update('config', {
      set: {
        pending: storage.seal('config', 'not-yet-applied'),
        pendingId: 'running',
        pendingUntil: Math.floor(e.h.clock.now() / 1000) + 60,
      },
    });
    // The engine cannot bind without its own password, so a root change never adopts another's.
    const busy = await e.call('POST', 'rotate-root');
    expect(busy.status).toBe(400);
    expect(busy.body.errors[0]).toContain('in progress');
    expect(await currentRootPassword()).toBe(before);
    e.h.clock.advance(61);
    expect((await e.call('POST', 'rotate-root')).status).toBe(204);
    expect(await currentRootPassword()).not.toBe(before);
    expect((await e.item('config'))?.pending).toBeUndefined();
  });

  it('tries each url in order on connection errors', async () => {
    const dead = `ldap://127.0.0.1:${await freePort()}`;
    await e.call('POST', 'config', { url: `${dead},${e.slapd.url}`, bindpass: await e.storedPassword('config') });
    expect((await e.call('POST', 'rotate-root')).status).toBe(204);
    await currentRootPassword();
    await e.call('POST', 'config', { url: dead, bindpass: await e.storedPassword('config') });
    const down = await e.call('POST', 'rotate-root');
    expect(down.status).toBe(502);
    expect(down.body.errors[0]).toContain(dead);
    expect((await e.item('config'))?.pending).toBeUndefined();
    await e.call('POST', 'config', { url: e.slapd.url, bindpass: await e.storedPassword('config') });
    await currentRootPassword();
  });

  it('connects with StartTLS and LDAPS, verifying the server with the configured CA', async () => {
    await e.call('POST', 'config', {
      starttls: true,
      certificate: e.slapd.caCert,
      bindpass: await e.storedPassword('config'),
    });
    expect((await e.call('POST', 'rotate-root')).status).toBe(204);
    await currentRootPassword();

    await e.call('POST', 'config', { starttls: true, certificate: '', bindpass: await e.storedPassword('config') });
    const untrusted = await e.call('POST', 'rotate-root');
    expect(untrusted.status).toBe(502);
    await e.call('POST', 'config', { insecure_tls: true, bindpass: await e.storedPassword('config') });
    expect((await e.call('POST', 'rotate-root')).status).toBe(204);

    await e.call('POST', 'config', {
      starttls: false,
      insecure_tls: false,
      url: e.slapd.ldapsUrl,
      certificate: e.slapd.caCert,
      client_tls_cert: e.slapd.clientCert,
      client_tls_key: e.slapd.clientKey,
      tls_max_version: 'tls13',
      bindpass: await e.storedPassword('config'),
    });
    const read = await e.call('GET', 'config');
    expect(read.body.data.client_tls_cert).toBe(e.slapd.clientCert);
    expect(JSON.stringify(read.body)).not.toContain('PRIVATE KEY');
    expect((await e.call('POST', 'rotate-root')).status).toBe(204);
    await currentRootPassword();

    await e.call('POST', 'config', {
      url: e.slapd.url,
      starttls: false,
      certificate: '',
      client_tls_cert: '',
      client_tls_key: '',
      tls_max_version: 'tls12',
      bindpass: await e.storedPassword('config'),
    });
  });

  it('rotates the root password automatically on its period and on its schedule', async () => {
    expect((await e.call('POST', 'config', { rotation_period: '1m' })).status).toBe(204);
    const before = await currentRootPassword();
    e.h.clock.advance(30);
    expect((await rotateDue(e.h.core)).rotated).toBe(0);
    expect(await currentRootPassword()).toBe(before);
    e.h.clock.advance(31);
    expect(await rotateDue(e.h.core)).toEqual({ rotated: 1, failed: 0 });
    const after = await currentRootPassword();
    expect(after).not.toBe(before);
    expect(await e.slapd.canBind(managerDn, before)).toBe(false);

    // disable_automated_rotation stops it until unset.
    await e.call('POST', 'config', { disable_automated_rotation: true });
    e.h.clock.advance(120);
    expect((await rotateDue(e.h.core)).rotated).toBe(0);
    expect(await currentRootPassword()).toBe(after);

    // A schedule: every 5 minutes (UTC).
    await e.call('POST', 'config', {
      disable_automated_rotation: false,
      rotation_period: 0,
      rotation_schedule: '*/5 * * * *',
    });
    const scheduled = (await e.item('config'))?.dueAt as number;
    expect(scheduled % 300).toBe(0);
    e.h.clock.advance(scheduled - Math.floor(e.h.clock.now() / 1000));
    expect((await rotateDue(e.h.core)).rotated).toBe(1);
    expect(await currentRootPassword()).not.toBe(after);
    expect((await e.item('config'))?.dueAt).toBe(scheduled + 300);
    await e.call('POST', 'config', { rotation_schedule: '' });
    expect((await e.item('config'))?.dueAt).toBeUndefined();
  });

  it('keeps the old root password when the directory is down, and retries', async () => {
    await e.call('POST', 'config', { rotation_period: '1m' });
    const before = await currentRootPassword();
    await e.slapd.stop();
    try {
      e.h.clock.advance(61);
      expect(await rotateDue(e.h.core)).toEqual({ rotated: 0, failed: 1 });
      expect((await e.item('config'))?.attempts).toBe(1);
    } finally {
      await e.slapd.start();
    }
    expect(await currentRootPassword()).toBe(before);
    e.h.clock.advance(11);
    expect(await rotateDue(e.h.core)).toEqual({ rotated: 1, failed: 0 });
    expect(await currentRootPassword()).not.toBe(before);
    await e.call('POST', 'config', { rotation_period: 0 });
  });

  it('deletes the config', async () => {
    expect((await e.call('DELETE', 'config')).status).toBe(204);
    expect((await e.call('GET', 'config')).status).toBe(404);
  });
});

describe('ldap config that cannot work is refused at write (real slapd)', () => {
  let e: LdapEngine;
  const lines: Array<Record<string, unknown>> = [];
  beforeAll(async () => {
    e = await startLdapEngine({ log: jsonLogger((line) => lines.push(JSON.parse(line))) });
  });
  afterAll(() => e?.close());

  const good = () => ({ binddn: managerDn, bindpass: managerPassword, url: e.slapd.url, userdn: peopleDn });

  /** Answers of slapd's own DN parser: 34 (invalidDNSyntax) or anything else for a well-formed DN. */
  async function slapdSaysInvalid(dn: string): Promise<boolean> {
    const client = new Client({ url: e.slapd.url, strictDN: false });
    try {
      await client.bind(managerDn, managerPassword);
      await client.search(dn, { scope: 'base', attributes: ['dn'] });
      return false;
    } catch (error) {
      if (error instanceof InvalidDNSyntaxError) return true;
      if (error instanceof NoSuchObjectError) return false;
      throw error;
    } finally {
      await client.unbind().catch(() => undefined);
    }
  }

  it('checks DNs as slapd parses them', async () => {
    const cases = [
      managerDn,
      'cn=Smith\\, John,ou=people,dc=example,dc=org',
      'cn=a\\2Cb, ou=people, dc=example, dc=org',
      'CN=Manager,DC=Example,DC=Org',
      'cn=a+sn=b,dc=example,dc=org',
      '2.5.4.3=x,dc=example,dc=org',
      'cn=\\#hash,dc=example,dc=org',
      '\bnot a dn',
      'not a dn',
      'cn=a,,dc=example',
      'cn=a,dc=example,',
      '=x,dc=example',
      'c n=x',
      'cn=a\\zz,dc=example',
      'cn=#zz,dc=example',
      'cn=a"b,dc=example',
      'cn=a<b,dc=example',
    ];
    const disagreements: string[] = [];
    for (const dn of cases) {
      const ours = dnProblem(dn) !== undefined;
      const theirs = await slapdSaysInvalid(dn);
      if (ours !== theirs)
        disagreements.push(
          `${JSON.stringify(dn)}: ours ${ours ? 'invalid' : 'valid'}, slapd ${theirs ? 'invalid' : 'valid'}`,
        );
    }
    expect(disagreements).toEqual([]);
  });

  it('refuses a binddn or userdn that is not a DN with a 400 naming the field, and stores nothing', async () => {
    for (const [field, value] of [
      ['binddn', '\bnot a dn'],
      ['binddn', 'admin'],
      ['userdn', 'people'],
      ['userdn', 'ou=people,,dc=example'],
    ] as const) {
      const reply = await e.call('POST', 'config', { ...good(), [field]: value });
      expect(reply.status, `${field}=${JSON.stringify(value)}`).toBe(400);
      expect(reply.body.errors[0]).toContain(`"${field}"`);
      expect(reply.body.errors[0]).toContain('distinguished name');
    }
    expect((await e.call('GET', 'config')).status).toBe(404);
    // With a UPN domain the bind name is a user name, as Active Directory takes it.
    expect((await e.call('POST', 'config', { ...good(), binddn: 'manager', upndomain: 'example.org' })).status).toBe(
      204,
    );
    const badDomain = await e.call('POST', 'config', { upndomain: 'example .org' });
    expect(badDomain.status).toBe(400);
    expect(badDomain.body.errors[0]).toContain('"upndomain"');
    // The UPN domain is still set, so the engine binds as `<binddn>@example.org`, which slapd refuses: kept, with a warning.
    const upnBind = await e.call('POST', 'config', good());
    expect(upnBind.status).toBe(200);
    expect(upnBind.body.warnings[0]).toContain('the directory refused to bind');
    expect((await e.call('POST', 'config', { upndomain: '' })).status).toBe(204);
    const unchanged = await e.call('POST', 'config', { binddn: '\bnot a dn' });
    expect(unchanged.status).toBe(400);
    expect((await e.call('GET', 'config')).body.data.binddn).toBe(managerDn);
  });

  it('refuses URLs without an ldap scheme, a host or a valid port', async () => {
    for (const url of [
      'ldap://',
      'ldap://:389',
      'ldaps://127.0.0.1:99999',
      'http://127.0.0.1',
      'ldap://127.0.0.1/dc=x',
      'ldap://a b',
      `${e.slapd.url},ldap://`,
    ]) {
      const reply = await e.call('POST', 'config', { url });
      expect(reply.status, url).toBe(400);
      expect(reply.body.errors[0]).toContain('"url"');
    }
    expect(
      (
        await e.call('POST', 'config', {
          url: `${e.slapd.url}, ${e.slapd.ldapsUrl}`,
          bindpass: await e.storedPassword('config'),
        })
      ).status,
    ).toBe(204);
    expect((await e.call('GET', 'config')).body.data.url).toBe(`${e.slapd.url}, ${e.slapd.ldapsUrl}`);
    expect(
      (await e.call('POST', 'config', { url: e.slapd.url, bindpass: await e.storedPassword('config') })).status,
    ).toBe(204);
  });

  it('bounds "length" with a 400 naming it', async () => {
    for (const length of ['9007199254740993', 2 ** 53, 101, 2 ** 31, 3, -1, 'x']) {
      const reply = await e.call('POST', 'config', { length });
      expect(reply.status, JSON.stringify(length)).toBe(400);
      expect(reply.body.errors[0]).toContain('"length"');
    }
    expect((await e.call('POST', 'config', { length: '100' })).status).toBe(204);
    expect((await e.call('GET', 'config')).body.data.length).toBe(100);
    expect((await e.call('POST', 'config', { length: 0 })).status).toBe(204);
  });

  it('refuses a static role dn that is not a DN with a 400, not a 502', async () => {
    const reply = await e.call('POST', 'static-role/bad-dn', {
      username: 'alice',
      dn: 'uid=alice,,ou=people',
      rotation_period: '1h',
    });
    expect(reply.status).toBe(400);
    expect(reply.body.errors[0]).toContain('"dn"');
    expect((await e.call('GET', 'static-role/bad-dn')).status).toBe(404);
  });

  it('logs every 502 with the request id of the request that answered it', async () => {
    const closed = await freePort();
    expect(
      (
        await e.call('POST', 'config', {
          url: `ldap://127.0.0.1:${closed}`,
          bindpass: await e.storedPassword('config'),
        })
      ).status,
    ).toBe(204);
    lines.length = 0;
    const reply = await e.call('POST', 'static-role/unreachable', { username: 'alice', rotation_period: '1h' });
    expect(reply.status).toBe(502);
    const request = lines.find((line) => line.message === 'request' && line.status === 502);
    expect(request).toBeDefined();
    const failure = lines.find((line) => line.level === 'error' && line.requestId === request?.requestId);
    expect(failure).toMatchObject({ status: 502, error: reply.body.errors[0] });
    expect(String(failure?.error)).toContain('ECONNREFUSED');
    expect(
      (await e.call('POST', 'config', { url: e.slapd.url, bindpass: await e.storedPassword('config') })).status,
    ).toBe(204);
  });
});
