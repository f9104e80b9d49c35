/**
 * Attack class: a type confusion through Vault's weak field decoding (issue 38). Fields decode weakly, as Vault's
 * `sdk/framework/field_data.go` decodes them (`framework/vault-field-types.ts`): a boolean field takes `"t"`, `"1"`
 * and `1` as `true`, a string field takes `true` as `"1"`, a list field trims its elements, a key-value map takes a
 * `"k=v"` list and numbers as strings. Vault checks parameter constraints against the values as sent, so a value its
 * policy denies passes in another spelling and reaches the handler decoded to the very value denied.
 *
 * Attacker: a narrow token whose policy denies some values of the fields it may send (`denied_parameters`).
 * They try: each denied value in every spelling that decodes to it (bool as string or number, a string as a bool, a
 * list element with spaces, a map as a `"k=v"` list or with a number); an allowed value in a spelling Vault refuses.
 * They must never reach: a token, mount or audit device made with a denied value (the store shows none); nor more
 * than Vault allows with allowed values.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CallResult, type SecretsService, startSecretsInMemory } from '../support/secrets-harness.ts';

const expectDenied = (reply: CallResult, label: string) =>
  expect(reply, `${label}: ${JSON.stringify(reply.body)}`).toMatchObject({ status: 403 });

let h: SecretsService;
const root = (method: string, path: string, body?: unknown) =>
  h.call(method, path, { token: h.rootToken, ...(body === undefined ? {} : { body }) });
const as = (token: string, method: string, path: string, body?: unknown) =>
  h.call(method, path, { token, ...(body === undefined ? {} : { body }) });

async function tokenWith(name: string, text: string): Promise<string> {
  expect((await root('PUT', `/v1/sys/policies/acl/${name}`, { policy: text })).status).toBe(204);
  const reply = await root('POST', '/v1/auth/token/create', { policies: [name, 'reader'] });
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return reply.body.auth.client_token as string;
}

/** The tokens whose display name starts with `prefix`, as the token store holds them. */
async function tokensNamed(prefix: string): Promise<number> {
  const reply = await root('LIST', '/v1/auth/token/accessors');
  let found = 0;
  for (const accessor of reply.body.data.keys as string[]) {
    const looked = await root('POST', '/v1/auth/token/lookup-accessor', { accessor });
    if (String(looked.body.data.display_name).startsWith(`token-${prefix}`)) found++;
  }
  return found;
}

beforeAll(async () => {
  h = await startSecretsInMemory();
  expect(
    (await root('PUT', '/v1/sys/policies/acl/reader', { policy: 'path "secret/*" { capabilities = ["read"] }' }))
      .status,
  ).toBe(204);
});
afterAll(() => h?.close());

