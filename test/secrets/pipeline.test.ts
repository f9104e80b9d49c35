import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { type Backend, path } from '../../packages/core/src/secrets/framework/backend.ts';
import { notFound } from '../../packages/core/src/secrets/framework/errors.ts';
import { bool, count, duration, stringList } from '../../packages/core/src/secrets/framework/fields.ts';
import { type SecretsService, startSecretsInMemory } from '../support/secrets-harness.ts';

/**
 * The request pipeline every backend shares, seen from a client: methods, Vault's envelope, durations,
 * error statuses and messages. A small fixture backend (paths as data, like every engine) isolates the
 * pipeline's own behaviour from any real engine's; the real kv, sys and token backends show it end to end.
 */

const roleFields = z.object({
  name: z.string(),
  mode: z.enum(['fast', 'safe']).default('safe'),
  ttl: duration.default(0),
  max_ttl: duration.optional(),
  uses: count.default(0),
  tags: stringList.optional(),
  enabled: bool.default(true),
});

/** Every handler call, so tests can see which operation the pipeline chose. */
const calls: string[] = [];
const revoked: string[] = [];

const fixtureBackend: Backend = {
  type: 'fixture',
  kind: 'secret',
  paths: [
    path({
      pattern: 'role',
      fields: z.object({}),
      operations: {
        list: async ({ storage }) => ({ data: { keys: await storage.list('role/') } }),
      },
    }),
    path({
      pattern: 'role/:name',
      fields: roleFields,
      exists: async ({ storage, data }) => (await storage.get(`role/${data.name}`)) !== undefined,
      operations: {
        read: async ({ storage, data }) => {
          const role = await storage.get(`role/${data.name}`);
          return role ? { data: role } : undefined;
        },
        create: async ({ storage, data }) => {
          calls.push(`create ${data.name}`);
          await storage.put(`role/${data.name}`, { ...data, written_by: 'create' });
          return undefined;
        },
        update: async ({ storage, data }) => {
          calls.push(`update ${data.name}`);
          await storage.put(`role/${data.name}`, { ...data, written_by: 'update' });
          return undefined;
        },
        delete: async ({ storage, data }) => {
          await storage.delete(`role/${data.name}`);
          return undefined;
        },
      },
    }),
    path({
      pattern: 'creds/:name',
      fields: z.object({ name: z.string() }),
      operations: {
        read: async ({ storage, data }) => {
          const role = await storage.get<{ ttl: number; max_ttl?: number }>(`role/${data.name}`);
          if (!role) throw notFound(`no role named "${data.name}"`);
          return {
            data: { username: `user-${data.name}` },
            secret: {
              type: 'cred',
              ttl: role.ttl,
              ...(role.max_ttl ? { maxTtl: role.max_ttl } : {}),
              internal: { name: data.name },
            },
          };
        },
      },
    }),
    path({
      pattern: 'read-only',
      fields: z.object({}),
      operations: { read: async () => ({ data: { ok: true } }) },
    }),
    path({
      pattern: 'warn',
      fields: z.object({ value: z.string().optional() }),
      operations: { update: async () => ({ warnings: ['handler warning'] }) },
    }),
  ],
  leases: {
    cred: {
      revoke: async ({ internal }) => {
        revoked.push(String(internal.name));
      },
    },
  },
};

