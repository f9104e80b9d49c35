import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cleanupPending } from '../../packages/core/src/secrets/engines/cloud/cleanup.ts';
import { type CloudEngine, startCloudEngine } from '../support/cloud-engine.ts';

let engine: CloudEngine;
let app: { email: string; credentials: string };
const projectResource = '//cloudresourcemanager.googleapis.com/projects/proj-1';
const viewer = `resource "${projectResource}" { roles = ["roles/viewer"] }`;
const editor = `resource "${projectResource}" { roles = ["roles/editor"] }`;
const scopes = ['https://www.googleapis.com/auth/cloud-platform'];

beforeEach(async () => {
  engine = await startCloudEngine();
  app = engine.google.seedServiceAccount('proj-1', 'existing-app');
  // A binding made outside the engine: never shown, never touched.
  engine.google.setPolicy('projects/proj-1', [
    { role: 'roles/logging.viewer', members: [`serviceAccount:${app.email}`] },
  ]);
});
afterEach(() => engine.close());

const userKeyId = () => JSON.parse(app.credentials).private_key_id as string;

describe('cloud static accounts', () => {
  it('manages an existing account: only its own bindings, a token key, tokens from that key', async () => {
    const written = await engine.call('POST', '/v1/cloud/static-account/app', {
      service_account_email: app.email,
      bindings: viewer,
      token_scopes: scopes,
    });
    expect(written.status).toBe(204);
    const read = await engine.call('GET', '/v1/cloud/static-account/app');
    expect(read.body.data).toEqual({
      secret_type: 'access_token',
      service_account_email: app.email,
      service_account_project: 'proj-1',
      bindings: { [projectResource]: ['roles/viewer'] },
      token_scopes: scopes,
    });
    expect(engine.google.bindingsOf(`serviceAccount:${app.email}`)).toEqual([
      'projects/proj-1 roles/logging.viewer',
      'projects/proj-1 roles/viewer',
    ]);
    const keys = engine.google.keys(app.email);
    expect(keys).toHaveLength(2);
    const engineKey = keys.find((key) => key.id !== userKeyId());
    const token = await engine.call('POST', '/v1/cloud/static-account/app/token');
    expect(token.status).toBe(200);
    expect(engine.google.tokenInfo(token.body.data.token)).toMatchObject({
      principal: app.email,
      keyId: engineKey?.id,
    });
    expect((await engine.call('LIST', '/v1/cloud/static-accounts')).body.data.keys).toEqual(['app']);

    expect((await engine.call('POST', '/v1/cloud/static-account/app/rotate-key')).status).toBe(204);
    const rotated = engine.google.keys(app.email).map((key) => key.id);
    expect(rotated).toHaveLength(2);
    expect(rotated).toContain(userKeyId());
    expect(rotated).not.toContain(engineKey?.id);

    expect((await engine.call('POST', '/v1/cloud/static-account/app', { bindings: editor })).status).toBe(204);
    expect(engine.google.bindingsOf(`serviceAccount:${app.email}`)).toEqual([
      'projects/proj-1 roles/editor',
      'projects/proj-1 roles/logging.viewer',
    ]);

    expect((await engine.call('DELETE', '/v1/cloud/static-account/app')).status).toBe(204);
    expect(engine.google.serviceAccount(app.email)).toBeDefined();
    expect(engine.google.bindingsOf(`serviceAccount:${app.email}`)).toEqual(['projects/proj-1 roles/logging.viewer']);
    expect(engine.google.keys(app.email).map((key) => key.id)).toEqual([userKeyId()]);
  });

  it('refuses a missing account and bad fields', async () => {
    const missing = await engine.call('POST', '/v1/cloud/static-account/x', {
      service_account_email: 'nobody@proj-1.iam.gserviceaccount.com',
      token_scopes: scopes,
    });
    expect(missing.status).toBe(400);
    expect(missing.body.errors[0]).toMatch(
      /"service_account_email": service account nobody@proj-1.iam.gserviceaccount.com does not exist/,
    );
    expect((await engine.call('POST', '/v1/cloud/static-account/x', { token_scopes: scopes })).body.errors[0]).toMatch(
      /missing "service_account_email"/,
    );
    expect(
      (await engine.call('POST', '/v1/cloud/static-account/x', { service_account_email: app.email })).body.errors[0],
    ).toMatch(/"token_scopes" is required/);
    await engine.call('POST', '/v1/cloud/static-account/x', {
      service_account_email: app.email,
      secret_type: 'service_account_key',
    });
    expect(
      (await engine.call('POST', '/v1/cloud/static-account/x', { service_account_email: engine.root.email })).body
        .errors[0],
    ).toMatch(/cannot be changed/);
    expect((await engine.call('POST', '/v1/cloud/static-account/x/rotate-key')).status).toBe(400);
    expect((await engine.call('GET', '/v1/cloud/static-account/x/token')).status).toBe(400);
  });

  it('issues leased keys; changing the bindings revokes them', async () => {
    await engine.call('POST', '/v1/cloud/static-account/keys', {
      service_account_email: app.email,
      secret_type: 'service_account_key',
      bindings: viewer,
    });
    const issued = await engine.call('GET', '/v1/cloud/static-account/keys/key');
    expect(issued.status).toBe(200);
    expect(issued.body.lease_id).toMatch(/^cloud\/static-account\/keys\/key\//);
    expect(engine.google.keys(app.email)).toHaveLength(2);
    expect((await engine.call('POST', '/v1/cloud/static-account/keys', { bindings: editor })).status).toBe(204);
    expect(engine.google.keys(app.email).map((key) => key.id)).toEqual([userKeyId()]);
    expect((await engine.call('PUT', '/v1/sys/leases/lookup', { lease_id: issued.body.lease_id })).status).toBe(404);
  });

  it('leaks no binding or key when the cloud fails mid-create', async () => {
    engine.google.failNext('serviceAccounts.keys.create', { status: 500, afterApply: true });
    const reply = await engine.call('POST', '/v1/cloud/static-account/app', {
      service_account_email: app.email,
      bindings: viewer,
      token_scopes: scopes,
    });
    expect(reply.status).toBe(502);
    expect(engine.google.bindingsOf(`serviceAccount:${app.email}`)).toEqual(['projects/proj-1 roles/logging.viewer']);
    expect(engine.google.keys(app.email).map((key) => key.id)).toEqual([userKeyId()]);
  });

  it('a failed removal of bindings on delete is finished by the clean-up job', async () => {
    await engine.call('POST', '/v1/cloud/static-account/app', {
      service_account_email: app.email,
      bindings: viewer,
      token_scopes: scopes,
    });
    engine.google.failNext('projects.setIamPolicy', { status: 403 });
    expect((await engine.call('DELETE', '/v1/cloud/static-account/app')).status).toBe(204);
    expect(engine.google.bindingsOf(`serviceAccount:${app.email}`)).toEqual([
      'projects/proj-1 roles/logging.viewer',
      'projects/proj-1 roles/viewer',
    ]);
    expect(await cleanupPending(engine.h.core)).toMatchObject({ settled: 1, failed: 0 });
    expect(engine.google.bindingsOf(`serviceAccount:${app.email}`)).toEqual(['projects/proj-1 roles/logging.viewer']);
    expect(engine.google.keys(app.email).map((key) => key.id)).toEqual([userKeyId()]);
  });
});
