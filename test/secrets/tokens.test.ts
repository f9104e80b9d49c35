import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { createSecretsApp } from '../../packages/core/src/http/secrets-app.ts';
import { sweepExpired } from '../../packages/core/src/entry-points/expiry-sweeps.ts';
import { type Backend, path } from '../../packages/core/src/secrets/framework/backend.ts';
import { type CallResult, type SecretsService, startSecretsInMemory } from '../support/secrets-harness.ts';

/** The `auth` block of a reply that issued or renewed a token. */
interface Auth {
  client_token: string;
  accessor: string;
  policies: string[];
  token_policies: string[];
  metadata: Record<string, string> | null;
  lease_duration: number;
  renewable: boolean;
  entity_id: string;
  token_type: 'service' | 'batch';
  orphan: boolean;
  num_uses: number;
}

/** A stand-in auth method: its login issues a token the way a real one (JWT, LDAP) will. */
const testLogin: Backend = {
  type: 'test-login',
  kind: 'auth',
  paths: [
    path({
      pattern: 'login',
      fields: z.object({ cidr: z.string().optional() }),
      unauthenticated: true,
      operations: {
        update: async ({ data }) => ({
          auth: {
            policies: ['reader', 'token-maker'],
            displayName: 'test-login-alice',
            entityId: 'entity-alice',
            ttl: 3600,
            boundCidrs: data.cidr ? [data.cidr] : [],
          },
        }),
      },
    }),
  ],
};

const policies: Record<string, string> = {
  reader: 'path "secret/app/*" { capabilities = ["read", "list"] }',
  'secret-admin': 'path "secret/*" { capabilities = ["create", "read", "update", "delete", "list"] }',
  'token-maker': `
    path "auth/token/create" { capabilities = ["update"] }
    path "auth/token/create-orphan" { capabilities = ["update"] }`,
  'token-sudo': 'path "auth/token/create" { capabilities = ["update", "sudo"] }',
  'token-admin': 'path "auth/token/*" { capabilities = ["read", "update"] }',
  orphaner: 'path "auth/token/revoke-orphan" { capabilities = ["update", "sudo"] }',
};

let h: SecretsService;

beforeAll(async () => {
  h = await startSecretsInMemory({ extraBackends: [testLogin] });
  for (const [name, policy] of Object.entries(policies)) {
    expect((await h.call('PUT', `/v1/sys/policies/acl/${name}`, { token: h.rootToken, body: { policy } })).status).toBe(
      204,
    );
  }
  expect((await h.call('POST', '/v1/secret/app/db', { token: h.rootToken, body: { password: 'pw' } })).status).toBe(
    204,
  );
  expect(
    (await h.call('POST', '/v1/secret/app/leased', { token: h.rootToken, body: { password: 'pw2', ttl: '1h' } }))
      .status,
  ).toBe(204);
});
afterAll(() => h.close());

async function create(body: Record<string, unknown> = {}, token = h.rootToken, endpoint = 'create'): Promise<Auth> {
  const reply = await h.call('POST', `/v1/auth/token/${endpoint}`, { token, body });
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  expect(reply.body.data).toBeNull();
  return reply.body.auth as Auth;
}

const lookupSelf = (token: string) => h.call('GET', '/v1/auth/token/lookup-self', { token });
const lookup = (token: string) => h.call('POST', '/v1/auth/token/lookup', { token: h.rootToken, body: { token } });
const readSecret = (token: string) => h.call('GET', '/v1/secret/app/db', { token });
const expectDenied = (reply: CallResult) => {
  expect(reply.status).toBe(403);
  expect(reply.body.errors[0]).toMatch(/permission denied/);
};
const expectBadRequest = (reply: CallResult, message: string | RegExp) => {
  expect(reply.status, JSON.stringify(reply.body)).toBe(400);
  expect(reply.body.errors.join(' ')).toMatch(message);
};

async function tableItems(): Promise<Record<string, unknown>[]> {
  return h.core.store.scan();
}

const accessorItem = (accessor: string) => h.core.store.get(`accessor#${accessor}`, 'accessor');
const nowIso = (plusSeconds: number) =>
  new Date(Math.floor(h.clock.now() / 1000) * 1000 + plusSeconds * 1000).toISOString();

describe('presenting a token', () => {
  it('accepts X-Secrets-Token, X-Vault-Token and Authorization: Bearer', async () => {
    const { client_token: token } = await create({ policies: ['reader'] });
    const headerSets: Record<string, string>[] = [
      { 'X-Secrets-Token': token },
      { 'X-Vault-Token': token },
      { Authorization: `Bearer ${token}` },
    ];
    for (const headers of headerSets) {
      const reply = await h.call('GET', '/v1/auth/token/lookup-self', { headers });
      expect(reply.status).toBe(200);
      expect(reply.body.data.id).toBe(token);
      expect((await h.call('GET', '/v1/secret/app/db', { headers })).body.data).toEqual({ password: 'pw' });
    }
  });

  it('answers 403 without a token, with an unknown one, or with another auth scheme', async () => {
    const missing = await h.call('GET', '/v1/secret/app/db');
    expect(missing).toEqual({ status: 403, body: { errors: ['permission denied'] } });
    expectDenied(await readSecret('hvs.not-a-real-token'));
    expectDenied(await readSecret('hvb.AAAA'));
    expectDenied(await h.call('GET', '/v1/secret/app/db', { headers: { Authorization: `Basic ${h.rootToken}` } }));
  });
});

