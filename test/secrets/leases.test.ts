import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sweepExpired } from '../../packages/core/src/entry-points/expiry-sweeps.ts';
import { type LeaseItem, leasePk } from '../../packages/core/src/secrets/leases/lease-manager.ts';
import { mountRecording, nullAuthBackend, recordingBackend, upstreamOf } from '../support/recording-backend.ts';
import { type SecretsService, startSecretsInMemory } from '../support/secrets-harness.ts';

let h: SecretsService;
/** When the harness clock started (epoch ms); lease times are asserted relative to it. */
let start: number;
beforeEach(async () => {
  h = await startSecretsInMemory({ extraBackends: [recordingBackend, nullAuthBackend] });
  start = h.clock.now();
});
afterEach(() => h.close());

/** The ISO time `seconds` after the test started. */
const at = (seconds: number) => new Date(start + seconds * 1000).toISOString();
const asRoot = (body?: unknown) => ({ token: h.rootToken, ...(body === undefined ? {} : { body }) });

async function issue(path = 'rec/creds/app', token = h.rootToken) {
  const reply = await h.call('GET', `/v1/${path}`, { token });
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return reply.body as {
    lease_id: string;
    lease_duration: number;
    renewable: boolean;
    warnings: string[] | null;
    data: { username: string };
  };
}

const lookup = (leaseId: string, token = h.rootToken) =>
  h.call('PUT', '/v1/sys/leases/lookup', { token, body: { lease_id: leaseId } });
const storedLease = (leaseId: string) => h.core.store.get<LeaseItem>(leasePk(leaseId), leaseId);

async function tokenWith(policy: string): Promise<string> {
  const name = `policy-${randomUUID().slice(0, 8)}`;
  expect((await h.call('PUT', `/v1/sys/policies/acl/${name}`, asRoot({ policy }))).status).toBe(204);
  const created = await h.call('POST', '/v1/auth/token/create', asRoot({ policies: [name] }));
  expect(created.status).toBe(200);
  return created.body.auth.client_token as string;
}

const leaseUser = `
path "rec/*" { capabilities = ["read"] }
path "sys/leases/*" { capabilities = ["create", "read", "update", "list"] }
`;
const leaseAdmin = `
path "sys/leases/*" { capabilities = ["create", "read", "update", "list", "sudo"] }
`;

