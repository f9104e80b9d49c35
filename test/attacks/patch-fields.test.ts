import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SecretsHarness, startSecrets } from '../support/secrets-harness.ts';

/**
 * Issue 37 §2, the concrete attack. Attacker: a narrow token granted `patch` on `secret/metadata/app` with the
 * metadata settings it must not change denied (`max_versions`, `delete_version_after`, `cas_required`). It used to
 * send them in the query string of a PATCH whose body held only `custom_metadata`: the constraints checked the body,
 * the handler read both, so it got 204 and all three changed, while the audit entry recorded the query and lost the
 * body. As Vault (`http/logical.go`), a PATCH's fields now come from its JSON body alone: the query changes nothing,
 * the body's fields are what the policy checks and what the audit entry records. The property over every row is
 * `field-property.test.ts`.
 */
describe('a PATCH takes its fields from the body the policy checked, never from the query string', () => {
  let h: SecretsHarness;
  let token: string;
  const mergePatch = { 'Content-Type': 'application/merge-patch+json' };
  const metadata = async () => (await h.call('GET', '/v1/secret/metadata/app', { token: h.rootToken })).body.data;

  beforeAll(async () => {
    h = await startSecrets();
    const asRoot = (method: string, url: string, body: unknown) => h.call(method, url, { token: h.rootToken, body });
    expect((await asRoot('DELETE', '/v1/sys/mounts/secret', undefined)).status).toBe(204);
    expect((await asRoot('POST', '/v1/sys/mounts/secret', { type: 'kv', options: { version: '2' } })).status).toBe(204);
    expect((await asRoot('PUT', '/v1/secret/data/app', { data: { password: 'p' } })).status).toBe(200);
    expect(
      (
        await asRoot('POST', '/v1/secret/metadata/app', {
          max_versions: 5,
          cas_required: true,
          delete_version_after: '0s',
        })
      ).status,
    ).toBe(204);
    const policy = `path "secret/metadata/app" {
      capabilities = ["patch", "read"]
      denied_parameters = { "max_versions" = [], "delete_version_after" = [], "cas_required" = [] }
    }`;
    expect((await asRoot('PUT', '/v1/sys/policies/acl/metadata-patcher', { policy })).status).toBe(204);
    const created = await asRoot('POST', '/v1/auth/token/create', {
      policies: ['metadata-patcher'],
      no_default_policy: true,
    });
    token = created.body.auth.client_token;
  }, 60_000);

  afterAll(async () => {
    await h?.close();
  });

  it('the denied settings in the query string change nothing; the body is what is applied and audited', async () => {
    const before = await metadata();
    expect(before).toMatchObject({ max_versions: 5, cas_required: true, delete_version_after: '0s' });
    const reply = await h.call(
      'PATCH',
      '/v1/secret/metadata/app?max_versions=1&delete_version_after=1s&cas_required=false',
      { token, body: { custom_metadata: { team: 'red' } }, headers: mergePatch },
    );
    expect(reply.status).toBe(204);
    const after = await metadata();
    expect(after).toMatchObject({
      max_versions: 5,
      cas_required: true,
      delete_version_after: '0s',
      custom_metadata: { team: 'red' },
    });
    // The request entry records the body the handler applied (its strings hashed), not the query.
    const entry = h
      .auditLines()
      .map((line) => JSON.parse(line))
      .find(
        (parsed) =>
          parsed.type === 'request' &&
          parsed.request.path === 'secret/metadata/app' &&
          parsed.request.operation === 'patch',
      );
    expect(Object.keys(entry.request.data)).toEqual(['custom_metadata']);
    expect(Object.keys(entry.request.data.custom_metadata)).toEqual(['team']);
  });

  it('the same settings in the body are refused by the policy, and nothing changes', async () => {
    for (const body of [{ max_versions: 1 }, { delete_version_after: '1s' }, { cas_required: false }]) {
      const reply = await h.call('PATCH', '/v1/secret/metadata/app', {
        token,
        body: { custom_metadata: { team: 'blue' }, ...body },
        headers: mergePatch,
      });
      expect(reply.status).toBe(403);
      expect(reply.body.errors).toEqual(['permission denied']);
    }
    expect(await metadata()).toMatchObject({
      max_versions: 5,
      cas_required: true,
      delete_version_after: '0s',
      custom_metadata: { team: 'red' },
    });
  });
});
