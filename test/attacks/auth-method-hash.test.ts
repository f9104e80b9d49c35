/**
 * Attacker: anonymous. `GET /v1/acl/auth-methods` answers without a token (the sign-in page lists methods), and each
 * entry carried `Hash`: a bare SHA-256 over the method's whole content, its OIDC client secret included. Everything
 * else in that content is public or guessable (the name and type from the list, the client ID, discovery URL, scopes
 * and redirect URIs from `acl/oidc/auth-url`'s authorization URL), so a weak client secret fell to an offline guess.
 * They try: hash each candidate secret into the content they know and compare it with the listed `Hash`.
 * They must never reach: a way to tell the right guess from a wrong one. `Hash` is keyed under the keyring
 * (`Keyring.contentDigest`), so without the keyring no guess can be checked; it still changes when the secret does.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authMethodKind } from '../../packages/core/src/scheduler/acl/auth-methods/store.ts';
import { contentHash } from '../../packages/core/src/scheduler/acl/common.ts';
import { AUTH_METHOD_PK } from '../../packages/core/src/scheduler/keys.ts';
import { macAttribute } from '../../packages/core/src/storage/item-mac.ts';
import { type SchedulerService, startSchedulerInMemory } from '../support/scheduler-harness.ts';

describe('anonymous auth-method listing as a client-secret oracle', () => {
  let h: SchedulerService;
  let management: string;
  const weakSecret = 'summer2026';
  /** Exactly what the management token wrote: the attacker's best case knows all of it but the secret. */
  const content = (secret: string) => ({
    Name: 'sso',
    Type: 'OIDC',
    TokenLocality: 'local',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: Nomad's interpolation syntax, not a JS template
    TokenNameFormat: '${auth_method_name}-${value.user}',
    MaxTokenTTL: '1h0m0s',
    Default: true,
    Config: {
      OIDCDiscoveryURL: 'https://idp.example.com',
      OIDCClientID: 'keyhaven',
      OIDCClientSecret: secret,
      OIDCScopes: ['email'],
      AllowedRedirectURIs: ['http://127.0.0.1:4646/ui/settings/tokens'],
      BoundAudiences: ['keyhaven'],
    },
  });
  const write = (secret: string) =>
    h.call('POST', '/v1/acl/auth-method/sso', {
      token: management,
      body: { ...content(secret), MaxTokenTTL: '1h' },
    });
  const listedHash = async () => {
    const listed = await h.call('GET', '/v1/acl/auth-methods');
    expect(listed.status).toBe(200);
    return (listed.body as Array<{ Name: string; Hash: string }>).find((method) => method.Name === 'sso')?.Hash;
  };

  beforeAll(async () => {
    h = await startSchedulerInMemory();
    management = await h.bootstrap();
    const created = await h.call('POST', '/v1/acl/auth-method', {
      token: management,
      body: { ...content(weakSecret), MaxTokenTTL: '1h' },
    });
    expect(created.status).toBe(200);
  });
  afterAll(async () => h.close());

  it('a dictionary holding the real secret finds no match against the listed Hash, in any form of the content', async () => {
    const hash = await listedHash();
    expect(hash).toBeTruthy();
    const dictionary = ['password', 'secret', 'keyhaven', weakSecret, 'winter2026'];
    const known = (secret: string) => content(secret);
    const candidates = dictionary.flatMap((secret) => [
      contentHash(known(secret)),
      contentHash({ ...known(secret), MaxTokenTTL: '1h' }),
      contentHash({ ...known(secret), Config: { ...known(secret).Config } }),
    ]);
    expect(candidates).not.toContain(hash);
    // The management view shows the same keyed Hash (one meaning), never the secret.
    const read = await h.call('GET', '/v1/acl/auth-method/sso', { token: management });
    expect(read.body.Hash).toBe(hash);
    expect(JSON.stringify(read.body)).not.toContain(weakSecret);
  });

  it('Hash still tells a changed method from an unchanged one: the same content keeps it, a new secret changes it', async () => {
    const before = await listedHash();
    expect((await write(weakSecret)).status).toBe(200);
    expect(await listedHash()).toBe(before);
    expect((await write('a-new-secret')).status).toBe(200);
    const after = await listedHash();
    expect(after).not.toBe(before);
    expect(after).not.toBe(contentHash(content('a-new-secret')));
  });

  it('a method stored by an older release with the bare SHA-256 is rewritten with the keyed digest on its first read', async () => {
    const store = h.core.store;
    const genuine = await store.getVerified(authMethodKind, AUTH_METHOD_PK, 'sso');
    expect(genuine).toBeDefined();
    // As an older release wrote it: the same content, `Hash` the bare SHA-256 of it, and a valid MAC.
    const bare = contentHash(content('a-new-secret'));
    const { [macAttribute]: _mac, ...attributes } = genuine as Record<string, unknown> & { pk: string; sk: string };
    await store.put(store.signed(authMethodKind, { ...attributes, pk: AUTH_METHOD_PK, sk: 'sso', Hash: bare }));
    expect((await store.get(AUTH_METHOD_PK, 'sso'))?.Hash).toBe(bare);
    // The anonymous listing (the sign-in page's read) never shows it and leaves the table without it.
    const shown = await listedHash();
    expect(shown).not.toBe(bare);
    const stored = await store.getVerified(authMethodKind, AUTH_METHOD_PK, 'sso');
    expect(stored?.Hash).toBe(shown);
    expect(JSON.stringify(await store.list(AUTH_METHOD_PK))).not.toContain(bare);
    // Nothing else changed: the same method, at the same index, reads the same.
    const read = await h.call('GET', '/v1/acl/auth-method/sso', { token: management });
    expect(read.status).toBe(200);
    expect(read.body.Hash).toBe(shown);
    expect(read.body.ModifyIndex).toBe(genuine?.ModifyIndex);
    expect(read.body.Config.OIDCClientSecret).toBeUndefined();
  });
});
