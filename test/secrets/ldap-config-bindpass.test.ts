import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LdapEngine, startLdapEngine } from '../support/ldap-engine.ts';
import { freePort, managerDn, managerPassword, peopleDn } from '../support/slapd.ts';

/**
 * Issue 24: a config that cannot work. A root token holder (the only writer of `ldap/config`) sends an empty bind
 * password, or one the directory refuses; the first must never be stored (every later directory call would be a
 * 502), the second is stored but said so, as Vault's engines warn on a failed connection check.
 */
describe('ldap config refuses an empty bindpass and warns when the directory refuses the bind (real slapd)', () => {
  let e: LdapEngine;
  beforeAll(async () => {
    e = await startLdapEngine();
  });
  afterAll(() => e?.close());

  const base = () => ({ binddn: managerDn, url: e.slapd.url, userdn: peopleDn });

  it('refuses an empty bindpass on the first write with a 400 naming bindpass, and stores nothing', async () => {
    const refused = await e.call('POST', 'config', { ...base(), bindpass: '' });
    expect(refused.status).toBe(400);
    expect(refused.body.errors[0]).toContain('"bindpass"');
    expect((await e.call('GET', 'config')).status).toBe(404);
  });

  it('refuses an empty bindpass on a later write, keeping the working one: directory calls go on working', async () => {
    expect((await e.call('POST', 'config', { ...base(), bindpass: managerPassword })).status).toBe(204);
    const refused = await e.call('POST', 'config', { bindpass: '' });
    expect(refused.status).toBe(400);
    expect(refused.body.errors[0]).toBe('invalid "bindpass": must not be empty; it is the password of "binddn"');
    expect(await e.storedPassword('config')).toBe(managerPassword);
    // A call that needs the directory: a static role is checked against it.
    expect((await e.call('POST', 'static-role/alice', { username: 'alice', rotation_period: '24h' })).status).toBe(204);
    expect((await e.call('GET', 'static-cred/alice')).status).toBe(200);
  });

  it('stores a bindpass the reachable directory refuses, with a warning saying every directory call will fail', async () => {
    const wrong = await e.call('POST', 'config', { bindpass: 'not-the-manager-password' });
    expect(wrong.status).toBe(200);
    expect(wrong.body.warnings).toEqual([
      `the directory refused to bind as "${managerDn}" with this "bindpass" (invalid credentials): every call to the directory will fail until "binddn" or "bindpass" is corrected`,
    ]);
    expect((await e.call('POST', 'rotate-root')).status).toBe(502);
    // Corrected: no warning, and the directory works again.
    const fixed = await e.call('POST', 'config', { bindpass: managerPassword });
    expect(fixed.status).toBe(204);
    expect((await e.call('GET', 'static-cred/alice')).status).toBe(200);
  });

  it('warns about a binddn the directory refuses, and checks nothing when the directory cannot be reached', async () => {
    const wrongDn = await e.call('POST', 'config', { binddn: `cn=nobody,${peopleDn}` });
    expect(wrongDn.status).toBe(200);
    expect(wrongDn.body.warnings[0]).toContain(`refused to bind as "cn=nobody,${peopleDn}"`);
    // Nothing listens on this port: nothing is known about the bind yet, so no warning (and no wait).
    const began = Date.now();
    const unreachable = await e.call('POST', 'config', {
      binddn: managerDn,
      bindpass: managerPassword,
      url: `ldap://127.0.0.1:${await freePort()}`,
    });
    expect(unreachable.status, JSON.stringify(unreachable.body)).toBe(204);
    expect(Date.now() - began).toBeLessThan(5000);
    expect((await e.call('POST', 'config', { url: e.slapd.url, bindpass: managerPassword })).status).toBe(204);
  });
});
