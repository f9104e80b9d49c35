import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCore } from '../../packages/core/src/composition/secrets-core.ts';
import { createSecretsApp } from '../../packages/core/src/http/secrets-app.ts';
import { silentLogger } from '../../packages/core/src/lib/log.ts';
import { allSecretsFamilies, backendsOf } from '../../packages/core/src/secrets/families.ts';
import { fileKeySource } from '../../packages/core/src/storage/keyring.ts';
import { type CallResult, type SecretsService, startSecretsInMemory } from '../support/secrets-harness.ts';

let h: SecretsService;
const keyDir = mkdtempSync(path.join(tmpdir(), 'keyhaven-policies-'));
const keySource = fileKeySource(path.join(keyDir, 'keyring.key'));

beforeAll(async () => {
  h = await startSecretsInMemory({ keySource });
  for (const [secret, value] of [
    ['app/db', { password: 'db-pw' }],
    ['app/config', { level: 'info' }],
    ['app/private/key', { key: 'k' }],
    ['other/thing', { x: '1' }],
    ['shared/team-a/creds', { user: 'a' }],
    ['shared/team-a/notes', { n: '1' }],
    ['shared/x/y/creds', { user: 'deep' }],
    ['precedence/app/config', { c: '1' }],
    ['precedence/app/other', { o: '1' }],
  ] as const) {
    expect((await h.call('POST', `/v1/secret/${secret}`, { token: h.rootToken, body: value })).status).toBe(204);
  }
});
afterAll(async () => {
  await h.close();
  rmSync(keyDir, { recursive: true, force: true });
});

const putPolicy = (name: string, body: Record<string, unknown>, token = h.rootToken) =>
  h.call('PUT', `/v1/sys/policies/acl/${name}`, { token, body });

async function definePolicy(name: string, policy: string): Promise<void> {
  const reply = await putPolicy(name, { policy });
  expect(reply.status, JSON.stringify(reply.body)).toBe(204);
}

async function tokenWith(...policies: string[]): Promise<string> {
  const reply = await h.call('POST', '/v1/auth/token/create', { token: h.rootToken, body: { policies } });
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return reply.body.auth.client_token as string;
}

const expectDenied = (reply: CallResult) =>
  expect(reply).toEqual({ status: 403, body: { errors: ['permission denied'] } });
const expectBadRequest = (reply: CallResult, message: string | RegExp) => {
  expect(reply.status, JSON.stringify(reply.body)).toBe(400);
  expect(reply.body.errors.join(' ')).toMatch(message);
};

