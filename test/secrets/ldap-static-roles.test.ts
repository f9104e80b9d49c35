import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { periodicJobs } from '../../packages/core/src/entry-points/engine-periodic-jobs.ts';
import { ldapBackend } from '../../packages/core/src/secrets/engines/ldap/ldap-backend.ts';
import type { LdapAccountItem } from '../../packages/core/src/secrets/engines/ldap/records.ts';
import { rotateDue } from '../../packages/core/src/secrets/engines/ldap/rotation.ts';
import { ConditionFailed, type Write } from '../../packages/core/src/storage/store.ts';
import { setDirectoryPassword } from '../support/ldap-heal.ts';
import { failRecording, type LdapEngine, startLdapEngine } from '../support/ldap-engine.ts';
import { peopleDn } from '../support/slapd.ts';

const dnOf = (name: string) => `cn=${name},${peopleDn}`;

let directoryUrl = '';

describe('ldap static roles (real slapd)', () => {
  let e: LdapEngine;
  beforeAll(async () => {
    e = await startLdapEngine();
    directoryUrl = e.slapd.url;
    await e.configure();
  });
  afterAll(() => e?.close());

  async function creds(role: string) {
    const response = await e.call('GET', `static-cred/${role}`);
    expect(response.status).toBe(200);
    return response.body.data;
  }

  it('imports an entry by username, rotating its password', async () => {
    const created = await e.call('POST', 'static-role/alice', { username: 'alice', rotation_period: '1h' });
    expect(created.status, JSON.stringify(created.body)).toBe(204);
    const role = await e.call('GET', 'static-role/alice');
    expect(role.body.data).toEqual({
      dn: dnOf('alice'),
      username: 'alice',
      rotation_period: 3600,
      skip_import_rotation: false,
      last_service_rotation: new Date(Math.floor(e.h.clock.now() / 1000) * 1000).toISOString(),
      // Ours, beside Vault's fields (issue 43): never healed yet.
      last_healed: null,
      heal_count: 0,
      last_heal_reason: null,
    });
    const cred = await creds('alice');
    expect(cred).toMatchObject({
      dn: dnOf('alice'),
      username: 'alice',
      rotation_period: 3600,
      ttl: 3600,
      last_password: '',
    });
    expect(cred.password).toMatch(/^[A-Za-z0-9]{64}$/);
    expect(await e.slapd.canBind(dnOf('alice'), cred.password)).toBe(true);
    expect(await e.slapd.canBind(dnOf('alice'), 'alice-initial')).toBe(false);
  });

  it('rotate-role sets a new password and keeps the last one', async () => {
    const before = (await creds('alice')).password;
    e.h.clock.advance(100);
    expect((await e.call('POST', 'rotate-role/alice')).status).toBe(204);
    const after = await creds('alice');
    expect(after.password).not.toBe(before);
    expect(after.last_password).toBe(before);
    expect(after.ttl).toBe(3600);
    expect(await e.slapd.canBind(dnOf('alice'), after.password)).toBe(true);
    expect(await e.slapd.canBind(dnOf('alice'), before)).toBe(false);
    expect((await e.call('POST', 'rotate-role/nobody')).status).toBe(400);
  });

  it('finds the entry by dn when given, and keeps hierarchical names', async () => {
    const dn = `cn=mallory,ou=it,${peopleDn}`;
    expect(
      (await e.call('POST', 'static-role/team/it/mallory', { username: 'mallory', dn, rotation_period: 60 })).status,
    ).toBe(204);
    expect((await e.call('POST', 'static-role/team/bob', { username: 'bob', rotation_period: 60 })).status).toBe(204);
    expect((await e.call('GET', 'static-role/team/it/mallory')).body.data.dn).toBe(dn);
    expect(await e.slapd.canBind(dn, (await creds('team/it/mallory')).password)).toBe(true);

    expect((await e.call('LIST', 'static-role')).body.data.keys).toEqual(['alice', 'team/']);
    expect((await e.call('GET', 'static-role')).body.data.keys).toEqual(['alice', 'team/']);
    expect((await e.call('LIST', 'static-role/team')).body.data.keys).toEqual(['bob', 'it/']);
    expect((await e.call('LIST', 'static-role/team/it/')).body.data.keys).toEqual(['mallory']);
    expect((await e.call('LIST', 'static-role/nothing')).status).toBe(404);
  });

  it('skips the import rotation when asked, or by the config default', async () => {
    expect(
      (
        await e.call('POST', 'static-role/carol', {
          username: 'carol',
          rotation_period: '10m',
          skip_import_rotation: true,
        })
      ).status,
    ).toBe(204);
    const cred = await creds('carol');
    expect(cred).toMatchObject({ password: '', last_password: '', ttl: 600, last_service_rotation: null });
    expect(await e.slapd.canBind(dnOf('carol'), 'carol-initial')).toBe(true);

    await e.call('POST', 'config', { skip_static_role_import_rotation: true });
    expect((await e.call('POST', 'static-role/dave', { username: 'dave', rotation_period: '10m' })).status).toBe(204);
    expect((await creds('dave')).password).toBe('');
    expect((await e.call('GET', 'static-role/dave')).body.data.skip_import_rotation).toBe(true);
    // An explicit false overrides the default.
    expect(
      (
        await e.call('POST', 'static-role/erin', {
          username: 'erin',
          rotation_period: '10m',
          skip_import_rotation: false,
        })
      ).status,
    ).toBe(204);
    expect((await creds('erin')).password).not.toBe('');
    await e.call('POST', 'config', { skip_static_role_import_rotation: false });

    // The first rotation sets a password.
    expect((await e.call('POST', 'rotate-role/carol')).status).toBe(204);
    const rotated = await creds('carol');
    expect(await e.slapd.canBind(dnOf('carol'), rotated.password)).toBe(true);
    expect(await e.slapd.canBind(dnOf('carol'), 'carol-initial')).toBe(false);
  });

  it('rejects bad input, naming the field', async () => {
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['nobody', { username: 'nobody', rotation_period: 60 }, 'username'],
      ['frank', { username: 'frank', rotation_period: 4 }, 'rotation_period'],
      ['frank', { username: 'frank' }, 'rotation_period'],
      ['frank', { rotation_period: 60 }, 'username'],
      ['frank', { username: 'frank', rotation_period: 'often' }, 'rotation_period'],
      ['frank', { username: 'frank', dn: 'cn=ghost,dc=example,dc=org', rotation_period: 60 }, 'dn'],
      ['twin', { username: 'alice', rotation_period: 60 }, 'static-role/alice'],
      ['alice', { username: 'bob' }, 'username'],
      ['alice', { dn: dnOf('bob') }, 'dn'],
    ];
    for (const [name, body, message] of cases) {
      const response = await e.call('POST', `static-role/${name}`, body);
      expect(response.status, `${name} ${JSON.stringify(body)}`).toBe(400);
      expect(response.body.errors[0]).toContain(message);
    }
    expect((await e.call('GET', 'static-role/frank')).status).toBe(404);
    expect((await e.call('GET', 'static-cred/frank')).status).toBe(404);
  });

  it('updates the rotation period, which moves the next rotation', async () => {
    expect((await e.call('POST', 'static-role/alice', { rotation_period: '2h' })).status).toBe(204);
    const cred = await creds('alice');
    expect(cred.rotation_period).toBe(7200);
    expect(cred.ttl).toBe(7200);
  });

  it('rotates when due, through the rotation job', async () => {
    const before = await creds('team/bob');
    e.h.clock.advance(30);
    await rotateDue(e.h.core);
    expect((await creds('team/bob')).password).toBe(before.password);
    e.h.clock.advance(31);
    const result = await rotateDue(e.h.core);
    expect(result.failed).toBe(0);
    expect(result.rotated).toBeGreaterThanOrEqual(2); // team/bob and team/it/mallory (60 s)
    const after = await creds('team/bob');
    expect(after.password).not.toBe(before.password);
    expect(after.last_password).toBe(before.password);
    expect(after.ttl).toBe(60);
    expect(await e.slapd.canBind(dnOf('bob'), after.password)).toBe(true);
    expect(await e.slapd.canBind(dnOf('bob'), before.password)).toBe(false);
  });

  it('keeps the old password readable and valid while the directory is down, and retries', async () => {
    const before = await creds('team/bob');
    await e.slapd.stop();
    try {
      e.h.clock.advance(61);
      const result = await rotateDue(e.h.core);
      expect(result.rotated).toBe(0);
      expect(result.failed).toBeGreaterThanOrEqual(1);
      expect((await creds('team/bob')).password).toBe(before.password);
      const manual = await e.call('POST', 'rotate-role/team/bob');
      expect(manual.status).toBe(502);
    } finally {
      await e.slapd.start();
    }
    expect(await e.slapd.canBind(dnOf('bob'), before.password)).toBe(true);
    e.h.clock.advance(11);
    expect((await rotateDue(e.h.core)).failed).toBe(0);
    const after = await creds('team/bob');
    expect(after.password).not.toBe(before.password);
    expect(await e.slapd.canBind(dnOf('bob'), after.password)).toBe(true);
  });

  /** A rotation of erin whose recording fails after the directory took the new password: it answers 500. */
  async function rotationDyingAtRecord() {
    const spy = failRecording(
      e,
      'static-role/erin',
      new ConditionFailed('simulated crash after the directory changed'),
    );
    try {
      expect((await e.call('POST', 'rotate-role/erin')).status).toBe(500);
    } finally {
      spy.mockRestore();
    }
  }

  it('recovers a rotation that changed the directory but died before recording it', async () => {
    const before = await creds('erin');
    await rotationDyingAtRecord();
    // The directory has the new password, which only the write-ahead knows.
    expect(await e.slapd.canBind(dnOf('erin'), before.password)).toBe(false);
    const pending = await e.item('static-role/erin');
    expect(pending?.pending).toBeTruthy();

    // The next read (or run) settles it: the password the directory has becomes the current one.
    const after = await creds('erin');
    expect(after.password).not.toBe(before.password);
    expect(after.last_password).toBe(before.password);
    expect(await e.slapd.canBind(dnOf('erin'), after.password)).toBe(true);
    expect((await e.item('static-role/erin'))?.pending).toBeUndefined();
  });

  /** The state a run killed mid-change leaves: a write-ahead still inside its window, the directory changed or not. */
  async function leaveWriteAhead(key: string, dn: string, password: string, applied: boolean) {
    const storage = await e.storage();
    await storage.update(key, {
      set: {
        pending: storage.seal(key, password),
        pendingId: 'killed-run',
        pendingUntil: Math.floor(e.h.clock.now() / 1000) + 150,
      },
    });
    if (applied) await setDirectoryPassword(directoryUrl, dn, password);
  }

  it('answers the password the directory takes when a killed rotation changed it but never recorded it', async () => {
    const before = await creds('erin');
    await leaveWriteAhead('static-role/erin', dnOf('erin'), 'changed-then-killed', true);
    expect(await e.slapd.canBind(dnOf('erin'), before.password)).toBe(false);
    // Inside the killed run's window: the read finishes the change instead of answering the dead password.
    const read = await creds('erin');
    expect(read.password).toBe('changed-then-killed');
    expect(read.last_password).toBe(before.password);
    expect(await e.slapd.canBind(dnOf('erin'), read.password)).toBe(true);
    expect((await e.item('static-role/erin'))?.pending).toBeUndefined();
    expect(await creds('erin')).toEqual(read);
    expect((await e.call('POST', 'rotate-role/erin')).status).toBe(204);
    const rotated = await creds('erin');
    expect(rotated.last_password).toBe('changed-then-killed');
    expect(await e.slapd.canBind(dnOf('erin'), rotated.password)).toBe(true);
  });

  it('answers the current password while a write-ahead has not reached the directory, and a rotation adopts it', async () => {
    const before = await creds('erin');
    await leaveWriteAhead('static-role/erin', dnOf('erin'), 'written-ahead-only', false);
    const read = await creds('erin');
    expect(read.password).toBe(before.password);
    expect(await e.slapd.canBind(dnOf('erin'), read.password)).toBe(true);
    // A rotation inside the window does not wait for it: it finishes the write-ahead, then rotates.
    expect((await e.call('POST', 'rotate-role/erin')).status).toBe(204);
    const after = await creds('erin');
    expect(after.last_password).toBe('written-ahead-only');
    expect(await e.slapd.canBind(dnOf('erin'), after.password)).toBe(true);
    expect(await e.slapd.canBind(dnOf('erin'), before.password)).toBe(false);
    expect((await e.item('static-role/erin'))?.pending).toBeUndefined();
  });

  it('answers a 502, never a dead password, when the directory takes neither', async () => {
    await leaveWriteAhead('static-role/erin', dnOf('erin'), 'written-ahead-again', false);
    await setDirectoryPassword(directoryUrl, dnOf('erin'), 'changed-by-someone-else');
    const read = await e.call('GET', 'static-cred/erin');
    expect(read.status).toBe(502);
    expect(read.body.errors[0]).toContain('neither');
    // The window passes: the next rotation discards the write-ahead and takes the account back.
    e.h.clock.advance(151);
    expect((await e.call('POST', 'rotate-role/erin')).status).toBe(204);
    expect(await e.slapd.canBind(dnOf('erin'), (await creds('erin')).password)).toBe(true);
  });

  it('discards a write-ahead whose directory change never happened', async () => {
    const before = await creds('erin');
    const storage = await e.storage();
    await storage.update('static-role/erin', {
      set: { pending: storage.seal('static-role/erin', 'never-applied'), pendingId: 'x', pendingUntil: 0 },
    });
    expect((await e.call('POST', 'rotate-role/erin')).status).toBe(204);
    const after = await creds('erin');
    expect(after.last_password).toBe(before.password);
    expect(await e.slapd.canBind(dnOf('erin'), after.password)).toBe(true);
  });

  it('settles a killed rotation nothing else comes back to in the engine job, through its write-ahead record', async () => {
    const before = await creds('erin');
    const storage = await e.storage();
    // Every change so far was settled, and each dropped its record in the transaction that settled it.
    expect(await storage.list('wal/')).toEqual([]);
    await rotationDyingAtRecord();
    const left = (await e.item('static-role/erin')) as LdapAccountItem;
    expect(left.pendingWal).toMatch(/^wal\//);
    // The run saw its record fail, so it marked the change for recovery now (a run killed outright leaves it due when
    // its window ends).
    const now = Math.floor(e.h.clock.now() / 1000);
    expect(left.pendingUntil).toBe(0);
    expect(await storage.getItem(left.pendingWal as string)).toMatchObject({
      kind: 'ldap-password',
      key: 'static-role/erin',
      dueAt: now,
    });
    const changed = storage.open('static-role/erin', left.pending as string);
    expect(await e.slapd.canBind(dnOf('erin'), changed)).toBe(true);

    // The job records the password the directory took and drops the record, with no request at all.
    const rollback = periodicJobs([ldapBackend]).find(({ job }) => job.name === 'write-ahead rollback')?.job;
    expect(await rollback?.run(e.h.core)).toEqual({ done: 1, failed: 0 });
    const settled = await e.item('static-role/erin');
    expect(settled?.pending).toBeUndefined();
    expect(settled?.pendingWal).toBeUndefined();
    expect(await e.storedPassword('static-role/erin')).toBe(changed);
    expect(await storage.list('wal/')).toEqual([]);
    const read = await creds('erin');
    expect(read.password).toBe(changed);
    expect(read.last_password).toBe(before.password);
  });

  it('leaves a rotation killed outright to its run until its window ends, then the engine job settles it', async () => {
    const before = await creds('erin');
    const storage = await e.storage();
    // The process dies once the directory took the password: after the write-ahead, nothing reaches the table.
    const store = e.h.core.store;
    const transact = store.transact.bind(store);
    const killed = vi.spyOn(store, 'transact').mockImplementation(async (writes: Write[]) => {
      const writeAhead = writes.some((write) => 'put' in write && String(write.put.sk).startsWith('wal/'));
      if (!writeAhead && writes.some((write) => 'update' in write && write.update.sk === 'static-role/erin'))
        throw new Error('killed');
      return transact(writes);
    });
    try {
      expect((await e.call('POST', 'rotate-role/erin')).status).toBe(500);
    } finally {
      killed.mockRestore();
    }
    const left = (await e.item('static-role/erin')) as LdapAccountItem;
    const changed = storage.open('static-role/erin', left.pending as string);
    expect(await e.slapd.canBind(dnOf('erin'), changed)).toBe(true);
    expect(left.pendingUntil).toBeGreaterThan(Math.floor(e.h.clock.now() / 1000));
    expect((await storage.getItem(left.pendingWal as string))?.dueAt).toBe(left.pendingUntil);

    const rollback = periodicJobs([ldapBackend]).find(({ job }) => job.name === 'write-ahead rollback')?.job;
    // Inside the window the run may still be working: the job leaves it.
    expect(await rollback?.run(e.h.core)).toEqual({ done: 0, failed: 0 });
    expect((await e.item('static-role/erin'))?.pending).toBe(left.pending);
    e.h.clock.advance((left.pendingUntil as number) - Math.floor(e.h.clock.now() / 1000) + 1);
    expect(await rollback?.run(e.h.core)).toEqual({ done: 1, failed: 0 });
    expect((await e.item('static-role/erin'))?.pending).toBeUndefined();
    expect(await storage.list('wal/')).toEqual([]);
    const read = await creds('erin');
    expect(read.password).toBe(changed);
    expect(read.last_password).toBe(before.password);
  });

  it('deletes a role, releasing its account, and keeps roles when the config is deleted', async () => {
    expect((await e.call('DELETE', 'static-role/dave')).status).toBe(204);
    expect((await e.call('GET', 'static-role/dave')).status).toBe(404);
    expect(
      (
        await e.call('POST', 'static-role/dave-again', {
          username: 'dave',
          rotation_period: 60,
          skip_import_rotation: true,
        })
      ).status,
    ).toBe(204);
    expect((await e.call('DELETE', 'static-role/nothing')).status).toBe(204);

    expect((await e.call('DELETE', 'config')).status).toBe(204);
    expect((await e.call('GET', 'static-role/alice')).status).toBe(200);
    expect((await e.call('POST', 'rotate-role/alice')).status).toBe(400);
  });
});
