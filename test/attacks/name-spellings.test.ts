/**
 * Attack class: a name the backend stores under another spelling (issue 23 §1 and §2 together).
 *
 * Policy names are stored trimmed and lower-cased (CVE-2025-5999 / HCSEC-2025-13) and JWT role names lower-cased (as
 * Vault's JWT method keeps them). A policy is checked against the request's path; if the path kept the caller's
 * spelling while the handler stored the folded one, a writer allowed `sys/policies/acl/*` but denied
 * `sys/policies/acl/admin` could write `sys/policies/acl/Admin` (or `%20admin`) and replace `admin`.
 *
 * Attacker: a narrow token allowed every operation on the directory but denied the one item.
 * They try: the denied name in other case and with Go-space padding, on every operation.
 * They must never reach: the denied item (read, changed or deleted). The router rewrites such captures into their
 * stored spelling before the policy is checked (`PathSpec.canonicalCaptures`), so the denied path is the one checked.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SecretsHarness, startSecrets } from '../support/secrets-harness.ts';

const adminPolicy = 'path "kv/*" { capabilities = ["read"] }';

describe('attack: a denied policy or role reached through another spelling of its name', () => {
  let h: SecretsHarness;
  let writer = '';
  const root = (method: string, path: string, body?: unknown) =>
    h.call(method, path, { token: h.rootToken, ...(body === undefined ? {} : { body }) });
  const as = (method: string, path: string, body?: unknown) =>
    h.call(method, path, { token: writer, ...(body === undefined ? {} : { body }) });

  beforeAll(async () => {
    h = await startSecrets();
    expect((await root('POST', '/v1/sys/auth/jwt', { type: 'jwt' })).status).toBe(204);
    expect((await root('PUT', '/v1/sys/policies/acl/admin', { policy: adminPolicy })).status).toBe(204);
    const rolePolicy = { role_type: 'jwt', user_claim: 'sub', bound_audiences: 'api', token_policies: ['admin'] };
    expect((await root('POST', '/v1/auth/jwt/role/admin', rolePolicy)).status).toBeLessThan(300);
    const everything = '["create", "read", "update", "delete", "list"]';
    const writerPolicy = [
      `path "sys/policies/acl/*" { capabilities = ${everything} }`,
      'path "sys/policies/acl/admin" { capabilities = ["deny"] }',
      `path "sys/policy/*" { capabilities = ${everything} }`,
      'path "sys/policy/admin" { capabilities = ["deny"] }',
      `path "auth/jwt/role/*" { capabilities = ${everything} }`,
      'path "auth/jwt/role/admin" { capabilities = ["deny"] }',
    ].join('\n');
    expect((await root('PUT', '/v1/sys/policies/acl/policy-writer', { policy: writerPolicy })).status).toBe(204);
    const created = await root('POST', '/v1/auth/token/create', { policies: ['policy-writer'], ttl: '1h' });
    writer = created.body.auth.client_token;
  });

  afterAll(async () => {
    await h?.close();
  });

  const policySpellings = ['Admin', 'ADMIN', '%20admin', 'admin%C2%85', '%C2%A0Admin'];

  it.each(['sys/policies/acl', 'sys/policy'])(
    'a policy writer cannot read, replace or delete the denied policy through %s/<another spelling>',
    async (prefix) => {
      for (const spelling of policySpellings) {
        for (const method of ['GET', 'PUT', 'POST', 'DELETE']) {
          const body =
            method === 'PUT' || method === 'POST'
              ? {
                  policy: 'path "*" { capabilities = ["sudo", "read", "create", "update", "delete", "list"] }',
                  rules: 'path "*" { capabilities = ["sudo"] }',
                }
              : undefined;
          const reply = await as(method, `/v1/${prefix}/${spelling}`, body);
          expect(reply.status, `${method} ${prefix}/${spelling}`).toBe(403);
        }
      }
      const stored = await root('GET', '/v1/sys/policies/acl/admin');
      expect(stored.status).toBe(200);
      expect(stored.body.data.policy).toBe(adminPolicy);
      // The writer still has what the policy gives: another policy, under any spelling, is theirs to write.
      const own = await as('PUT', `/v1/${prefix}/Team`, { policy: adminPolicy, rules: adminPolicy });
      expect(own.status, JSON.stringify(own.body)).toBeLessThan(300);
      expect((await root('GET', '/v1/sys/policies/acl/team')).body.data.name).toBe('team');
    },
  );

  it('a role writer cannot read, replace or delete the denied JWT role through auth/jwt/role/<another case>', async () => {
    for (const spelling of ['Admin', 'ADMIN', 'aDmIn']) {
      for (const method of ['GET', 'PUT', 'POST', 'DELETE']) {
        const body =
          method === 'PUT' || method === 'POST'
            ? { role_type: 'jwt', user_claim: 'sub', bound_audiences: 'attacker', token_policies: ['admin'] }
            : undefined;
        const reply = await as(method, `/v1/auth/jwt/role/${spelling}`, body);
        expect(reply.status, `${method} auth/jwt/role/${spelling}`).toBe(403);
      }
    }
    const stored = await root('GET', '/v1/auth/jwt/role/admin');
    expect(stored.status).toBe(200);
    expect(stored.body.data.bound_audiences).toEqual(['api']);
    // Other roles stay the writer's, and are stored under their lower-case name as before.
    expect(
      (
        await as('POST', '/v1/auth/jwt/role/Ops', {
          role_type: 'jwt',
          user_claim: 'sub',
          bound_audiences: 'api',
          token_policies: ['team'],
        })
      ).status,
    ).toBeLessThan(300);
    expect((await as('GET', '/v1/auth/jwt/role/ops')).body.data.token_policies).toEqual(['team']);
  });
});
