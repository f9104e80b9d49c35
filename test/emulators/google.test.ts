import { generateKeyPairSync } from 'node:crypto';
import { exportJWK, SignJWT } from 'jose';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type GoogleEmulator, googleTokenAudience, privateKeyOf, startGoogleEmulator } from './google.ts';

let google: GoogleEmulator;
let root: { email: string; credentials: string };
let token: string;

async function call(method: string, path: string, body?: unknown, bearer = token) {
  const response = await fetch(`${google.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary response JSON
  return { status: response.status, json: (await response.json()) as any };
}

async function assertion(credentials: string, claims: Record<string, unknown> = {}, kid?: string) {
  const file = JSON.parse(credentials) as { client_email: string; private_key_id: string };
  const iat = Math.floor(Date.now() / 1000);
  return new SignJWT({ scope: 'https://www.googleapis.com/auth/cloud-platform', ...claims })
    .setProtectedHeader({ alg: 'RS256', ...(kid === undefined ? { kid: file.private_key_id } : kid ? { kid } : {}) })
    .setIssuer(file.client_email)
    .setAudience((claims.aud as string | undefined) ?? googleTokenAudience)
    .setIssuedAt(iat)
    .setExpirationTime((claims.exp as number | undefined) ?? iat + 3600)
    .sign(privateKeyOf(credentials));
}

async function exchange(jwt: string) {
  const response = await fetch(google.endpoints.oauth2Token, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion: jwt }),
  });
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary response JSON
  return { status: response.status, json: (await response.json()) as any };
}

beforeEach(async () => {
  google = await startGoogleEmulator();
  google.addProject('proj-1');
  root = google.seedServiceAccount('proj-1', 'root-account');
  token = (await exchange(await assertion(root.credentials))).json.access_token;
});
afterEach(() => google.close());

describe('Google emulator: OAuth2 JWT-bearer grant', () => {
  it('issues a bearer token for an assertion signed with the account key', async () => {
    const reply = await exchange(await assertion(root.credentials));
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual({
      access_token: expect.stringMatching(/^ya29\./),
      expires_in: 3599,
      token_type: 'Bearer',
    });
    const info = google.tokenInfo(reply.json.access_token);
    expect(info?.principal).toBe(root.email);
    expect(info?.keyId).toBe(JSON.parse(root.credentials).private_key_id);
  });

  it('finds the key without a kid, and refuses a signature by another key', async () => {
    expect((await exchange(await assertion(root.credentials, {}, ''))).status).toBe(200);
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const forged = await new SignJWT({ scope: 'x' })
      .setProtectedHeader({ alg: 'RS256' })
      .setIssuer(root.email)
      .setAudience(googleTokenAudience)
      .setIssuedAt()
      .setExpirationTime('1h')
      .sign(privateKey);
    expect(await exchange(forged)).toEqual({
      status: 400,
      json: { error: 'invalid_grant', error_description: 'Invalid JWT Signature.' },
    });
  });

  it('refuses a wrong audience, a lifetime over an hour, a missing scope and another grant type', async () => {
    expect(
      (await exchange(await assertion(root.credentials, { aud: 'https://example.com' }))).json.error_description,
    ).toMatch(/audience/);
    expect(
      (await exchange(await assertion(root.credentials, { exp: Math.floor(Date.now() / 1000) + 7200 }))).json.error,
    ).toBe('invalid_grant');
    expect((await exchange(await assertion(root.credentials, { scope: '' }))).json.error).toBe('invalid_scope');
    const other = await fetch(google.endpoints.oauth2Token, {
      method: 'POST',
      body: new URLSearchParams({ grant_type: 'client_credentials' }),
    });
    expect(other.status).toBe(400);
    expect((await other.json()).error).toBe('unsupported_grant_type');
  });

  it('stops accepting a deleted key', async () => {
    const keyId = JSON.parse(root.credentials).private_key_id;
    expect((await call('DELETE', `/iam/v1/projects/-/serviceAccounts/${root.email}/keys/${keyId}`)).status).toBe(200);
    expect((await exchange(await assertion(root.credentials))).status).toBe(400);
  });
});

describe('Google emulator: service accounts and keys', () => {
  it('creates, gets and deletes an account under the 6-30 character rule', async () => {
    const created = await call('POST', '/iam/v1/projects/proj-1/serviceAccounts', {
      accountId: 'vault-app-1234',
      serviceAccount: { displayName: 'App' },
    });
    expect(created.status).toBe(200);
    expect(created.json).toMatchObject({
      name: 'projects/proj-1/serviceAccounts/vault-app-1234@proj-1.iam.gserviceaccount.com',
      projectId: 'proj-1',
      email: 'vault-app-1234@proj-1.iam.gserviceaccount.com',
      displayName: 'App',
      uniqueId: expect.stringMatching(/^\d{21}$/),
    });
    expect((await call('GET', `/iam/v1/projects/-/serviceAccounts/${created.json.uniqueId}`)).json.email).toBe(
      created.json.email,
    );
    for (const accountId of ['short', 'a'.repeat(31), 'Upper-case1', '1starts-digit', 'ends-dash-']) {
      const bad = await call('POST', '/iam/v1/projects/proj-1/serviceAccounts', { accountId });
      expect(bad.status).toBe(400);
      expect(bad.json.error.status).toBe('INVALID_ARGUMENT');
    }
    expect(
      (await call('POST', '/iam/v1/projects/proj-1/serviceAccounts', { accountId: 'vault-app-1234' })).json.error
        .status,
    ).toBe('ALREADY_EXISTS');
    expect((await call('DELETE', `/iam/v1/projects/proj-1/serviceAccounts/${created.json.email}`)).json).toEqual({});
    const gone = await call('GET', `/iam/v1/projects/proj-1/serviceAccounts/${created.json.email}`);
    expect(gone.status).toBe(404);
    expect(gone.json.error).toMatchObject({ code: 404, status: 'NOT_FOUND' });
  });

  it('creates keys with real RSA material whose credentials file mints tokens', async () => {
    const created = await call('POST', `/iam/v1/projects/-/serviceAccounts/${root.email}/keys`, {
      keyAlgorithm: 'KEY_ALG_RSA_2048',
    });
    expect(created.json).toMatchObject({
      name: expect.stringMatching(new RegExp(`^projects/proj-1/serviceAccounts/${root.email}/keys/[0-9a-f]{40}$`)),
      privateKeyType: 'TYPE_GOOGLE_CREDENTIALS_FILE',
      keyAlgorithm: 'KEY_ALG_RSA_2048',
      keyOrigin: 'GOOGLE_PROVIDED',
      keyType: 'USER_MANAGED',
    });
    const file = Buffer.from(created.json.privateKeyData, 'base64').toString();
    expect(JSON.parse(file)).toMatchObject({
      type: 'service_account',
      client_email: root.email,
      private_key: expect.stringContaining('BEGIN PRIVATE KEY'),
    });
    expect((await exchange(await assertion(file))).status).toBe(200);
    const listed = await call('GET', `/iam/v1/projects/-/serviceAccounts/${root.email}/keys`);
    expect(listed.json.keys).toHaveLength(2);
    expect(listed.json.keys[0].privateKeyData).toBeUndefined();
    expect(
      (await call('POST', `/iam/v1/projects/-/serviceAccounts/${root.email}/keys`, { keyAlgorithm: 'KEY_ALG_EC' }))
        .status,
    ).toBe(400);
  });

  it('allows at most 10 keys per account', async () => {
    for (let i = 1; i < 10; i++) {
      expect(
        (
          await call('POST', `/iam/v1/projects/-/serviceAccounts/${root.email}/keys`, {
            keyAlgorithm: 'KEY_ALG_RSA_1024',
          })
        ).status,
      ).toBe(200);
    }
    const eleventh = await call('POST', `/iam/v1/projects/-/serviceAccounts/${root.email}/keys`, {});
    expect(eleventh.json.error).toMatchObject({ code: 400, status: 'FAILED_PRECONDITION' });
  });

  it('requires a valid bearer token', async () => {
    const reply = await call('GET', `/iam/v1/projects/-/serviceAccounts/${root.email}`, undefined, 'ya29.forged');
    expect(reply.status).toBe(401);
    expect(reply.json.error.status).toBe('UNAUTHENTICATED');
  });
});

describe('Google emulator: IAM policies', () => {
  it('reads and writes a project policy with etags; a stale etag is 409 ABORTED', async () => {
    const first = await call('POST', '/cloudresourcemanager/v1/projects/proj-1:getIamPolicy', {});
    expect(first.json).toEqual({ version: 1, etag: 'ACAB', bindings: [] });
    const member = `serviceAccount:${root.email}`;
    const set = await call('POST', '/cloudresourcemanager/v1/projects/proj-1:setIamPolicy', {
      policy: { etag: first.json.etag, bindings: [{ role: 'roles/viewer', members: [member] }] },
    });
    expect(set.status).toBe(200);
    expect(set.json.etag).not.toBe('ACAB');
    const stale = await call('POST', '/cloudresourcemanager/v1/projects/proj-1:setIamPolicy', {
      policy: { etag: first.json.etag, bindings: [] },
    });
    expect(stale.status).toBe(409);
    expect(stale.json.error.status).toBe('ABORTED');
    expect(google.bindingsOf(member)).toEqual(['projects/proj-1 roles/viewer']);
  });

  it('refuses unknown accounts and bad roles, and marks members of a deleted account', async () => {
    const unknown = await call('POST', '/cloudresourcemanager/v1/projects/proj-1:setIamPolicy', {
      policy: {
        bindings: [{ role: 'roles/viewer', members: ['serviceAccount:nobody@proj-1.iam.gserviceaccount.com'] }],
      },
    });
    expect(unknown.status).toBe(400);
    const badRole = await call('POST', '/cloudresourcemanager/v1/projects/proj-1:setIamPolicy', {
      policy: { bindings: [{ role: 'viewer', members: ['allUsers'] }] },
    });
    expect(badRole.status).toBe(400);
    const sa = (await call('POST', '/iam/v1/projects/proj-1/serviceAccounts', { accountId: 'short-lived' })).json;
    await call('POST', '/cloudresourcemanager/v1/projects/proj-1:setIamPolicy', {
      policy: { bindings: [{ role: 'roles/viewer', members: [`serviceAccount:${sa.email}`] }] },
    });
    await call('DELETE', `/iam/v1/projects/-/serviceAccounts/${sa.email}`);
    expect(google.policy('projects/proj-1').bindings[0]?.members).toEqual([
      `deleted:serviceAccount:${sa.email}?uid=${sa.uniqueId}`,
    ]);
  });

  it('models IAM propagation: a new account is unknown to policies for its first attempts', async () => {
    await google.close();
    google = await startGoogleEmulator({ eventualConsistency: 1 });
    google.addProject('proj-1');
    root = google.seedServiceAccount('proj-1', 'root-account');
    token = (await exchange(await assertion(root.credentials))).json.access_token;
    const sa = (await call('POST', '/iam/v1/projects/proj-1/serviceAccounts', { accountId: 'brand-new' })).json;
    const policy = { policy: { bindings: [{ role: 'roles/viewer', members: [`serviceAccount:${sa.email}`] }] } };
    expect((await call('POST', '/cloudresourcemanager/v1/projects/proj-1:setIamPolicy', policy)).status).toBe(400);
    expect((await call('POST', '/cloudresourcemanager/v1/projects/proj-1:setIamPolicy', policy)).status).toBe(200);
  });

  it('has service-account and bucket policies (buckets answer 412 on a stale etag)', async () => {
    const path = `/iam/v1/projects/-/serviceAccounts/${root.email}`;
    expect((await call('POST', `${path}:getIamPolicy`, {})).json.etag).toBe('ACAB');
    google.addBucket('data');
    const bucket = await call('GET', '/storage/storage/v1/b/data/iam');
    expect(bucket.json).toMatchObject({ kind: 'storage#policy', resourceId: 'projects/_/buckets/data', etag: 'ACAB' });
    expect(
      (
        await call('PUT', '/storage/storage/v1/b/data/iam', {
          etag: 'ACAB',
          bindings: [{ role: 'roles/storage.objectViewer', members: ['allUsers'] }],
        })
      ).status,
    ).toBe(200);
    expect((await call('PUT', '/storage/storage/v1/b/data/iam', { etag: 'ACAB', bindings: [] })).status).toBe(412);
  });
});

describe('Google emulator: IAM Credentials and STS', () => {
  it('generates access tokens for an account with a lifetime', async () => {
    const reply = await call(
      'POST',
      `/iamcredentials/v1/projects/-/serviceAccounts/${root.email}:generateAccessToken`,
      {
        scope: ['https://www.googleapis.com/auth/cloud-platform'],
        lifetime: '7200s',
      },
    );
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual({
      accessToken: expect.stringMatching(/^ya29\./),
      expireTime: expect.stringMatching(/Z$/),
    });
    expect(google.tokenInfo(reply.json.accessToken)).toMatchObject({
      principal: root.email,
      via: 'generateAccessToken',
    });
    expect(
      (
        await call('POST', `/iamcredentials/v1/projects/-/serviceAccounts/${root.email}:generateAccessToken`, {
          scope: [],
        })
      ).status,
    ).toBe(400);
    expect(
      (
        await call('POST', `/iamcredentials/v1/projects/-/serviceAccounts/${root.email}:generateAccessToken`, {
          scope: ['x'],
          lifetime: '50000s',
        })
      ).status,
    ).toBe(400);
    expect(
      (
        await call(
          'POST',
          '/iamcredentials/v1/projects/-/serviceAccounts/nobody@proj-1.iam.gserviceaccount.com:generateAccessToken',
          { scope: ['x'] },
        )
      ).status,
    ).toBe(404);
  });

  it('exchanges a subject token of a registered provider for a federated token', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const audience = '//iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/pool/providers/keyhaven';
    google.addWorkloadIdentityProvider({
      audience,
      issuer: 'https://keyhaven.test',
      publicJwk: { ...(await exportJWK(publicKey)), alg: 'RS256' },
    });
    const subjectToken = await new SignJWT({})
      .setProtectedHeader({ alg: 'RS256' })
      .setIssuer('https://keyhaven.test')
      .setSubject('plugin-identity:root:secret:cloud')
      .setAudience(`https://iam.googleapis.com/${audience.slice('//iam.googleapis.com/'.length)}`)
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(privateKey);
    const request = (body: Record<string, string>) =>
      fetch(`${google.endpoints.sts}/v1/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const base = {
      grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
      audience,
      scope: 'https://www.googleapis.com/auth/cloud-platform',
      requested_token_type: 'urn:ietf:params:oauth:token-type:access_token',
      subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
    };
    const reply = await request({ ...base, subject_token: subjectToken });
    expect(reply.status).toBe(200);
    const body = await reply.json();
    expect(body).toMatchObject({
      token_type: 'Bearer',
      expires_in: 3600,
      issued_token_type: 'urn:ietf:params:oauth:token-type:access_token',
    });
    expect(google.tokenInfo(body.access_token)?.principal).toBe(
      'principal://iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/pool/subject/plugin-identity:root:secret:cloud',
    );
    expect((await request({ ...base, subject_token: `${subjectToken}x` })).status).toBe(400);
    expect((await request({ ...base, audience: `${audience}-other`, subject_token: subjectToken })).status).toBe(400);
  });

  it('injects failures before or after applying a change', async () => {
    google.failNext('serviceAccounts.create', { status: 503 });
    expect((await call('POST', '/iam/v1/projects/proj-1/serviceAccounts', { accountId: 'failing-one' })).status).toBe(
      503,
    );
    expect(google.serviceAccount('failing-one@proj-1.iam.gserviceaccount.com')).toBeUndefined();
    google.failNext('serviceAccounts.create', { status: 500, afterApply: true });
    expect((await call('POST', '/iam/v1/projects/proj-1/serviceAccounts', { accountId: 'failing-one' })).status).toBe(
      500,
    );
    expect(google.serviceAccount('failing-one@proj-1.iam.gserviceaccount.com')).toBeDefined();
  });
});