describe('auth/token/create', () => {
  it('issues a service token with every field as Vault shows it', async () => {
    const auth = await create({
      policies: ['reader', 'Secret-Admin'],
      ttl: '1h',
      explicit_max_ttl: '2h',
      num_uses: 4,
      renewable: true,
      display_name: 'CI job',
      meta: { team: 'payments' },
    });
    expect(auth).toMatchObject({
      policies: ['default', 'reader', 'secret-admin'],
      token_policies: ['default', 'reader', 'secret-admin'],
      metadata: { team: 'payments' },
      lease_duration: 3600,
      renewable: true,
      entity_id: '',
      token_type: 'service',
      orphan: false,
      num_uses: 4,
    });
    expect(auth.client_token).toMatch(/^hvs\.[A-Za-z0-9]{24}$/);
    expect(auth.accessor).toMatch(/^[A-Za-z0-9]{24}$/);

    const { status, body } = await lookup(auth.client_token);
    expect(status).toBe(200);
    expect(body.data).toMatchObject({
      id: auth.client_token,
      accessor: auth.accessor,
      policies: ['default', 'reader', 'secret-admin'],
      path: 'auth/token/create',
      meta: { team: 'payments' },
      display_name: 'token-CI-job',
      num_uses: 4,
      orphan: false,
      creation_time: Math.floor(h.clock.now() / 1000),
      creation_ttl: 3600,
      expire_time: nowIso(3600),
      issue_time: nowIso(0),
      explicit_max_ttl: 7200,
      ttl: 3600,
      renewable: true,
      type: 'service',
      entity_id: '',
    });
  });

  it('uses the mount default TTL and caps a TTL above the mount max, with a warning', async () => {
    expect((await create({ policies: ['reader'] })).lease_duration).toBe(768 * 3600);
    const reply = await h.call('POST', '/v1/auth/token/create', {
      token: h.rootToken,
      body: { policies: ['reader'], ttl: '1000h' },
    });
    expect(reply.status).toBe(200);
    expect(reply.body.auth.lease_duration).toBe(768 * 3600);
    expect(reply.body.warnings.join(' ')).toMatch(/capped/);
  });

  it('caps a TTL above explicit_max_ttl to it, with a warning, as Vault does', async () => {
    const reply = await h.call('POST', '/v1/auth/token/create', {
      token: h.rootToken,
      body: { policies: ['reader'], ttl: '3h', explicit_max_ttl: '1h' },
    });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body.auth.lease_duration).toBe(3600);
    expect(reply.body.warnings.join(' ')).toMatch(/capped/);
  });

  it('makes a periodic token (root or sudo only) that renews to its period indefinitely', async () => {
    const auth = await create({ policies: ['reader'], period: '30m', ttl: '5h' });
    expect(auth.lease_duration).toBe(1800);
    expect((await lookup(auth.client_token)).body.data.period).toBe(1800);
    for (let round = 0; round < 3; round++) {
      h.clock.advance(25 * 60);
      const renewed = await h.call('POST', '/v1/auth/token/renew-self', {
        token: auth.client_token,
        body: { increment: '10h' },
      });
      expect(renewed.status).toBe(200);
      expect(renewed.body.auth.lease_duration).toBe(1800);
    }
    expect((await readSecret(auth.client_token)).status).toBe(200);

    const maker = await create({ policies: ['token-maker', 'reader'] });
    expectBadRequest(
      await h.call('POST', '/v1/auth/token/create', { token: maker.client_token, body: { period: '1h' } }),
      'root or sudo privileges required to create periodic token',
    );
  });

  it('leaves out the default policy with no_default_policy, so the token cannot even look itself up', async () => {
    const auth = await create({ policies: ['reader'], no_default_policy: true });
    expect(auth.policies).toEqual(['reader']);
    expect((await readSecret(auth.client_token)).status).toBe(200);
    expectDenied(await lookupSelf(auth.client_token));
  });

  it('makes a token that cannot be renewed with renewable=false', async () => {
    const auth = await create({ policies: ['reader'], ttl: '1h', renewable: false });
    expect(auth.renewable).toBe(false);
    expectBadRequest(
      await h.call('POST', '/v1/auth/token/renew-self', { token: auth.client_token }),
      'lease is not renewable',
    );
  });

  it('lets root choose the token id, once, and nobody else', async () => {
    const auth = await create({ id: 'my-custom-token-0001', policies: ['reader'] });
    expect(auth.client_token).toBe('my-custom-token-0001');
    expect((await lookupSelf('my-custom-token-0001')).body.data.id).toBe('my-custom-token-0001');
    expectBadRequest(
      await h.call('POST', '/v1/auth/token/create', { token: h.rootToken, body: { id: 'my-custom-token-0001' } }),
      /id is taken/,
    );
    const maker = await create({ policies: ['token-maker', 'reader'] });
    expectBadRequest(
      await h.call('POST', '/v1/auth/token/create', { token: maker.client_token, body: { id: 'mine' } }),
      'root or sudo privileges required to specify token id',
    );
  });

  it('makes an orphan with no_parent (root or sudo only) and with create-orphan (by ACL)', async () => {
    expect((await create({ policies: ['reader'], no_parent: true })).orphan).toBe(true);
    const maker = await create({ policies: ['token-maker', 'reader'] });
    expectBadRequest(
      await h.call('POST', '/v1/auth/token/create', { token: maker.client_token, body: { no_parent: true } }),
      'root or sudo privileges required to create orphan token',
    );
    const orphan = await create({ policies: ['reader'] }, maker.client_token, 'create-orphan');
    expect(orphan.orphan).toBe(true);
    expect((await lookupSelf(orphan.client_token)).body.data).toMatchObject({
      orphan: true,
      path: 'auth/token/create-orphan',
    });
    expect((await h.call('POST', '/v1/auth/token/revoke-self', { token: maker.client_token })).status).toBe(204);
    expect((await readSecret(orphan.client_token)).status).toBe(200);
  });

  it.each([
    [{ ttl: '-5m' }, /"ttl"/],
    [{ ttl: 'soon' }, /"ttl"/],
    [{ type: 'forever' }, /"type"/],
    [{ num_uses: -1 }, /"num_uses"/],
    [{ policies: { a: 'b' } }, /"policies"/],
    [{ meta: { a: { b: 1 } } }, /"meta\.a"/],
  ])('refuses bad input %j with a 400 naming the field', async (body, field) => {
    expectBadRequest(await h.call('POST', '/v1/auth/token/create', { token: h.rootToken, body }), field);
  });
});

