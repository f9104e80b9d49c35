import { afterEach, describe, expect, it } from 'vitest';
import { sweepExpired } from '../../packages/core/src/entry-points/expiry-sweeps.ts';
import { cleanupPending } from '../../packages/core/src/secrets/engines/cloud/cleanup.ts';
import { type CloudEngine, startCloudEngine } from '../support/cloud-engine.ts';

let engine: CloudEngine;
afterEach(() => engine?.close());

const projectResource = '//cloudresourcemanager.googleapis.com/projects/proj-1';
const bucketResource = '//storage.googleapis.com/buckets/data';
const hcl = `
resource "${projectResource}" {
  roles = ["roles/viewer", "roles/iam.serviceAccountUser"]
}

resource "${bucketResource}" {
  roles = ["roles/storage.objectViewer"]
}
`;
const viewerOnly = `resource "${projectResource}" { roles = ["roles/viewer"] }`;
const scopes = ['https://www.googleapis.com/auth/cloud-platform'];

async function start(options: Parameters<typeof startCloudEngine>[0] = {}) {
  engine = await startCloudEngine(options);
  engine.google.addBucket('data');
  return engine;
}

/** Accounts other than the root one. */
const managedAccounts = () => engine.google.serviceAccounts().filter((account) => account.email !== engine.root.email);

async function roleset(name: string, body: Record<string, unknown>) {
  const reply = await engine.call('POST', `/v1/cloud/roleset/${name}`, body);
  expect(reply.status, JSON.stringify(reply.body)).toBe(204);
  return (await engine.call('GET', `/v1/cloud/roleset/${name}`)).body.data;
}

