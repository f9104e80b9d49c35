import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SecretsService, startSecretsInMemory } from '../support/secrets-harness.ts';

/**
 * `sys/internal/ui/mounts` (the list a sign-in page reads) and `listing_visibility` on enable and tune, for secrets
 * engines and auth methods. What an anonymous caller must not see is attacked in test/attacks/console-discovery.test.ts.
 */
let h: SecretsService;
const asRoot = (body?: unknown) => ({ token: h.rootToken, ...(body === undefined ? {} : { body }) });

beforeAll(async () => {
  h = await startSecretsInMemory();
});
afterAll(async () => {
  await h?.close();
});

describe('listing_visibility on sys/auth and sys/mounts', () => {
  it('is set on enable (config.listing_visibility), shown by the mount read and the tune read, and changed by tune', async () => {
    const enable = await h.call(
      'POST',
      '/v1/sys/auth/corp',
      asRoot({ type: 'jwt', description: 'Company SSO', config: { listing_visibility: 'unauth' } }),
    );
    expect(enable.status).toBe(204);
    expect((await h.call('GET', '/v1/sys/auth/corp', asRoot())).body.data.config).toMatchObject({
      listing_visibility: 'unauth',
    });
    expect((await h.call('GET', '/v1/sys/auth', asRoot())).body.data['corp/'].config.listing_visibility).toBe('unauth');
    expect((await h.call('GET', '/v1/sys/auth/corp/tune', asRoot())).body.data.listing_visibility).toBe('unauth');

    expect((await h.call('POST', '/v1/sys/auth/corp/tune', asRoot({ listing_visibility: 'hidden' }))).status).toBe(204);
    expect((await h.call('GET', '/v1/sys/auth/corp/tune', asRoot())).body.data.listing_visibility).toBe('hidden');
    // A tune that does not name it leaves it; "" puts the default back, which the reads leave out as Vault does.
    expect((await h.call('POST', '/v1/sys/auth/corp/tune', asRoot({ description: 'SSO' }))).status).toBe(204);
    expect((await h.call('GET', '/v1/sys/auth/corp/tune', asRoot())).body.data).toMatchObject({
      listing_visibility: 'hidden',
      description: 'SSO',
    });
    expect((await h.call('POST', '/v1/sys/auth/corp/tune', asRoot({ listing_visibility: '' }))).status).toBe(204);
    expect((await h.call('GET', '/v1/sys/auth/corp/tune', asRoot())).body.data.listing_visibility).toBeUndefined();
    expect((await h.call('GET', '/v1/sys/auth/corp', asRoot())).body.data.config.listing_visibility).toBeUndefined();

    expect(
      (await h.call('POST', '/v1/sys/mounts/team', asRoot({ type: 'kv', config: { listing_visibility: 'hidden' } })))
        .status,
    ).toBe(204);
    expect((await h.call('GET', '/v1/sys/mounts/team/tune', asRoot())).body.data.listing_visibility).toBe('hidden');
    expect((await h.call('POST', '/v1/sys/mounts/team/tune', asRoot({ listing_visibility: 'unauth' }))).status).toBe(
      204,
    );
    expect((await h.call('GET', '/v1/sys/mounts/team', asRoot())).body.data.config.listing_visibility).toBe('unauth');
  });

  it('refuses any other value with a 400 naming it, on enable and on tune, and stores nothing', async () => {
    const enable = await h.call(
      'POST',
      '/v1/sys/auth/bad',
      asRoot({ type: 'jwt', config: { listing_visibility: 'public' } }),
    );
    expect(enable.status).toBe(400);
    expect(enable.body.errors[0]).toContain('invalid listing_visibility "public"');
    expect((await h.call('GET', '/v1/sys/auth/bad', asRoot())).status).toBe(404);

    expect((await h.call('POST', '/v1/sys/auth/good', asRoot({ type: 'jwt' }))).status).toBe(204);
    const tune = await h.call('POST', '/v1/sys/auth/good/tune', asRoot({ listing_visibility: 'UNAUTH' }));
    expect(tune.status).toBe(400);
    expect(tune.body.errors[0]).toContain('invalid listing_visibility "UNAUTH"');
    const mountTune = await h.call('POST', '/v1/sys/mounts/secret/tune', asRoot({ listing_visibility: 'everyone' }));
    expect(mountTune.status).toBe(400);
    expect(mountTune.body.errors[0]).toContain('"everyone"');
    expect((await h.call('GET', '/v1/sys/auth/good/tune', asRoot())).body.data.listing_visibility).toBeUndefined();
  });
});