describe('sys/policies/acl', () => {
  const hcl = 'path "secret/app/*" {\n  capabilities = ["read", "list"]\n}\n';

  it('writes, reads, lists and deletes a policy', async () => {
    expect(await putPolicy('app-reader', { policy: hcl })).toEqual({ status: 204, body: undefined });
    const read = await h.call('GET', '/v1/sys/policies/acl/app-reader', { token: h.rootToken });
    expect(read.status).toBe(200);
    expect(read.body.data).toEqual({ name: 'app-reader', policy: hcl });

    for (const list of [
      await h.call('LIST', '/v1/sys/policies/acl', { token: h.rootToken }),
      await h.call('GET', '/v1/sys/policies/acl?list=true', { token: h.rootToken }),
    ]) {
      expect(list.status).toBe(200);
      expect(list.body.data.keys).toEqual(expect.arrayContaining(['app-reader', 'default', 'root']));
    }

    expect((await h.call('DELETE', '/v1/sys/policies/acl/app-reader', { token: h.rootToken })).status).toBe(204);
    expect(await h.call('GET', '/v1/sys/policies/acl/app-reader', { token: h.rootToken })).toEqual({
      status: 404,
      body: { errors: [] },
    });
    expect((await h.call('LIST', '/v1/sys/policies/acl', { token: h.rootToken })).body.data.keys).not.toContain(
      'app-reader',
    );
  });

  it('accepts a JSON document', async () => {
    const json = JSON.stringify({ path: { 'secret/app/*': { capabilities: ['read'] } } });
    await definePolicy('json-reader', json);
    expect((await h.call('GET', '/v1/sys/policies/acl/json-reader', { token: h.rootToken })).body.data.policy).toBe(
      json,
    );
    const token = await tokenWith('json-reader');
    expect((await h.call('GET', '/v1/secret/app/db', { token })).body.data).toEqual({ password: 'db-pw' });
    expectDenied(await h.call('GET', '/v1/secret/other/thing', { token }));
  });

  it('accepts a base64-encoded document and keeps it decoded', async () => {
    await definePolicy('b64-reader', Buffer.from(hcl).toString('base64'));
    expect((await h.call('GET', '/v1/sys/policies/acl/b64-reader', { token: h.rootToken })).body.data.policy).toBe(hcl);
    const token = await tokenWith('b64-reader');
    expect((await h.call('GET', '/v1/secret/app/db', { token })).status).toBe(200);
  });

  it('treats names case-insensitively, as Vault does', async () => {
    await definePolicy('Mixed-Case', hcl);
    expect((await h.call('GET', '/v1/sys/policies/acl/mixed-case', { token: h.rootToken })).body.data.name).toBe(
      'mixed-case',
    );
    const token = await tokenWith('MIXED-case');
    expect((await h.call('GET', '/v1/secret/app/db', { token })).status).toBe(200);
  });

  it('does not let root be edited or deleted, nor default be deleted', async () => {
    expectBadRequest(await putPolicy('root', { policy: hcl }), 'cannot update the root policy');
    expectBadRequest(
      await h.call('DELETE', '/v1/sys/policies/acl/root', { token: h.rootToken }),
      'cannot delete the root policy',
    );
    expectBadRequest(
      await h.call('DELETE', '/v1/sys/policies/acl/default', { token: h.rootToken }),
      'cannot delete the default policy',
    );
    const builtIn = await h.call('GET', '/v1/sys/policies/acl/default', { token: h.rootToken });
    expect(builtIn.status).toBe(200);
    expect(builtIn.body.data.policy).toContain('path "auth/token/lookup-self"');
  });

  it('lets default be edited, and every token feels it at once', async () => {
    const token = await tokenWith('json-reader');
    expectDenied(await h.call('GET', '/v1/secret/other/thing', { token }));
    const original = (await h.call('GET', '/v1/sys/policies/acl/default', { token: h.rootToken })).body.data
      .policy as string;
    try {
      await definePolicy('default', `${original}\npath "secret/other/*" { capabilities = ["read"] }\n`);
      expect((await h.call('GET', '/v1/secret/other/thing', { token })).status).toBe(200);
    } finally {
      await definePolicy('default', original);
    }
    expectDenied(await h.call('GET', '/v1/secret/other/thing', { token }));
    expect((await h.call('GET', '/v1/auth/token/lookup-self', { token })).status).toBe(200);
  });

  it.each([
    ['an unknown capability', 'path "secret/*" { capabilities = ["raed"] }', 'invalid capability "raed"'],
    ['broken HCL', 'path "secret/*" { capabilities = ["read"', 'failed to parse policy'],
    ['broken JSON', '{"path": {"secret/*": {"capabilities": ["read", null]}}}', 'failed to parse policy'],
    [
      'an attribute given twice',
      'path "secret/*" {\n capabilities = ["deny"]\n capabilities = ["read"]\n}',
      'At 3:2: key "capabilities" is given twice (first at 2:2)',
    ],
    [
      'a parameter named as x and "x"',
      'path "secret/*" {\n capabilities = ["update"]\n denied_parameters = { x = [] "x" = ["b"] }\n}',
      'key "x" is given twice',
    ],
    [
      'a path given twice',
      'path "secret/*" { capabilities = ["deny"] }\npath "secret/*" { capabilities = ["read"] }',
      'path "secret/*" is given twice',
    ],
    [
      'a JSON member given twice',
      '{"path": {"secret/*": {"capabilities": ["deny"], "capabilities": ["read"]}}}',
      'key "capabilities" is given twice',
    ],
    ['a path labelled true', 'path true { capabilities = ["read"] }', 'failed to parse policy'],
    [
      'a response-wrapping TTL (no response wrapping here)',
      'path "secret/*" {\n capabilities = ["read"]\n max_wrapping_ttl = "90s"\n}',
      'unsupported key "max_wrapping_ttl"',
    ],
    [
      'parameter values that are not a list',
      'path "secret/*" {\n capabilities = ["update"]\n denied_parameters = { "x" = "y" }\n}',
      'denied_parameters.x: expected a list',
    ],
  ])('refuses %s with a 400 naming the problem, and keeps nothing', async (_what, policy, message) => {
    expectBadRequest(await putPolicy('broken', { policy }), message);
    expect((await h.call('GET', '/v1/sys/policies/acl/broken', { token: h.rootToken })).status).toBe(404);
  });

  it('means what Vault means by grammar ours used to refuse: literal * and + inside segments, a leading /, JSON booleans', async () => {
    await definePolicy(
      'vault-grammar',
      `# comments, a * and a + inside segments, a leading slash
      path "/secret/odd/*/db" { capabilities = ["read"] }
      path "secret/odd/team+" {
        comment = "a + inside a segment is a plain character"
        capabilities = ["read"]
      },
    `,
    );
    await definePolicy(
      'json-flags',
      '{"path": {"secret/flags": {"capabilities": ["create", "update"], "denied_parameters": {"flag": [true]}}}}',
    );
    const caller = await tokenWith('vault-grammar', 'json-flags');
    const caps = await h.call('POST', '/v1/sys/capabilities-self', {
      token: caller,
      body: { paths: ['secret/odd/*/db', 'secret/odd/x/db', 'secret/odd/team+', 'secret/odd/teamA'] },
    });
    expect(caps.body.data).toEqual({
      'secret/odd/*/db': ['read'],
      'secret/odd/x/db': ['deny'],
      'secret/odd/team+': ['read'],
      'secret/odd/teamA': ['deny'],
    });
    // hcl's JSON parser drops the boolean: an empty list, so every value of `flag` is denied.
    expectDenied(await h.call('POST', '/v1/secret/flags', { token: caller, body: { flag: 'anything' } }));
    expect((await h.call('POST', '/v1/secret/flags', { token: caller, body: { other: 'x' } })).status).toBe(204);
  });

  it('refuses a write without a policy, or with a bad name', async () => {
    expectBadRequest(await putPolicy('empty', {}), '"policy" is required');
    expectBadRequest(await putPolicy('empty', { policy: '   ' }), '"policy" is required');
    expectBadRequest(await putPolicy('bad%20name', { policy: hcl }), 'invalid policy name');
  });

  it('is itself guarded by policy', async () => {
    const token = await tokenWith('json-reader');
    expectDenied(await putPolicy('sneaky', { policy: 'path "*" { capabilities = ["sudo", "read"] }' }, token));
    expectDenied(await h.call('LIST', '/v1/sys/policies/acl', { token }));
    await definePolicy('policy-reader', 'path "sys/policies/acl/*" { capabilities = ["read"] }');
    const reader = await tokenWith('policy-reader');
    expect((await h.call('GET', '/v1/sys/policies/acl/json-reader', { token: reader })).status).toBe(200);
    expectDenied(await h.call('DELETE', '/v1/sys/policies/acl/json-reader', { token: reader }));
  });
});