describe('child token policies', () => {
  it('must be a subset of the parent policies for an ordinary parent', async () => {
    const parent = await create({ policies: ['reader', 'token-maker'] });
    expect((await create({}, parent.client_token)).policies).toEqual(['default', 'reader', 'token-maker']);
    expect((await create({ policies: ['reader'] }, parent.client_token)).policies).toEqual(['default', 'reader']);
    expectBadRequest(
      await h.call('POST', '/v1/auth/token/create', {
        token: parent.client_token,
        body: { policies: ['reader', 'secret-admin'] },
      }),
      'child policies must be subset of parent',
    );
    expectBadRequest(
      await h.call('POST', '/v1/auth/token/create', { token: parent.client_token, body: { policies: ['root'] } }),
      'child policies must be subset of parent',
    );
  });

  it('may go beyond the parent when it has sudo on the create path, but never to root', async () => {
    const parent = await create({ policies: ['token-sudo'] });
    const child = await create({ policies: ['secret-admin'] }, parent.client_token);
    expect(child.policies).toEqual(['default', 'secret-admin']);
    expect((await h.call('GET', '/v1/secret/app/db', { token: child.client_token })).status).toBe(200);
    expectBadRequest(
      await h.call('POST', '/v1/auth/token/create', { token: parent.client_token, body: { policies: ['root'] } }),
      'root tokens may not be created without parent token being root',
    );
  });

  it('may be anything for a root parent, and a root child inherits root', async () => {
    expect((await create({ policies: ['secret-admin'] })).policies).toEqual(['default', 'secret-admin']);
    const rootChild = await create({ ttl: '1h' });
    expect(rootChild.policies).toEqual(['root']);
    expect((await h.call('LIST', '/v1/sys/policies/acl', { token: rootChild.client_token })).status).toBe(200);
  });

  it('does not give a child the default policy its parent lacks', async () => {
    const parent = await create({ policies: ['reader', 'token-maker'], no_default_policy: true });
    expect((await create({}, parent.client_token)).policies).toEqual(['reader', 'token-maker']);
    expect((await create({ policies: ['reader'] }, parent.client_token)).policies).toEqual(['reader']);
    expectBadRequest(
      await h.call('POST', '/v1/auth/token/create', { token: parent.client_token, body: { policies: ['default'] } }),
      'child policies must be subset of parent',
    );
  });

  it('cannot be created by a limited-use token, which would escape its limit', async () => {
    const parent = await create({ policies: ['reader', 'token-maker'], num_uses: 10 });
    expectBadRequest(
      await h.call('POST', '/v1/auth/token/create', { token: parent.client_token, body: {} }),
      'restricted use token cannot generate child tokens',
    );
  });

  it('an expiring root token cannot create a non-expiring root token', async () => {
    const expiringRoot = await create({ ttl: '1h' });
    expectBadRequest(
      await h.call('POST', '/v1/auth/token/create', { token: expiringRoot.client_token, body: {} }),
      'expiring root tokens cannot create non-expiring root tokens',
    );
    expect((await create({ ttl: '10m' }, expiringRoot.client_token)).lease_duration).toBe(600);
  });
});

