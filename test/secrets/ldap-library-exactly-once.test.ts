import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimSeconds } from '../../packages/core/src/secrets/engines/ldap/library-model.ts';
import { rotateDue } from '../../packages/core/src/secrets/engines/ldap/rotation.ts';
import { leaseKey } from '../../packages/core/src/secrets/leases/lease-manager.ts';
import { type LdapEngine, startLdapEngine } from '../support/ldap-engine.ts';
import { baseDn, serviceAccountsDn } from '../support/slapd.ts';

const dnOf = (name: string) => `cn=${name},${serviceAccountsDn}`;

/**
 * Issue 24, in one process (the kill -9 version is test/local/crash-library.test.ts). A borrower (a narrow token
 * with the library paths) checks an account in many times at once: exactly one answer may say it returned it. And a
 * check-out whose lease never got written must not keep the account out for ever.
 */
describe('ldap library: one check-in, one acknowledgement; no account stranded without a lease (real slapd)', () => {
  let e: LdapEngine;
  let alice: string;
  let bob: string;
  const as = (token: string, method: string, path: string, body?: unknown) =>
    e.h.call(method, `/v1/ldap/${path}`, { token, body });
  const lookup = (leaseId: string) =>
    e.h.call('PUT', '/v1/sys/leases/lookup', { token: e.h.rootToken, body: { lease_id: leaseId } });
  const held = async (account: string) => (await e.storedPassword(`library-account/${account}`)) as string;

  beforeAll(async () => {
    e = await startLdapEngine();
    await e.configure({ userdn: baseDn });
    const policy = 'path "ldap/library/*" { capabilities = ["read", "update"] }';
    await e.h.call('POST', '/v1/sys/policies/acl/borrower', { token: e.h.rootToken, body: { policy } });
    const token = async () =>
      (await e.h.call('POST', '/v1/auth/token/create', { token: e.h.rootToken, body: { policies: ['borrower'] } })).body
        .auth.client_token;
    [alice, bob] = [await token(), await token()];
    expect(
      (await e.call('POST', 'library/pool', { service_account_names: ['svc-1', 'svc-2'], ttl: '1h' })).status,
    ).toBe(204);
  });
  afterAll(() => e?.close());

  it('acknowledges exactly one of 50 concurrent check-ins of one borrowed account; the others answer as for an available account', async () => {
    const available = await as(alice, 'POST', 'library/pool/check-in', { service_account_names: ['svc-2'] });
    expect({ status: available.status, data: available.body.data }).toEqual({ status: 200, data: { check_ins: [] } });
    for (let round = 0; round < 3; round++) {
      const out = await as(alice, 'POST', 'library/pool/check-out');
      expect(out.status).toBe(200);
      const account = out.body.data.service_account_name as string;
      const answers = await Promise.all(
        Array.from({ length: 50 }, () =>
          as(alice, 'POST', 'library/pool/check-in', { service_account_names: [account] }),
        ),
      );
      const acknowledged = answers.filter((answer) => answer.body?.data?.check_ins?.includes(account));
      expect(acknowledged, `round ${round}`).toHaveLength(1);
      for (const answer of answers) {
        if (answer === acknowledged[0]) continue;
        expect(
          { status: answer.status, data: answer.body.data },
          `round ${round}: ${JSON.stringify(answer.body)}`,
        ).toEqual({ status: 200, data: { check_ins: [] } });
      }
      // Returned once, with a password only the engine knows; the lease is over.
      expect((await e.call('GET', 'library/pool/status')).body.data[account]).toEqual({ available: true });
      expect(await e.slapd.canBind(dnOf(account), out.body.data.password)).toBe(false);
      expect(await e.slapd.canBind(dnOf(account), await held(account))).toBe(true);
      expect((await lookup(out.body.lease_id)).status).toBe(404);
    }
  }, 90_000); // three rounds of 50 concurrent check-ins, each a MACed read-modify-write (issue 37): ~15 s alone, ~30 s under the whole suite

  it('returns an account whose lease was never written once its claim deadline passes, and leaves a leased check-out out', async () => {
    const leased = await as(alice, 'POST', 'library/pool/check-out');
    const stranded = await as(bob, 'POST', 'library/pool/check-out');
    expect([leased.status, stranded.status]).toEqual([200, 200]);
    const strandedAccount = stranded.body.data.service_account_name as string;
    const leasedAccount = leased.body.data.service_account_name as string;
    // What a process killed between the claim and the lease leaves: the claim, and no lease.
    await e.h.core.store.delete(leaseKey(stranded.body.lease_id));
    expect((await lookup(stranded.body.lease_id)).status).toBe(404);

    // Before the deadline a lease may still be on its way: nothing is returned.
    e.h.clock.advance(claimSeconds - 5);
    await rotateDue(e.h.core);
    const early = (await e.call('GET', 'library/pool/status')).body.data;
    expect([early[strandedAccount].available, early[leasedAccount].available]).toEqual([false, false]);

    e.h.clock.advance(6);
    expect(await rotateDue(e.h.core)).toMatchObject({ failed: 0 });
    const after = (await e.call('GET', 'library/pool/status')).body.data;
    expect(after[strandedAccount]).toEqual({ available: true });
    expect(await e.slapd.canBind(dnOf(strandedAccount), stranded.body.data.password)).toBe(false);
    expect(await e.slapd.canBind(dnOf(strandedAccount), await held(strandedAccount))).toBe(true);
    // The leased one stays with its borrower, out of the job's queue: its lease's end brings it back.
    expect(after[leasedAccount].available).toBe(false);
    expect((await lookup(leased.body.lease_id)).status).toBe(200);
    expect(await e.slapd.canBind(dnOf(leasedAccount), leased.body.data.password)).toBe(true);
    expect((await e.item(`library-account/${leasedAccount}`))?.duePk).toBeUndefined();
    // And the returned account lends again, with a password that binds.
    const again = await as(bob, 'POST', 'library/pool/check-out');
    expect(again.body.data.service_account_name).toBe(strandedAccount);
    expect(await e.slapd.canBind(dnOf(strandedAccount), again.body.data.password)).toBe(true);
    for (const [token, account] of [
      [alice, leasedAccount],
      [bob, strandedAccount],
    ] as const) {
      expect(
        (await as(token, 'POST', 'library/pool/check-in', { service_account_names: [account] })).body.data.check_ins,
      ).toEqual([account]);
    }
  });
});