describe('cloud rolesets', () => {
  it('creates a service account with its bindings and reads back the binding map', async () => {
    await start();
    const data = await roleset('app-reader', { project: 'proj-1', bindings: hcl, token_scopes: scopes });
    expect(data).toEqual({
      secret_type: 'access_token',
      service_account_email: expect.stringMatching(/^kh-app-reader-[a-z0-9]{8}@proj-1\.iam\.gserviceaccount\.com$/),
      service_account_project: 'proj-1',
      bindings: {
        [projectResource]: ['roles/iam.serviceAccountUser', 'roles/viewer'],
        [bucketResource]: ['roles/storage.objectViewer'],
      },
      token_scopes: scopes,
    });
    const email = data.service_account_email;
    expect(email.split('@')[0].length).toBeLessThanOrEqual(30);
    expect(engine.google.serviceAccount(email)).toMatchObject({ projectId: 'proj-1' });
    expect(engine.google.bindingsOf(`serviceAccount:${email}`)).toEqual([
      'b/data roles/storage.objectViewer',
      'projects/proj-1 roles/iam.serviceAccountUser',
      'projects/proj-1 roles/viewer',
    ]);
    expect(engine.google.keys(email)).toHaveLength(1);
    expect((await engine.call('LIST', '/v1/cloud/rolesets')).body.data.keys).toEqual(['app-reader']);
  });

  it('accepts JSON and base64 bindings, a long name within 30 characters, and unique accounts', async () => {
    await start();
    const json = JSON.stringify({ resource: { [projectResource]: { roles: ['roles/viewer'] } } });
    const a = await roleset('a-very-long-roleset-name-that-goes-on', {
      project: 'proj-1',
      bindings: json,
      secret_type: 'service_account_key',
    });
    const b = await roleset('b', {
      project: 'proj-1',
      bindings: Buffer.from(viewerOnly).toString('base64'),
      secret_type: 'service_account_key',
    });
    expect(a.bindings).toEqual({ [projectResource]: ['roles/viewer'] });
    expect(b.bindings).toEqual({ [projectResource]: ['roles/viewer'] });
    expect(a.service_account_email.split('@')[0].length).toBeLessThanOrEqual(30);
    expect(a.service_account_email).not.toBe(b.service_account_email);
    expect(a.token_scopes).toEqual([]);
  });

  it('refuses bad input with 400s naming the field or the bindings line', async () => {
    await start();
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ bindings: hcl, token_scopes: scopes }, /missing "project"/],
      [{ project: 'proj-1', token_scopes: scopes }, /missing "bindings"/],
      [{ project: 'proj-1', bindings: hcl }, /"token_scopes" is required/],
      [{ project: 'proj-1', bindings: hcl, secret_type: 'password' }, /secret_type/],
      [
        { project: 'proj-1', bindings: 'resource "x" {\n  roles = [\n', token_scopes: scopes },
        /invalid "bindings": line \d+/,
      ],
      [
        {
          project: 'proj-1',
          bindings: `resource "${projectResource}" {\n roles = ["viewer"]\n}`,
          token_scopes: scopes,
        },
        /role "viewer" .*\(line 1\)/,
      ],
      [
        {
          project: 'proj-1',
          bindings: `\n\nresource "//example.com/x" { roles = ["roles/viewer"] }`,
          token_scopes: scopes,
        },
        /resource "\/\/example.com\/x" \(line 3\) is not a supported/,
      ],
      [
        { project: 'proj-1', bindings: `resource "${projectResource}" { roles = [] }`, token_scopes: scopes },
        /has no roles/,
      ],
      [
        {
          project: 'proj-1',
          bindings: `resource "${projectResource}" {\n roles = ["roles/viewer"]\n "roles" = ["roles/owner"]\n}`,
          token_scopes: scopes,
        },
        /line 3, column 2: key "roles" is given twice \(first at 2:2\)/,
      ],
      [
        {
          project: 'proj-1',
          bindings: JSON.stringify({ resource: { [projectResource]: { roles: 'roles/viewer' } } }),
          token_scopes: scopes,
        },
        /needs "roles" as a list of strings/,
      ],
      [
        { project: 'proj-1', bindings: viewerOnly, secret_type: 'service_account_key', token_scopes: scopes },
        /only applies to access_token/,
      ],
    ];
    for (const [body, message] of cases) {
      const reply = await engine.call('POST', '/v1/cloud/roleset/bad', body);
      expect(reply.status, JSON.stringify(body)).toBe(400);
      expect(reply.body.errors[0]).toMatch(message);
    }
    expect(managedAccounts()).toEqual([]);
    await roleset('fixed', { project: 'proj-1', bindings: viewerOnly, token_scopes: scopes });
    expect(
      (await engine.call('POST', '/v1/cloud/roleset/fixed', { secret_type: 'service_account_key' })).body.errors[0],
    ).toMatch(/"secret_type" cannot be changed/);
    expect((await engine.call('POST', '/v1/cloud/roleset/fixed', { project: 'proj-2' })).body.errors[0]).toMatch(
      /"project" cannot be changed/,
    );
    expect(
      (
        await engine.call('POST', '/v1/cloud/roleset/other', {
          project: 'no-such-project',
          bindings: viewerOnly,
          token_scopes: scopes,
        })
      ).status,
    ).toBe(400);
    expect(managedAccounts()).toHaveLength(1);
  });

  it('mints access tokens from the roleset key, cached until near expiry; no lease', async () => {
    await start();
    const data = await roleset('tok', { project: 'proj-1', bindings: viewerOnly, token_scopes: scopes });
    const first = await engine.call('GET', '/v1/cloud/roleset/tok/token');
    expect(first.status).toBe(200);
    expect(first.body.lease_id).toBe('');
    expect(first.body.renewable).toBe(false);
    const now = Math.floor(engine.h.clock.now() / 1000);
    // Google grants an hour; what is left of it when the answer is written depends on how busy the machine is.
    const { token_ttl: ttl } = first.body.data;
    expect(ttl).toBeGreaterThanOrEqual(3590);
    expect(ttl).toBeLessThanOrEqual(3600);
    expect(first.body.data).toEqual({
      token: expect.stringMatching(/^ya29\./),
      expires_at_seconds: now + ttl,
      token_ttl: ttl,
    });
    const info = engine.google.tokenInfo(first.body.data.token);
    expect(info).toMatchObject({
      principal: data.service_account_email,
      scopes,
      keyId: engine.google.keys(data.service_account_email)[0]?.id,
    });
    const again = await engine.call('POST', '/v1/cloud/token/tok');
    expect(again.body.data.token).toBe(first.body.data.token);
    engine.h.clock.advance(3599 - 299);
    const refreshed = await engine.call('GET', '/v1/cloud/roleset/tok/token');
    expect(refreshed.body.data.token).not.toBe(first.body.data.token);
    expect((await engine.call('GET', '/v1/cloud/roleset/tok/key')).body.errors[0]).toMatch(
      /cannot generate service account keys/,
    );
    expect((await engine.call('GET', '/v1/cloud/roleset/missing/token')).status).toBe(400);
  });

  it('issues leased keys that renew within max_ttl and are deleted in the cloud on revoke', async () => {
    await start();
    await engine.call('POST', '/v1/cloud/config', { ttl: '1h', max_ttl: '2h' });
    const data = await roleset('keys', { project: 'proj-1', bindings: viewerOnly, secret_type: 'service_account_key' });
    const email = data.service_account_email;
    const issued = await engine.call('POST', '/v1/cloud/roleset/keys/key', { key_algorithm: 'KEY_ALG_RSA_1024' });
    expect(issued.status).toBe(200);
    expect(issued.body).toMatchObject({
      lease_id: expect.stringMatching(/^cloud\/roleset\/keys\/key\/\w+$/),
      renewable: true,
      lease_duration: 3600,
    });
    expect(issued.body.data).toEqual({
      private_key_data: expect.any(String),
      key_algorithm: 'KEY_ALG_RSA_1024',
      key_type: 'TYPE_GOOGLE_CREDENTIALS_FILE',
    });
    const file = JSON.parse(Buffer.from(issued.body.data.private_key_data, 'base64').toString());
    expect(file.client_email).toBe(email);
    expect(engine.google.keys(email).map((key) => key.id)).toEqual([file.private_key_id]);
    const defaults = await engine.call('GET', '/v1/cloud/key/keys');
    expect(defaults.body.data.key_algorithm).toBe('KEY_ALG_RSA_2048');
    expect(defaults.body.lease_id).toMatch(/^cloud\/key\/keys\//);
    expect(engine.google.keys(email)).toHaveLength(2);

    engine.h.clock.advance(1800);
    const renewed = await engine.call('PUT', '/v1/sys/leases/renew', {
      lease_id: issued.body.lease_id,
      increment: 3600,
    });
    expect(renewed.status).toBe(200);
    expect(renewed.body.lease_duration).toBe(3600);
    engine.h.clock.advance(3500);
    const capped = await engine.call('PUT', '/v1/sys/leases/renew', {
      lease_id: issued.body.lease_id,
      increment: 3600,
    });
    expect(capped.body.lease_duration).toBe(1900);

    expect((await engine.call('PUT', '/v1/sys/leases/revoke', { lease_id: issued.body.lease_id })).status).toBe(204);
    expect(engine.google.keys(email).map((key) => key.id)).not.toContain(file.private_key_id);
    // The other key expires and the sweep deletes it.
    engine.h.clock.advance(7200);
    await sweepExpired(engine.h.core);
    expect(engine.google.keys(email)).toEqual([]);
    expect((await engine.call('GET', '/v1/cloud/roleset/keys/token')).body.errors[0]).toMatch(
      /cannot generate access tokens/,
    );
    expect((await engine.call('POST', '/v1/cloud/roleset/keys/key', { key_type: 'TYPE_PEM' })).status).toBe(400);
  });

  it('unchanged bindings touch nothing; changed bindings replace the account and revoke its keys', async () => {
    await start();
    const before = await roleset('swap', { project: 'proj-1', bindings: hcl, secret_type: 'service_account_key' });
    const key = await engine.call('GET', '/v1/cloud/roleset/swap/key');
    const calls = engine.google.calls.length;
    await roleset('swap', { bindings: hcl });
    expect(engine.google.calls.length).toBe(calls);

    const after = await roleset('swap', { bindings: viewerOnly });
    expect(after.service_account_email).not.toBe(before.service_account_email);
    expect(engine.google.serviceAccount(before.service_account_email)).toBeUndefined();
    expect(engine.google.bindingsOf(`serviceAccount:${before.service_account_email}`)).toEqual([]);
    expect(engine.google.bindingsOf(`serviceAccount:${after.service_account_email}`)).toEqual([
      'projects/proj-1 roles/viewer',
    ]);
    expect(JSON.stringify(engine.google.policy('projects/proj-1'))).not.toContain('deleted:');
    expect((await engine.call('PUT', '/v1/sys/leases/lookup', { lease_id: key.body.lease_id })).status).toBe(404);
    expect(
      engine.google
        .keys()
        .filter((entry) => entry.email !== engine.root.email)
        .map((entry) => entry.email),
    ).toEqual([]);
    expect(managedAccounts()).toHaveLength(1);
  });

  it('rotate replaces the account and key; rotate-key only the key; delete removes everything', async () => {
    await start();
    const first = await roleset('rot', { project: 'proj-1', bindings: viewerOnly, token_scopes: scopes });
    const oldKey = engine.google.keys(first.service_account_email)[0]?.id;
    expect((await engine.call('POST', '/v1/cloud/roleset/rot/rotate-key')).status).toBe(204);
    const keys = engine.google.keys(first.service_account_email);
    expect(keys).toHaveLength(1);
    expect(keys[0]?.id).not.toBe(oldKey);
    const token = await engine.call('GET', '/v1/cloud/roleset/rot/token');
    expect(engine.google.tokenInfo(token.body.data.token)?.keyId).toBe(keys[0]?.id);

    expect((await engine.call('POST', '/v1/cloud/roleset/rot/rotate')).status).toBe(204);
    const second = (await engine.call('GET', '/v1/cloud/roleset/rot')).body.data;
    expect(second.service_account_email).not.toBe(first.service_account_email);
    expect(second.bindings).toEqual(first.bindings);
    expect(managedAccounts().map((account) => account.email)).toEqual([second.service_account_email]);

    await roleset('sak', { project: 'proj-1', bindings: viewerOnly, secret_type: 'service_account_key' });
    expect((await engine.call('POST', '/v1/cloud/roleset/sak/rotate-key')).status).toBe(400);
    for (const name of ['rot', 'sak'])
      expect((await engine.call('DELETE', `/v1/cloud/roleset/${name}`)).status).toBe(204);
    expect(managedAccounts()).toEqual([]);
    expect(engine.google.policy('projects/proj-1').bindings).toEqual([]);
    expect((await engine.call('GET', '/v1/cloud/roleset/rot')).status).toBe(404);
  });

  it('retries policy conflicts and IAM propagation delays', async () => {
    await start({ eventualConsistency: 2 });
    engine.google.failNext('projects.setIamPolicy', { status: 409, times: 2 });
    const data = await roleset('retry', { project: 'proj-1', bindings: viewerOnly, token_scopes: scopes });
    expect(engine.google.bindingsOf(`serviceAccount:${data.service_account_email}`)).toEqual([
      'projects/proj-1 roles/viewer',
    ]);
  });

  it.each([
    ['serviceAccounts.create', true, 500],
    ['projects.setIamPolicy', false, 500],
    ['buckets.setIamPolicy', true, 403],
    ['serviceAccounts.keys.create', true, 500],
  ])('leaks nothing when %s fails during create (applied: %s)', async (operation, afterApply, status) => {
    await start();
    engine.google.failNext(operation, { status, afterApply, times: afterApply ? 1 : 20 });
    const reply = await engine.call('POST', '/v1/cloud/roleset/fail', {
      project: 'proj-1',
      bindings: hcl,
      token_scopes: scopes,
    });
    expect(reply.status).toBe(status === 403 ? 400 : 502);
    expect(managedAccounts()).toEqual([]);
    expect(engine.google.keys().filter((key) => key.email !== engine.root.email)).toEqual([]);
    expect(engine.google.policy('projects/proj-1').bindings).toEqual([]);
    expect(engine.google.policy('b/data').bindings).toEqual([]);
    expect((await engine.call('GET', '/v1/cloud/roleset/fail')).status).toBe(404);
  });

  it('a cloud failure while removing the old account is finished by the clean-up job', async () => {
    await start();
    const before = await roleset('later', { project: 'proj-1', bindings: viewerOnly, token_scopes: scopes });
    engine.google.failNext('serviceAccounts.delete', { status: 503 });
    const after = await roleset('later', { bindings: hcl });
    expect(engine.google.serviceAccount(before.service_account_email)).toBeDefined();
    expect(await cleanupPending(engine.h.core)).toMatchObject({ settled: 1, failed: 0 });
    expect(managedAccounts().map((account) => account.email)).toEqual([after.service_account_email]);
    expect(engine.google.bindingsOf(`serviceAccount:${before.service_account_email}`)).toEqual([]);
  });

  it('a crash mid-create (clean-up unreachable) is undone by the job once the request is surely over', async () => {
    await start();
    // The create fails at the bindings and the immediate undo fails too: the record ahead stays.
    engine.google.failNext('projects.setIamPolicy', { status: 500, times: 8 });
    engine.google.failNext('serviceAccounts.delete', { status: 503 });
    expect(
      (
        await engine.call('POST', '/v1/cloud/roleset/crash', {
          project: 'proj-1',
          bindings: viewerOnly,
          token_scopes: scopes,
        })
      ).status,
    ).toBe(502);
    expect(managedAccounts()).toHaveLength(1);
    expect(await cleanupPending(engine.h.core)).toMatchObject({ settled: 1 });
    expect(managedAccounts()).toEqual([]);
  });
});