describe('GET sys/internal/ui/mounts', () => {
  it('answers a caller without a token with the unauth auth methods, by path, with type and description only', async () => {
    expect(
      (
        await h.call(
          'POST',
          '/v1/sys/auth/okta',
          asRoot({ type: 'jwt', description: 'Okta', config: { listing_visibility: 'unauth' } }),
        )
      ).status,
    ).toBe(204);
    const listed = await h.call('GET', '/v1/sys/internal/ui/mounts');
    expect(listed.status).toBe(200);
    expect(listed.body.data.auth['okta/']).toEqual({ type: 'jwt', description: 'Okta' });
    expect(listed.body.data.secret).toMatchObject({ 'team/': { type: 'kv', description: '' } });
    expect(Object.keys(listed.body.data.auth)).not.toContain('token/');
  });

  it('answers root with every mount, described as sys/mounts does', async () => {
    const listed = await h.call('GET', '/v1/sys/internal/ui/mounts', asRoot());
    expect(listed.status).toBe(200);
    expect(Object.keys(listed.body.data.secret)).toEqual(expect.arrayContaining(['secret/', 'sys/', 'team/']));
    expect(Object.keys(listed.body.data.auth)).toEqual(expect.arrayContaining(['token/', 'okta/', 'good/']));
    const mounts = await h.call('GET', '/v1/sys/mounts', asRoot());
    expect(listed.body.data.secret['secret/']).toEqual(mounts.body.data['secret/']);
  });

  it('refuses a token that is not valid (403), rather than answering as to no token', async () => {
    const reply = await h.call('GET', '/v1/sys/internal/ui/mounts', { token: 'hvs.not-a-token' });
    expect(reply.status).toBe(403);
  });

  it('describes one mount (the vault kv preflight) to a token whose policies touch it, as hasMountAccess decides', async () => {
    expect((await h.call('POST', '/v1/sys/mounts/kv2ui', asRoot({ type: 'kv-v2' }))).status).toBe(204);
    const policy = 'path "kv2ui/data/app/*" { capabilities = ["read"] }';
    expect((await h.call('PUT', '/v1/sys/policies/acl/kv2ui-app', asRoot({ policy }))).status).toBe(204);
    const token = (await h.call('POST', '/v1/auth/token/create', asRoot({ policies: ['kv2ui-app'] }))).body.auth
      .client_token as string;
    for (const asked of ['kv2ui', 'kv2ui/', 'kv2ui/app/config', 'kv2ui/other']) {
      const reply = await h.call('GET', `/v1/sys/internal/ui/mounts/${asked}`, { token });
      expect(reply.status, asked).toBe(200);
      expect(reply.body.data).toMatchObject({ path: 'kv2ui/', type: 'kv', options: { version: '2' } });
    }
    // A mount none of its rules lies under, and no token at all.
    expect((await h.call('GET', '/v1/sys/internal/ui/mounts/secret', { token })).status).toBe(403);
    expect((await h.call('GET', '/v1/sys/internal/ui/mounts/kv2ui')).status).toBe(403);
    // A deny on the only rule under the mount leaves no access.
    const denied = 'path "kv2ui/data/app/*" { capabilities = ["deny"] }';
    expect((await h.call('PUT', '/v1/sys/policies/acl/kv2ui-deny', asRoot({ policy: denied }))).status).toBe(204);
    const both = (await h.call('POST', '/v1/auth/token/create', asRoot({ policies: ['kv2ui-app', 'kv2ui-deny'] }))).body
      .auth.client_token as string;
    expect((await h.call('GET', '/v1/sys/internal/ui/mounts/kv2ui', { token: both })).status).toBe(403);
  });
});
