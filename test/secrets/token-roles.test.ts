import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSecretsApp } from '../../packages/core/src/http/secrets-app.ts';
import { type CallResult, type SecretsService, startSecretsInMemory } from '../support/secrets-harness.ts';

/** Token roles: `auth/token/roles/:role_name` and `auth/token/create/:role_name`, as Vault's token store has them. */

const policies: Record<string, string> = {
  dev: 'path "secret/dev/*" { capabilities = ["read"] }',
  test: 'path "secret/test/*" { capabilities = ["read"] }',
  ops: 'path "secret/ops/*" { capabilities = ["read"] }',
  'team-a-read': 'path "secret/a/*" { capabilities = ["read"] }',
  'team-b-read': 'path "secret/b/*" { capabilities = ["read"] }',
  'token-maker': 'path "auth/token/create" { capabilities = ["update"] }',
  'role-user': `
    path "auth/token/create/team" { capabilities = ["update"] }
    path "auth/token/create/plain" { capabilities = ["update"] }
    path "auth/token/create/open" { capabilities = ["update"] }
    path "auth/token/create/periodic" { capabilities = ["update"] }
    path "auth/token/create/orphans" { capabilities = ["update"] }
    path "auth/token/create/children" { capabilities = ["update"] }`,
};

let h: SecretsService;
/** A token holding only `role-user` (and `default`), as an ordinary client of the roles would. */
let user: string;

beforeAll(async () => {
  h = await startSecretsInMemory();
  for (const [name, policy] of Object.entries(policies)) {
    expect((await h.call('PUT', `/v1/sys/policies/acl/${name}`, { token: h.rootToken, body: { policy } })).status).toBe(
      204,
    );
  }
  user = (await h.call('POST', '/v1/auth/token/create', { token: h.rootToken, body: { policies: ['role-user'] } })).body
    .auth.client_token;
});
afterAll(() => h.close());

const writeRole = (name: string, body: Record<string, unknown>) =>
  h.call('POST', `/v1/auth/token/roles/${name}`, { token: h.rootToken, body });
const readRole = (name: string) => h.call('GET', `/v1/auth/token/roles/${name}`, { token: h.rootToken });
const storedRole = async (name: string) => (await h.core.store.get('mount#token', `role/${name}`))?.value;
const createFrom = (role: string, body: Record<string, unknown> = {}, token = h.rootToken) =>
  h.call('POST', `/v1/auth/token/create/${role}`, { token, body });
const lookup = (token: string) => h.call('POST', '/v1/auth/token/lookup', { token: h.rootToken, body: { token } });

async function issued(role: string, body: Record<string, unknown> = {}, token = h.rootToken) {
  const reply = await createFrom(role, body, token);
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return reply.body;
}

async function role(name: string, body: Record<string, unknown>) {
  const reply = await writeRole(name, body);
  expect(reply.status, JSON.stringify(reply.body)).toBe(204);
}

const expectBadRequest = (reply: CallResult, message: string | RegExp) => {
  expect(reply.status, JSON.stringify(reply.body)).toBe(400);
  expect(reply.body.errors.join(' ')).toMatch(message);
};