describe('what a policy lets a token do', () => {
  let token: string;
  beforeAll(async () => {
    await definePolicy(
      'app',
      `
      path "secret/app/*" { capabilities = ["read", "list"] }
      path "secret/app/config" { capabilities = ["read", "update"] }
      path "secret/app/private/*" { capabilities = ["deny"] }
      path "secret/shared/+/creds" { capabilities = ["read"] }
      path "secret/new/*" { capabilities = ["create"] }
    `,
    );
    token = await tokenWith('app');
  });

  it('reads and lists allowed paths', async () => {
    expect((await h.call('GET', '/v1/secret/app/db', { token })).body.data).toEqual({ password: 'db-pw' });
    for (const list of [
      await h.call('LIST', '/v1/secret/app', { token }),
      await h.call('LIST', '/v1/secret/app/', { token }),
      await h.call('GET', '/v1/secret/app?list=true', { token }),
    ]) {
      expect(list.status).toBe(200);
      expect(list.body.data.keys).toEqual(expect.arrayContaining(['config', 'db', 'private/']));
    }
  });

  it('gets 403 elsewhere, and for operations the rule does not grant', async () => {
    expectDenied(await h.call('GET', '/v1/secret/other/thing', { token }));
    expectDenied(await h.call('LIST', '/v1/secret/other', { token }));
    expectDenied(await h.call('LIST', '/v1/secret', { token }));
    expectDenied(await h.call('POST', '/v1/secret/app/db', { token, body: { password: 'stolen' } }));
    expectDenied(await h.call('DELETE', '/v1/secret/app/db', { token }));
    expectDenied(await h.call('GET', '/v1/sys/mounts', { token }));
    expect((await h.call('GET', '/v1/secret/app/db', { token: h.rootToken })).body.data).toEqual({ password: 'db-pw' });
  });

  it('tells create from update by whether the secret exists', async () => {
    expect((await h.call('POST', '/v1/secret/app/config', { token, body: { level: 'debug' } })).status).toBe(204);
    expectDenied(await h.call('POST', '/v1/secret/app/brand-new', { token, body: { a: '1' } }));
    expect((await h.call('POST', '/v1/secret/new/one', { token, body: { a: '1' } })).status).toBe(204);
    expectDenied(await h.call('POST', '/v1/secret/new/one', { token, body: { a: '2' } }));
    expect((await h.call('GET', '/v1/secret/new/one', { token: h.rootToken })).body.data).toEqual({ a: '1' });
  });

  it('matches + against exactly one segment', async () => {
    expect((await h.call('GET', '/v1/secret/shared/team-a/creds', { token })).body.data).toEqual({ user: 'a' });
    expectDenied(await h.call('GET', '/v1/secret/shared/team-a/notes', { token }));
    expectDenied(await h.call('GET', '/v1/secret/shared/x/y/creds', { token }));
  });

  it('lets a deny on a more specific path win over a broader grant', async () => {
    expectDenied(await h.call('GET', '/v1/secret/app/private/key', { token }));
    // As current Vault (vault/acl.go resolveACLPermsForListOp; OpenBao's GHSA-xp3c-3jw3-4vcr): a list of
    // `secret/app/private/` weighs `secret/app/*` (matching `secret/app/private`) against `secret/app/private/*`
    // (matching `secret/app/private/`), and the more precise deny wins: the listing is denied too.
    expectDenied(await h.call('LIST', '/v1/secret/app/private', { token }));
  });

  it('lets deny win when two policies name the same path', async () => {
    await definePolicy('app-lockdown', 'path "secret/app/*" { capabilities = ["deny"] }');
    const both = await tokenWith('app', 'app-lockdown');
    expectDenied(await h.call('GET', '/v1/secret/app/db', { token: both }));
    // The exact rule for secret/app/config is more specific than the denied glob.
    expect((await h.call('GET', '/v1/secret/app/config', { token: both })).status).toBe(200);
  });

  it('unions what two policies grant on the same path', async () => {
    await definePolicy('app-writer', 'path "secret/app/*" { capabilities = ["create", "update"] }');
    const both = await tokenWith('app', 'app-writer');
    expect((await h.call('POST', '/v1/secret/app/db', { token: both, body: { password: 'db-pw' } })).status).toBe(204);
    expect((await h.call('GET', '/v1/secret/app/db', { token: both })).status).toBe(200);
  });

  it('picks the most specific of overlapping wildcards, as Vault orders them', async () => {
    await definePolicy(
      'precedence',
      `
      path "secret/precedence/*" { capabilities = ["read"] }
      path "secret/precedence/+/config" { capabilities = ["deny"] }
    `,
    );
    const precedence = await tokenWith('precedence');
    expect((await h.call('GET', '/v1/secret/precedence/app/other', { token: precedence })).status).toBe(200);
    expectDenied(await h.call('GET', '/v1/secret/precedence/app/config', { token: precedence }));
  });
});