describe('looking tokens up', () => {
  it('lookup shows the token to a caller allowed on auth/token/lookup, and 403 to others', async () => {
    const target = await create({ policies: ['reader'] });
    const admin = await create({ policies: ['token-admin'] });
    const viaAdmin = await h.call('POST', '/v1/auth/token/lookup', {
      token: admin.client_token,
      body: { token: target.client_token },
    });
    expect(viaAdmin.status).toBe(200);
    expect(viaAdmin.body.data).toMatchObject({
      id: target.client_token,
      accessor: target.accessor,
      policies: ['default', 'reader'],
    });
    expectDenied(
      await h.call('POST', '/v1/auth/token/lookup', {
        token: target.client_token,
        body: { token: admin.client_token },
      }),
    );
    expect(await lookup('hvs.unknown')).toEqual({ status: 403, body: { errors: ['bad token'] } });
  });

  it('lookup-accessor shows the token without its id', async () => {
    const target = await create({ policies: ['reader'], meta: { app: 'x' } });
    const reply = await h.call('POST', '/v1/auth/token/lookup-accessor', {
      token: h.rootToken,
      body: { accessor: target.accessor },
    });
    expect(reply.status).toBe(200);
    expect(reply.body.data).toMatchObject({
      id: '',
      accessor: target.accessor,
      policies: ['default', 'reader'],
      meta: { app: 'x' },
    });
    expectBadRequest(
      await h.call('POST', '/v1/auth/token/lookup-accessor', { token: h.rootToken, body: { accessor: 'nope' } }),
      'invalid accessor',
    );
  });

  it('lookup-self needs only the default policy, and shows the uses left after this one', async () => {
    const auth = await create({ policies: ['reader'], num_uses: 3 });
    const reply = await lookupSelf(auth.client_token);
    expect(reply.status).toBe(200);
    expect(reply.body.data).toMatchObject({ id: auth.client_token, policies: ['default', 'reader'], num_uses: 2 });
  });
});

describe('renewing tokens', () => {
  it('renew-self extends by the increment, or by the creation TTL without one', async () => {
    const auth = await create({ policies: ['reader'], ttl: '1h' });
    h.clock.advance(30 * 60);
    const renewed = await h.call('POST', '/v1/auth/token/renew-self', {
      token: auth.client_token,
      body: { increment: '2h' },
    });
    expect(renewed.status).toBe(200);
    expect(renewed.body.auth).toMatchObject({
      client_token: auth.client_token,
      accessor: auth.accessor,
      lease_duration: 7200,
      renewable: true,
    });
    expect((await lookupSelf(auth.client_token)).body.data).toMatchObject({
      ttl: 7200,
      expire_time: nowIso(7200),
      last_renewal_time: Math.floor(h.clock.now() / 1000),
    });
    h.clock.advance(10 * 60);
    expect(
      (await h.call('POST', '/v1/auth/token/renew-self', { token: auth.client_token })).body.auth.lease_duration,
    ).toBe(3600);
    h.clock.advance(3599);
    expect((await readSecret(auth.client_token)).status).toBe(200);
    h.clock.advance(2);
    expectDenied(await readSecret(auth.client_token));
  });

  it('caps renewal at explicit_max_ttl with a warning, then the token dies there', async () => {
    const auth = await create({ policies: ['reader'], ttl: '1h', explicit_max_ttl: '2h' });
    const renewSelf = () =>
      h.call('POST', '/v1/auth/token/renew-self', { token: auth.client_token, body: { increment: '1h' } });
    h.clock.advance(50 * 60);
    const first = await renewSelf();
    expect(first.status).toBe(200);
    expect(first.body.auth.lease_duration).toBe(3600);
    expect(first.body.warnings).toBeNull();
    h.clock.advance(50 * 60);
    const capped = await renewSelf();
    expect(capped.status).toBe(200);
    expect(capped.body.auth.lease_duration).toBe(20 * 60);
    expect(capped.body.warnings).toEqual([expect.stringMatching(/exceeded the effective max_ttl .* capped/)]);
    h.clock.advance(20 * 60);
    expectDenied(await readSecret(auth.client_token));
  });

  it('caps renewal at the mount max TTL (32 days) with a warning', async () => {
    const auth = await create({ policies: ['reader'], ttl: '700h' });
    h.clock.advance(699 * 3600);
    const renewed = await h.call('POST', '/v1/auth/token/renew-self', {
      token: auth.client_token,
      body: { increment: '100h' },
    });
    expect(renewed.status).toBe(200);
    expect(renewed.body.auth.lease_duration).toBe(69 * 3600);
    expect(renewed.body.warnings.join(' ')).toMatch(/capped/);
  });

  it('renew and renew-accessor renew another token for a caller allowed to', async () => {
    const target = await create({ policies: ['reader'], ttl: '1h' });
    const admin = await create({ policies: ['token-admin'] });
    h.clock.advance(600);
    const byToken = await h.call('POST', '/v1/auth/token/renew', {
      token: admin.client_token,
      body: { token: target.client_token, increment: 7200 },
    });
    expect(byToken.status).toBe(200);
    expect(byToken.body.auth).toMatchObject({ client_token: target.client_token, lease_duration: 7200 });
    const byAccessor = await h.call('POST', '/v1/auth/token/renew-accessor', {
      token: admin.client_token,
      body: { accessor: target.accessor, increment: '3h' },
    });
    expect(byAccessor.status).toBe(200);
    expect(byAccessor.body.auth).toMatchObject({ accessor: target.accessor, lease_duration: 3 * 3600 });
    expectDenied(
      await h.call('POST', '/v1/auth/token/renew', { token: target.client_token, body: { token: admin.client_token } }),
    );
    expectBadRequest(
      await h.call('POST', '/v1/auth/token/renew', { token: h.rootToken, body: { token: 'hvs.gone' } }),
      'token not found',
    );
  });

  it('does not give back the uses a limited-use token spends on renewing itself', async () => {
    const auth = await create({ policies: ['reader'], ttl: '1h', num_uses: 3 });
    for (let use = 0; use < 2; use++) {
      const renewed = await h.call('POST', '/v1/auth/token/renew-self', { token: auth.client_token });
      expect(renewed.status).toBe(200);
      expect(renewed.body.auth.num_uses).toBe(2 - use);
    }
    expect((await readSecret(auth.client_token)).status).toBe(200);
    expectDenied(await readSecret(auth.client_token));
  });
});