describe('auth/token/roles', () => {
  it('writes, reads, updates, lists and deletes a role, stored in the token store partition', async () => {
    await role('crud', {
      allowed_policies: 'Dev, test',
      disallowed_policies: ['ops'],
      allowed_policies_glob: ['team-*'],
      disallowed_policies_glob: 'team-b-*',
      allowed_entity_aliases: ['Alias-One'],
      orphan: 'true',
      renewable: false,
      path_suffix: 'v1',
      token_period: '1h',
      token_explicit_max_ttl: 7200,
      token_bound_cidrs: ['10.0.0.0/8', '192.168.1.7'],
      token_no_default_policy: true,
      token_num_uses: '3',
      token_type: 'default',
    });
    const expected = {
      name: 'crud',
      allowed_policies: ['dev', 'test'],
      disallowed_policies: ['ops'],
      allowed_policies_glob: ['team-*'],
      disallowed_policies_glob: ['team-b-*'],
      allowed_entity_aliases: ['alias-one'],
      orphan: true,
      renewable: false,
      path_suffix: 'v1',
      token_period: 3600,
      period: 3600,
      token_explicit_max_ttl: 7200,
      explicit_max_ttl: 7200,
      token_bound_cidrs: ['10.0.0.0/8', '192.168.1.7/32'],
      token_no_default_policy: true,
      token_num_uses: 3,
      token_type: 'default-service',
    };
    const read = await readRole('crud');
    expect(read.status).toBe(200);
    expect(read.body.data).toEqual(expected);
    expect(await storedRole('crud')).toEqual(storedForm(expected));

    // An update changes only the fields it names.
    await role('crud', {
      orphan: false,
      token_type: 'batch',
      token_period: 0,
      token_num_uses: 0,
      token_explicit_max_ttl: 0,
    });
    expect((await readRole('crud')).body.data).toEqual({
      ...expected,
      orphan: false,
      token_type: 'batch',
      token_period: 0,
      period: 0,
      token_num_uses: 0,
      token_explicit_max_ttl: 0,
      explicit_max_ttl: 0,
    });

    await role('crud-two', {});
    expect((await readRole('crud-two')).body.data).toMatchObject({
      renewable: true,
      orphan: false,
      token_type: 'default-service',
      allowed_policies: [],
    });
    const listed = await h.call('LIST', '/v1/auth/token/roles', { token: h.rootToken });
    expect(listed.status).toBe(200);
    expect(listed.body.data.keys).toEqual(expect.arrayContaining(['crud', 'crud-two']));
    expect((await h.call('GET', '/v1/auth/token/roles?list=true', { token: h.rootToken })).body.data.keys).toEqual(
      listed.body.data.keys,
    );

    expect((await h.call('DELETE', '/v1/auth/token/roles/crud', { token: h.rootToken })).status).toBe(204);
    expect((await readRole('crud')).status).toBe(404);
    expect(await storedRole('crud')).toBeUndefined();
    expectBadRequest(await createFrom('crud'), /^unknown role crud$/);
  });

  it('refuses bad input with 400 naming the field, and keeps nothing', async () => {
    expectBadRequest(await writeRole('bad', { token_type: 'weird' }), /"token_type"/);
    expectBadRequest(await writeRole('bad', { token_period: 'soon' }), /"token_period"/);
    expectBadRequest(await writeRole('bad', { token_num_uses: -1 }), /"token_num_uses"/);
    expectBadRequest(await writeRole('bad', { renewable: 'maybe' }), /"renewable"/);
    expectBadRequest(await writeRole('bad', { token_bound_cidrs: ['10.0.0.0/40'] }), /"token_bound_cidrs"/);
    expectBadRequest(await writeRole('bad', { path_suffix: 'v1/../other' }), /"path_suffix"/);
    expectBadRequest(await writeRole('bad', { token_type: 'batch', token_period: '1h' }), /"token_type".*token_period/);
    expectBadRequest(
      await writeRole('bad', { token_type: 'batch', token_num_uses: 2 }),
      /"token_type".*token_num_uses/,
    );
    expectBadRequest(await writeRole('-bad', {}), /"role_name"/);
    expect(await storedRole('bad')).toBeUndefined();
    expect((await readRole('bad')).status).toBe(404);
  });

  it('warns when the explicit max TTL is above the mount max', async () => {
    const reply = await writeRole('long', { token_explicit_max_ttl: '9000h' });
    expect(reply.status).toBe(200);
    expect(reply.body.warnings.join(' ')).toMatch(/greater than system\/mount allowed value/);
  });

  it('answers 404 to a list with no roles', async () => {
    const fresh = await startSecretsInMemory();
    try {
      expect((await fresh.call('LIST', '/v1/auth/token/roles', { token: fresh.rootToken })).status).toBe(404);
    } finally {
      await fresh.close();
    }
  });
});