describe('parameter constraints', () => {
  const constrained = `path "secret/params/*" {
  capabilities = ["create", "update"]
  allowed_parameters = {
    "env"   = ["dev-*", "staging"]
    "owner" = []
  }
  denied_parameters = { "owner" = ["root"] }
  required_parameters = ["env"]
}
`;
  let token: string;
  const write = (secret: string, body: Record<string, unknown>, as = token) =>
    h.call('POST', `/v1/secret/params/${secret}`, { token: as, body });
  const stored = async (secret: string) => {
    const reply = await h.call('GET', `/v1/secret/params/${secret}`, { token: h.rootToken });
    return reply.status === 200 ? reply.body.data : reply.status;
  };

  beforeAll(async () => {
    await definePolicy('params', constrained);
    token = await tokenWith('params');
  });

  it('are kept in the policy text exactly as written', async () => {
    expect((await h.call('GET', '/v1/sys/policies/acl/params', { token: h.rootToken })).body.data).toEqual({
      name: 'params',
      policy: constrained,
    });
  });

  it('let a create and an update that respect them through, and store the value', async () => {
    expect((await write('app', { env: 'dev-1', owner: 'ann' })).status).toBe(204);
    expect(await stored('app')).toEqual({ env: 'dev-1', owner: 'ann' });
    expect((await write('app', { env: 'staging' })).status).toBe(204);
    expect(await stored('app')).toEqual({ env: 'staging' });
  });

  it.each([
    ['a value allowed_parameters does not list', { env: 'prod' }],
    ['a name allowed_parameters does not list', { env: 'dev-1', extra: 'x' }],
    ['a value denied_parameters lists', { env: 'dev-1', owner: 'root' }],
    ['a missing required parameter', { owner: 'ann' }],
    ['a list with one element not allowed', { env: ['dev-1', 'prod'] }],
  ])('refuse %s with 403, on create and on update, changing nothing', async (_what, body) => {
    expect((await write('kept', { env: 'dev-kept' })).status).toBe(204);
    expectDenied(await write('kept', body));
    expect(await stored('kept')).toEqual({ env: 'dev-kept' });
    expectDenied(await write('never', body));
    expect(await stored('never')).toBe(404);
  });

  it('merge across policies naming the same path: allowed values are unioned', async () => {
    await definePolicy(
      'params-prod',
      'path "secret/params/*" {\n  capabilities = ["update"]\n  allowed_parameters = { "env" = ["prod"] }\n}\n',
    );
    expectDenied(await write('app', { env: 'prod' }));
    const both = await tokenWith('params', 'params-prod');
    expect((await write('app', { env: 'prod' }, both)).status).toBe(204);
    expect((await write('app', { env: 'staging', owner: 'bob' }, both)).status).toBe(204);
    expectDenied(await write('app', { env: 'qa' }, both));
    expect(await stored('app')).toEqual({ env: 'staging', owner: 'bob' });
  });

  it('work in a JSON policy too', async () => {
    const json = JSON.stringify({
      path: { 'secret/params/*': { capabilities: ['create', 'update'], denied_parameters: { '*': [] } } },
    });
    await definePolicy('params-json', json);
    expect((await h.call('GET', '/v1/sys/policies/acl/params-json', { token: h.rootToken })).body.data.policy).toBe(
      json,
    );
    const jsonToken = await tokenWith('params-json');
    expectDenied(await write('json', { anything: '1' }, jsonToken));
    expect(await stored('json')).toBe(404);
  });

  it("apply to a read's query parameters as well, as in Vault", async () => {
    await definePolicy(
      'params-read',
      'path "secret/params/*" {\n  capabilities = ["read"]\n  required_parameters = ["reason"]\n}\n',
    );
    const reader = await tokenWith('params-read');
    expectDenied(await h.call('GET', '/v1/secret/params/app', { token: reader }));
    const read = await h.call('GET', '/v1/secret/params/app?reason=audit', { token: reader });
    expect(read.status).toBe(200);
    expect(read.body.data).toEqual({ env: 'staging', owner: 'bob' });
  });
});

