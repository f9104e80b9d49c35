import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkCursorKey } from '../../packages/core/src/secrets/engines/ldap/records.ts';
import { healCooldownSeconds, verifiedSeconds } from '../../packages/core/src/secrets/engines/ldap/account-heal.ts';
import type { Logger } from '../../packages/core/src/lib/log.ts';
import { accountCheckJob, accountDn, personDn, setDirectoryPassword } from '../support/ldap-heal.ts';
import { type LdapEngine, startLdapEngine } from '../support/ldap-engine.ts';
import { baseDn, managerDn, managerPassword } from '../support/slapd.ts';

/**
 * Issue 43: a static role or library account whose stored password the directory no longer takes (the table lost a
 * rotation the directory kept) is found and healed: at once by a read or check-out that verifies it, and by the
 * engine's account check (at start, after a restore, on its schedule), through the normal write-ahead path, with the
 * heal on the role's read, in the audit log and the server log. Real slapd, DynamoDB Local.
 */

describe('ldap: dead passwords heal (real slapd)', () => {
  let e: LdapEngine;
  const lines: Array<{ level: string; message: string; fields: Record<string, unknown> }> = [];
  const log: Logger = {
    info: (message, fields = {}) => lines.push({ level: 'info', message, fields }),
    error: (message, fields = {}) => lines.push({ level: 'error', message, fields }),
  };
  const kill = (dn: string) => setDirectoryPassword(e.slapd.url, dn, `lost-${Math.random()}`);
  const heals = (key: string) =>
    lines.filter((line) => line.message.startsWith('healed a password') && line.fields.key === key);
  const auditHeals = (key: string) =>
    e.h
      .auditLines()
      .map((line) => JSON.parse(line))
      .filter((entry) => entry.type === 'response' && entry.request.path === `ldap/heal/${key}`);

  beforeAll(async () => {
    process.env.KEYHAVEN_LDAP_CHECK_PER_SECOND = '200';
    process.env.KEYHAVEN_LDAP_CHECK_SECONDS = '600';
    e = await startLdapEngine({ log });
    await e.configure({ userdn: baseDn });
    for (const name of ['alice', 'bob', 'carol'])
      expect((await e.call('POST', `static-role/${name}`, { username: name, rotation_period: '24h' })).status).toBe(
        204,
      );
    expect(
      (await e.call('POST', 'library/pool', { service_account_names: ['svc-1', 'svc-2'], ttl: '1h' })).status,
    ).toBe(204);
  });
  afterAll(async () => {
    delete process.env.KEYHAVEN_LDAP_CHECK_PER_SECOND;
    delete process.env.KEYHAVEN_LDAP_CHECK_SECONDS;
    await e?.close();
  });

  it('a read finds the dead password, heals it at once and answers the new one', async () => {
    const before = (await e.call('GET', 'static-cred/alice')).body.data.password;
    await kill(personDn('alice'));
    // The first read verified the old value moments ago: past that, the next read verifies again.
    e.h.clock.advance(verifiedSeconds + 1);
    const read = await e.call('GET', 'static-cred/alice');
    expect(read.status, JSON.stringify(read.body)).toBe(200);
    expect(read.body.data.password).not.toBe(before);
    expect(await e.slapd.canBind(personDn('alice'), read.body.data.password)).toBe(true);
    expect(await e.storedPassword('static-role/alice')).toBe(read.body.data.password);

    const role = (await e.call('GET', 'static-role/alice')).body.data;
    expect(role).toMatchObject({
      username: 'alice',
      rotation_period: 86_400,
      last_healed: new Date(Math.floor(e.h.clock.now() / 1000) * 1000).toISOString(),
      heal_count: 1,
      last_heal_reason: 'read',
    });
    expect(role.last_service_rotation).toBe(role.last_healed);
    expect(heals('static-role/alice')).toHaveLength(1);
    const [audited] = auditHeals('static-role/alice');
    expect(audited.auth).toBeNull();
    expect(audited.request.remote_address).toBe('');
    expect(audited.response.warnings[0]).toContain('static role "alice"');
    // Settled through the write-ahead path: nothing left in flight.
    expect((await e.item('static-role/alice'))?.pending).toBeUndefined();
    expect((await (await e.storage()).items('wal/')).length).toBe(0);
  });

  it('the account check finds every dead password at start, and heals each once', async () => {
    await kill(personDn('bob'));
    await kill(accountDn('svc-1'));
    const storage = await e.storage();
    await accountCheckJob?.start?.(e.h.core);
    expect(await storage.getItem(checkCursorKey)).toBeUndefined();
    const ran = await accountCheckJob?.run(e.h.core);
    // Two healed (the run's work done), of the five checked.
    expect(ran).toEqual({ done: 2, failed: 0 });
    for (const [key, dn] of [
      ['static-role/bob', personDn('bob')],
      ['library-account/svc-1', accountDn('svc-1')],
    ] as const) {
      expect(await e.slapd.canBind(dn, (await e.storedPassword(key)) as string)).toBe(true);
      expect(heals(key)).toHaveLength(1);
      expect(heals(key)[0]?.fields.reason).toBe('start check');
      expect(auditHeals(key)).toHaveLength(1);
    }
    // Accounts that bound were not rotated.
    expect((await e.call('GET', 'static-role/carol')).body.data).toMatchObject({ heal_count: 0, last_healed: null });
    // The library status shows the heal beside Vault's fields.
    expect((await e.call('GET', 'library/pool/status')).body.data).toEqual({
      'svc-1': { available: true, last_healed: expect.any(String), heal_count: 1, last_heal_reason: 'start check' },
      'svc-2': { available: true },
    });
    // The pass is done: the next falls due after the interval (600 s, jittered by at most a quarter).
    const cursor = await storage.getItem<{ nextAt: number }>(checkCursorKey);
    const now = Math.floor(e.h.clock.now() / 1000);
    expect(cursor?.nextAt).toBeGreaterThanOrEqual(now + 450);
    expect(cursor?.nextAt).toBeLessThanOrEqual(now + 750);
    expect(await accountCheckJob?.run(e.h.core)).toEqual({ done: 0, failed: 0 });
  });

  it('a checked-out account is healed under the same check-out and lease', async () => {
    const out = await e.call('POST', 'library/pool/check-out');
    expect(out.status).toBe(200);
    const name = out.body.data.service_account_name as string;
    const key = `library-account/${name}`;
    const before = await e.item(key);
    await kill(accountDn(name));
    e.h.clock.advance(800);
    expect(await accountCheckJob?.run(e.h.core)).toMatchObject({ failed: 0 });
    const after = await e.item(key);
    expect(after?.healCount).toBe((before?.healCount ?? 0) + 1);
    expect(after?.lastHealReason).toBe('scheduled check');
    expect(await e.slapd.canBind(accountDn(name), (await e.storedPassword(key)) as string)).toBe(true);
    // Still out, to the same borrower, under the same check-out and lease: renewable, and checked in as before.
    expect(after).toMatchObject({
      available: false,
      checkoutId: before?.checkoutId,
      leaseId: before?.leaseId,
      borrowerHash: before?.borrowerHash,
    });
    const renewed = await e.h.call('PUT', '/v1/sys/leases/renew', {
      token: e.h.rootToken,
      body: { lease_id: out.body.lease_id },
    });
    expect(renewed.status, JSON.stringify(renewed.body)).toBe(200);
    const back = await e.call('POST', 'library/manage/pool/check-in', { service_account_names: [name] });
    expect(back.body.data.check_ins).toEqual([name]);
    expect((await e.item(key))?.available).toBe(true);
  });

  it('a check-out never lends a dead password: it heals it first, or lends another', async () => {
    for (const name of ['svc-1', 'svc-2']) await kill(accountDn(name));
    e.h.clock.advance(verifiedSeconds + 1);
    // svc-1 was healed moments ago (the test before): within its cool-down it is not lent, and stays available.
    const out = await e.call('POST', 'library/pool/check-out');
    expect(out.status, JSON.stringify(out.body)).toBe(200);
    expect(out.body.data.service_account_name).toBe('svc-2');
    expect(await e.slapd.canBind(accountDn('svc-2'), out.body.data.password)).toBe(true);
    expect((await e.item('library-account/svc-2'))?.lastHealReason).toBe('check-out');
    expect((await e.item('library-account/svc-1'))?.available).toBe(true);
    // With both out of reach (svc-2 lent, svc-1 cooling): a 502 naming the account, nothing left claimed.
    const none = await e.call('POST', 'library/pool/check-out');
    expect(none.status).toBe(502);
    expect(none.body.errors[0]).toContain('library account "svc-1"');
    expect(await e.item('library-account/svc-1')).toMatchObject({ available: true });
    expect((await e.item('library-account/svc-1'))?.checkoutId).toBeUndefined();
    // After the cool-down, the check-out heals it and lends it.
    e.h.clock.advance(healCooldownSeconds + 1);
    const later = await e.call('POST', 'library/pool/check-out');
    expect(later.status, JSON.stringify(later.body)).toBe(200);
    expect(later.body.data.service_account_name).toBe('svc-1');
    expect(await e.slapd.canBind(accountDn('svc-1'), later.body.data.password)).toBe(true);
    for (const name of ['svc-1', 'svc-2'])
      expect((await e.call('POST', 'library/manage/pool/check-in', { service_account_names: [name] })).status).toBe(
        200,
      );
  });

  it('when the root credential does not bind either, it is reported once per cool-down, not looped on', async () => {
    e.h.clock.advance(healCooldownSeconds + 1);
    await kill(personDn('carol'));
    await setDirectoryPassword(e.slapd.url, managerDn, 'manager-lost');
    e.h.clock.advance(verifiedSeconds + 1);
    const refusals = () =>
      lines.filter((line) => line.message.startsWith('cannot heal') && line.fields.key === 'static-role/carol').length;
    const first = await e.call('GET', 'static-cred/carol');
    expect(first.status).toBe(502);
    expect(first.body.errors[0]).toContain('static role "carol"');
    expect(refusals()).toBe(1);
    // Asked again and again (reads, and the check's passes): no further attempt within the cool-down.
    for (let index = 0; index < 5; index++) expect((await e.call('GET', 'static-cred/carol')).status).toBe(502);
    await accountCheckJob?.start?.(e.h.core);
    await accountCheckJob?.run(e.h.core);
    expect(refusals()).toBe(1);
    expect(auditHeals('static-role/carol').map((entry) => entry.response.warnings[0])).toEqual([
      expect.stringContaining('neither does the root credential'),
    ]);
    // The operator puts the root credential right; the next attempt after the cool-down heals.
    await setDirectoryPassword(e.slapd.url, managerDn, managerPassword);
    e.h.clock.advance(healCooldownSeconds + 1);
    const healed = await e.call('GET', 'static-cred/carol');
    expect(healed.status, JSON.stringify(healed.body)).toBe(200);
    expect(await e.slapd.canBind(personDn('carol'), healed.body.data.password)).toBe(true);
  });
});