describe('lease ids and lookup', () => {
  it('names a lease <mount>/<path>/<random> and shows it in lookup', async () => {
    await mountRecording(h, 'rec', { roles: { app: { ttl: '1h' } } });
    const issued = await issue();
    expect(issued.lease_id).toMatch(/^rec\/creds\/app\/[A-Za-z0-9]{24}$/);
    expect(issued.lease_duration).toBe(3600);
    expect(issued.renewable).toBe(true);

    const found = await lookup(issued.lease_id);
    expect(found.status).toBe(200);
    expect(found.body.data).toEqual({
      id: issued.lease_id,
      issue_time: at(0),
      expire_time: at(3600),
      last_renewal: null,
      renewable: true,
      ttl: 3600,
      irrevocable: false,
      revocation_attempts: 0,
    });
    h.clock.advance(600);
    expect((await lookup(issued.lease_id)).body.data.ttl).toBe(3000);
  });

  it('gives every read its own lease and its own secret', async () => {
    await mountRecording(h, 'rec', { roles: { app: { ttl: 60 } } });
    const first = await issue();
    const second = await issue();
    expect(first.lease_id).not.toBe(second.lease_id);
    expect(first.data.username).not.toBe(second.data.username);
    expect((await lookup(second.lease_id)).body.data.id).toBe(second.lease_id);
  });

  it('keeps the backend data for the revoke hook sealed in the lease item', async () => {
    await mountRecording(h, 'rec', { roles: { app: { ttl: 60 } } });
    const issued = await issue();
    const item = await storedLease(issued.lease_id);
    expect(item?.internal).toMatch(/^v1:/);
    expect(JSON.stringify(item)).not.toContain(issued.data.username);
  });

  it('answers 404 for an unknown lease and 400 without a lease id', async () => {
    const missing = await lookup('rec/creds/app/nope');
    expect(missing.status).toBe(404);
    expect(missing.body.errors).toEqual(['lease not found']);
    const noId = await h.call('PUT', '/v1/sys/leases/lookup', asRoot({}));
    expect(noId.status).toBe(400);
    expect(noId.body.errors[0]).toContain('lease_id');
  });

  it('lists lease ids by prefix with sudo, one level at a time, and refuses without sudo', async () => {
    await mountRecording(h, 'rec', { roles: { app: { ttl: 60 }, web: { ttl: 60 } } });
    const a = await issue('rec/creds/app');
    const b = await issue('rec/creds/app');
    await issue('rec/creds/web');

    const top = await h.call('LIST', '/v1/sys/leases/lookup/rec/', asRoot());
    expect(top.status).toBe(200);
    expect(top.body.data.keys).toEqual(['creds/']);
    const roles = await h.call('LIST', '/v1/sys/leases/lookup/rec/creds', asRoot());
    expect(roles.body.data.keys).toEqual(['app/', 'web/']);
    const ids = await h.call('GET', '/v1/sys/leases/lookup/rec/creds/app/?list=true', asRoot());
    expect(ids.status).toBe(200);
    expect(ids.body.data.keys).toEqual([a.lease_id, b.lease_id].map((id) => id.split('/').pop()).sort());
    expect((await h.call('LIST', '/v1/sys/leases/lookup/nothing/', asRoot())).status).toBe(404);

    const user = await tokenWith(leaseUser);
    const denied = await h.call('LIST', '/v1/sys/leases/lookup/rec/', { token: user });
    expect(denied.status).toBe(403);
    const admin = await tokenWith(leaseAdmin);
    expect((await h.call('LIST', '/v1/sys/leases/lookup/rec/creds/', { token: admin })).body.data.keys).toEqual([
      'app/',
      'web/',
    ]);
  });
});

describe('TTL resolution', () => {
  it('uses the backend TTL, else the mount default, else the system default of 768h', async () => {
    await mountRecording(h, 'rec', {
      config: { default_lease_ttl: '30m' },
      roles: { fixed: { ttl: '10m' }, open: {} },
    });
    expect((await issue('rec/creds/fixed')).lease_duration).toBe(600);
    expect((await issue('rec/creds/open')).lease_duration).toBe(1800);

    await mountRecording(h, 'plain', { roles: { open: {} } });
    expect((await issue('plain/creds/open')).lease_duration).toBe(768 * 3600);
  });

  it('follows a tuned mount default for new leases and leaves existing ones alone', async () => {
    await mountRecording(h, 'rec', { config: { default_lease_ttl: '1h', max_lease_ttl: '4h' } });
    const before = await issue();
    expect(before.lease_duration).toBe(3600);
    expect((await h.call('POST', '/v1/sys/mounts/rec/tune', asRoot({ default_lease_ttl: '2h' }))).status).toBe(204);
    expect((await issue()).lease_duration).toBe(7200);
    expect((await lookup(before.lease_id)).body.data.ttl).toBe(3600);
  });

  it('caps the TTL at the mount max and at the backend max, with a warning', async () => {
    await mountRecording(h, 'rec', {
      config: { max_lease_ttl: '2h' },
      roles: { long: { ttl: '3h' }, capped: { ttl: '1h', max_ttl: '30m' } },
    });
    const long = await issue('rec/creds/long');
    expect(long.lease_duration).toBe(7200);
    expect(long.warnings).toEqual([
      'TTL of "10800s" exceeded the effective max_ttl of "7200s"; TTL value is capped accordingly',
    ]);
    const capped = await issue('rec/creds/capped');
    expect(capped.lease_duration).toBe(1800);
    expect(capped.warnings).toEqual([
      'TTL of "3600s" exceeded the effective max_ttl of "1800s"; TTL value is capped accordingly',
    ]);
    expect((await lookup(capped.lease_id)).body.data.expire_time).toBe(at(1800));
  });
});