describe('sudo-only paths', () => {
  it('need sudo on top of the operation capability', async () => {
    const leased = await h.call('POST', '/v1/secret/leased/item', { token: h.rootToken, body: { v: '1', ttl: '1h' } });
    expect(leased.status).toBe(204);
    expect((await h.call('GET', '/v1/secret/leased/item', { token: h.rootToken })).body.lease_id).toMatch(
      /^secret\/leased\/item\//,
    );

    await definePolicy('lease-lister', 'path "sys/leases/lookup/*" { capabilities = ["list"] }');
    await definePolicy('lease-sudo', 'path "sys/leases/lookup/*" { capabilities = ["list", "sudo"] }');
    expectDenied(
      await h.call('LIST', '/v1/sys/leases/lookup/secret/leased/item', { token: await tokenWith('lease-lister') }),
    );
    const listed = await h.call('LIST', '/v1/sys/leases/lookup/secret/leased/item', {
      token: await tokenWith('lease-sudo'),
    });
    expect(listed.status).toBe(200);
    expect(listed.body.data.keys).toHaveLength(1);
  });
});

describe('capability look-ups', () => {
  let token: string;
  let accessor: string;
  beforeAll(async () => {
    await definePolicy(
      'caps',
      `
      path "secret/app/*" { capabilities = ["read", "list"] }
      path "secret/app/config" { capabilities = ["read", "update", "sudo"] }
      path "secret/app/private/*" { capabilities = ["deny"] }
      path "secret/shared/+/creds" { capabilities = ["read"] }
    `,
    );
    const reply = await h.call('POST', '/v1/auth/token/create', { token: h.rootToken, body: { policies: ['caps'] } });
    token = reply.body.auth.client_token;
    accessor = reply.body.auth.accessor;
  });

  it('sys/capabilities-self answers for the caller, one path or several', async () => {
    const one = await h.call('POST', '/v1/sys/capabilities-self', { token, body: { paths: ['secret/app/db'] } });
    expect(one.status).toBe(200);
    expect(one.body.data).toEqual({ 'secret/app/db': ['list', 'read'], capabilities: ['list', 'read'] });

    const several = await h.call('POST', '/v1/sys/capabilities-self', {
      token,
      body: { paths: ['secret/app/config', 'secret/app/private/key', 'secret/shared/b/creds', 'sys/mounts'] },
    });
    expect(several.body.data).toEqual({
      'secret/app/config': ['read', 'sudo', 'update'],
      'secret/app/private/key': ['deny'],
      'secret/shared/b/creds': ['read'],
      'sys/mounts': ['deny'],
    });
    // The deprecated single `path` field still works.
    expect(
      (await h.call('POST', '/v1/sys/capabilities-self', { token, body: { path: 'secret/app/db' } })).body.data
        .capabilities,
    ).toEqual(['list', 'read']);
    expect(
      (await h.call('POST', '/v1/sys/capabilities-self', { token: h.rootToken, body: { paths: ['anything'] } })).body
        .data.capabilities,
    ).toEqual(['root']);
    expectBadRequest(await h.call('POST', '/v1/sys/capabilities-self', { token, body: {} }), '"paths" is required');
  });

  it('sys/capabilities and sys/capabilities-accessor answer for another token', async () => {
    const byToken = await h.call('POST', '/v1/sys/capabilities', {
      token: h.rootToken,
      body: { token, paths: ['secret/app/db'] },
    });
    expect(byToken.status).toBe(200);
    expect(byToken.body.data.capabilities).toEqual(['list', 'read']);
    const byAccessor = await h.call('POST', '/v1/sys/capabilities-accessor', {
      token: h.rootToken,
      body: { accessor, paths: ['secret/app/config'] },
    });
    expect(byAccessor.status).toBe(200);
    expect(byAccessor.body.data.capabilities).toEqual(['read', 'sudo', 'update']);
    expectBadRequest(
      await h.call('POST', '/v1/sys/capabilities', { token: h.rootToken, body: { token: 'hvs.nope', paths: ['a'] } }),
      'invalid token',
    );
    expectBadRequest(
      await h.call('POST', '/v1/sys/capabilities-accessor', {
        token: h.rootToken,
        body: { accessor: 'nope', paths: ['a'] },
      }),
      'invalid accessor',
    );
    // Asking about other tokens is not in the default policy.
    expectDenied(await h.call('POST', '/v1/sys/capabilities', { token, body: { token: h.rootToken, paths: ['a'] } }));
  });
});

