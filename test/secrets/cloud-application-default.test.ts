import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { GoogleAuth } from 'google-auth-library';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { type CloudEngine, startCloudEngine } from '../support/cloud-engine.ts';

/**
 * The cloud engine with no credential in its config: the server's application default credentials, found where
 * Google's libraries look (GOOGLE_APPLICATION_CREDENTIALS, else gcloud's file under CLOUDSDK_CONFIG). Each file is
 * also handed to Google's own client library (google-auth-library, the oracle) against the same emulator: both
 * must get a token for the same principal from it.
 */
let engine: CloudEngine | undefined;
const saved = { adc: process.env.GOOGLE_APPLICATION_CREDENTIALS, sdk: process.env.CLOUDSDK_CONFIG };
const dir = mkdtempSync(path.join(tmpdir(), 'keyhaven-adc-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(async () => {
  await engine?.close();
  engine = undefined;
  for (const [name, value] of [
    ['GOOGLE_APPLICATION_CREDENTIALS', saved.adc],
    ['CLOUDSDK_CONFIG', saved.sdk],
  ] as const) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

const scopes = ['https://www.googleapis.com/auth/bigquery'];
const tokenCalls = (google: CloudEngine['google']) => google.calls.filter((call) => call === 'oauth2.token').length;

/** An engine with no root credential written, and the account it impersonates. */
async function unconfigured() {
  engine = await startCloudEngine({ configure: false });
  return { engine, target: engine.google.seedServiceAccount('proj-1', 'impersonated-app') };
}

/**
 * What Google's own library makes of the same file: its token request (to Google's token URL, which the library fixes
 * for both kinds of file) is sent to the emulator's token endpoint instead.
 */
async function oracleToken(keyFile: string, tokenUrl: string): Promise<string> {
  const auth = new GoogleAuth({ keyFile, scopes: ['https://www.googleapis.com/auth/cloud-platform'] });
  const client = await auth.getClient();
  client.transporter.interceptors.request.add({
    resolved: async (options) => {
      if (String(options.url) === 'https://oauth2.googleapis.com/token') options.url = new URL(tokenUrl);
      return options;
    },
  });
  return (await client.getAccessToken()).token as string;
}

describe('cloud engine: application default credentials', () => {
  it('a service-account key file named by GOOGLE_APPLICATION_CREDENTIALS acts as the root account, its token cached', async () => {
    const { engine, target } = await unconfigured();
    const root = engine.google.seedServiceAccount('proj-1', 'adc-root');
    const file = path.join(dir, 'key.json');
    writeFileSync(file, root.credentials);
    process.env.GOOGLE_APPLICATION_CREDENTIALS = file;

    const written = await engine.call('POST', '/v1/cloud/impersonated-account/bq', {
      service_account_email: target.email,
      token_scopes: scopes,
    });
    expect(written.status).toBe(204);
    const token = await engine.call('GET', '/v1/cloud/impersonated-account/bq/token');
    expect(token.status).toBe(200);
    expect(engine.google.tokenInfo(token.body.data.token)).toMatchObject({
      principal: target.email,
      via: 'generateAccessToken',
    });
    // The root token the engine used: the ADC account's, by the JWT-bearer grant, minted once for both calls.
    const rootTokens = engine.google.issuedTokens().filter((each) => each.via === 'oauth2');
    expect(rootTokens.map((each) => each.principal)).toEqual([root.email]);
    expect(tokenCalls(engine.google)).toBe(1);
    // The config read shows no credential of any kind.
    expect(JSON.stringify((await engine.call('GET', '/v1/cloud/config')).body)).not.toContain('adc-root');

    const oracle = await oracleToken(file, engine.google.endpoints.oauth2Token);
    expect(engine.google.tokenInfo(oracle)?.principal).toBe(root.email);
  });

  it("gcloud's authorized_user file under CLOUDSDK_CONFIG acts as the signed-in user (the refresh-token grant)", async () => {
    const { engine, target } = await unconfigured();
    delete process.env.GOOGLE_APPLICATION_CREDENTIALS;
    const config = mkdtempSync(path.join(dir, 'gcloud-'));
    const file = path.join(config, 'application_default_credentials.json');
    writeFileSync(file, engine.google.seedAuthorizedUser('alice@example.com'));
    process.env.CLOUDSDK_CONFIG = config;

    const written = await engine.call('POST', '/v1/cloud/impersonated-account/bq', {
      service_account_email: target.email,
      token_scopes: scopes,
    });
    expect(written.status).toBe(204);
    expect((await engine.call('GET', '/v1/cloud/impersonated-account/bq/token')).status).toBe(200);
    expect(
      engine.google
        .issuedTokens()
        .filter((each) => each.via === 'oauth2')
        .map((each) => each.principal),
    ).toEqual(['alice@example.com']);

    const oracle = await oracleToken(file, engine.google.endpoints.oauth2Token);
    expect(engine.google.tokenInfo(oracle)?.principal).toBe('alice@example.com');
  });

  it('no file, an unsupported kind, a refused refresh token: 400s naming the file and the cause, nothing written', async () => {
    const { engine, target } = await unconfigured();
    const write = () =>
      engine.call('POST', '/v1/cloud/impersonated-account/bq', {
        service_account_email: target.email,
        token_scopes: scopes,
      });
    const empty = mkdtempSync(path.join(dir, 'empty-'));
    delete process.env.GOOGLE_APPLICATION_CREDENTIALS;
    process.env.CLOUDSDK_CONFIG = empty;
    const none = await write();
    expect(none.status).toBe(400);
    expect(none.body.errors[0]).toMatch(/no root credential: write "credentials" or "identity_token_audience"/);
    expect(none.body.errors[0]).toContain(path.join(empty, 'application_default_credentials.json'));

    process.env.GOOGLE_APPLICATION_CREDENTIALS = path.join(dir, 'missing.json');
    expect((await write()).body.errors[0]).toMatch(/GOOGLE_APPLICATION_CREDENTIALS names cannot be read \(ENOENT\)/);

    const external = path.join(dir, 'external.json');
    writeFileSync(external, JSON.stringify({ type: 'external_account', audience: '//iam.googleapis.com/x' }));
    process.env.GOOGLE_APPLICATION_CREDENTIALS = external;
    const refused = await write();
    expect(refused.status).toBe(400);
    expect(refused.body.errors[0]).toMatch(/credentials of type "external_account"; only "service_account" and/);

    const stolen = JSON.parse(engine.google.seedAuthorizedUser('bob@example.com'));
    const wrongSecret = path.join(dir, 'wrong-secret.json');
    writeFileSync(wrongSecret, JSON.stringify({ ...stolen, client_secret: 'guessed' }));
    process.env.GOOGLE_APPLICATION_CREDENTIALS = wrongSecret;
    const unauthorised = await write();
    expect(unauthorised.status).toBe(400);
    expect(unauthorised.body.errors[0]).toMatch(/the token endpoint refused the refresh token \(invalid_client/);

    // Nothing was written, and the emulator issued no token.
    expect((await engine.call('GET', '/v1/cloud/impersonated-account/bq')).status).toBe(404);
    expect(engine.google.issuedTokens()).toEqual([]);
  });
});
