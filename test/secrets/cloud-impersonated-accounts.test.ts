import { afterEach, describe, expect, it } from 'vitest';
import {
  identityTokenIssuer,
  identityTokenJwks,
} from '../../packages/core/src/secrets/identity/plugin-identity-keys.ts';
import { MountStorage } from '../../packages/core/src/secrets/mounts/mount-storage.ts';
import { type CloudEngine, startCloudEngine } from '../support/cloud-engine.ts';

let engine: CloudEngine;
afterEach(() => engine?.close());
const scopes = ['https://www.googleapis.com/auth/bigquery'];

describe('cloud impersonated accounts', () => {
  it('stores the account, mints tokens with generateAccessToken for its ttl, and never makes a key', async () => {
    engine = await startCloudEngine();
    const target = engine.google.seedServiceAccount('proj-1', 'impersonated-app');
    const written = await engine.call('POST', '/v1/cloud/impersonated-account/bq', {
      service_account_email: target.email,
      token_scopes: scopes,
      ttl: '2h',
    });
    expect(written.status).toBe(204);
    const read = await engine.call('GET', '/v1/cloud/impersonated-account/bq');
    expect(read.body.data).toEqual({
      service_account_email: target.email,
      service_account_project: 'proj-1',
      token_scopes: scopes,
      ttl: 7200,
    });
    expect((await engine.call('LIST', '/v1/cloud/impersonated-accounts')).body.data.keys).toEqual(['bq']);
    const keysBefore = engine.google.keys().length;
    const token = await engine.call('GET', '/v1/cloud/impersonated-account/bq/token');
    expect(token.status).toBe(200);
    expect(token.body.lease_id).toBe('');
    expect(token.body.data.token_ttl).toBeGreaterThan(7190);
    expect(engine.google.tokenInfo(token.body.data.token)).toMatchObject({
      principal: target.email,
      scopes,
      via: 'generateAccessToken',
    });
    expect(engine.google.keys().length).toBe(keysBefore);

    await engine.call('POST', '/v1/cloud/impersonated-account/dflt', {
      service_account_email: target.email,
      token_scopes: scopes,
    });
    expect((await engine.call('GET', '/v1/cloud/impersonated-account/dflt')).body.data.ttl).toBe(3600);
    expect((await engine.call('DELETE', '/v1/cloud/impersonated-account/bq')).status).toBe(204);
    expect((await engine.call('GET', '/v1/cloud/impersonated-account/bq')).status).toBe(404);
    expect((await engine.call('POST', '/v1/cloud/impersonated-account/bq/token')).status).toBe(400);
  });

  it('refuses a missing account, a ttl over 12 hours, no scopes and a changed email', async () => {
    engine = await startCloudEngine();
    const target = engine.google.seedServiceAccount('proj-1', 'impersonated-app');
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ token_scopes: scopes }, /missing "service_account_email"/],
      [{ service_account_email: 'nobody@proj-1.iam.gserviceaccount.com', token_scopes: scopes }, /does not exist/],
      [{ service_account_email: target.email, token_scopes: scopes, ttl: '13h' }, /"ttl": at most 43200/],
      [{ service_account_email: target.email }, /"token_scopes" is required/],
      [{ service_account_email: target.email, token_scopes: scopes, ttl: 'forever' }, /ttl/],
    ];
    for (const [body, message] of cases) {
      const reply = await engine.call('POST', '/v1/cloud/impersonated-account/x', body);
      expect(reply.status, JSON.stringify(body)).toBe(400);
      expect(reply.body.errors[0]).toMatch(message);
    }
    await engine.call('POST', '/v1/cloud/impersonated-account/x', {
      service_account_email: target.email,
      token_scopes: scopes,
      ttl: '12h',
    });
    expect(
      (await engine.call('POST', '/v1/cloud/impersonated-account/x', { service_account_email: engine.root.email })).body
        .errors[0],
    ).toMatch(/cannot be changed/);
  });

  it('works with a workload identity federation root: identity token -> STS -> impersonation', async () => {
    engine = await startCloudEngine({ configure: false });
    const audience =
      '//iam.googleapis.com/projects/42/locations/global/workloadIdentityPools/keyhaven/providers/engine';
    const configured = await engine.call('POST', '/v1/cloud/config', {
      identity_token_audience: audience,
      service_account_email: engine.root.email,
      identity_token_ttl: '10m',
    });
    expect(configured.status).toBe(204);
    expect((await engine.call('GET', '/v1/cloud/config')).body.data).toMatchObject({
      identity_token_audience: audience,
      service_account_email: engine.root.email,
      identity_token_ttl: 600,
    });
    const mount = await engine.h.core.mounts.resolve('cloud/');
    const jwks = await identityTokenJwks(
      new MountStorage(engine.h.core.store, engine.h.core.keyring, mount?.uuid as string),
    );
    expect(jwks.keys[0]?.d).toBeUndefined();
    // What the provider fetches: the discovery document and keys, public and without a token.
    const discovery = await engine.h.call('GET', '/v1/identity/oidc/plugins/.well-known/openid-configuration');
    expect(discovery.status).toBe(200);
    expect(discovery.body).toMatchObject({
      issuer: identityTokenIssuer(),
      jwks_uri: `${identityTokenIssuer()}/.well-known/keys`,
    });
    const published = await engine.h.call('GET', '/v1/identity/oidc/plugins/.well-known/keys');
    expect(published.status).toBe(200);
    expect(published.body.keys).toEqual(jwks.keys);
    engine.google.addWorkloadIdentityProvider({
      audience,
      issuer: identityTokenIssuer(),
      allowedAudiences: [audience],
      publicJwk: jwks.keys[0] as never,
    });
    const target = engine.google.seedServiceAccount('proj-1', 'impersonated-app');
    expect(
      (
        await engine.call('POST', '/v1/cloud/impersonated-account/bq', {
          service_account_email: target.email,
          token_scopes: scopes,
        })
      ).status,
    ).toBe(204);
    const token = await engine.call('GET', '/v1/cloud/impersonated-account/bq/token');
    expect(token.status).toBe(200);
    expect(engine.google.calls).toContain('sts.token');
    expect(engine.google.issuedTokens().some((issued) => issued.via === 'sts')).toBe(true);
    expect((await engine.call('POST', '/v1/cloud/config/rotate-root')).body.errors[0]).toMatch(
      /did not use "credentials"/,
    );
    // Credentials written later take precedence and replace federation.
    expect((await engine.call('POST', '/v1/cloud/config', { credentials: engine.root.credentials })).status).toBe(204);
    expect((await engine.call('GET', '/v1/cloud/config')).body.data.identity_token_audience).toBe('');
  });

  it('a provider that does not trust the identity token makes the engine fail with a clear error', async () => {
    engine = await startCloudEngine({ configure: false });
    const audience = '//iam.googleapis.com/projects/42/locations/global/workloadIdentityPools/keyhaven/providers/other';
    await engine.call('POST', '/v1/cloud/config', {
      identity_token_audience: audience,
      service_account_email: engine.root.email,
    });
    const reply = await engine.call('POST', '/v1/cloud/impersonated-account/bq', {
      service_account_email: engine.root.email,
      token_scopes: scopes,
    });
    expect(reply.status).toBe(400);
    expect(reply.body.errors[0]).toMatch(/workload identity federation: STS refused/);
  });
});