describe('policy changes', () => {
  it('take effect at once in the process that made them', async () => {
    await definePolicy('changing', 'path "secret/app/*" { capabilities = ["read"] }');
    const token = await tokenWith('changing');
    expect((await h.call('GET', '/v1/secret/app/db', { token })).status).toBe(200);
    await definePolicy('changing', 'path "secret/other/*" { capabilities = ["read"] }');
    expectDenied(await h.call('GET', '/v1/secret/app/db', { token }));
    expect((await h.call('GET', '/v1/secret/other/thing', { token })).status).toBe(200);
    expect((await h.call('DELETE', '/v1/sys/policies/acl/changing', { token: h.rootToken })).status).toBe(204);
    expectDenied(await h.call('GET', '/v1/secret/other/thing', { token }));
  });

  it('reach another process within its cache time (5 s)', async () => {
    // Another process on the same table: a second core over the same store.
    const other = await createCore({
      store: h.core.store,
      keySource,
      backends: backendsOf(allSecretsFamilies),
      clock: h.clock,
      log: silentLogger,
    });
    const otherApp = createSecretsApp({ core: async () => other, clientIp: () => '127.0.0.1' });
    const readThere = async (token: string) =>
      (await otherApp.request('/v1/secret/app/db', { headers: { 'X-Secrets-Token': token } })).status;

    await definePolicy('remote', 'path "secret/app/*" { capabilities = ["read"] }');
    const token = await tokenWith('remote');
    expect(await readThere(token)).toBe(200);
    await definePolicy('remote', 'path "secret/other/*" { capabilities = ["read"] }');
    expectDenied(await h.call('GET', '/v1/secret/app/db', { token }));
    h.clock.advance(6);
    expect(await readThere(token)).toBe(403);
  });
});