describe('attack: weak decoding against denied parameter values (issue 38)', () => {
  it('a denied boolean in every spelling a boolean field decodes to it', async () => {
    const token = await tokenWith(
      'no-renewable',
      'path "auth/token/create" { capabilities = ["update"]\n denied_parameters = { "renewable" = [true] } }',
    );
    for (const renewable of [true, 'true', 'True', 'TRUE', 't', 'T', '1', 1]) {
      const label = `renewable ${JSON.stringify(renewable)}`;
      expectDenied(
        await as(token, 'POST', '/v1/auth/token/create', { policies: ['reader'], display_name: 'bool', renewable }),
        label,
      );
    }
    expect(await tokensNamed('bool')).toBe(0);
    for (const renewable of [false, 'false', 'f', '0', 0, '']) {
      const reply = await as(token, 'POST', '/v1/auth/token/create', {
        policies: ['reader'],
        display_name: 'bool-ok',
        renewable,
      });
      expect(reply.status, `renewable ${JSON.stringify(renewable)}: ${JSON.stringify(reply.body)}`).toBe(200);
      expect(reply.body.auth.renewable).toBe(false);
    }
    expect(await tokensNamed('bool-ok')).toBe(6);
  });

  it('a denied string in the spellings a string field decodes to it (a bool, a number)', async () => {
    const token = await tokenWith(
      'no-one',
      'path "auth/token/create" { capabilities = ["update"]\n denied_parameters = { "display_name" = ["1", "42"] } }',
    );
    for (const display_name of ['1', true, '42', 42]) {
      expectDenied(
        await as(token, 'POST', '/v1/auth/token/create', { policies: ['reader'], display_name }),
        `display_name ${JSON.stringify(display_name)}`,
      );
    }
    expect(await tokensNamed('1')).toBe(0);
    expect(await tokensNamed('42')).toBe(0);
    const other = await as(token, 'POST', '/v1/auth/token/create', { policies: ['reader'], display_name: false });
    expect(other.status, JSON.stringify(other.body)).toBe(200);
    expect(await tokensNamed('0')).toBe(1);
  });

  it('a denied list element hidden by spaces, a bool or a number in a list field', async () => {
    await root('PUT', '/v1/sys/policies/acl/admin', { policy: 'path "*" { capabilities = ["read"] }' });
    await root('PUT', '/v1/sys/policies/acl/1', { policy: 'path "secret/one" { capabilities = ["read"] }' });
    const denyAdmin =
      'path "auth/token/create" { capabilities = ["update"]\n denied_parameters = { "policies" = ["admin", "1"] } }';
    expect((await root('PUT', '/v1/sys/policies/acl/no-admin', { policy: denyAdmin })).status).toBe(204);
    // The token holds both policies it is denied to hand out, so only the constraint stands in the way.
    const parent = await root('POST', '/v1/auth/token/create', { policies: ['no-admin', 'admin', '1', 'reader'] });
    const token = parent.body.auth.client_token as string;
    for (const policies of [
      'admin',
      ['admin'],
      [' admin '],
      ['reader', '\u00a0admin'],
      'reader, admin',
      [true],
      1,
      [1],
    ]) {
      expectDenied(
        await as(token, 'POST', '/v1/auth/token/create', { policies, display_name: 'list' }),
        `policies ${JSON.stringify(policies)}`,
      );
    }
    expect(await tokensNamed('list')).toBe(0);
  });

  it('a denied key-value map given as a "k=v" list or with a number', async () => {
    const token = await tokenWith(
      'no-v1-kv',
      'path "sys/mounts/*" { capabilities = ["create", "update"]\n denied_parameters = { "options" = [{ "version" = "1" }] } }',
    );
    const attempts: Array<[string, unknown]> = [
      ['map', { version: '1' }],
      ['number', { version: 1 }],
      ['bool', { version: true }],
      ['list', ['version=1']],
      ['string', 'version=1'],
      ['maps', [{ version: 1 }]],
    ];
    for (const [name, options] of attempts) {
      expectDenied(await as(token, 'POST', `/v1/sys/mounts/kv-${name}`, { type: 'kv', options }), `options ${name}`);
    }
    const mounts = await root('GET', '/v1/sys/mounts');
    expect(Object.keys(mounts.body.data).filter((path) => path.startsWith('kv-'))).toEqual([]);
    const allowed = await as(token, 'POST', '/v1/sys/mounts/kv-two', { type: 'kv', options: ['version=2'] });
    expect(allowed.status, JSON.stringify(allowed.body)).toBe(204);
    expect((await root('GET', '/v1/sys/mounts/kv-two')).body.data.options).toEqual({ version: '2' });
  });

  it('an allowed value is matched as sent, as Vault does: a spelling Vault refuses stays refused', async () => {
    const token = await tokenWith(
      'only-unrenewable',
      'path "auth/token/create" { capabilities = ["update"]\n allowed_parameters = { "renewable" = [false], "policies" = [] } }',
    );
    for (const renewable of ['false', 0, 'f']) {
      expectDenied(
        await as(token, 'POST', '/v1/auth/token/create', { policies: ['reader'], renewable }),
        `renewable ${JSON.stringify(renewable)}`,
      );
    }
    const reply = await as(token, 'POST', '/v1/auth/token/create', { policies: ['reader'], renewable: false });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  });
});