describe('auth/token/create/:role_name policies', () => {
  beforeAll(async () => {
    await role('team', { allowed_policies: ['dev', 'test', 'ops'], disallowed_policies: ['ops'] });
    await role('globs', { allowed_policies_glob: ['team-*'], disallowed_policies_glob: ['*-b-*'] });
    await role('nodefault', { allowed_policies: ['dev'], disallowed_policies: ['default'] });
    await role('plain', {});
    await role('open', { disallowed_policies: ['ops'] });
  });

  it('gives the allowed policies less the disallowed ones when none are requested, plus default', async () => {
    const { auth } = await issued('team');
    expect(auth.policies).toEqual(['default', 'dev', 'test']);
    expect((await lookup(auth.client_token)).body.data.policies).toEqual(['default', 'dev', 'test']);
  });

  it('gives a requested subset of the allowed policies, to a caller that does not hold them', async () => {
    expect((await issued('team', { policies: ['DEV'] }, user)).auth.policies).toEqual(['default', 'dev']);
    expect((await issued('team', { policies: ['dev'], no_default_policy: true })).auth.policies).toEqual(['dev']);
  });

  it('refuses a policy outside the allowed ones, and a disallowed one even when allowed', async () => {
    expectBadRequest(
      await createFrom('team', { policies: ['dev', 'team-a-read'] }),
      /must be subset of the role's allowed policies/,
    );
    expectBadRequest(await createFrom('team', { policies: ['ops'] }), 'token policy "ops" is disallowed by this role');
  });

  it('matches allowed and disallowed globs', async () => {
    expect((await issued('globs', { policies: ['team-a-read'] })).auth.policies).toEqual(['default', 'team-a-read']);
    expectBadRequest(
      await createFrom('globs', { policies: ['team-b-read'] }),
      'token policy "team-b-read" is disallowed by this role',
    );
    expectBadRequest(await createFrom('globs', { policies: ['dev'] }), /or glob policies \("team-\*"\)/);
    // Globs are never expanded: with nothing requested only default is given.
    expect((await issued('globs')).auth.policies).toEqual(['default']);
  });

  it('leaves default out when the role disallows it', async () => {
    expect((await issued('nodefault')).auth.policies).toEqual(['dev']);
  });

  it('without allowed or disallowed policies, applies the parent rules', async () => {
    expectBadRequest(await createFrom('plain', { policies: ['dev'] }, user), /child policies must be subset of parent/);
    expect((await issued('plain', {}, user)).auth.policies).toEqual(['default', 'role-user']);
  });

  it('with only disallowed policies, allows any other policy, as Vault does', async () => {
    expect((await issued('open', { policies: ['dev'] }, user)).auth.policies).toEqual(['default', 'dev']);
    expectBadRequest(
      await createFrom('open', { policies: ['ops'] }, user),
      'token policy "ops" is disallowed by this role',
    );
  });
});

