import { Client } from 'ldapts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweepExpired } from '../../packages/core/src/entry-points/expiry-sweeps.ts';
import { passwordChanges } from '../../packages/core/src/secrets/engines/ldap/schemas.ts';
import { type LdapEngine, startLdapEngine } from '../support/ldap-engine.ts';
import { adminDn, adminPassword, baseDn, serviceAccountsDn } from '../support/slapd.ts';

const dnOf = (name: string) => `cn=${name},${serviceAccountsDn}`;

describe('ldap library sets (real slapd)', () => {
  let e: LdapEngine;
  let alice: string;
  let bob: string;
  let bobAccessor: string;
  const as = (token: string, method: string, path: string, body?: unknown) =>
    e.h.call(method, `/v1/ldap/${path}`, { token, body });
  const leases = (operation: 'lookup' | 'renew' | 'revoke', leaseId: string) =>
    e.h.call('PUT', `/v1/sys/leases/${operation}`, { token: e.h.rootToken, body: { lease_id: leaseId } });

  beforeAll(async () => {
    e = await startLdapEngine();
    await e.configure({ userdn: baseDn });
    const policy = 'path "ldap/*" { capabilities = ["create", "read", "update", "delete", "list"] }';
    await e.h.call('POST', '/v1/sys/policies/acl/ldap-user', { token: e.h.rootToken, body: { policy } });
    const token = async () =>
      (await e.h.call('POST', '/v1/auth/token/create', { token: e.h.rootToken, body: { policies: ['ldap-user'] } }))
        .body.auth;
    const [first, second] = [await token(), await token()];
    [alice, bob, bobAccessor] = [first.client_token, second.client_token, second.accessor];
  });
  afterAll(() => e?.close());

  /** The password the engine holds for an account now (for asserting what the borrower no longer has). */
  const heldPassword = (account: string) => e.storedPassword(`library-account/${account}`);

  it('creates a set, verifying the accounts and giving each a fresh password', async () => {
    const created = await e.call('POST', 'library/team/pool', {
      service_account_names: ['svc-1', 'svc-2', 'svc-3'],
      ttl: '1h',
      max_ttl: '2h',
    });
    expect(created.status, JSON.stringify(created.body)).toBe(204);
    expect((await e.call('GET', 'library/team/pool')).body.data).toEqual({
      service_account_names: ['svc-1', 'svc-2', 'svc-3'],
      ttl: 3600,
      max_ttl: 7200,
      disable_check_in_enforcement: false,
    });
    for (const account of ['svc-1', 'svc-2', 'svc-3']) {
      expect(await e.slapd.canBind(dnOf(account), `${account}-initial`)).toBe(false);
      expect(await e.slapd.canBind(dnOf(account), (await heldPassword(account)) as string)).toBe(true);
    }
    expect((await e.call('LIST', 'library')).body.data.keys).toEqual(['team/']);
    expect((await e.call('LIST', 'library/team')).body.data.keys).toEqual(['pool']);
    expect((await e.call('GET', 'library/team/pool/status')).body.data).toEqual({
      'svc-1': { available: true },
      'svc-2': { available: true },
      'svc-3': { available: true },
    });
  });

  it('uses 24h defaults and rejects bad sets, naming the field', async () => {
    expect((await e.call('POST', 'library/defaults', { service_account_names: 'svc-4' })).status).toBe(204);
    expect((await e.call('GET', 'library/defaults')).body.data).toMatchObject({
      ttl: 86400,
      max_ttl: 86400,
      service_account_names: ['svc-4'],
    });
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ service_account_names: ['ghost'] }, 'service_account_names'],
      [{ service_account_names: ['svc-1'] }, 'library/team/pool'],
      [{}, 'service_account_names'],
      [{ service_account_names: ['svc-5'], ttl: '3h', max_ttl: '2h' }, 'ttl'],
      [{ service_account_names: ['svc-5'], ttl: 'never' }, 'ttl'],
    ];
    for (const [body, message] of cases) {
      const response = await e.call('POST', 'library/bad', body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.errors[0]).toContain(message);
    }
    expect((await e.call('GET', 'library/bad')).status).toBe(404);
    // A static role cannot take an account a set manages.
    const taken = await e.call('POST', 'static-role/svc4', { username: 'svc-4', rotation_period: 60 });
    expect(taken.status).toBe(400);
    expect(taken.body.errors[0]).toContain('library/defaults');
  });

  it('checks out the first free account to its borrower and checks it in with a new password', async () => {
    const out = await as(alice, 'POST', 'library/team/pool/check-out');
    expect(out.status, JSON.stringify(out.body)).toBe(200);
    expect(out.body).toMatchObject({ renewable: true, lease_duration: 3600, data: { service_account_name: 'svc-1' } });
    expect(out.body.lease_id).toMatch(/^ldap\/library\/team\/pool\/check-out\//);
    const { password } = out.body.data;
    expect(await e.slapd.canBind(dnOf('svc-1'), password)).toBe(true);
    const status = (await e.call('GET', 'library/team/pool/status')).body.data;
    expect(status['svc-1']).toMatchObject({ available: false });
    expect(status['svc-1'].borrower_client_token).toBeTruthy();
    expect(await e.item('library-account/svc-1')).toMatchObject({ leaseId: out.body.lease_id });

    const refused = await as(bob, 'POST', 'library/team/pool/check-in', { service_account_names: ['svc-1'] });
    expect(refused.status).toBe(400);
    expect(refused.body.errors[0]).toContain('svc-1');
    expect(await e.slapd.canBind(dnOf('svc-1'), password)).toBe(true);

    // Names may be omitted when the caller has exactly one out.
    const back = await as(alice, 'POST', 'library/team/pool/check-in');
    expect(back.status).toBe(200);
    expect(back.body.data).toEqual({ check_ins: ['svc-1'] });
    expect(await e.slapd.canBind(dnOf('svc-1'), password)).toBe(false);
    expect(await e.slapd.canBind(dnOf('svc-1'), (await heldPassword('svc-1')) as string)).toBe(true);
    expect((await e.call('GET', 'library/team/pool/status')).body.data['svc-1']).toEqual({ available: true });
    // The check-in ended the check-out's lease: not left to run until its expiry.
    expect((await leases('lookup', out.body.lease_id)).status).toBe(404);
    expect(await e.h.core.leases.get(out.body.lease_id)).toBeUndefined();
    expect(await e.item('library-account/svc-1')).not.toHaveProperty('leaseId');

    // Checking in what is already in: success, not listed.
    const again = await as(alice, 'POST', 'library/team/pool/check-in', { service_account_names: 'svc-1' });
    expect(again.status).toBe(200);
    expect(again.body.data.check_ins).toEqual([]);
    // The ended lease is unknown to a revocation too.
    const revoked = await leases('revoke', out.body.lease_id);
    expect(revoked.status).toBe(400);
    expect(revoked.body.errors[0]).toContain('invalid lease ID');
    expect((await e.call('GET', 'library/team/pool/status')).body.data['svc-1']).toEqual({ available: true });
  });

  it('caps the check-out ttl at the set ttl', async () => {
    const short = await as(alice, 'POST', 'library/team/pool/check-out', { ttl: '10m' });
    expect(short.body.lease_duration).toBe(600);
    const long = await as(alice, 'POST', 'library/team/pool/check-out', { ttl: '30h' });
    expect(long.body.lease_duration).toBe(3600);
    const unlimited = await as(alice, 'POST', 'library/team/pool/check-out', { ttl: 0 });
    expect(unlimited.body.lease_duration).toBe(3600);
    const none = await as(alice, 'POST', 'library/team/pool/check-out');
    expect(none.status).toBe(400);
    expect(none.body.errors[0]).toContain('no service accounts available');

    const ambiguous = await as(alice, 'POST', 'library/team/pool/check-in');
    expect(ambiguous.status).toBe(400);
    expect(ambiguous.body.errors[0]).toContain('service_account_names');
    const forced = await as(bob, 'POST', 'library/manage/team/pool/check-in', {
      service_account_names: ['svc-1', 'svc-2', 'svc-3'],
    });
    expect(forced.status).toBe(200);
    expect(forced.body.data.check_ins.sort()).toEqual(['svc-1', 'svc-2', 'svc-3']);
    for (const lent of [short, long, unlimited]) expect((await leases('lookup', lent.body.lease_id)).status).toBe(404);
  });

  it('lets anyone check in when enforcement is disabled', async () => {
    expect((await e.call('POST', 'library/team/pool', { disable_check_in_enforcement: true })).status).toBe(204);
    const out = await as(alice, 'POST', 'library/team/pool/check-out');
    const back = await as(bob, 'POST', 'library/team/pool/check-in', {
      service_account_names: [out.body.data.service_account_name],
    });
    expect(back.body.data.check_ins).toEqual([out.body.data.service_account_name]);
    expect(await e.slapd.canBind(dnOf(out.body.data.service_account_name), out.body.data.password)).toBe(false);
    await e.call('POST', 'library/team/pool', { disable_check_in_enforcement: false });
  });

  it('checks the account in when the lease expires, and renews up to max_ttl', async () => {
    const out = await as(alice, 'POST', 'library/team/pool/check-out');
    const account = out.body.data.service_account_name;
    e.h.clock.advance(1800);
    const renew = (increment: number) =>
      e.h.call('PUT', '/v1/sys/leases/renew', {
        token: e.h.rootToken,
        body: { lease_id: out.body.lease_id, increment },
      });
    expect((await renew(3600)).body.lease_duration).toBe(3600);
    e.h.clock.advance(3000);
    expect((await renew(3600)).body.lease_duration).toBe(7200 - 4800);
    e.h.clock.advance(7200 - 4800 + 1);
    const swept = await sweepExpired(e.h.core);
    expect(swept.failed).toBe(0);
    expect(swept.leases).toBeGreaterThanOrEqual(1);
    expect((await e.call('GET', 'library/team/pool/status')).body.data[account]).toEqual({ available: true });
    expect(await e.slapd.canBind(dnOf(account), out.body.data.password)).toBe(false);
  });

  it('lends each account exactly once under 100 concurrent check-outs', async () => {
    const results = await Promise.all(
      Array.from({ length: 100 }, () => as(alice, 'POST', 'library/team/pool/check-out')),
    );
    const won = results.filter((result) => result.status === 200);
    const lost = results.filter((result) => result.status === 400);
    expect(won).toHaveLength(3);
    expect(lost).toHaveLength(97);
    expect(new Set(won.map((result) => result.body.data.service_account_name)).size).toBe(3);
    for (const result of lost) expect(result.body.errors[0]).toContain('no service accounts available');
    for (const result of won)
      expect(await e.slapd.canBind(dnOf(result.body.data.service_account_name), result.body.data.password)).toBe(true);
    expect(
      (
        await e.call('POST', 'library/manage/team/pool/check-in', {
          service_account_names: ['svc-1', 'svc-2', 'svc-3'],
        })
      ).body.data.check_ins,
    ).toHaveLength(3);
  });

  it('keeps a check-out intact when the directory is down during check-in', async () => {
    const out = await as(alice, 'POST', 'library/team/pool/check-out');
    const account = out.body.data.service_account_name;
    await e.slapd.stop();
    try {
      const failed = await as(alice, 'POST', 'library/team/pool/check-in');
      expect(failed.status).toBe(502);
    } finally {
      await e.slapd.start();
    }
    expect((await e.call('GET', 'library/team/pool/status')).body.data[account].available).toBe(false);
    expect(await e.slapd.canBind(dnOf(account), out.body.data.password)).toBe(true);
    expect((await leases('lookup', out.body.lease_id)).status).toBe(200);
    const back = await as(alice, 'POST', 'library/team/pool/check-in');
    expect(back.body.data.check_ins).toEqual([account]);
    expect((await leases('lookup', out.body.lease_id)).status).toBe(404);
    expect(await e.slapd.canBind(dnOf(account), (await heldPassword(account)) as string)).toBe(true);
  });

  /** A check-in killed mid-change: its write-ahead inside the window, the directory changed or not. */
  async function killedCheckIn(account: string, password: string, applied: boolean) {
    const storage = await e.storage();
    const key = `library-account/${account}`;
    await storage.update(key, {
      set: {
        pending: storage.seal(key, password),
        pendingId: 'killed-check-in',
        pendingUntil: Math.floor(e.h.clock.now() / 1000) + 150,
      },
    });
    if (applied) {
      const admin = new Client({ url: e.slapd.url });
      try {
        await admin.bind(adminDn, adminPassword);
        await admin.modify(dnOf(account), passwordChanges('openldap', password));
      } finally {
        await admin.unbind().catch(() => undefined);
      }
    }
  }

  for (const applied of [true, false]) {
    it(`checks in at once after a check-in killed ${applied ? 'after' : 'before'} the directory changed, without waiting for its window`, async () => {
      const out = await as(alice, 'POST', 'library/team/pool/check-out');
      expect(out.status).toBe(200);
      const account = out.body.data.service_account_name as string;
      const leftBehind = `killed-${applied ? 'after' : 'before'}`;
      await killedCheckIn(account, leftBehind, applied);
      expect(await e.slapd.canBind(dnOf(account), out.body.data.password)).toBe(!applied);

      const back = await as(alice, 'POST', 'library/team/pool/check-in');
      expect(back.status, JSON.stringify(back.body)).toBe(200);
      expect(back.body.data.check_ins).toEqual([account]);
      const held = (await heldPassword(account)) as string;
      expect(await e.slapd.canBind(dnOf(account), held)).toBe(true);
      expect(await e.slapd.canBind(dnOf(account), out.body.data.password)).toBe(false);
      expect(await e.slapd.canBind(dnOf(account), leftBehind)).toBe(false);
      expect((await e.call('GET', 'library/team/pool/status')).body.data[account]).toEqual({ available: true });
      expect((await e.item(`library-account/${account}`))?.pending).toBeUndefined();
      expect((await leases('lookup', out.body.lease_id)).status).toBe(404);
      // And the next borrower gets a password that binds.
      const next = await as(bob, 'POST', 'library/team/pool/check-out');
      expect(await e.slapd.canBind(dnOf(next.body.data.service_account_name), next.body.data.password)).toBe(true);
      expect((await as(bob, 'POST', 'library/team/pool/check-in')).status).toBe(200);
    });
  }

  it('updates and deletes sets, refusing while accounts are out', async () => {
    const out = await as(alice, 'POST', 'library/team/pool/check-out');
    const removing = await e.call('POST', 'library/team/pool', { service_account_names: ['svc-2', 'svc-3'] });
    expect(removing.status).toBe(400);
    expect(removing.body.errors[0]).toContain('svc-1');
    expect((await e.call('DELETE', 'library/team/pool')).status).toBe(400);
    await as(alice, 'POST', 'library/team/pool/check-in');
    expect(out.status).toBe(200);

    expect(
      (await e.call('POST', 'library/team/pool', { service_account_names: ['svc-2', 'svc-3', 'svc-6'] })).status,
    ).toBe(204);
    expect(Object.keys((await e.call('GET', 'library/team/pool/status')).body.data).sort()).toEqual([
      'svc-2',
      'svc-3',
      'svc-6',
    ]);
    expect(await e.slapd.canBind(dnOf('svc-6'), 'svc-6-initial')).toBe(false);
    // svc-1 left the set: free to manage elsewhere.
    expect((await e.call('POST', 'library/other', { service_account_names: ['svc-1'] })).status).toBe(204);

    expect((await e.call('DELETE', 'library/team/pool')).status).toBe(204);
    expect((await e.call('GET', 'library/team/pool')).status).toBe(404);
    expect((await e.call('POST', 'library/team/pool/check-out')).status).toBe(404);
    expect((await e.call('POST', 'library/again', { service_account_names: ['svc-2'] })).status).toBe(204);
  });

  it('never lets the lease of an earlier check-out check in or rotate the next borrower of the account', async () => {
    expect((await e.call('POST', 'library/handover', { service_account_names: ['svc-7'] })).status).toBe(204);
    const first = await as(alice, 'POST', 'library/handover/check-out', { ttl: '10m' });
    expect(first.body.data.service_account_name).toBe('svc-7');
    const firstLease = await e.h.core.leases.get(first.body.lease_id);
    expect(firstLease).toBeDefined();
    expect((await as(alice, 'POST', 'library/handover/check-in')).body.data).toEqual({ check_ins: ['svc-7'] });
    expect((await leases('lookup', first.body.lease_id)).status).toBe(404);

    const second = await as(bob, 'POST', 'library/handover/check-out');
    expect(second.body.data.service_account_name).toBe('svc-7');
    const bobStillHasIt = async () => {
      expect(await e.slapd.canBind(dnOf('svc-7'), second.body.data.password)).toBe(true);
      expect(await heldPassword('svc-7')).toBe(second.body.data.password);
      expect((await e.call('GET', 'library/handover/status')).body.data['svc-7']).toEqual({
        available: false,
        borrower_client_token: bobAccessor,
        borrower_entity_id: '',
      });
      expect((await leases('lookup', second.body.lease_id)).status).toBe(200);
    };
    expect((await leases('renew', first.body.lease_id)).status).toBe(400);
    expect((await leases('revoke', first.body.lease_id)).status).toBe(400);
    await bobStillHasIt();

    // A process that died between the check-in and ending the lease leaves the first lease behind (put back here):
    // revoked…
    await e.h.core.store.put(firstLease as NonNullable<typeof firstLease>);
    expect((await leases('revoke', first.body.lease_id)).status).toBe(204);
    expect((await leases('lookup', first.body.lease_id)).status).toBe(404);
    await bobStillHasIt();
    // …or expired and swept, it leaves bob's check-out alone.
    await e.h.core.store.put(firstLease as NonNullable<typeof firstLease>);
    e.h.clock.advance(601);
    const swept = await sweepExpired(e.h.core);
    expect(swept).toMatchObject({ failed: 0 });
    expect(swept.leases).toBeGreaterThanOrEqual(1);
    expect((await leases('lookup', first.body.lease_id)).status).toBe(404);
    await bobStillHasIt();

    // The operators' check-in ends bob's lease too, with a fresh password.
    const forced = await as(alice, 'POST', 'library/manage/handover/check-in');
    expect(forced.status).toBe(200);
    expect(forced.body.data).toEqual({ check_ins: ['svc-7'] });
    expect((await leases('lookup', second.body.lease_id)).status).toBe(404);
    expect(await e.slapd.canBind(dnOf('svc-7'), second.body.data.password)).toBe(false);
    expect(await e.slapd.canBind(dnOf('svc-7'), (await heldPassword('svc-7')) as string)).toBe(true);
    expect((await e.call('GET', 'library/handover/status')).body.data['svc-7']).toEqual({ available: true });
  });
});
