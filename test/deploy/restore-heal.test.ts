import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { restoreTable } from '../../functions/deploy/restore-table.ts';
import { checkEverySeconds } from '../../packages/core/src/secrets/engines/ldap/account-check.ts';
import { checkCursorKey } from '../../packages/core/src/secrets/engines/ldap/records.ts';
import { ensureTable } from '../../packages/local/src/table.ts';
import { accountCheckJob, accountDn, personDn } from '../support/ldap-heal.ts';
import { type LdapEngine, startLdapEngine } from '../support/ldap-engine.ts';
import { baseDn } from '../support/slapd.ts';

/**
 * Issue 43: the table rewound to before rotations (docs/deployment.md, "Restoring the table": the items copied back
 * with the SDK by functions/deploy/restore-table.ts). The restored table holds passwords the directory no longer
 * takes; the restore leaves the account-check cursors out, so the first run of the engine's account check after it
 * heals every one: within one pass, ceil(accounts / (KEYHAVEN_LDAP_CHECK_PER_SECOND × 5)) runs of the 5-second job.
 * Real slapd, DynamoDB Local.
 */

const roles = ['alice', 'bob', 'carol', 'dave'];
const accounts = ['svc-1', 'svc-2', 'svc-3', 'svc-4'];
const perSecond = 2;

describe('a restored table heals its dead directory passwords (real slapd, DynamoDB Local)', () => {
  let e: LdapEngine;
  const snapshot = `restore-point-${randomUUID().slice(0, 8)}`;
  beforeAll(async () => {
    // A slow pace on purpose, so the pass takes several runs and the bound is what is tested.
    process.env.KEYHAVEN_LDAP_CHECK_PER_SECOND = String(perSecond);
    e = await startLdapEngine();
    await e.configure({ userdn: baseDn });
    for (const name of roles)
      expect((await e.call('POST', `static-role/${name}`, { username: name, rotation_period: '24h' })).status).toBe(
        204,
      );
    expect((await e.call('POST', 'library/pool', { service_account_names: accounts, ttl: '1h' })).status).toBe(204);
  });
  afterAll(async () => {
    delete process.env.KEYHAVEN_LDAP_CHECK_PER_SECOND;
    await e?.close();
  });

  const stored = async (key: string) => (await e.storedPassword(key)) as string;
  const allBind = async () => {
    const dead: string[] = [];
    for (const name of roles)
      if (!(await e.slapd.canBind(personDn(name), await stored(`static-role/${name}`)))) dead.push(name);
    for (const name of accounts)
      if (!(await e.slapd.canBind(accountDn(name), await stored(`library-account/${name}`)))) dead.push(name);
    return dead;
  };

  it('every static role and library account binds again within one check pass', { timeout: 120_000 }, async () => {
    // An account out at the restore point, under its lease.
    const early = await e.call('POST', 'library/pool/check-out');
    expect(early.status).toBe(200);
    const earlyAccount = early.body.data.service_account_name as string;
    // The restore point: a copy of the table as it is now (with a cursor, as a live table has).
    await accountCheckJob?.run(e.h.core);
    expect(await (await e.storage()).getItem(checkCursorKey)).toBeDefined();
    await ensureTable(e.h.client, snapshot);
    await restoreTable(e.h.client, e.h.tableName, snapshot);

    // After it: rotations, a check-in (a new password) of the account out at the point, another check-out and in.
    e.h.clock.advance(60);
    for (const name of ['alice', 'bob', 'carol'])
      expect((await e.call('POST', `rotate-role/${name}`)).status).toBe(204);
    const later = await e.call('POST', 'library/pool/check-out');
    expect(later.status).toBe(200);
    expect(
      (await e.call('POST', 'library/manage/pool/check-in', { service_account_names: [earlyAccount] })).status,
    ).toBe(200);
    expect(
      (
        await e.call('POST', 'library/manage/pool/check-in', {
          service_account_names: [later.body.data.service_account_name],
        })
      ).status,
    ).toBe(200);

    // The restore: the table rewound. Its passwords of what rotated since are dead (what the issue saw).
    const report = await restoreTable(e.h.client, snapshot, e.h.tableName);
    expect(report.written).toBeGreaterThan(0);
    expect(await (await e.storage()).getItem(checkCursorKey)).toBeUndefined();
    const deadAfterRestore = await allBind();
    expect(deadAfterRestore.sort()).toEqual(
      ['alice', 'bob', 'carol', earlyAccount, later.body.data.service_account_name].sort(),
    );

    // The check, as the job runs it: the first run after the restore starts a pass at once.
    const total = roles.length + accounts.length;
    const bound = Math.ceil(total / (perSecond * checkEverySeconds));
    let runs = 0;
    while ((await allBind()).length > 0 && runs < bound) {
      const ran = await accountCheckJob?.run(e.h.core);
      expect(ran?.failed).toBe(0);
      runs++;
    }
    expect(await allBind()).toEqual([]);
    expect(runs).toBeLessThanOrEqual(bound);

    // Nothing stranded: no write-ahead left, the account out at the point still out under its lease (renewable),
    // and every read answers a password that binds.
    const storage = await e.storage();
    expect(await storage.items('wal/')).toEqual([]);
    for (const name of [...roles.map((role) => `static-role/${role}`), ...accounts.map((a) => `library-account/${a}`)])
      expect((await e.item(name))?.pending).toBeUndefined();
    expect(await e.item(`library-account/${earlyAccount}`)).toMatchObject({ available: false, healCount: 1 });
    const renewed = await e.h.call('PUT', '/v1/sys/leases/renew', {
      token: e.h.rootToken,
      body: { lease_id: early.body.lease_id },
    });
    expect(renewed.status, JSON.stringify(renewed.body)).toBe(200);
    for (const name of roles) {
      const read = await e.call('GET', `static-cred/${name}`);
      expect(read.status).toBe(200);
      expect(await e.slapd.canBind(personDn(name), read.body.data.password)).toBe(true);
    }
    const statuses = (await e.call('GET', 'library/pool/status')).body.data;
    expect(statuses[earlyAccount]).toMatchObject({ available: false, heal_count: 1, last_heal_reason: 'start check' });
    // The account out at the point comes back when its lease ends, with a fresh password, as any check-out does.
    expect(
      (
        await e.h.call('PUT', '/v1/sys/leases/revoke', {
          token: e.h.rootToken,
          body: { lease_id: early.body.lease_id },
        })
      ).status,
    ).toBe(204);
    expect(await e.item(`library-account/${earlyAccount}`)).toMatchObject({ available: true });
    expect(await allBind()).toEqual([]);
  });
});
