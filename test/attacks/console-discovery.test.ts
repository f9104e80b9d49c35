import { randomUUID } from 'node:crypto';
import { exportSPKI, generateKeyPair } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SchedulerHarness, startScheduler } from '../support/scheduler-harness.ts';
import { type SecretsHarness, startSecrets } from '../support/secrets-harness.ts';

/**
 * The sign-in page discovers how to sign in without a token (docs/security.md, "Web console"): the secrets service's
 * `sys/internal/ui/mounts` and the scheduler's `acl/auth-methods`. An anonymous caller learns which methods exist
 * that the operator listed for it, and nothing that configures them; a token learns only the mounts its policies touch.
 */
let secrets: SecretsHarness;
let scheduler: SchedulerHarness;
const clientSecret = `client-secret-${randomUUID()}`;
const asRoot = (body?: unknown) => ({ token: secrets.rootToken, ...(body === undefined ? {} : { body }) });

async function tokenWith(...policies: string[]): Promise<string> {
  const names: string[] = [];
  for (const policy of policies) {
    const name = `p-${randomUUID().slice(0, 8)}`;
    expect((await secrets.call('PUT', `/v1/sys/policies/acl/${name}`, asRoot({ policy }))).status).toBe(204);
    names.push(name);
  }
  return (await secrets.call('POST', '/v1/auth/token/create', asRoot({ policies: names }))).body.auth
    .client_token as string;
}

beforeAll(async () => {
  [secrets, scheduler] = await Promise.all([startSecrets(), startScheduler()]);
  const enable = (table: string, path: string, body: Record<string, unknown>) =>
    secrets.call('POST', `/v1/sys/${table}/${path}`, asRoot(body));
  expect(
    (await enable('auth', 'sso', { type: 'jwt', description: 'Company SSO', config: { listing_visibility: 'unauth' } }))
      .status,
  ).toBe(204);
  expect(
    (
      await enable('auth', 'robots', {
        type: 'jwt',
        description: 'CI robots',
        config: { listing_visibility: 'hidden' },
      })
    ).status,
  ).toBe(204);
  expect((await enable('auth', 'quiet', { type: 'jwt', description: 'no setting' })).status).toBe(204);
  expect(
    (
      await enable('mounts', 'team-a', {
        type: 'kv',
        options: { version: '2' },
        config: { listing_visibility: 'unauth', max_lease_ttl: '2h' },
      })
    ).status,
  ).toBe(204);
  expect((await enable('mounts', 'team-b', { type: 'kv', description: 'team b secrets' })).status).toBe(204);
  expect((await enable('mounts', 'team-c', { type: 'kv' })).status).toBe(204);
  // The SSO method's configuration: none of it may reach an anonymous caller.
  const pem = await exportSPKI((await generateKeyPair('RS256', { extractable: true })).publicKey);
  const config = await secrets.call(
    'POST',
    '/v1/auth/sso/config',
    asRoot({ jwt_validation_pubkeys: [pem], bound_issuer: 'https://idp.internal.example', default_role: 'web' }),
  );
  expect(config.status).toBe(204);
});
afterAll(async () => {
  await Promise.all([secrets?.close(), scheduler?.close()]);
});