describe('auth/token/create/:role_name token settings', () => {
  it('shows the role and the path (with the suffix) on lookup', async () => {
    await role('suffixed', { path_suffix: 'v2' });
    const { auth } = await issued('suffixed');
    const { data } = (await lookup(auth.client_token)).body;
    expect(data).toMatchObject({ role: 'suffixed', path: 'auth/token/create/suffixed/v2', orphan: false });
    expect((await h.core.tokens.lookup(auth.client_token))?.role).toBe('suffixed');
    const plain = await h.call('POST', '/v1/auth/token/create', { token: h.rootToken, body: {} });
    expect((await lookup(plain.body.auth.client_token)).body.data.role).toBeUndefined();
  });

  it('makes orphans when the role says so, for any caller allowed on the role, and ignores no_parent otherwise', async () => {
    await role('orphans', { orphan: true });
    await role('children', { orphan: false });
    const parent = (
      await h.call('POST', '/v1/auth/token/create', { token: h.rootToken, body: { policies: ['role-user'] } })
    ).body.auth.client_token;
    const orphan = (await issued('orphans', {}, parent)).auth;
    const child = (await issued('children', { no_parent: true }, parent)).auth;
    expect(orphan.orphan).toBe(true);
    expect(child.orphan).toBe(false);
    expect(
      (await h.call('POST', '/v1/auth/token/revoke', { token: h.rootToken, body: { token: parent } })).status,
    ).toBe(204);
    expect((await lookup(orphan.client_token)).status).toBe(200);
    expect((await lookup(child.client_token)).status).toBe(403);
  });

  it('issues periodic tokens that renew to the role period as the role is now, and not once it is gone', async () => {
    await role('periodic', { allowed_policies: ['dev'], token_period: '1h' });
    const { auth } = await issued('periodic', {}, user);
    expect(auth.lease_duration).toBe(3600);
    expect((await lookup(auth.client_token)).body.data).toMatchObject({ period: 3600, ttl: 3600, renewable: true });

    h.clock.advance(50 * 60);
    const renewed = await h.call('POST', '/v1/auth/token/renew-self', {
      token: auth.client_token,
      body: { increment: 60 },
    });
    expect(renewed.status).toBe(200);
    expect(renewed.body.auth.lease_duration).toBe(3600);

    await role('periodic', { token_period: '2h' });
    expect(
      (await h.call('POST', '/v1/auth/token/renew-self', { token: auth.client_token })).body.auth.lease_duration,
    ).toBe(7200);

    expect((await h.call('DELETE', '/v1/auth/token/roles/periodic', { token: h.rootToken })).status).toBe(204);
    expectBadRequest(
      await h.call('POST', '/v1/auth/token/renew-self', { token: auth.client_token }),
      'original token role "periodic" could not be found, not renewing',
    );
    expect((await lookup(auth.client_token)).status).toBe(200);
  });

  it('takes the lesser explicit max TTL and period of the request and the role, with a warning', async () => {
    await role('capped', { token_explicit_max_ttl: '1h', token_period: '30m' });
    const reply = await issued('capped', { explicit_max_ttl: '2h', period: '10m' });
    expect(reply.auth.lease_duration).toBe(600);
    expect(reply.warnings.join(' ')).toMatch(/lesser value of 3600 seconds/);
    expect(reply.warnings.join(' ')).toMatch(/lesser value of 600 seconds/);
    expect((await lookup(reply.auth.client_token)).body.data).toMatchObject({ explicit_max_ttl: 3600, period: 600 });
  });

  it('issues batch tokens from a batch role, and lets default-batch be overridden by the request', async () => {
    await role('batchy', { token_type: 'batch', allowed_policies: ['dev'] });
    await role('maybe-batch', { token_type: 'default-batch' });
    await role('service-only', { token_type: 'service' });
    const itemsBefore = await h.core.store.list('mount#token');
    const batch = (await issued('batchy', { type: 'service' })).auth;
    expect(batch.client_token).toMatch(/^hvb\./);
    expect(batch).toMatchObject({ token_type: 'batch', accessor: '', renewable: false, policies: ['default', 'dev'] });
    expect((await lookup(batch.client_token)).body.data).toMatchObject({
      type: 'batch',
      role: 'batchy',
      path: 'auth/token/create/batchy',
    });
    expect(await h.core.store.list('mount#token')).toHaveLength(itemsBefore.length);

    // (A root parent's policies would make root children, which cannot be batch tokens.)
    expect((await issued('maybe-batch', { policies: ['dev'] })).auth.token_type).toBe('batch');
    expect((await issued('maybe-batch', { policies: ['dev'], type: 'service' })).auth.token_type).toBe('service');
    expect((await issued('service-only', { policies: ['dev'], type: 'batch' })).auth.token_type).toBe('service');
  });

  it('binds tokens to the role CIDRs: refused from elsewhere, accepted from inside', async () => {
    await role('cidr', { token_bound_cidrs: ['10.0.0.0/8'] });
    const { auth } = await issued('cidr');
    expect((await lookup(auth.client_token)).body.data.bound_cidrs).toEqual(['10.0.0.0/8']);
    const outside = await h.call('GET', '/v1/auth/token/lookup-self', { token: auth.client_token });
    expect(outside.status).toBe(403);
    expect(outside.body.errors[0]).toMatch(/not valid from this address/);
    const inside = createSecretsApp({ core: async () => h.core, clientIp: () => '10.1.2.3' });
    const reply = await inside.request('/v1/auth/token/lookup-self', {
      headers: { 'X-Secrets-Token': auth.client_token },
    });
    expect(reply.status).toBe(200);
  });

  it('limits uses to the lesser of the request and the role', async () => {
    await role('limited', { token_num_uses: 2 });
    const { auth } = await issued('limited', { num_uses: 5 });
    expect(auth.num_uses).toBe(2);
    const self = () => h.call('GET', '/v1/auth/token/lookup-self', { token: auth.client_token });
    expect((await self()).status).toBe(200);
    expect((await self()).status).toBe(200);
    expect((await self()).status).toBe(403);
    expect((await issued('limited', { num_uses: 1 })).auth.num_uses).toBe(1);
  });

  it('makes tokens that cannot be renewed when the role is not renewable', async () => {
    await role('fixed', { renewable: false });
    const { auth } = await issued('fixed', { renewable: true, ttl: '1h' });
    expect(auth.renewable).toBe(false);
    expectBadRequest(
      await h.call('POST', '/v1/auth/token/renew-self', { token: auth.client_token }),
      'lease is not renewable',
    );
  });

  it('refuses an entity alias, as there is no identity store, and an unknown role', async () => {
    await role('aliased', { allowed_entity_aliases: ['alice'] });
    expectBadRequest(await createFrom('aliased', { entity_alias: 'alice' }), /"entity_alias"/);
    expectBadRequest(await createFrom('nope'), /^unknown role nope$/);
    expectBadRequest(await createFrom('team', { ttl: 'later' }), /"ttl"/);
  });
});