describe('renew', () => {
  it('extends a lease by the increment, from now, and records the renewal', async () => {
    await mountRecording(h, 'rec', { roles: { app: { ttl: '1h' } } });
    const issued = await issue();
    h.clock.advance(1200);
    const renewed = await h.call('PUT', '/v1/sys/leases/renew', asRoot({ lease_id: issued.lease_id, increment: '2h' }));
    expect(renewed.status).toBe(200);
    expect(renewed.body).toMatchObject({
      lease_id: issued.lease_id,
      renewable: true,
      lease_duration: 7200,
      data: null,
      warnings: null,
    });
    const found = (await lookup(issued.lease_id)).body.data;
    expect(found.ttl).toBe(7200);
    expect(found.last_renewal).toBe(at(1200));
    expect(found.expire_time).toBe(at(8400));
    expect((await storedLease(issued.lease_id))?.dueSk).toBe(
      `${String(start / 1000 + 1200 + 7200).padStart(12, '0')}#lease#${issued.lease_id}`,
    );
    expect((await upstreamOf(h.core, issued.lease_id))?.renewals).toBe(1);
  });

  it('renews by the lease TTL without an increment, and through the URL form', async () => {
    await mountRecording(h, 'rec', { roles: { app: { ttl: '1h' } } });
    const issued = await issue();
    h.clock.advance(3000);
    const renewed = await h.call('PUT', `/v1/sys/leases/renew/${issued.lease_id}`, asRoot({}));
    expect(renewed.status).toBe(200);
    expect(renewed.body.lease_duration).toBe(3600);
    expect((await lookup(issued.lease_id)).body.data.ttl).toBe(3600);
    expect(
      (await h.call('PUT', `/v1/sys/leases/renew/${issued.lease_id}`, asRoot({ increment: 90 }))).body.lease_duration,
    ).toBe(90);
  });

  it('lets the backend renew hook choose the TTL and lower the cap', async () => {
    await mountRecording(h, 'rec', { roles: { app: { ttl: '1h' } } });
    const issued = await issue();
    await h.call('POST', '/v1/rec/config', asRoot({ renew_ttl: '45m' }));
    expect(
      (await h.call('PUT', '/v1/sys/leases/renew', asRoot({ lease_id: issued.lease_id, increment: '2h' }))).body
        .lease_duration,
    ).toBe(2700);

    await h.call('POST', '/v1/rec/config', asRoot({ renew_ttl: '45m', renew_max_ttl: '30m' }));
    h.clock.advance(600);
    const capped = await h.call('PUT', '/v1/sys/leases/renew', asRoot({ lease_id: issued.lease_id }));
    expect(capped.status).toBe(200);
    expect(capped.body.lease_duration).toBe(1200);
    expect(capped.body.warnings).toEqual([
      'TTL of "2700s" exceeded the effective max_ttl of "1200s"; TTL value is capped accordingly',
    ]);
  });

  it('caps renewals at the max TTL with a warning, and refuses once the max TTL is past', async () => {
    await mountRecording(h, 'rec', { config: { max_lease_ttl: '2h' }, roles: { app: { ttl: '1h' } } });
    const issued = await issue();
    h.clock.advance(1800);
    const capped = await h.call('PUT', '/v1/sys/leases/renew', asRoot({ lease_id: issued.lease_id, increment: '3h' }));
    expect(capped.status).toBe(200);
    expect(capped.body.lease_duration).toBe(5400);
    expect(capped.body.warnings).toEqual([
      'TTL of "10800s" exceeded the effective max_ttl of "5400s"; TTL value is capped accordingly',
    ]);
    expect((await lookup(issued.lease_id)).body.data.expire_time).toBe(at(7200));

    // The mount's max is read again at every renewal, as Vault does: tuned below the lease's age, nothing is left.
    expect((await h.call('POST', '/v1/sys/mounts/rec/tune', asRoot({ max_lease_ttl: '20m' }))).status).toBe(204);
    const past = await h.call('PUT', '/v1/sys/leases/renew', asRoot({ lease_id: issued.lease_id }));
    expect(past.status).toBe(400);
    expect(past.body.errors).toEqual(['past the max TTL, cannot renew']);
    expect((await lookup(issued.lease_id)).body.data.expire_time).toBe(at(7200));
  });

  it('refuses expired, unknown and non-renewable leases', async () => {
    await mountRecording(h, 'rec', { roles: { app: { ttl: 60 }, fixed: { ttl: 60, renewable: false } } });
    const fixed = await issue('rec/creds/fixed');
    expect(fixed.renewable).toBe(false);
    const notRenewable = await h.call('PUT', '/v1/sys/leases/renew', asRoot({ lease_id: fixed.lease_id }));
    expect(notRenewable.status).toBe(400);
    expect(notRenewable.body.errors).toEqual(['lease is not renewable']);

    const unknown = await h.call('PUT', '/v1/sys/leases/renew', asRoot({ lease_id: 'rec/creds/app/unknown' }));
    expect(unknown.status).toBe(400);
    expect(unknown.body.errors).toEqual(['lease not found or lease is not renewable']);

    const issued = await issue();
    h.clock.advance(61);
    const expired = await h.call('PUT', '/v1/sys/leases/renew', asRoot({ lease_id: issued.lease_id }));
    expect(expired.status).toBe(400);
    expect(expired.body.errors).toEqual(['lease not found or lease is not renewable']);

    const negative = await h.call('PUT', '/v1/sys/leases/renew', asRoot({ lease_id: issued.lease_id, increment: -5 }));
    expect(negative.status).toBe(400);
    expect(negative.body.errors[0]).toContain('increment');
  });
});

