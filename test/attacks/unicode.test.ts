/**
 * Attack class: Unicode as Go sees it (issue 23 §6). Vault compares with Go's semantics (`strings.ToLower` maps one
 * code point at a time, `strings.TrimSpace` trims Go's `unicode.IsSpace` set, `strconv.Unquote` refuses surrogate
 * escapes); a port that compares with JavaScript's grants more where the two disagree.
 *
 * Attackers: a narrow token (one ordinary policy with parameter constraints, or a list grant with a deny glob under
 * it), and a policy writer (a token allowed to write ACL policies).
 * They try: a denied parameter spelt `"İd"` in the policy and `id`/`ID` in the request; denied and allowed values
 * hidden behind U+0085, U+00A0 and U+FEFF in comma-separated strings; `policies` spelt `ROOT` against a denied
 * `root`; a LIST of a directory whose contents a deny glob covers, reached through a `+` or glob list grant;
 * policies with surrogate escapes and `*` in parameter names.
 * They must never reach: a write Vault would refuse (the stored secret unchanged), a token carrying a policy the
 * constraints deny, the names under a denied directory, or a stored policy that means other than Vault's would.
 *
 * Bulletins replayed: the LIST bypass OpenBao published as GHSA-xp3c-3jw3-4vcr (fixed in current vault/acl.go by
 * resolveACLPermsForListOp), and current vault/acl.go's lower-casing of `policies`/`token_policies` values
 * (normalizePolicyParameterValue, the parameter-constraint side of CVE-2025-5999).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CallResult, type SecretsHarness, startSecrets } from '../support/secrets-harness.ts';

const errorOf = (reply: CallResult) => (reply.body?.errors ?? []).join('; ');
const expectDenied = (reply: CallResult) => expect(reply, JSON.stringify(reply.body)).toMatchObject({ status: 403 });

describe('attack: Unicode spellings against policies (issue 23 §6)', () => {
  let h: SecretsHarness;
  const root = (method: string, path: string, body?: unknown) =>
    h.call(method, path, { token: h.rootToken, ...(body === undefined ? {} : { body }) });
  const as = (token: string, method: string, path: string, body?: unknown) =>
    h.call(method, path, { token, ...(body === undefined ? {} : { body }) });

  async function policy(name: string, text: string): Promise<void> {
    const reply = await root('PUT', `/v1/sys/policies/acl/${name}`, { policy: text });
    expect(reply.status, JSON.stringify(reply.body)).toBe(204);
  }
  async function tokenWith(...policies: string[]): Promise<string> {
    const reply = await root('POST', '/v1/auth/token/create', { policies });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    return reply.body.auth.client_token as string;
  }
  const stored = async (path: string) => (await root('GET', `/v1/secret/${path}`)).body?.data;

  beforeAll(async () => {
    h = await startSecrets();
    for (const [path, data] of [
      ['app/config', { group: 'reader', level: 'info' }],
      ['private/key', { key: 'k' }],
      ['public/readme', { text: 'hello' }],
    ] as const) {
      expect((await root('POST', `/v1/secret/${path}`, data)).status).toBe(204);
    }
  });
  afterAll(async () => {
    await h?.close();
  });

  describe('a narrow token with parameter constraints (Go lower-casing and TrimSpace)', () => {
    let narrow = '';
    beforeAll(async () => {
      await policy(
        'unicode-constrained',
        [
          'path "secret/app/*" {',
          '  capabilities = ["create", "update", "read"]',
          '  denied_parameters = { "İd" = [] "role" = ["admin"] }',
          '  allowed_parameters = { "*" = [] "group" = ["reader", "writer"] }',
          '}',
        ].join('\n'),
      );
      narrow = await tokenWith('unicode-constrained');
    });

    it('a denied "İd" denies the field id in every case, as Go\'s strings.ToLower("İd") is "id"', async () => {
      for (const body of [{ id: 'x' }, { ID: 'x' }, { Id: 'x', level: 'debug' }]) {
        expectDenied(await as(narrow, 'POST', '/v1/secret/app/config', body));
      }
      expect(await stored('app/config')).toEqual({ group: 'reader', level: 'info' });
    });

    it('a denied value behind Go spaces (U+0085, U+00A0, U+3000) in a comma-separated string is still denied', async () => {
      for (const role of ['reader,admin\u0085', '\u00a0admin', 'reader, admin\u3000', 'admin\u2028']) {
        expectDenied(await as(narrow, 'POST', '/v1/secret/app/config', { role }));
      }
      expect(await stored('app/config')).toEqual({ group: 'reader', level: 'info' });
    });

    it('an allowed value with a U+FEFF in front is not the allowed value (Go does not trim U+FEFF or U+200B)', async () => {
      for (const group of ['\ufeffreader', 'reader\u200b', 'reader,\ufeffadmin']) {
        expectDenied(await as(narrow, 'POST', '/v1/secret/app/config', { group }));
      }
      expect(await stored('app/config')).toEqual({ group: 'reader', level: 'info' });
      // What Vault allows still passes: Go spaces around allowed values are trimmed.
      expect((await as(narrow, 'POST', '/v1/secret/app/config', { group: 'reader,\u0085writer\u00a0' })).status).toBe(
        204,
      );
      expect(await stored('app/config')).toEqual({ group: 'reader,\u0085writer\u00a0' });
    });
  });

  describe('a narrow token creating tokens: policies values compare lower-cased (current vault/acl.go)', () => {
    let creator = '';
    beforeAll(async () => {
      await policy('unicode-leaf', 'path "secret/public/*" { capabilities = ["read"] }');
      await policy(
        'unicode-token-creator',
        [
          'path "auth/token/create" {',
          '  capabilities = ["create", "update"]',
          '  denied_parameters = { "policies" = ["root", "admin*"] }',
          '}',
        ].join('\n'),
      );
      creator = await tokenWith('unicode-token-creator', 'unicode-leaf');
    });

    it('never gets a token whose policies spell a denied one in another case', async () => {
      for (const policies of [['ROOT'], ['Root'], 'unicode-leaf,ROOT', ['Admin-ops'], ['unicode-leaf', 'ADMIN']]) {
        const reply = await as(creator, 'POST', '/v1/auth/token/create', { policies });
        expectDenied(reply);
        expect(reply.body?.auth).toBeUndefined();
      }
      const allowed = await as(creator, 'POST', '/v1/auth/token/create', { policies: ['unicode-leaf'] });
      expect(allowed.status, JSON.stringify(allowed.body)).toBe(200);
      expect(allowed.body.auth.policies).not.toContain('root');
    });
  });

  describe('a narrow token listing under a deny glob (GHSA-xp3c-3jw3-4vcr, current vault/acl.go)', () => {
    let lister = '';
    beforeAll(async () => {
      await policy(
        'unicode-lister',
        'path "secret/+" { capabilities = ["list"] }\npath "secret/private/*" { capabilities = ["deny"] }',
      );
      lister = await tokenWith('unicode-lister');
    });

    it('cannot list a directory a deny glob covers, with or without the trailing slash', async () => {
      for (const path of ['/v1/secret/private', '/v1/secret/private/']) {
        const reply = await as(lister, 'LIST', path);
        expectDenied(reply);
        expect(JSON.stringify(reply.body)).not.toContain('key');
      }
      const caps = await as(lister, 'POST', '/v1/sys/capabilities-self', { path: 'secret/private/' });
      expect(caps.status, JSON.stringify(caps.body)).toBe(200);
      expect(caps.body.data.capabilities).toEqual(['deny']);
      // The list grant still works where nothing denies.
      const open = await as(lister, 'LIST', '/v1/secret/public');
      expect(open.status, JSON.stringify(open.body)).toBe(200);
      expect(open.body.data.keys).toEqual(['readme']);
    });
  });

  describe('a policy writer: policies Vault refuses are refused with a 400 naming the problem', () => {
    it("refuses a JSON policy with surrogate escapes (Go's strconv.Unquote refuses them; Vault's policy write fails)", async () => {
      for (const text of [
        '{"path": {"secret/\\ud83d\\udd11": {"capabilities": ["read"]}}}',
        '{"path": {"secret/app/*": {"capabilities": ["update"], "denied_parameters": {"role": ["\\udd11admin"]}}}}',
      ]) {
        const reply = await root('PUT', '/v1/sys/policies/acl/unicode-surrogate', { policy: text });
        expect(reply.status, JSON.stringify(reply.body)).toBe(400);
        expect(errorOf(reply)).toMatch(/surrogate half/);
      }
      expect((await root('GET', '/v1/sys/policies/acl/unicode-surrogate')).status).toBe(404);
    });

    it('refuses parameter names with a * that is not the whole name (Vault would read them literally)', async () => {
      for (const [body, named] of [
        ['allowed_parameters = { "foo*" = [] }', 'parameter name "foo*" is refused'],
        ['denied_parameters = { "secret_*" = [] }', 'parameter name "secret_*" is refused'],
        ['required_parameters = ["x*"]', 'parameter name "x*" is refused'],
      ]) {
        const reply = await root('PUT', '/v1/sys/policies/acl/unicode-glob-name', {
          policy: `path "secret/app/*" {\n  capabilities = ["update"]\n  ${body}\n}`,
        });
        expect(reply.status, JSON.stringify(reply.body)).toBe(400);
        expect(errorOf(reply)).toContain(named);
      }
      expect((await root('GET', '/v1/sys/policies/acl/unicode-glob-name')).status).toBe(404);
    });

    it('reads an HCL surrogate escape as U+FFFD and a leading U+FEFF as part of the path, as hcl does: neither grants the path it resembles', async () => {
      await policy(
        'unicode-lookalike',
        'path "secret/\\ud83d\\udd11" { capabilities = ["read"] }\npath "\\ufeffsecret/private/*" { capabilities = ["read"] }',
      );
      const token = await tokenWith('unicode-lookalike');
      expectDenied(await as(token, 'GET', '/v1/secret/private/key'));
      const caps = await as(token, 'POST', '/v1/sys/capabilities-self', {
        paths: ['secret/\u{1F511}', 'secret/\ufffd\ufffd', 'secret/private/key'],
      });
      expect(caps.status, JSON.stringify(caps.body)).toBe(200);
      expect(caps.body.data['secret/\u{1F511}']).toEqual(['deny']);
      expect(caps.body.data['secret/\ufffd\ufffd']).toEqual(['read']);
      expect(caps.body.data['secret/private/key']).toEqual(['deny']);
    });
  });
});