describe('request pipeline', () => {
  let h: SecretsService;
  let root: string;
  const asRoot = (method: string, url: string, body?: unknown) => h.call(method, url, { token: root, body });

  beforeAll(async () => {
    h = await startSecretsInMemory({ extraBackends: [fixtureBackend] });
    root = h.rootToken;
    expect((await asRoot('POST', '/v1/sys/mounts/fx', { type: 'fixture' })).status).toBe(204);
  });
  afterAll(() => h.close());

  describe('methods', () => {
    it('GET reads, POST creates, PUT updates, DELETE deletes (by the existence check)', async () => {
      expect((await asRoot('POST', '/v1/fx/role/web', { mode: 'fast' })).status).toBe(204);
      expect((await asRoot('PUT', '/v1/fx/role/web', { mode: 'safe' })).status).toBe(204);
      expect((await asRoot('PUT', '/v1/fx/role/api', {})).status).toBe(204);
      expect(calls).toEqual(['create web', 'update web', 'create api']);

      const read = await asRoot('GET', '/v1/fx/role/web');
      expect(read.status).toBe(200);
      expect(read.body.data).toMatchObject({
        name: 'web',
        mode: 'safe',
        written_by: 'update',
        enabled: true,
        ttl: 0,
        uses: 0,
      });

      expect((await asRoot('DELETE', '/v1/fx/role/api')).status).toBe(204);
      const gone = await asRoot('GET', '/v1/fx/role/api');
      expect(gone).toEqual({ status: 404, body: { errors: [] } });
    });

    it('LIST and GET ?list=true list, with or without a trailing slash', async () => {
      await asRoot('POST', '/v1/fx/role/zeta', {});
      for (const [method, url] of [
        ['LIST', '/v1/fx/role'],
        ['LIST', '/v1/fx/role/'],
        ['GET', '/v1/fx/role?list=true'],
        ['GET', '/v1/fx/role/?list=true'],
        ['list', '/v1/fx/role'],
      ] as const) {
        const listed = await asRoot(method, url);
        expect(listed.status, `${method} ${url}`).toBe(200);
        expect(listed.body.data, `${method} ${url}`).toEqual({ keys: ['web', 'zeta'] });
      }
      // `list=false` is a plain read, which this path does not support.
      expect((await asRoot('GET', '/v1/fx/role?list=false')).status).toBe(405);
    });

    it("reads `list` as Go's strconv.ParseBool does, as Vault does (hvac sends True, node-vault 1)", async () => {
      for (const value of ['1', 't', 'T', 'TRUE', 'true', 'True']) {
        const listed = await asRoot('GET', `/v1/fx/role?list=${value}`);
        expect(listed.status, value).toBe(200);
        expect(listed.body.data, value).toEqual({ keys: ['web', 'zeta'] });
      }
      for (const value of ['0', 'f', 'F', 'FALSE', 'false', 'False', '']) {
        // A read, which this path does not support; on a path that reads, the read it is.
        expect((await asRoot('GET', `/v1/fx/role?list=${value}`)).status, value).toBe(405);
        expect((await asRoot('GET', `/v1/fx/role/web?list=${value}`)).body.data, value).toMatchObject({ name: 'web' });
      }
      for (const value of ['yes', 'no', 'tRUE', 'on', '2', ' true', 'true ']) {
        const refused = await asRoot('GET', `/v1/fx/role?list=${encodeURIComponent(value)}`);
        expect(refused.status, value).toBe(400);
        expect(refused.body.errors[0], value).toContain('"list"');
        expect(refused.body.errors[0], value).toContain(JSON.stringify(value));
      }
      // Only a GET reads it: a write's query string is not a field.
      expect((await asRoot('POST', '/v1/fx/role/listy?list=maybe', { mode: 'fast' })).status).toBe(204);
    });

    it('kv: nested keys list as folders, GET ?list=true on a folder, DELETE then 404', async () => {
      await asRoot('POST', '/v1/secret/app/db', { password: 'pw' });
      await asRoot('POST', '/v1/secret/app/cache/primary', { password: 'pw' });
      await asRoot('POST', '/v1/secret/top', { value: 1 });
      expect((await asRoot('LIST', '/v1/secret/app')).body.data).toEqual({ keys: ['cache/', 'db'] });
      expect((await asRoot('GET', '/v1/secret/app/?list=true')).body.data).toEqual({ keys: ['cache/', 'db'] });
      expect((await asRoot('LIST', '/v1/secret')).body.data.keys).toEqual(expect.arrayContaining(['app/', 'top']));
      expect((await asRoot('DELETE', '/v1/secret/top')).status).toBe(204);
      expect((await asRoot('GET', '/v1/secret/top')).status).toBe(404);
    });

    it('HEAD is a read without a body', async () => {
      expect((await h.call('HEAD', '/v1/sys/health')).status).toBe(200);
      expect((await asRoot('HEAD', '/v1/secret/app/db')).status).toBe(200);
      expect((await asRoot('HEAD', '/v1/secret/app/none')).status).toBe(404);
      expect((await h.call('HEAD', '/v1/secret/app/db')).status).toBe(403);
    });

    it('an unsupported method is a 405', async () => {
      for (const method of ['PATCH', 'OPTIONS', 'FOO']) {
        const reply = await asRoot(method, '/v1/secret/app/db');
        expect(reply.status, method).toBe(405);
        expect(reply.body.errors[0]).toContain(method);
      }
    });
  });

  describe('the envelope', () => {
    it('a read carries every Vault field', async () => {
      const reply = await asRoot('GET', '/v1/secret/app/db');
      expect(reply.status).toBe(200);
      expect(reply.body).toEqual({
        request_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        lease_id: '',
        renewable: false,
        lease_duration: 0,
        data: { password: 'pw' },
        wrap_info: null,
        warnings: null,
        auth: null,
        mount_type: 'kv',
      });
      const again = await asRoot('GET', '/v1/secret/app/db');
      expect(again.body.request_id).not.toBe(reply.body.request_id);
    });

    it('a leased secret carries its lease; the lease renews and revokes through the backend hooks', async () => {
      await asRoot('POST', '/v1/fx/role/leased', { ttl: '1h', max_ttl: '2h' });
      const reply = await asRoot('GET', '/v1/fx/creds/leased');
      expect(reply.status).toBe(200);
      expect(reply.body).toMatchObject({
        lease_id: expect.stringMatching(/^fx\/creds\/leased\/\w+$/),
        renewable: true,
        lease_duration: 3600,
        data: { username: 'user-leased' },
        auth: null,
      });
      const leaseId = reply.body.lease_id;
      const renewed = await asRoot('PUT', '/v1/sys/leases/renew', { lease_id: leaseId, increment: '90m' });
      expect(renewed.status).toBe(200);
      expect(renewed.body).toMatchObject({ lease_id: leaseId, lease_duration: 5400, renewable: true });
      const capped = await asRoot('PUT', '/v1/sys/leases/renew', { lease_id: leaseId, increment: 3 * 3600 });
      expect(capped.body.lease_duration).toBe(7200);
      expect(capped.body.warnings).toEqual([expect.stringContaining('capped')]);

      expect((await asRoot('PUT', '/v1/sys/leases/revoke', { lease_id: leaseId })).status).toBe(204);
      expect(revoked).toEqual(['leased']);
      expect((await asRoot('PUT', '/v1/sys/leases/lookup', { lease_id: leaseId })).status).toBe(404);
    });

    it('a new token is shown in auth', async () => {
      const reply = await asRoot('POST', '/v1/auth/token/create', { policies: ['default'], ttl: '1h' });
      expect(reply.status).toBe(200);
      expect(reply.body).toMatchObject({ lease_id: '', data: null, wrap_info: null, warnings: null });
      expect(reply.body.auth).toMatchObject({
        client_token: expect.stringMatching(/^hvs\./),
        accessor: expect.any(String),
        policies: ['default'],
        lease_duration: 3600,
        renewable: true,
        token_type: 'service',
        orphan: false,
      });
    });

    it('a write that returns nothing is a 204 with no body', async () => {
      const reply = await asRoot('POST', '/v1/secret/empty-reply', { a: 1 });
      expect(reply).toEqual({ status: 204, body: undefined });
    });

    it('handler warnings are shown in an envelope even without data', async () => {
      const reply = await asRoot('POST', '/v1/fx/warn', { value: 'x' });
      expect(reply.status).toBe(200);
      expect(reply.body).toMatchObject({ data: null, warnings: ['handler warning'] });
    });
  });

  describe('durations', () => {
    const ttlOf = async (ttl: unknown) => {
      const reply = await asRoot('POST', '/v1/auth/token/create', { ttl, policies: ['default'] });
      return reply.status === 200 ? reply.body.auth.lease_duration : reply;
    };

    it('are integer seconds or Go-style strings', async () => {
      expect(await ttlOf(90)).toBe(90);
      expect(await ttlOf('90')).toBe(90);
      expect(await ttlOf('90s')).toBe(90);
      expect(await ttlOf('15m')).toBe(900);
      expect(await ttlOf('1h30m')).toBe(5400);
      expect(await ttlOf('1.5h')).toBe(5400);
      expect(await ttlOf('2h0m30s')).toBe(7230);
    });

    it('are read the same way in every backend', async () => {
      await asRoot('POST', '/v1/fx/role/timed', { ttl: '1h30m', max_ttl: 7200 });
      expect((await asRoot('GET', '/v1/fx/role/timed')).body.data).toMatchObject({ ttl: 5400, max_ttl: 7200 });
      expect(
        (await asRoot('POST', '/v1/sys/mounts/fx/tune', { default_lease_ttl: '30m', max_lease_ttl: '2h' })).status,
      ).toBe(204);
      const tune = await asRoot('GET', '/v1/sys/mounts/fx/tune');
      expect(tune.body.data).toMatchObject({
        default_lease_ttl: 1800,
        max_lease_ttl: 7200,
        max_lease_ttl_string: '2h0m0s',
      });
    });

    it('negative or malformed durations are a 400 naming the field', async () => {
      for (const ttl of [-1, '-1', '-5s', '-1h', 'soon', '5 minutes', '1y', true, { h: 1 }]) {
        const reply = await ttlOf(ttl);
        expect(reply.status, JSON.stringify(ttl)).toBe(400);
        expect(reply.body.errors[0], JSON.stringify(ttl)).toContain('"ttl"');
      }
      const renew = await asRoot('PUT', '/v1/sys/leases/renew', { lease_id: 'x', increment: '-1h' });
      expect(renew.status).toBe(400);
      expect(renew.body.errors[0]).toContain('"increment"');
      const tune = await asRoot('POST', '/v1/sys/mounts/fx/tune', { max_lease_ttl: -60 });
      expect(tune.status).toBe(400);
      expect(tune.body.errors[0]).toContain('"max_lease_ttl"');
      const enable = await asRoot('POST', '/v1/sys/mounts/fy', {
        type: 'fixture',
        config: { default_lease_ttl: '-1s' },
      });
      expect(enable.status).toBe(400);
      expect(enable.body.errors[0]).toContain('"config.default_lease_ttl"');
    });
  });

  describe('400 bad input', () => {
    it('malformed JSON', async () => {
      for (const body of ['{', '{"a":', 'not json', '{"a":1,}', "{'a':1}", '\u0000']) {
        const reply = await asRoot('POST', '/v1/secret/bad', body);
        expect(reply.status, body).toBe(400);
        expect(reply.body.errors[0], body).toMatch(/failed to parse JSON input/);
      }
    });

    it('a body that is not a JSON object', async () => {
      for (const body of ['[1,2]', '"text"', '42', 'true', '[{"a":1}]']) {
        const reply = await asRoot('POST', '/v1/secret/bad', body);
        expect(reply.status, body).toBe(400);
        expect(reply.body.errors, body).toEqual(['failed to parse JSON input: the body must be a JSON object']);
      }
    });

    it('wrong types name the field', async () => {
      const cases: Array<[string, string, unknown, string]> = [
        ['POST', '/v1/auth/token/create', { policies: { a: 'b' } }, 'policies'],
        ['POST', '/v1/auth/token/create', { num_uses: -1 }, 'num_uses'],
        ['POST', '/v1/auth/token/create', { num_uses: 'many' }, 'num_uses'],
        ['POST', '/v1/auth/token/create', { renewable: 'yes' }, 'renewable'],
        ['POST', '/v1/auth/token/create', { meta: { a: { b: 1 } } }, 'meta.a'],
        ['POST', '/v1/auth/token/create', { display_name: ['x'] }, 'display_name'],
        ['POST', '/v1/fx/role/typed', { uses: 1.5 }, 'uses'],
        ['POST', '/v1/fx/role/typed', { tags: [[1], 2] }, 'tags.0'],
        ['POST', '/v1/fx/role/typed', { enabled: 2 }, 'enabled'],
        ['POST', '/v1/sys/policies/acl/p', { policy: ['x'] }, 'policy'],
        ['PUT', '/v1/sys/leases/lookup', { lease_id: { id: 'x' } }, 'lease_id'],
        ['POST', '/v1/sys/mounts/fz', { type: 'fixture', config: 'big' }, 'config'],
      ];
      for (const [method, url, body, field] of cases) {
        const reply = await asRoot(method, url, body);
        expect(reply.status, `${url} ${JSON.stringify(body)}`).toBe(400);
        expect(reply.body.errors[0], `${url} ${JSON.stringify(body)}`).toContain(`"${field}"`);
      }
    });

    it('say what the field accepts, also when it takes more than one shape', async () => {
      const message = async (body: unknown) => (await asRoot('POST', '/v1/auth/token/create', body)).body.errors[0];
      expect(await message({ ttl: true })).toBe('invalid value for "ttl": Invalid input: expected number or string');
      expect(await message({ ttl: 'soon' })).toBe('invalid value for "ttl": is not a valid duration: "soon"');
      expect(await message({ ttl: -1 })).toBe('invalid value for "ttl": must be a non-negative duration, got -1');
      expect(await message({ policies: ['a', [1]] })).toBe(
        'invalid value for "policies.1": expected a string, got a list',
      );
      expect(await message({ renewable: 'yes' })).toBe(
        'invalid value for "renewable": cannot parse "yes" as a boolean',
      );
      expect(await message({ num_uses: 'many' })).toBe(
        'invalid value for "num_uses": cannot parse "many" as an integer',
      );
    });

    it('unknown enum values name the field and list the choices', async () => {
      const token = await asRoot('POST', '/v1/auth/token/create', { type: 'forever' });
      expect(token.status).toBe(400);
      expect(token.body.errors[0]).toContain('"type"');
      expect(token.body.errors[0]).toMatch(/service.*batch/);
      const role = await asRoot('POST', '/v1/fx/role/enum', { mode: 'turbo' });
      expect(role.status).toBe(400);
      expect(role.body.errors[0]).toContain('"mode"');
      expect(role.body.errors[0]).toMatch(/fast.*safe/);
    });

    it('every bad field is named at once', async () => {
      const reply = await asRoot('POST', '/v1/fx/role/many', { mode: 'turbo', uses: 'x' });
      expect(reply.status).toBe(400);
      expect(reply.body.errors[0]).toContain('"mode"');
      expect(reply.body.errors[0]).toContain('"uses"');
    });

    it('a malformed percent-encoding in the path', async () => {
      const reply = await asRoot('GET', '/v1/secret/%E0%A4%A');
      expect(reply.status).toBe(400);
      expect(reply.body.errors).toHaveLength(1);
    });
  });

  describe('request bodies, decoded as Vault decodes them', () => {
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const send = (method: string, url: string, body: string, headers: Record<string, string> = form) =>
      h.call(method, url, { token: root, body, headers });

    it('JSON sent as a form (curl -d without a Content-Type) is JSON', async () => {
      const created = await send('POST', '/v1/auth/token/create', '{"policies":["app-reader"],"ttl":"2h"}');
      expect(created.status).toBe(200);
      expect(created.body.auth).toMatchObject({ policies: ['app-reader', 'default'], lease_duration: 7200 });
      expect(created.body.warnings).toBeNull();

      const policy = JSON.stringify({ policy: 'path "secret/form/*" { capabilities = ["read"] }' });
      expect((await send('PUT', '/v1/sys/policies/acl/form-json', policy)).status).toBe(204);
      expect((await asRoot('GET', '/v1/sys/policies/acl/form-json')).body.data.policy).toContain('secret/form/*');

      expect((await send('POST', '/v1/secret/form/json', '{"password":"s3cret","n":1}')).status).toBe(204);
      expect((await asRoot('GET', '/v1/secret/form/json')).body.data).toEqual({ password: 's3cret', n: 1 });
    });

    it('JSON under the form type, a JSON type or a +json type, and after leading whitespace', async () => {
      const types = [
        'application/x-www-form-urlencoded',
        'Application/X-WWW-Form-Urlencoded; charset=utf-8',
        'application/json',
        'application/merge-patch+json',
      ];
      for (const [index, type] of types.entries()) {
        const reply = await send('POST', `/v1/secret/form/typed-${index}`, ' \t\r\n{"v":"x y"}', {
          'content-type': type,
        });
        expect(reply.status, type).toBe(204);
        expect((await asRoot('GET', `/v1/secret/form/typed-${index}`)).body.data, type).toEqual({ v: 'x y' });
      }
      // A body starting with `[` is JSON too, and not an object.
      const array = await send('POST', '/v1/secret/form/array', '[{"v":1}]');
      expect(array).toEqual({
        status: 400,
        body: { errors: ['failed to parse JSON input: the body must be a JSON object'] },
      });
      // No Content-Type at all (a Blob without a type): JSON.
      const bare = await h.call('POST', '/v1/secret/form/bare', { token: root, body: new Blob(['{"v":2}']) });
      expect(bare.status).toBe(204);
      expect((await asRoot('GET', '/v1/secret/form/bare')).body.data).toEqual({ v: 2 });
    });

    it('a write declared as another media type is a 415 naming it, and nothing is written (issue 37 §4)', async () => {
      // A browser's CORS simple request can carry text/plain or multipart/form-data with no preflight; Vault reads
      // any type as JSON, this service does not (docs/security.md, "cross-origin").
      const types = [
        'text/plain',
        'text/plain;charset=UTF-8',
        'multipart/form-data; boundary=x',
        'application/octet-stream',
        'not a media type',
      ];
      for (const [index, type] of types.entries()) {
        const reply = await send('POST', `/v1/secret/form/refused-${index}`, '{"v":"x"}', { 'content-type': type });
        expect(reply, type).toEqual({
          status: 415,
          body: { errors: [`unsupported Content-Type "${type}": send the body as application/json`] },
        });
        expect((await asRoot('GET', `/v1/secret/form/refused-${index}`)).status, type).toBe(404);
      }
    });

    it('a real form is a form: repeated keys join with commas, + and %XX decode', async () => {
      const created = await send(
        'POST',
        '/v1/auth/token/create',
        'policies=app-reader&policies=ops%2Dreader&ttl=1h&display_name=a+b%20c',
      );
      expect(created.status).toBe(200);
      expect(created.body.auth).toMatchObject({
        policies: ['app-reader', 'default', 'ops-reader'],
        lease_duration: 3600,
      });
      const looked = await asRoot('POST', '/v1/auth/token/lookup', { token: created.body.auth.client_token });
      expect(looked.body.data.display_name).toBe('token-a-b-c'); // Vault's sanitising turns spaces into dashes

      expect(
        (await send('POST', '/v1/secret/form/fields', 'user=%C3%A5se&sp=a+b%20c%2B&empty=&flag&x=1&x=2&&')).status,
      ).toBe(204);
      expect((await asRoot('GET', '/v1/secret/form/fields')).body.data).toEqual({
        user: 'åse',
        sp: 'a b c+',
        empty: '',
        flag: '',
        x: '1,2',
      });
      expect((await send('POST', '/v1/fx/role/formed', 'mode=fast&enabled=false&uses=3&tags=a,b')).status).toBe(204);
      expect((await asRoot('GET', '/v1/fx/role/formed')).body.data).toMatchObject({
        mode: 'fast',
        enabled: false,
        uses: 3,
        tags: ['a', 'b'],
      });
    });

    it('a body that cannot be decoded is a 400 naming the problem, never an empty request', async () => {
      const cases: Array<[string, Record<string, string>, RegExp]> = [
        ['policies=a%zz', form, /^failed to parse form data: invalid URL escape "%zz"$/],
        ['policies=a%2', form, /^failed to parse form data: invalid URL escape "%2"$/],
        ['policies=a;ttl=1h', form, /^failed to parse form data: invalid semicolon separator$/],
        ['{"policies":["a"]', form, /^failed to parse JSON input/],
        ['{"policies":["a"]} trailing', form, /^failed to parse JSON input/],
        ['policies=a', { 'content-type': 'application/json' }, /^failed to parse JSON input/],
        ['\ufeff{"policies":["a"]}', { 'content-type': 'application/json' }, /^failed to parse JSON input/],
      ];
      const before = (await asRoot('LIST', '/v1/auth/token/accessors')).body.data.keys.length;
      for (const [body, headers, message] of cases) {
        for (const url of ['/v1/auth/token/create', '/v1/auth/token/create-orphan', '/v1/secret/form/bad']) {
          const reply = await send('POST', url, body, headers);
          expect(reply.status, `${url} ${body}`).toBe(400);
          expect(reply.body.errors, `${url} ${body}`).toHaveLength(1);
          expect(reply.body.errors[0], `${url} ${body}`).toMatch(message);
        }
      }
      expect((await asRoot('LIST', '/v1/auth/token/accessors')).body.data.keys).toHaveLength(before);
      expect((await asRoot('GET', '/v1/secret/form/bad')).status).toBe(404);
    });

    it('an empty body, whitespace or JSON null is an empty request', async () => {
      for (const body of ['', ' \n', 'null']) {
        const reply = await send('PUT', '/v1/fx/role/empty', body, { 'content-type': 'application/json' });
        expect(reply.status, JSON.stringify(body)).toBe(204);
      }
      expect((await asRoot('GET', '/v1/fx/role/empty')).body.data).toMatchObject({ mode: 'safe', uses: 0 });
    });
  });

  describe('null is "not set" (hvac sends null for every argument left out)', () => {
    it('defaults apply to a field sent as null, on every kind of path', async () => {
      expect(
        (await asRoot('POST', '/v1/fx/role/nulls', { mode: null, uses: null, ttl: null, tags: null, enabled: null }))
          .status,
      ).toBe(204);
      expect((await asRoot('GET', '/v1/fx/role/nulls')).body.data).toMatchObject({
        mode: 'safe',
        uses: 0,
        ttl: 0,
        enabled: true,
      });

      // hvac create_token(orphan=True, policies=[...]): every other argument null.
      const hvacToken = {
        id: null,
        policies: ['default'],
        meta: null,
        no_parent: null,
        display_name: null,
        num_uses: null,
        no_default_policy: null,
        renewable: null,
        ttl: null,
        explicit_max_ttl: null,
      };
      const orphan = await asRoot('POST', '/v1/auth/token/create-orphan', hvacToken);
      expect(orphan.status).toBe(200);
      expect(orphan.body.auth).toMatchObject({ policies: ['default'], orphan: true, renewable: true });
      expect(orphan.body.warnings).toBeNull();

      // hvac enable_secrets_engine(type, path): description, config, options, plugin_name, local, seal_wrap null.
      const mount = {
        type: 'kv',
        description: null,
        config: null,
        options: null,
        plugin_name: null,
        local: null,
        seal_wrap: null,
      };
      expect((await asRoot('POST', '/v1/sys/mounts/hvac-kv', mount)).status).toBe(204);
      expect((await asRoot('GET', '/v1/sys/mounts')).body.data['hvac-kv/']).toMatchObject({
        type: 'kv',
        description: '',
      });

      // hvac renew_lease(lease_id): increment null.
      await asRoot('POST', '/v1/fx/role/leased', { ttl: '1h' });
      const leaseId = (await asRoot('GET', '/v1/fx/creds/leased')).body.lease_id;
      const renewed = await asRoot('PUT', '/v1/sys/leases/renew', { lease_id: leaseId, increment: null });
      expect(renewed.status).toBe(200);
      expect(renewed.body.lease_id).toBe(leaseId);
    });

    it('a required field sent as null is missing, and named', async () => {
      const reply = await asRoot('PUT', '/v1/sys/policies/acl/null-policy', { policy: null });
      expect(reply.status).toBe(400);
      expect(reply.body.errors[0]).toContain('"policy"');
    });

    it('is not an unrecognized field either', async () => {
      const reply = await asRoot('POST', '/v1/auth/token/create', {
        policies: ['default'],
        lease: null,
        wrap_ttl: null,
      });
      expect(reply.status).toBe(200);
      expect(reply.body.warnings).toBeNull();
    });

    it('inside a value is data: a kv secret keeps it, as Vault stores what it was sent', async () => {
      expect((await asRoot('POST', '/v1/secret/nulls', { a: null, b: { c: null }, d: 1 })).status).toBe(204);
      expect((await asRoot('GET', '/v1/secret/nulls')).body.data).toEqual({ a: null, b: { c: null }, d: 1 });
    });
  });

  describe('unknown body fields', () => {
    it('are ignored with a warning', async () => {
      const reply = await asRoot('POST', '/v1/sys/mounts/warned', { type: 'kv', colour: 'blue', size: 3 });
      expect(reply.status).toBe(200);
      expect(reply.body.warnings).toEqual(['Endpoint ignored these unrecognized parameters: [colour size]']);
      expect((await asRoot('GET', '/v1/sys/mounts')).body.data['warned/']).toMatchObject({ type: 'kv' });
    });

    it("are a 400 where a token is created: a misread body never falls back to the caller's policies", async () => {
      const before = (await asRoot('LIST', '/v1/auth/token/accessors')).body.data.keys.length;
      await asRoot('POST', '/v1/auth/token/roles/plain', {});
      for (const url of ['/v1/auth/token/create', '/v1/auth/token/create-orphan', '/v1/auth/token/create/plain']) {
        for (const body of [
          { policy: ['default'] },
          { policies: ['default'], colour: 'blue' },
          { '{"policies":["default"]}': '' },
        ]) {
          const reply = await asRoot('POST', url, body);
          expect(reply.status, `${url} ${JSON.stringify(body)}`).toBe(400);
          expect(reply.body.errors[0], url).toMatch(/^unrecognized parameters: \[/);
        }
        // Without the form media type a form is not decoded at all: a 400, not an empty body.
        const misread = await asRoot('POST', url, 'policies=default&colour=blue');
        expect(misread.status, url).toBe(400);
        expect(misread.body.errors[0]).toMatch(/^failed to parse JSON input/);
      }
      expect((await asRoot('LIST', '/v1/auth/token/accessors')).body.data.keys).toHaveLength(before);
    });

    it("take Vault's deprecated `lease` as the TTL when `ttl` is not given (hvac's create_token(lease=…))", async () => {
      const leased = await asRoot('POST', '/v1/auth/token/create', { policies: ['default'], lease: '2h' });
      expect(leased.body.auth.lease_duration).toBe(7200);
      const both = await asRoot('POST', '/v1/auth/token/create', { policies: ['default'], ttl: '1h', lease: '2h' });
      expect(both.body.auth.lease_duration).toBe(3600);
    });

    it('turn an empty reply into an envelope that carries the warning', async () => {
      const reply = await asRoot('POST', '/v1/fx/role/extra', { mode: 'fast', colour: 'blue' });
      expect(reply.status).toBe(200);
      expect(reply.body).toMatchObject({
        data: null,
        warnings: ['Endpoint ignored these unrecognized parameters: [colour]'],
      });
      expect((await asRoot('GET', '/v1/fx/role/extra')).body.data).toMatchObject({ mode: 'fast' });
      expect((await asRoot('GET', '/v1/fx/role/extra')).body.data.colour).toBeUndefined();
    });

    it('are data, not unknown fields, in kv', async () => {
      const reply = await asRoot('POST', '/v1/secret/free-form', { anything: 1, goes: [true] });
      expect(reply.status).toBe(204);
      expect((await asRoot('GET', '/v1/secret/free-form')).body.data).toEqual({ anything: 1, goes: [true] });
    });
  });

  describe('403', () => {
    let reader: string;
    beforeAll(async () => {
      const policy =
        'path "secret/shared/*" { capabilities = ["read", "list"] }\npath "fx/role/new-*" { capabilities = ["create"] }\npath "fx/role/web" { capabilities = ["update"] }';
      expect((await asRoot('POST', '/v1/sys/policies/acl/reader', { policy })).status).toBe(204);
      reader = (await asRoot('POST', '/v1/auth/token/create', { policies: ['reader'] })).body.auth.client_token;
      await asRoot('POST', '/v1/secret/shared/one', { v: 1 });
    });

    it('without a token', async () => {
      const reply = await h.call('GET', '/v1/secret/shared/one');
      expect(reply).toEqual({ status: 403, body: { errors: ['permission denied'] } });
      expect((await h.call('LIST', '/v1/sys/policies/acl')).status).toBe(403);
    });

    it('with an unknown, malformed or revoked token', async () => {
      for (const token of ['hvs.nope', 'garbage', 'hvb.AAAA', `hvb.${'A'.repeat(80)}`, 'x'.repeat(5000)]) {
        const reply = await h.call('GET', '/v1/secret/shared/one', { token });
        expect(reply.status, token.slice(0, 20)).toBe(403);
        expect(reply.body.errors, token.slice(0, 20)).toEqual(['permission denied: invalid or expired token']);
      }
      const doomed = (await asRoot('POST', '/v1/auth/token/create', { policies: ['reader'] })).body.auth.client_token;
      expect((await h.call('GET', '/v1/secret/shared/one', { token: doomed })).status).toBe(200);
      await asRoot('POST', '/v1/auth/token/revoke', { token: doomed });
      expect((await h.call('GET', '/v1/secret/shared/one', { token: doomed })).status).toBe(403);
    });

    it('when the policy does not allow the operation', async () => {
      expect((await h.call('GET', '/v1/secret/shared/one', { token: reader })).status).toBe(200);
      // As in Vault, a list is checked on the folder (`shared/`), which `shared/*` covers.
      expect((await h.call('LIST', '/v1/secret/shared', { token: reader })).status).toBe(200);
      expect((await h.call('LIST', '/v1/secret/shared/', { token: reader })).status).toBe(200);
      expect((await h.call('LIST', '/v1/secret', { token: reader })).status).toBe(403);
      for (const [method, url] of [
        ['POST', '/v1/secret/shared/one'],
        ['DELETE', '/v1/secret/shared/one'],
        ['GET', '/v1/secret/app/db'],
        ['GET', '/v1/sys/mounts'],
        ['POST', '/v1/sys/policies/acl/mine'],
      ] as const) {
        const body = method === 'POST' ? { policy: 'path "x" {}' } : undefined;
        const reply = await h.call(method, url, { token: reader, body });
        expect(reply, `${method} ${url}`).toEqual({ status: 403, body: { errors: ['permission denied'] } });
      }
    });

    it('distinguishes create from update by the existence check', async () => {
      expect((await h.call('POST', '/v1/fx/role/new-one', { token: reader, body: {} })).status).toBe(204);
      // It exists now: writing it again is an update, which the policy does not grant.
      expect((await h.call('POST', '/v1/fx/role/new-one', { token: reader, body: {} })).status).toBe(403);
      expect((await h.call('POST', '/v1/fx/role/web', { token: reader, body: {} })).status).toBe(204);
      await asRoot('DELETE', '/v1/fx/role/web');
      expect((await h.call('POST', '/v1/fx/role/web', { token: reader, body: {} })).status).toBe(403);
    });

    it('is decided before the body is validated, so a denied caller learns nothing about fields', async () => {
      const reply = await h.call('POST', '/v1/auth/token/create-orphan', { token: reader, body: { type: 'bogus' } });
      expect(reply.status).toBe(403);
    });

    it('accepts the token from X-Vault-Token and Authorization: Bearer', async () => {
      const vault = await h.call('GET', '/v1/secret/shared/one', { headers: { 'X-Vault-Token': reader } });
      expect(vault.status).toBe(200);
      const bearer = await h.call('GET', '/v1/secret/shared/one', { headers: { Authorization: `Bearer ${reader}` } });
      expect(bearer.status).toBe(200);
      const basic = await h.call('GET', '/v1/secret/shared/one', { headers: { Authorization: `Basic ${reader}` } });
      expect(basic.status).toBe(403);
    });
  });

  describe('404', () => {
    it('an unknown path', async () => {
      for (const url of [
        '/v1/nothing/here',
        '/v1/',
        '/v2/secret/app/db',
        '/',
        '/v1/sys/nonsense',
        '/v1/auth/nothing/login',
      ]) {
        const reply = await asRoot('GET', url);
        expect(reply.status, url).toBe(404);
        expect(reply.body.errors, url).toHaveLength(1);
      }
    });

    it('a path inside a mount that no row matches', async () => {
      const reply = await asRoot('GET', '/v1/fx/unknown/thing');
      expect(reply.status).toBe(404);
      expect(reply.body.errors[0]).toContain('fx/unknown/thing');
    });

    it('an empty list', async () => {
      expect(await asRoot('LIST', '/v1/secret/no/such/folder')).toEqual({ status: 404, body: { errors: [] } });
      expect(await asRoot('GET', '/v1/secret/no/such/folder?list=true')).toEqual({ status: 404, body: { errors: [] } });
    });

    it('a missing secret', async () => {
      expect(await asRoot('GET', '/v1/secret/no/such/secret')).toEqual({ status: 404, body: { errors: [] } });
      expect((await asRoot('GET', '/v1/fx/creds/missing')).body).toEqual({ errors: ['no role named "missing"'] });
    });

    it('the path is checked before the token, as in Vault', async () => {
      expect((await h.call('GET', '/v1/nothing/here')).status).toBe(404);
    });
  });

  describe('405', () => {
    it('an operation the path does not support', async () => {
      const cases: Array<[string, string]> = [
        ['POST', '/v1/sys/health'],
        ['DELETE', '/v1/sys/health'],
        ['LIST', '/v1/sys/health'],
        ['GET', '/v1/auth/token/create'],
        ['DELETE', '/v1/sys/policies/acl'],
        ['POST', '/v1/fx/read-only'],
        ['LIST', '/v1/fx/role/web'],
        ['DELETE', '/v1/fx/creds/web'],
      ];
      for (const [method, url] of cases) {
        const reply = await asRoot(method, url);
        expect(reply.status, `${method} ${url}`).toBe(405);
        expect(reply.body.errors[0], `${method} ${url}`).toMatch(/unsupported operation/);
      }
    });

    it('is answered before the token is checked', async () => {
      expect((await h.call('DELETE', '/v1/fx/read-only')).status).toBe(405);
    });
  });

  describe('413', () => {
    it('a body over 1 MiB', async () => {
      const big = JSON.stringify({ blob: 'x'.repeat(1024 * 1024) });
      const reply = await asRoot('POST', '/v1/secret/big', big);
      expect(reply.status).toBe(413);
      expect(reply.body.errors[0]).toMatch(/larger than 1048576 bytes/);
      expect((await asRoot('GET', '/v1/secret/big')).status).toBe(404);
    });

    it('a declared Content-Length over 1 MiB, before reading the body', async () => {
      const reply = await h.call('POST', '/v1/secret/big', {
        token: root,
        body: '{}',
        headers: { 'Content-Length': String(2 * 1024 * 1024) },
      });
      expect(reply.status).toBe(413);
    });

    it('multi-byte characters count as bytes', async () => {
      const reply = await asRoot('POST', '/v1/secret/big', JSON.stringify({ blob: 'é'.repeat(600 * 1024) }));
      expect(reply.status).toBe(413);
    });
  });

  describe('a backend mounted at any path', () => {
    it('kv at a/b/c/: write, read, list, lease, disable', async () => {
      expect((await asRoot('POST', '/v1/sys/mounts/a/b/c', { type: 'kv', description: 'deep' })).status).toBe(204);
      const mounts = await asRoot('GET', '/v1/sys/mounts');
      expect(mounts.body.data['a/b/c/']).toMatchObject({ type: 'kv', description: 'deep' });

      expect((await asRoot('POST', '/v1/a/b/c/app/key', { value: 'v1', ttl: '10m' })).status).toBe(204);
      const read = await asRoot('GET', '/v1/a/b/c/app/key');
      expect(read.status).toBe(200);
      expect(read.body).toMatchObject({
        data: { value: 'v1', ttl: '10m' },
        lease_duration: 600,
        renewable: true,
        mount_type: 'kv',
      });
      expect(read.body.lease_id).toMatch(/^a\/b\/c\/app\/key\/\w+$/);
      expect((await asRoot('LIST', '/v1/a/b/c')).body.data).toEqual({ keys: ['app/'] });
      expect((await asRoot('LIST', '/v1/a/b/c/app')).body.data).toEqual({ keys: ['key'] });

      // Neighbours of the mount are not the mount.
      expect((await asRoot('GET', '/v1/a/b/cd/app/key')).status).toBe(404);
      expect((await asRoot('GET', '/v1/a/b/app/key')).status).toBe(404);
      // A mount inside or around an existing one is refused.
      expect((await asRoot('POST', '/v1/sys/mounts/a/b', { type: 'kv' })).status).toBe(400);
      expect((await asRoot('POST', '/v1/sys/mounts/a/b/c/d', { type: 'kv' })).status).toBe(400);

      expect((await asRoot('DELETE', '/v1/sys/mounts/a/b/c')).status).toBe(204);
      expect((await asRoot('PUT', '/v1/sys/leases/lookup', { lease_id: read.body.lease_id })).status).toBe(404);
      expect((await asRoot('GET', '/v1/a/b/c/app/key')).status).toBe(404);
    });

    it('the fixture engine at two paths at once, each with its own storage', async () => {
      expect((await asRoot('POST', '/v1/sys/mounts/team/one/fx', { type: 'fixture' })).status).toBe(204);
      await asRoot('POST', '/v1/team/one/fx/role/only-here', { mode: 'fast' });
      expect((await asRoot('LIST', '/v1/team/one/fx/role')).body.data).toEqual({ keys: ['only-here'] });
      expect((await asRoot('GET', '/v1/fx/role/only-here')).status).toBe(404);
      const creds = await asRoot('GET', '/v1/team/one/fx/creds/only-here');
      expect(creds.body.lease_id).toMatch(/^team\/one\/fx\/creds\/only-here\//);
    });

    it('an unknown engine type is a 400 naming the choices', async () => {
      const reply = await asRoot('POST', '/v1/sys/mounts/nope', { type: 'nonexistent' });
      expect(reply.status).toBe(400);
      expect(reply.body.errors[0]).toMatch(/unknown secrets engine type "nonexistent".*kv/);
    });
  });
});