describe('revoke', () => {
  it('revokes at once with sync (the default): the hook runs once and the lease is gone', async () => {
    await mountRecording(h, 'rec', { roles: { app: { ttl: '1h' } } });
    const issued = await issue();
    const revoked = await h.call('PUT', '/v1/sys/leases/revoke', asRoot({ lease_id: issued.lease_id }));
    expect(revoked.status).toBe(204);
    expect(await upstreamOf(h.core, issued.lease_id)).toMatchObject({
      username: issued.data.username,
      attempts: 1,
      revoked: 1,
    });
    expect(await storedLease(issued.lease_id)).toBeUndefined();
    expect((await lookup(issued.lease_id)).status).toBe(404);

    const again = await h.call('PUT', '/v1/sys/leases/revoke', asRoot({ lease_id: issued.lease_id }));
    expect(again.status).toBe(400);
    expect(again.body.errors).toEqual(['invalid lease ID']);
    h.clock.advance(7200);
    await sweepExpired(h.core);
    expect((await upstreamOf(h.core, issued.lease_id))?.revoked).toBe(1);
  });

  it('revokes through the URL form and drops the lease from its owner token', async () => {
    await mountRecording(h, 'rec', { roles: { app: { ttl: '1h' } } });
    const issued = await issue();
    const rootHash = h.core.keyring.hash(h.rootToken);
    expect(await h.core.store.get(`token#${rootHash}`, `lease#${issued.lease_id}`)).toBeDefined();
    expect((await h.call('PUT', `/v1/sys/leases/revoke/${issued.lease_id}`, asRoot())).status).toBe(204);
    expect(await upstreamOf(h.core, issued.lease_id)).toMatchObject({ attempts: 1, revoked: 1 });
    expect(await h.core.store.get(`token#${rootHash}`, `lease#${issued.lease_id}`)).toBeUndefined();
  });

  it('with sync=false queues the lease for the sweep, which revokes it right away', async () => {
    await mountRecording(h, 'rec', { roles: { app: { ttl: '1h' } } });
    const issued = await issue();
    const queued = await h.call('PUT', '/v1/sys/leases/revoke', asRoot({ lease_id: issued.lease_id, sync: false }));
    expect(queued.status).toBe(204);
    expect(await upstreamOf(h.core, issued.lease_id)).toBeUndefined();
    expect(await sweepExpired(h.core)).toEqual({ tokens: 0, leases: 1, failed: 0 });
    expect(await upstreamOf(h.core, issued.lease_id)).toMatchObject({ attempts: 1, revoked: 1 });
    expect((await lookup(issued.lease_id)).status).toBe(404);
  });

  it('reports a failing hook, keeps the lease and shows the failure in lookup', async () => {
    await mountRecording(h, 'rec', { roles: { app: { ttl: '1h' } } });
    const issued = await issue();
    await h.call('POST', '/v1/rec/config', asRoot({ fail_revoke: true }));
    const failed = await h.call('PUT', '/v1/sys/leases/revoke', asRoot({ lease_id: issued.lease_id }));
    expect(failed.status).toBe(502);
    expect(failed.body.errors[0]).toContain(`failed to revoke lease ${issued.lease_id}`);
    const found = await lookup(issued.lease_id);
    expect(found.status).toBe(200);
    expect(found.body.data).toMatchObject({
      irrevocable: false,
      revocation_attempts: 1,
      last_revocation_error: `upstream refused to delete ${issued.data.username}`,
    });
    expect(await upstreamOf(h.core, issued.lease_id)).toMatchObject({ attempts: 1, revoked: 0 });

    // On its way out: it is no longer renewable, so a renewal cannot push back the retries.
    expect(found.body.data.renewable).toBe(false);
    const renewed = await h.call('PUT', '/v1/sys/leases/renew', asRoot({ lease_id: issued.lease_id }));
    expect(renewed.status).toBe(400);
    expect(renewed.body.errors).toEqual(['lease is not renewable']);
  });

  it('runs the hook once when the same lease is revoked twice at the same moment', async () => {
    await mountRecording(h, 'rec', { roles: { app: { ttl: 60 } } });
    const issued = await issue();
    h.clock.advance(60);
    const [first, second] = await Promise.all([
      h.call('PUT', '/v1/sys/leases/revoke', asRoot({ lease_id: issued.lease_id })),
      h.call('PUT', `/v1/sys/leases/revoke/${issued.lease_id}`, asRoot()),
      sweepExpired(h.core),
    ]);
    expect([first.status, second.status].filter((status) => status !== 204 && status !== 400)).toEqual([]);
    expect(await upstreamOf(h.core, issued.lease_id)).toMatchObject({ attempts: 1, revoked: 1 });
    expect((await lookup(issued.lease_id)).status).toBe(404);
  });

  it('revoke-prefix revokes exactly the leases under the prefix, each hook once; sudo only', async () => {
    await mountRecording(h, 'rec', { roles: { app: { ttl: '1h' }, web: { ttl: '1h' } } });
    await mountRecording(h, 'rec2', { roles: { app: { ttl: '1h' } } });
    const apps = [await issue('rec/creds/app'), await issue('rec/creds/app')];
    const web = await issue('rec/creds/web');
    const other = await issue('rec2/creds/app');

    const user = await tokenWith(leaseUser);
    const denied = await h.call('PUT', '/v1/sys/leases/revoke-prefix/rec/creds/app', { token: user });
    expect(denied.status).toBe(403);
    expect(await storedLease(apps[0]!.lease_id)).toBeDefined();

    const admin = await tokenWith(leaseAdmin);
    expect((await h.call('PUT', '/v1/sys/leases/revoke-prefix/rec/creds/app/', { token: admin })).status).toBe(204);
    for (const lease of apps) {
      expect(await upstreamOf(h.core, lease.lease_id)).toMatchObject({ attempts: 1, revoked: 1 });
      expect(await storedLease(lease.lease_id)).toBeUndefined();
    }
    expect(await upstreamOf(h.core, web.lease_id)).toBeUndefined();
    expect(await storedLease(web.lease_id)).toBeDefined();

    // A prefix is a path: `rec` is the mount `rec/`, not every mount whose name starts with "rec".
    expect((await h.call('PUT', '/v1/sys/leases/revoke-prefix/rec', asRoot())).status).toBe(204);
    expect(await upstreamOf(h.core, web.lease_id)).toMatchObject({ revoked: 1 });
    expect(await upstreamOf(h.core, other.lease_id)).toBeUndefined();
    expect((await lookup(other.lease_id)).status).toBe(200);
  });

  it('revoke-prefix also takes a single lease id', async () => {
    await mountRecording(h, 'rec', { roles: { app: { ttl: '1h' } } });
    const issued = await issue();
    const kept = await issue();
    expect((await h.call('PUT', `/v1/sys/leases/revoke-prefix/${issued.lease_id}`, asRoot())).status).toBe(204);
    expect((await lookup(issued.lease_id)).status).toBe(404);
    expect((await lookup(kept.lease_id)).status).toBe(200);
  });

  it('revoke-force forgets leases whose hook fails; sudo only', async () => {
    await mountRecording(h, 'rec', { roles: { app: { ttl: '1h' } } });
    const leases = [await issue(), await issue()];
    await h.call('POST', '/v1/rec/config', asRoot({ fail_revoke: true }));

    const failed = await h.call('PUT', '/v1/sys/leases/revoke-prefix/rec/', asRoot());
    expect(failed.status).toBe(502);
    expect(failed.body.errors[0]).toContain('2 of 2 leases could not be revoked');
    for (const lease of leases) expect((await lookup(lease.lease_id)).body.data.revocation_attempts).toBe(1);

    const user = await tokenWith(leaseUser);
    expect((await h.call('PUT', '/v1/sys/leases/revoke-force/rec/', { token: user })).status).toBe(403);
    expect((await lookup(leases[0]!.lease_id)).status).toBe(200);

    expect((await h.call('PUT', '/v1/sys/leases/revoke-force/rec/', asRoot())).status).toBe(204);
    for (const lease of leases) {
      expect((await lookup(lease.lease_id)).status).toBe(404);
      // The hook was still tried once more before the lease was forgotten.
      expect(await upstreamOf(h.core, lease.lease_id)).toMatchObject({ attempts: 2, revoked: 0 });
    }
  });
});

