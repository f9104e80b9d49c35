import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { healCooldownSeconds, verifiedSeconds } from '../../packages/core/src/secrets/engines/ldap/account-heal.ts';
import type { LdapAccountItem } from '../../packages/core/src/secrets/engines/ldap/records.ts';
import { accountCheckJob, personDn, setDirectoryPassword } from '../support/ldap-heal.ts';
import { type LdapEngine, startLdapEngine } from '../support/ldap-engine.ts';
import { baseDn } from '../support/slapd.ts';

/**
 * Issue 43's healing, attacked. A heal rotates a directory password with the engine's root credential, so:
 *  - a table writer must not make the service rotate an entry it does not manage (a forged or edited account item:
 *    a heal needs the DN the service sealed under the item's own key);
 *  - neither a table writer nor a client may make it rotate in a loop (one attempt per account per cool-down, across
 *    processes; a read that finds a dead password heals it once, however many ask at once).
 * Real slapd, DynamoDB Local.
 */

describe('attack: healing dead directory passwords (real slapd)', () => {
  let e: LdapEngine;
  beforeAll(async () => {
    process.env.KEYHAVEN_LDAP_CHECK_PER_SECOND = '200';
    e = await startLdapEngine();
    await e.configure({ userdn: baseDn });
    for (const name of ['alice', 'bob'])
      expect((await e.call('POST', `static-role/${name}`, { username: name, rotation_period: '24h' })).status).toBe(
        204,
      );
  });
  afterAll(async () => {
    delete process.env.KEYHAVEN_LDAP_CHECK_PER_SECOND;
    await e?.close();
  });

  const unprovenAudits = () =>
    e.h
      .auditLines()
      .map((line) => JSON.parse(line))
      .filter((entry) => entry.type === 'response' && /not one the service sealed/.test(entry.response.warnings?.[0]));

  /** Heals of bob as the audit log records them (the item's own count is the writer's to replay). */
  const bobHeals = () =>
    e.h
      .auditLines()
      .map((line) => JSON.parse(line))
      .filter(
        (entry) =>
          entry.type === 'response' &&
          entry.request.path === 'ldap/heal/static-role/bob' &&
          /rotated with the root credential/.test(entry.response.warnings?.[0]),
      ).length;

  it('a table writer cannot make it rotate an entry it does not manage', async () => {
    const storage = await e.storage();
    const genuine = (await e.item('static-role/alice')) as LdapAccountItem;
    // 1. A genuine item's DN edited to an entry nobody manages (frank, who still has his own password).
    await storage.putItem('static-role/alice', { ...genuine, value: { ...genuine.value, dn: personDn('frank') } });
    // 2. A new item for another unmanaged entry, carrying a password and the DN proof copied from a genuine item.
    await storage.putItem('static-role/forged', {
      value: { ...genuine.value, username: 'grace', dn: personDn('grace') },
      password: genuine.password,
      sealedDn: genuine.sealedDn,
    });
    // 3. A new item with no proof at all.
    await storage.putItem('static-role/bare', {
      value: { ...genuine.value, username: 'heidi', dn: personDn('heidi') },
      password: genuine.password,
    });
    await accountCheckJob?.start?.(e.h.core);
    await accountCheckJob?.run(e.h.core);
    e.h.clock.advance(verifiedSeconds + 1);
    // Each item fails its MAC (`directory-item`), so it is not there at all (table-writer-directory.test.ts); the DN
    // proof a heal requires stays as a second wall.
    for (const name of ['alice', 'forged', 'bare'])
      expect((await e.call('GET', `static-cred/${name}`)).status).toBe(404);
    for (const name of ['frank', 'grace', 'heidi'])
      expect(await e.slapd.canBind(personDn(name), `${name}-initial`)).toBe(true);
    for (const key of ['static-role/alice', 'static-role/forged', 'static-role/bare'])
      expect((await e.item(key))?.healCount).toBeUndefined();
    // A genuine item whose DN proof was taken away (it is outside the MAC, sealed on its own) is not healed either.
    await setDirectoryPassword(e.slapd.url, personDn('alice'), 'lost-to-the-writer');
    const { sealedDn: _proof, ...unproven } = genuine;
    await storage.putItem('static-role/alice', unproven);
    e.h.clock.advance(verifiedSeconds + 1);
    expect((await e.call('GET', 'static-cred/alice')).status).toBe(502);
    expect(unprovenAudits().length).toBeGreaterThanOrEqual(1);
    expect(await e.slapd.canBind(personDn('alice'), 'lost-to-the-writer')).toBe(true);
    // The genuine item back: it binds, nothing was rotated meanwhile.
    await storage.putItem('static-role/alice', genuine);
    await storage.delete('static-role/forged');
    await storage.delete('static-role/bare');
    e.h.clock.advance(verifiedSeconds + 1);
    const read = await e.call('GET', 'static-cred/alice');
    expect(read.status).toBe(200);
    expect(await e.slapd.canBind(personDn('alice'), read.body.data.password)).toBe(true);
  });

  it('a client reading a dead password at once, many times, causes one heal', async () => {
    await setDirectoryPassword(e.slapd.url, personDn('bob'), 'lost');
    e.h.clock.advance(verifiedSeconds + 1);
    const reads = await Promise.all(Array.from({ length: 20 }, () => e.call('GET', 'static-cred/bob')));
    for (const read of reads) {
      expect([200, 502]).toContain(read.status);
      if (read.status === 200) expect(await e.slapd.canBind(personDn('bob'), read.body.data.password)).toBe(true);
    }
    expect(reads.some((read) => read.status === 200)).toBe(true);
    expect((await e.item('static-role/bob'))?.healCount).toBe(1);
    // And again and again after: the password binds, so nothing rotates.
    for (let index = 0; index < 10; index++) expect((await e.call('GET', 'static-cred/bob')).status).toBe(200);
    expect((await e.item('static-role/bob'))?.healCount).toBe(1);
  });

  it('a table writer replaying a stale password makes at most one heal per cool-down', async () => {
    const storage = await e.storage();
    const stale = (await e.item('static-role/bob')) as LdapAccountItem;
    // Rotated for real: the replayed item's password is then dead.
    e.h.clock.advance(1);
    expect((await e.call('POST', 'rotate-role/bob')).status).toBe(204);
    const before = bobHeals();
    for (let round = 0; round < 5; round++) {
      // The writer keeps the heal's own attempt marker, as a replay of the whole item at the same moment would.
      const now = (await e.item('static-role/bob')) as LdapAccountItem;
      await storage.putItem('static-role/bob', { ...stale, healAttemptAt: now.healAttemptAt });
      await accountCheckJob?.start?.(e.h.core);
      await accountCheckJob?.run(e.h.core);
      e.h.clock.advance(verifiedSeconds + 1);
      await e.call('GET', 'static-cred/bob');
    }
    const after = bobHeals();
    // 5 replays within 5 × 31 s: the cool-down (60 s) lets at most 3 attempts through, never one per replay and read.
    expect(after - before).toBeGreaterThanOrEqual(1);
    expect(after - before).toBeLessThanOrEqual(Math.ceil((5 * (verifiedSeconds + 1)) / healCooldownSeconds));
  });
});