describe('secrets service: GET sys/internal/ui/mounts', () => {
  it('shows an anonymous caller only unauth mounts, with type and description: no accessor, uuid, config or options', async () => {
    const reply = await secrets.call('GET', '/v1/sys/internal/ui/mounts');
    expect(reply.status).toBe(200);
    expect(reply.body.data).toEqual({
      auth: { 'sso/': { type: 'jwt', description: 'Company SSO' } },
      secret: { 'team-a/': { type: 'kv', description: '' } },
    });
    const text = JSON.stringify(reply.body);
    for (const hidden of [
      'robots',
      'quiet',
      'team-b',
      'team-c',
      'token/',
      'sys/',
      'accessor',
      'uuid',
      'options',
      'config',
      'idp.internal.example',
      'lease_ttl',
    ]) {
      expect(text).not.toContain(hidden);
    }
  });

  it('lists a hidden mount to nobody without a token, and a mount tuned to hidden disappears at once', async () => {
    expect(
      (
        await secrets.call(
          'POST',
          '/v1/sys/auth/temp',
          asRoot({ type: 'jwt', config: { listing_visibility: 'unauth' } }),
        )
      ).status,
    ).toBe(204);
    expect(Object.keys((await secrets.call('GET', '/v1/sys/internal/ui/mounts')).body.data.auth)).toContain('temp/');
    expect(
      (await secrets.call('POST', '/v1/sys/auth/temp/tune', asRoot({ listing_visibility: 'hidden' }))).status,
    ).toBe(204);
    expect(Object.keys((await secrets.call('GET', '/v1/sys/internal/ui/mounts')).body.data.auth)).toEqual(['sso/']);
  });

  it('shows a token the unauth mounts and the mounts its policies touch, and no other', async () => {
    const token = await tokenWith(
      ['path "team-b/app/*" { capabilities = ["read"] }', 'path "team-c/*" { capabilities = ["deny"] }'].join('\n'),
    );
    const reply = await secrets.call('GET', '/v1/sys/internal/ui/mounts', { token });
    expect(reply.status).toBe(200);
    // team-b through a rule under it; team-a and sso as unauth; team-c only denied.
    expect(Object.keys(reply.body.data.secret)).toEqual(expect.arrayContaining(['team-a/', 'team-b/']));
    expect(Object.keys(reply.body.data.secret)).not.toContain('team-c/');
    expect(Object.keys(reply.body.data.auth)).toEqual(expect.arrayContaining(['sso/']));
    expect(Object.keys(reply.body.data.auth)).not.toContain('robots/');
    expect(Object.keys(reply.body.data.auth)).not.toContain('quiet/');
    // A token holder gets the mount as sys/mounts describes it.
    expect(reply.body.data.secret['team-b/']).toMatchObject({
      type: 'kv',
      description: 'team b secrets',
      accessor: expect.any(String),
    });
  });

  it('does not count a path whose rules deny, nor a rule outside the mount that merely shares its prefix', async () => {
    expect((await secrets.call('POST', '/v1/sys/mounts/team', asRoot({ type: 'kv' }))).status).toBe(204);
    // Two policies name team-b/x: merged, the deny wins, as Vault merges a path's rules before it walks them.
    const token = await tokenWith(
      'path "team-b/x" { capabilities = ["read"] }\npath "teamwork/*" { capabilities = ["read"] }',
      'path "team-b/x" { capabilities = ["deny"] }',
    );
    const reply = await secrets.call('GET', '/v1/sys/internal/ui/mounts', { token });
    expect(reply.status).toBe(200);
    expect(Object.keys(reply.body.data.secret)).not.toContain('team-b/');
    expect(Object.keys(reply.body.data.secret)).not.toContain('team/');
  });

  it('refuses a forged or revoked token instead of answering it as anonymous', async () => {
    expect((await secrets.call('GET', '/v1/sys/internal/ui/mounts', { token: 'hvs.forged' })).status).toBe(403);
    const token = await tokenWith('path "team-b/*" { capabilities = ["read"] }');
    expect((await secrets.call('POST', '/v1/auth/token/revoke-self', { token })).status).toBe(204);
    expect((await secrets.call('GET', '/v1/sys/internal/ui/mounts', { token })).status).toBe(403);
  });
});

describe('scheduler service: GET /v1/acl/auth-methods', () => {
  it('shows an anonymous caller the methods by name, type and default: never their Config or client secret', async () => {
    const management = await scheduler.bootstrap();
    const created = await scheduler.call('POST', '/v1/acl/auth-method', {
      token: management,
      body: {
        Name: 'corp',
        Type: 'OIDC',
        TokenLocality: 'local',
        MaxTokenTTL: '1h',
        Default: true,
        Config: {
          OIDCDiscoveryURL: 'https://idp.internal.example',
          OIDCClientID: 'console',
          OIDCClientSecret: clientSecret,
          AllowedRedirectURIs: ['http://127.0.0.1:8200/ui/settings/tokens'],
          BoundAudiences: ['console'],
        },
      },
    });
    expect(created.status).toBe(200);
    const listed = await scheduler.call('GET', '/v1/acl/auth-methods');
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual([expect.objectContaining({ Name: 'corp', Type: 'OIDC', Default: true })]);
    expect(Object.keys(listed.body[0]).sort()).toEqual([
      'CreateIndex',
      'Default',
      'Hash',
      'ModifyIndex',
      'Name',
      'Type',
    ]);
    const text = JSON.stringify(listed.body);
    for (const hidden of [clientSecret, 'idp.internal.example', 'console', 'AllowedRedirectURIs'])
      expect(text).not.toContain(hidden);
    // The method itself stays management-only.
    expect((await scheduler.call('GET', '/v1/acl/auth-method/corp')).status).toBe(403);
  });
});