describe('revoking tokens', () => {
  async function family() {
    const parent = await create({ policies: ['reader', 'token-maker'] });
    const child = await create({ policies: ['reader', 'token-maker'] }, parent.client_token);
    const grandchild = await create({ policies: ['reader'] }, child.client_token);
    return { parent, child, grandchild };
  }

  it('revoke takes the token and its whole subtree, and their table items', async () => {
    const { parent, child, grandchild } = await family();
    expect(
      await h.call('POST', '/v1/auth/token/revoke', { token: h.rootToken, body: { token: parent.client_token } }),
    ).toEqual({
      status: 204,
      body: undefined,
    });
    for (const token of [parent, child, grandchild]) {
      expectDenied(await readSecret(token.client_token));
      expect(await accessorItem(token.accessor)).toBeUndefined();
    }
    // As Vault, revoking a token that is already gone succeeds.
    expect(
      (await h.call('POST', '/v1/auth/token/revoke', { token: h.rootToken, body: { token: parent.client_token } }))
        .status,
    ).toBe(204);
  });

  it('revoke-self and revoke-accessor revoke the subtree too', async () => {
    const first = await family();
    expect((await h.call('POST', '/v1/auth/token/revoke-self', { token: first.child.client_token })).status).toBe(204);
    expectDenied(await readSecret(first.grandchild.client_token));
    expect((await readSecret(first.parent.client_token)).status).toBe(200);

    const second = await family();
    const reply = await h.call('POST', '/v1/auth/token/revoke-accessor', {
      token: h.rootToken,
      body: { accessor: second.parent.accessor },
    });
    expect(reply.status).toBe(204);
    expectDenied(await readSecret(second.child.client_token));
    expectDenied(await readSecret(second.grandchild.client_token));
    expectBadRequest(
      await h.call('POST', '/v1/auth/token/revoke-accessor', {
        token: h.rootToken,
        body: { accessor: second.parent.accessor },
      }),
      'invalid accessor',
    );
  });

  it('revoke-orphan needs sudo and leaves the children alive as orphans', async () => {
    const { parent, child, grandchild } = await family();
    const admin = await create({ policies: ['token-admin'] });
    expectDenied(
      await h.call('POST', '/v1/auth/token/revoke-orphan', {
        token: admin.client_token,
        body: { token: parent.client_token },
      }),
    );
    expect((await readSecret(parent.client_token)).status).toBe(200);

    const orphaner = await create({ policies: ['orphaner'] });
    expect(
      (
        await h.call('POST', '/v1/auth/token/revoke-orphan', {
          token: orphaner.client_token,
          body: { token: parent.client_token },
        })
      ).status,
    ).toBe(204);
    expectDenied(await readSecret(parent.client_token));
    expect((await lookupSelf(child.client_token)).body.data).toMatchObject({ orphan: true });
    expect((await lookupSelf(grandchild.client_token)).body.data).toMatchObject({ orphan: false });
    // The grandchild is still the orphaned child's child.
    expect((await h.call('POST', '/v1/auth/token/revoke-self', { token: child.client_token })).status).toBe(204);
    expectDenied(await readSecret(grandchild.client_token));
  });

  it('revoking a token revokes the leases it holds', async () => {
    const auth = await create({ policies: ['reader'] });
    const read = await h.call('GET', '/v1/secret/app/leased', { token: auth.client_token });
    expect(read.status).toBe(200);
    expect(read.body.lease_id).toMatch(/^secret\/app\/leased\//);
    expect(await h.core.leases.get(read.body.lease_id)).toBeDefined();
    expect((await h.call('POST', '/v1/auth/token/revoke-self', { token: auth.client_token })).status).toBe(204);
    expect(await h.core.leases.get(read.body.lease_id)).toBeUndefined();
    const lookupLease = await h.call('POST', '/v1/sys/leases/lookup', {
      token: h.rootToken,
      body: { lease_id: read.body.lease_id },
    });
    expect(lookupLease.status).not.toBe(200);
  });
});

describe('token expiry', () => {
  it('a token stops working when the clock passes its TTL', async () => {
    const auth = await create({ policies: ['reader'], ttl: '10m' });
    h.clock.advance(599);
    expect((await readSecret(auth.client_token)).status).toBe(200);
    h.clock.advance(1);
    expect(await readSecret(auth.client_token)).toEqual({
      status: 403,
      body: { errors: ['permission denied: invalid or expired token'] },
    });
  });

  it('the expiry sweep revokes an expired token with its children', async () => {
    const parent = await create({ policies: ['reader', 'token-maker'], ttl: '10m' });
    const child = await create({ policies: ['reader'], ttl: '10h' }, parent.client_token);
    h.clock.advance(11 * 60);
    const swept = await sweepExpired(h.core);
    expect(swept.tokens).toBeGreaterThanOrEqual(1);
    expectDenied(await readSecret(child.client_token));
    expect(await accessorItem(parent.accessor)).toBeUndefined();
    expect(await accessorItem(child.accessor)).toBeUndefined();
  });
});

describe('num_uses', () => {
  it('lookup-self on the last use shows no uses left', async () => {
    const auth = await create({ policies: ['reader'], num_uses: 1 });
    const last = await lookupSelf(auth.client_token);
    expect(last.status).toBe(200);
    expect(last.body.data.num_uses).toBe(0);
    expectDenied(await lookupSelf(auth.client_token));
  });

  it('a token with num_uses=3 works three times, then 403, and is gone', async () => {
    const auth = await create({ policies: ['reader'], num_uses: 3 });
    for (let use = 0; use < 3; use++) expect((await readSecret(auth.client_token)).status).toBe(200);
    expectDenied(await readSecret(auth.client_token));
    expect(await accessorItem(auth.accessor)).toBeUndefined();
  });

  it('refuses a spent token even if the process that spent its last use died before revoking it', async () => {
    const auth = await create({ policies: ['reader'], num_uses: 1 });
    const entry = await h.core.tokens.lookup(auth.client_token);
    if (!entry) throw new Error('the new token is not live');
    // What the pipeline does on a last use, without the revocation that normally follows the handler.
    expect(await h.core.tokens.consumeUse(entry)).toMatchObject({ numUses: 0 });
    expectDenied(await readSecret(auth.client_token));
    expect((await sweepExpired(h.core)).tokens).toBeGreaterThanOrEqual(1);
    expect(await accessorItem(auth.accessor)).toBeUndefined();
  });

  it('is enforced atomically: of 20 concurrent requests with num_uses=5, exactly 5 succeed', async () => {
    const auth = await create({ policies: ['reader'], num_uses: 5 });
    const replies = await Promise.all(Array.from({ length: 20 }, () => readSecret(auth.client_token)));
    const statuses = replies.map((reply) => reply.status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(5);
    expect(statuses.filter((status) => status === 403)).toHaveLength(15);
    expectDenied(await readSecret(auth.client_token));
  });
});

describe('batch tokens', () => {
  it('are self-contained: issuing one writes nothing to the table', async () => {
    const parent = await create({ policies: ['reader', 'token-maker'] });
    const before = (await tableItems()).length;
    const auth = await create({ type: 'batch', policies: ['reader'], ttl: '20m' }, parent.client_token);
    expect((await tableItems()).length).toBe(before);
    expect(auth).toMatchObject({
      accessor: '',
      token_type: 'batch',
      renewable: false,
      orphan: false,
      lease_duration: 1200,
      policies: ['default', 'reader'],
    });
    expect(auth.client_token).toMatch(/^hvb\./);
    expect((await readSecret(auth.client_token)).body.data).toEqual({ password: 'pw' });
    expect((await lookupSelf(auth.client_token)).body.data).toMatchObject({
      id: auth.client_token,
      type: 'batch',
      ttl: 1200,
      renewable: false,
    });
    expect((await tableItems()).length).toBe(before);
  });

  it('cannot be renewed, revoked or used to create tokens', async () => {
    const auth = await create({ type: 'batch', policies: ['reader', 'token-maker'] });
    expectBadRequest(
      await h.call('POST', '/v1/auth/token/renew-self', { token: auth.client_token }),
      'batch tokens cannot be renewed',
    );
    expectBadRequest(
      await h.call('POST', '/v1/auth/token/create', { token: auth.client_token, body: { policies: ['reader'] } }),
      'batch tokens cannot create',
    );
    expectBadRequest(
      await h.call('POST', '/v1/auth/token/revoke', { token: h.rootToken, body: { token: auth.client_token } }),
      'batch tokens cannot be revoked',
    );
    expect((await readSecret(auth.client_token)).status).toBe(200);
  });

  it('refuses what a batch token cannot carry', async () => {
    const refuse = (body: Record<string, unknown>) =>
      h.call('POST', '/v1/auth/token/create', { token: h.rootToken, body: { type: 'batch', ...body } });
    expectBadRequest(await refuse({ policies: ['reader'], num_uses: 2 }), 'batch tokens cannot have "num_uses"');
    expectBadRequest(await refuse({ policies: ['reader'], period: '1h' }), 'batch tokens cannot have "period"');
    expectBadRequest(
      await refuse({ policies: ['reader'], explicit_max_ttl: '1h' }),
      'batch tokens cannot have "explicit_max_ttl"',
    );
    expectBadRequest(await refuse({ id: 'custom-batch' }), 'cannot be used for batch tokens');
    expectBadRequest(await refuse({}), 'batch tokens cannot be root tokens');
  });

  it('die with their parent unless orphaned', async () => {
    const parent = await create({ policies: ['reader', 'token-maker'] });
    const child = await create({ type: 'batch', policies: ['reader'] }, parent.client_token);
    const orphan = await create({ type: 'batch', policies: ['reader'] }, parent.client_token, 'create-orphan');
    expect(orphan.orphan).toBe(true);
    expect((await h.call('POST', '/v1/auth/token/revoke-self', { token: parent.client_token })).status).toBe(204);
    expectDenied(await readSecret(child.client_token));
    expect((await readSecret(orphan.client_token)).status).toBe(200);
  });

  it('expire with the clock, and a tampered one is refused', async () => {
    const auth = await create({ type: 'batch', policies: ['reader'], ttl: '5m' });
    const tail = auth.client_token.at(-2) === 'A' ? 'B' : 'A';
    expectDenied(await readSecret(`${auth.client_token.slice(0, -2)}${tail}${auth.client_token.at(-1)}`));
    h.clock.advance(299);
    expect((await readSecret(auth.client_token)).status).toBe(200);
    h.clock.advance(1);
    expectDenied(await readSecret(auth.client_token));
  });
});

describe('token storage', () => {
  it('keeps service tokens only as keyed hashes, each with an accessor', async () => {
    const random = await create({ policies: ['reader'] });
    const custom = await create({ id: 'storage-check-custom-id', policies: ['reader'] });
    const items = await tableItems();
    const dump = JSON.stringify(items);
    for (const token of [random.client_token, custom.client_token, h.rootToken]) expect(dump).not.toContain(token);
    for (const auth of [random, custom]) {
      const ref = await accessorItem(auth.accessor);
      expect(ref?.tokenHash).toEqual(expect.any(String));
      const tokenItem = items.find((item) => item.pk === `token#${ref?.tokenHash}` && item.sk === 'token');
      expect(tokenItem).toMatchObject({ accessor: auth.accessor, policies: ['default', 'reader'] });
    }
  });
});

describe('tokens from a login', () => {
  beforeAll(async () => {
    const enabled = await h.call('POST', '/v1/sys/auth/test', {
      token: h.rootToken,
      body: { type: 'test-login', config: { max_lease_ttl: '2h' } },
    });
    expect(enabled.status).toBe(204);
  });

  const login = async (body: Record<string, unknown> = {}) => {
    const reply = await h.call('POST', '/v1/auth/test/login', { body });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    return reply.body.auth as Auth;
  };

  it('carry the login entity_id and bound CIDRs to their children, but not to orphans', async () => {
    const auth = await login({ cidr: '127.0.0.0/8' });
    expect(auth).toMatchObject({
      entity_id: 'entity-alice',
      orphan: true,
      policies: ['default', 'reader', 'token-maker'],
    });
    const child = await create({ policies: ['reader'] }, auth.client_token);
    expect(child.entity_id).toBe('entity-alice');
    expect((await lookupSelf(child.client_token)).body.data).toMatchObject({
      entity_id: 'entity-alice',
      bound_cidrs: ['127.0.0.0/8'],
    });
    const orphan = await create({ policies: ['reader'] }, auth.client_token, 'create-orphan');
    expect(orphan.entity_id).toBe('');

    const elsewhere = createSecretsApp({ core: async () => h.core, clientIp: () => '10.1.2.3' });
    for (const token of [auth.client_token, child.client_token]) {
      const reply = await elsewhere.request('/v1/secret/app/db', { headers: { 'X-Secrets-Token': token } });
      expect(reply.status).toBe(403);
      expect(await reply.json()).toEqual({ errors: ['permission denied: token not valid from this address'] });
    }
    const orphanElsewhere = await elsewhere.request('/v1/secret/app/db', {
      headers: { 'X-Secrets-Token': orphan.client_token },
    });
    expect(orphanElsewhere.status).toBe(200);
  });

  it('renew within the max TTL of the mount that issued them, and not past it', async () => {
    const auth = await login();
    expect(auth.lease_duration).toBe(3600);
    h.clock.advance(50 * 60);
    const renewed = await h.call('POST', '/v1/auth/token/renew-self', {
      token: auth.client_token,
      body: { increment: '5h' },
    });
    expect(renewed.status).toBe(200);
    expect(renewed.body.auth.lease_duration).toBe(70 * 60);
    expect(renewed.body.warnings.join(' ')).toMatch(/capped/);

    const tuned = await h.call('POST', '/v1/sys/auth/test/tune', {
      token: h.rootToken,
      body: { max_lease_ttl: '30m' },
    });
    expect(tuned.status).toBe(204);
    expectBadRequest(
      await h.call('POST', '/v1/auth/token/renew-self', { token: auth.client_token }),
      'past the max TTL, cannot renew',
    );
  });
});

describe('auth/token/accessors', () => {
  it('lists the accessor of every live service token, from the token store and from logins; sudo only', async () => {
    const made = await create({ policies: ['reader'] });
    const batch = await create({ policies: ['reader'], type: 'batch' });
    const listed = await h.call('LIST', '/v1/auth/token/accessors', { token: h.rootToken });
    expect(listed.status).toBe(200);
    const keys = listed.body.data.keys as string[];
    expect(keys).toContain(made.accessor);
    expect(keys).toContain((await lookupSelf(h.rootToken)).body.data.accessor);
    expect(batch.accessor).toBe('');
    expect(keys).not.toContain('');
    expect(keys).toEqual([...keys].sort());
    // Every listed accessor is one a live service token answers to.
    for (const accessor of keys) {
      expect(
        (await h.call('POST', '/v1/auth/token/lookup-accessor', { token: h.rootToken, body: { accessor } })).status,
      ).toBe(200);
    }
    expect((await h.call('GET', '/v1/auth/token/accessors?list=true', { token: h.rootToken })).body.data.keys).toEqual(
      keys,
    );

    await h.call('POST', '/v1/auth/token/revoke-accessor', { token: h.rootToken, body: { accessor: made.accessor } });
    expect((await h.call('LIST', '/v1/auth/token/accessors', { token: h.rootToken })).body.data.keys).not.toContain(
      made.accessor,
    );
    expectDenied(
      await h.call('LIST', '/v1/auth/token/accessors', {
        token: (await create({ policies: ['reader'] })).client_token,
      }),
    );
  });
});

describe('numeric fields are bounded', () => {
  const huge = ['9007199254740993', 2 ** 53, '99999999999999999999', 2 ** 31, -1, '-1', 1.5, '1e3', 'ten'];

  it('refuses a num_uses that is not a count with a 400 naming the field, on create and create-orphan', async () => {
    for (const path of ['/v1/auth/token/create', '/v1/auth/token/create-orphan']) {
      for (const num_uses of huge) {
        const reply = await h.call('POST', path, { token: h.rootToken, body: { policies: ['reader'], num_uses } });
        expect(reply.status, `${path} ${JSON.stringify(num_uses)}`).toBe(400);
        expect(reply.body.errors[0]).toContain('"num_uses"');
        expect(reply.body.errors[0]).toMatch(/must be at most 2147483647|must be at least 0|cannot parse|beyond/);
      }
    }
  });

  it('takes the largest count, as a number or a string, and shows it back', async () => {
    // As Vault's TypeInt: a string is a Go integer literal (`strconv.ParseInt(s, 0, 64)`), so "0x7" is 7.
    for (const num_uses of [2 ** 31 - 1, '2147483647', '0x7']) {
      const reply = await h.call('POST', '/v1/auth/token/create', {
        token: h.rootToken,
        body: { policies: ['reader'], num_uses },
      });
      expect(reply.status, JSON.stringify(reply.body)).toBe(200);
      expect(reply.body.auth.num_uses).toBe(Number(String(num_uses).trim()));
      const looked = await h.call('POST', '/v1/auth/token/lookup', {
        token: h.rootToken,
        body: { token: reply.body.auth.client_token },
      });
      expect(looked.body.data.num_uses).toBe(Number(String(num_uses).trim()));
    }
  });

  it('refuses durations that overflow with a 400 naming the field', async () => {
    for (const [field, value] of [
      ['ttl', '99999999999h'],
      ['explicit_max_ttl', '9999999999999999999999s'],
      ['period', 1e300],
      ['ttl', '9007199254740993'],
    ] as const) {
      const reply = await h.call('POST', '/v1/auth/token/create', {
        token: h.rootToken,
        body: { policies: ['reader'], [field]: value },
      });
      expect(reply.status, `${field} ${value}`).toBe(400);
      expect(reply.body.errors[0]).toContain(`"${field}"`);
    }
  });
});
