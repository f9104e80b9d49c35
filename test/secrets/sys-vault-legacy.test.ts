import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SecretsService, startSecretsInMemory } from '../support/secrets-harness.ts';

/** The `sys/` endpoints Vault's clients still call: seal status, leader, the legacy policy and lease paths. */
let h: SecretsService;
beforeAll(async () => {
  h = await startSecretsInMemory();
});
afterAll(() => h.close());

const asRoot = (body?: unknown) => ({ token: h.rootToken, ...(body === undefined ? {} : { body }) });

describe('sys status for Vault clients', () => {
  it('answers sys/seal-status and sys/leader without a token, as an unsealed single active node', async () => {
    const seal = await h.call('GET', '/v1/sys/seal-status');
    expect(seal.status).toBe(200);
    expect(Object.keys(seal.body).sort()).toEqual(
      [
        'build_date',
        'cluster_id',
        'cluster_name',
        'initialized',
        'migration',
        'n',
        'nonce',
        'progress',
        'recovery_seal',
        'sealed',
        'storage_type',
        't',
        'type',
        'version',
      ].sort(),
    );
    expect(seal.body).toMatchObject({
      type: 'shamir',
      initialized: true,
      sealed: false,
      t: 1,
      n: 1,
      progress: 0,
      nonce: '',
      migration: false,
      recovery_seal: false,
    });
    const health = await h.call('GET', '/v1/sys/health');
    expect(health.body.cluster_id).toBe(seal.body.cluster_id);
    expect(seal.body.cluster_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);

    const leader = await h.call('GET', '/v1/sys/leader');
    expect(leader).toEqual({
      status: 200,
      body: {
        ha_enabled: false,
        is_self: false,
        active_time: '0001-01-01T00:00:00Z',
        leader_address: '',
        leader_cluster_address: '',
        performance_standby: false,
        performance_standby_last_remote_wal: 0,
      },
    });
  });
});

describe('legacy sys/policy', () => {
  it('writes with rules (or policy), reads {name, rules} and lists {keys, policies}, also at the top level', async () => {
    const rules = 'path "secret/*" { capabilities = ["read"] }';
    expect((await h.call('PUT', '/v1/sys/policy/legacy', asRoot({ rules }))).status).toBe(204);
    const read = await h.call('GET', '/v1/sys/policy/legacy', asRoot());
    expect(read.body).toMatchObject({ name: 'legacy', rules, data: { name: 'legacy', rules } });
    expect((await h.call('GET', '/v1/sys/policies/acl/legacy', asRoot())).body.data.policy).toBe(rules);
    expect((await h.call('PUT', '/v1/sys/policy/other', asRoot({ policy: rules }))).status).toBe(204);

    const listed = await h.call('GET', '/v1/sys/policy', asRoot());
    expect(listed.body).toMatchObject({
      keys: ['default', 'legacy', 'other', 'root'],
      policies: ['default', 'legacy', 'other', 'root'],
    });
    expect(listed.body.data).toEqual({
      keys: ['default', 'legacy', 'other', 'root'],
      policies: ['default', 'legacy', 'other', 'root'],
    });

    expect(await h.call('PUT', '/v1/sys/policy/bad', asRoot({ rules: 'path {' }))).toMatchObject({ status: 400 });
    expect(await h.call('PUT', '/v1/sys/policy/empty', asRoot({}))).toMatchObject({
      status: 400,
      body: { errors: [expect.stringContaining('"rules"')] },
    });
    expect((await h.call('DELETE', '/v1/sys/policy/legacy', asRoot())).status).toBe(204);
    expect((await h.call('GET', '/v1/sys/policy/legacy', asRoot())).status).toBe(404);
    expect((await h.call('GET', '/v1/sys/policy', { token: 'nope' })).status).toBe(403);
  });
});

describe('legacy lease paths', () => {
  it('renews with sys/renew and sys/renew/:id, revokes with sys/revoke/:id and sys/revoke-prefix', async () => {
    await h.call('POST', '/v1/secret/app/db', asRoot({ password: 'p', ttl: '1h' }));
    const lease = (await h.call('GET', '/v1/secret/app/db', asRoot())).body.lease_id as string;
    const renewed = await h.call('PUT', '/v1/sys/renew', asRoot({ lease_id: lease, increment: 600 }));
    expect(renewed.body).toMatchObject({ lease_id: lease, lease_duration: 600, renewable: true });
    expect((await h.call('PUT', `/v1/sys/renew/${lease}`, asRoot({ increment: '20m' }))).body.lease_duration).toBe(
      1200,
    );
    expect((await h.call('PUT', `/v1/sys/revoke/${lease}`, asRoot())).status).toBe(204);
    expect((await h.call('PUT', '/v1/sys/leases/lookup', asRoot({ lease_id: lease }))).status).toBe(404);

    const second = (await h.call('GET', '/v1/secret/app/db', asRoot())).body.lease_id as string;
    expect((await h.call('PUT', '/v1/sys/revoke', asRoot({ lease_id: second }))).status).toBe(204);
    const third = (await h.call('GET', '/v1/secret/app/db', asRoot())).body.lease_id as string;
    expect((await h.call('PUT', '/v1/sys/revoke-prefix/secret/app', asRoot())).status).toBe(204);
    expect((await h.call('PUT', '/v1/sys/leases/lookup', asRoot({ lease_id: third }))).status).toBe(404);
    const fourth = (await h.call('GET', '/v1/secret/app/db', asRoot())).body.lease_id as string;
    expect((await h.call('PUT', '/v1/sys/revoke-force/secret/app', asRoot())).status).toBe(204);
    expect((await h.call('PUT', '/v1/sys/leases/lookup', asRoot({ lease_id: fourth }))).status).toBe(404);
  });
});
