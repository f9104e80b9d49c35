/**
 * Issue 39 §3, the directory: a static role names its account by `username`, which the engine looks up under `userdn`
 * by `userattr`. Every match used to be sent back and held, however many the directory has (a `userattr` shared by
 * thousands of entries, or a directory someone else fills). The engine needs to know only whether there is exactly
 * one, so it asks for at most two (`sizeLimit`), and more than one is refused. Real slapd: its own log says how many
 * entries it sent.
 */
import { readFileSync } from 'node:fs';
import { Client } from 'ldapts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LdapEngine, startLdapEngine } from '../support/ldap-engine.ts';
import { adminDn, adminPassword, peopleDn } from '../support/slapd.ts';

describe("the directory engine's user search reads at most two entries", () => {
  let e: LdapEngine;
  beforeAll(async () => {
    e = await startLdapEngine();
    await e.configure({ userattr: 'sn' });
    const admin = new Client({ url: e.slapd.url });
    try {
      await admin.bind(adminDn, adminPassword);
      for (let i = 0; i < 40; i++) {
        await admin.add(`cn=twin-${i},${peopleDn}`, { objectClass: 'inetOrgPerson', cn: `twin-${i}`, sn: 'twin' });
      }
    } finally {
      await admin.unbind().catch(() => undefined);
    }
  }, 120_000);
  afterAll(() => e?.close());

  it('refuses a username 40 entries share, having been sent two', async () => {
    const refused = await e.call('POST', 'static-role/twins', { username: 'twin', rotation_period: '1h' });
    expect(refused.status).toBe(400);
    expect(refused.body.errors.join(' ')).toBe(
      `invalid "username": more than one entry with sn=twin under "${peopleDn}"`,
    );
    expect((await e.call('GET', 'static-role/twins')).status).toBe(404);
    // slapd's own account of the search: stopped at the size limit (err=4) with two entries sent.
    const log = readFileSync(e.slapd.logFile, 'utf8');
    const search =
      /conn=(\d+) op=(\d+) SRCH base="ou=people,dc=example,dc=org" scope=2 deref=\d+ filter="\(sn=twin\)"/.exec(log);
    expect(search).not.toBeNull();
    const [, conn, op] = search as RegExpExecArray;
    expect(log).toMatch(new RegExp(`conn=${conn} op=${op} SEARCH RESULT tag=101 err=4 .*nentries=2 `));
  });

  it('still imports a username exactly one entry has', async () => {
    const created = await e.call('POST', 'static-role/alice', { username: 'alice', rotation_period: '1h' });
    expect(created.status, JSON.stringify(created.body)).toBe(204);
  });
});