describe('permissions', () => {
  it('need a policy on auth/token/create/<role> to create, and on auth/token/roles to manage', async () => {
    await role('ungranted', { allowed_policies: ['dev'] });
    const denied = await createFrom('ungranted', {}, user);
    expect(denied.status).toBe(403);
    expect((await h.call('GET', '/v1/auth/token/roles/ungranted', { token: user })).status).toBe(403);
    expect((await h.call('POST', '/v1/auth/token/roles/mine', { token: user, body: {} })).status).toBe(403);
    expect((await h.call('LIST', '/v1/auth/token/roles', { token: user })).status).toBe(403);
    expect(await storedRole('mine')).toBeUndefined();
  });
});

/** The stored form of a role: its fields without the read-only deprecated aliases. */
function storedForm(shown: Record<string, unknown>) {
  const { period: _period, explicit_max_ttl: _explicit, ...stored } = shown;
  return stored;
}

describe('sys/leases/revoke-prefix on the token store', () => {
  it('revokes the tokens made from one role, with their children, and leaves the others', async () => {
    await role('ci-jobs', { allowed_policies: ['dev', 'token-maker'], orphan: true });
    await role('ci-other', { allowed_policies: ['dev'], orphan: true });
    const [first, second] = [
      (await issued('ci-jobs', { policies: ['dev', 'token-maker'] })).auth,
      (await issued('ci-jobs')).auth,
    ];
    const other = (await issued('ci-other')).auth;
    const plain = (await h.call('POST', '/v1/auth/token/create', { token: h.rootToken, body: { policies: ['dev'] } }))
      .body.auth;
    const child = await h.call('POST', '/v1/auth/token/create', {
      token: first.client_token,
      body: { policies: ['dev'] },
    });
    expect(child.status).toBe(200);

    const revoked = await h.call('PUT', '/v1/sys/leases/revoke-prefix/auth/token/create/ci-jobs', {
      token: h.rootToken,
    });
    expect(revoked.status, JSON.stringify(revoked.body)).toBe(204);
    for (const token of [first.client_token, second.client_token, child.body.auth.client_token]) {
      expect(await lookup(token)).toMatchObject({ status: 403 });
      expect(await h.core.store.list(`token#${h.core.keyring.hash(token)}`)).toEqual([]);
    }
    for (const token of [other.client_token, plain.client_token, h.rootToken])
      expect((await lookup(token)).status).toBe(200);
    expect(await h.core.store.list('issued#token', { prefix: 'auth/token/create/ci-jobs/' })).toEqual([]);
  });
});

describe('numeric fields of a role are bounded', () => {
  it('refuses a token_num_uses past the largest count with a 400 naming the field, and keeps the role unchanged', async () => {
    expect(
      (await h.call('POST', '/v1/auth/token/roles/bounded', { token: h.rootToken, body: { token_num_uses: 3 } }))
        .status,
    ).toBe(204);
    for (const token_num_uses of ['9007199254740993', 2 ** 53, 2 ** 31, -2, 'x']) {
      const reply = await h.call('POST', '/v1/auth/token/roles/bounded', {
        token: h.rootToken,
        body: { token_num_uses },
      });
      expect(reply.status, JSON.stringify(token_num_uses)).toBe(400);
      expect(reply.body.errors[0]).toContain('"token_num_uses"');
    }
    for (const token_period of ['99999999999h', 1e300]) {
      const reply = await h.call('POST', '/v1/auth/token/roles/bounded', {
        token: h.rootToken,
        body: { token_period },
      });
      expect(reply.status, String(token_period)).toBe(400);
      expect(reply.body.errors[0]).toContain('"token_period"');
    }
    expect((await h.call('GET', '/v1/auth/token/roles/bounded', { token: h.rootToken })).body.data.token_num_uses).toBe(
      3,
    );
    const made = await h.call('POST', '/v1/auth/token/create/bounded', {
      token: h.rootToken,
      body: { num_uses: '9007199254740993' },
    });
    expect(made.status).toBe(400);
    expect(made.body.errors[0]).toContain('"num_uses"');
  });
});