describe('leases and their owner token', () => {
  it('revoking a token revokes the leases it owns, and only those', async () => {
    await mountRecording(h, 'rec', { roles: { app: { ttl: '1h' } } });
    const user = await tokenWith(leaseUser);
    const owned = await issue('rec/creds/app', user);
    const rootOwned = await issue();

    const revoked = await h.call('POST', '/v1/auth/token/revoke', asRoot({ token: user }));
    expect(revoked.status).toBe(204);
    expect(await upstreamOf(h.core, owned.lease_id)).toMatchObject({ attempts: 1, revoked: 1 });
    expect((await lookup(owned.lease_id)).status).toBe(404);
    expect(await upstreamOf(h.core, rootOwned.lease_id)).toBeUndefined();
    expect((await lookup(rootOwned.lease_id)).status).toBe(200);
  });

  it('a lease whose hook fails outlives its revoked token, queued for retry', async () => {
    await mountRecording(h, 'rec', { roles: { app: { ttl: '1h' } } });
    const user = await tokenWith(leaseUser);
    const owned = await issue('rec/creds/app', user);
    await h.call('POST', '/v1/rec/config', asRoot({ fail_revoke: true }));
    expect((await h.call('POST', '/v1/auth/token/revoke', asRoot({ token: user }))).status).toBe(204);
    expect((await h.call('GET', '/v1/auth/token/lookup-self', { token: user })).status).toBe(403);
    const found = await lookup(owned.lease_id);
    expect(found.status).toBe(200);
    expect(found.body.data).toMatchObject({ revocation_attempts: 1, irrevocable: false });
  });
});

describe('leases of static kv secrets', () => {
  it('renews and revokes a kv lease', async () => {
    expect((await h.call('POST', '/v1/secret/leased', asRoot({ password: 'pw', ttl: '10m' }))).status).toBe(204);
    const read = await issue('secret/leased');
    expect(read.lease_id).toMatch(/^secret\/leased\/[A-Za-z0-9]{24}$/);
    expect(read.lease_duration).toBe(600);
    const renewed = await h.call('PUT', '/v1/sys/leases/renew', asRoot({ lease_id: read.lease_id, increment: '20m' }));
    expect(renewed.body.lease_duration).toBe(1200);
    expect((await h.call('PUT', '/v1/sys/leases/revoke', asRoot({ lease_id: read.lease_id }))).status).toBe(204);
    expect((await lookup(read.lease_id)).status).toBe(404);
    // Revoking the lease of a static secret leaves the secret itself in place.
    expect((await h.call('GET', '/v1/secret/leased', asRoot())).body.data.password).toBe('pw');
  });
});
