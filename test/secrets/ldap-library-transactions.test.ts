import { Client } from 'ldapts';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { maxSetAccounts } from '../../packages/core/src/secrets/engines/ldap/library-sets.ts';
import { type LdapEngine, startLdapEngine } from '../support/ldap-engine.ts';
import { adminDn, adminPassword, serviceAccountsDn } from '../support/slapd.ts';

/**
 * A library set is written and deleted in one transaction (DynamoDB's limit: 100 writes; each account costs its
 * item and two claims, the set one more): a set at the limit works, one past it is refused before anything is
 * written, and a change that fails part-way leaves the store as it was.
 */

const dnOf = (name: string) => `cn=${name},${serviceAccountsDn}`;
const bulk = Array.from({ length: maxSetAccounts + 1 }, (_, index) => `bulk-${index + 1}`);

describe('ldap library sets are all or nothing (real slapd, DynamoDB Local)', () => {
  let e: LdapEngine;

  /** Every item of the mount under the keys a library set writes, as stored. */
  const libraryItems = async () => {
    const storage = await e.storage();
    return [...(await storage.items('library')), ...(await storage.items('managed/'))];
  };

  beforeAll(async () => {
    e = await startLdapEngine();
    await e.configure({ userdn: serviceAccountsDn });
    const admin = new Client({ url: e.slapd.url });
    await admin.bind(adminDn, adminPassword);
    for (const name of bulk) {
      await admin.add(dnOf(name), {
        objectClass: 'inetOrgPerson',
        cn: name,
        sn: name,
        userPassword: `${name}-initial`,
      });
    }
    await admin.unbind();
  });
  afterAll(() => e?.close());

  it('refuses a set one account past the limit (34), naming the limit, with nothing written', async () => {
    expect(maxSetAccounts).toBe(33);
    const refused = await e.call('POST', 'library/big', { service_account_names: bulk });
    expect(refused.status).toBe(400);
    expect(refused.body.errors[0]).toContain('service_account_names');
    expect(refused.body.errors[0]).toContain(`at most ${maxSetAccounts} service accounts, not ${bulk.length}`);
    expect(refused.body.errors[0]).toContain('one transaction of 100');
    expect((await e.call('GET', 'library/big')).status).toBe(404);
    expect(await libraryItems()).toEqual([]);
    expect(await e.slapd.canBind(dnOf('bulk-1'), 'bulk-1-initial')).toBe(true);
  });

  it('writes a set at the limit and deletes it, each in one transaction', async () => {
    const names = bulk.slice(0, maxSetAccounts);
    const created = await e.call('POST', 'library/big', { service_account_names: names });
    expect(created.status, JSON.stringify(created.body)).toBe(204);
    const status = (await e.call('GET', 'library/big/status')).body.data;
    expect(Object.keys(status)).toHaveLength(maxSetAccounts);
    expect(Object.values(status).every((entry) => (entry as { available: boolean }).available)).toBe(true);
    for (const name of [names[0], names[names.length - 1]] as string[]) {
      expect(await e.slapd.canBind(dnOf(name), `${name}-initial`)).toBe(false);
      expect(await e.slapd.canBind(dnOf(name), (await e.storedPassword(`library-account/${name}`)) as string)).toBe(
        true,
      );
    }
    // The set's item, an item per account and two claims per account.
    expect(await libraryItems()).toHaveLength(1 + 3 * maxSetAccounts);

    // Replacing every account is 66 changes in one write: refused, and the set stays as it was.
    const before = await libraryItems();
    const replaced = await e.call('POST', 'library/big', {
      service_account_names: names.map((name) => `other-${name}`),
    });
    expect(replaced.status).toBe(400);
    expect(replaced.body.errors[0]).toContain(
      `at most ${maxSetAccounts} service accounts together, not ${2 * maxSetAccounts}`,
    );
    expect(await libraryItems()).toEqual(before);

    expect((await e.call('DELETE', 'library/big')).status).toBe(204);
    expect((await e.call('GET', 'library/big')).status).toBe(404);
    expect(await libraryItems()).toEqual([]);
  });

  it('leaves the store unchanged when a set update fails part-way (an account claimed meanwhile)', async () => {
    expect((await e.call('POST', 'library/pool', { service_account_names: ['svc-1', 'svc-2'] })).status).toBe(204);
    const before = await libraryItems();

    // Between the update's checks and its transaction, another writer makes svc-5 a static role.
    const transact = e.h.core.store.transact.bind(e.h.core.store);
    let raced = false;
    const spy = vi.spyOn(e.h.core.store, 'transact').mockImplementation(async (items) => {
      if (!raced) {
        raced = true;
        const role = await e.call('POST', 'static-role/racer', {
          username: 'svc-5',
          rotation_period: '1h',
          skip_import_rotation: true,
        });
        expect(role.status, JSON.stringify(role.body)).toBe(204);
      }
      return transact(items);
    });
    let update: Awaited<ReturnType<LdapEngine['call']>>;
    try {
      // Adds three accounts (the last one lost to the race) and removes svc-1.
      update = await e.call('POST', 'library/pool', { service_account_names: ['svc-2', 'svc-3', 'svc-4', 'svc-5'] });
    } finally {
      spy.mockRestore();
    }
    expect(update.status).toBe(400);
    expect(update.body.errors[0]).toContain('changed concurrently');

    // Nothing of the update landed: svc-1 is still in the set, svc-3 and svc-4 were neither added nor given passwords.
    expect((await e.call('GET', 'library/pool')).body.data.service_account_names).toEqual(['svc-1', 'svc-2']);
    expect(await e.slapd.canBind(dnOf('svc-3'), 'svc-3-initial')).toBe(true);
    expect(await e.slapd.canBind(dnOf('svc-4'), 'svc-4-initial')).toBe(true);
    const racer = (await libraryItems()).filter(
      (item) => (item.value as { owner?: string }).owner === 'static-role/racer',
    );
    expect(racer.map((item) => item.sk).sort()).toEqual([
      `managed/dn/${dnOf('svc-5').toLowerCase()}`,
      'managed/user/svc-5',
    ]);
    expect(
      (await libraryItems()).filter((item) => (item.value as { owner?: string }).owner !== 'static-role/racer'),
    ).toEqual(before);
  });
});
